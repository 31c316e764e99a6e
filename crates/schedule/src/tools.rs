//! The schedule tools (schedule.md §9–§11).
