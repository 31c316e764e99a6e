//! harness-jobs-local (placeholder until its issue lands).
