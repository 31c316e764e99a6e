//! The delivery runtime (schedule.md §12–§13).
