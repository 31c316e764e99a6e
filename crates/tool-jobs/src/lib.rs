//! harness-tool-jobs (placeholder until its issue lands).
