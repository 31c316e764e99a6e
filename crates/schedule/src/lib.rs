//! harness-schedule (placeholder until its issue lands).
