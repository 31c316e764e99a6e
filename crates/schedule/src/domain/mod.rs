//! Pure schedule domain (schedule.md §2–§8, §15).
