//! harness-jobs (placeholder until its issue lands).
