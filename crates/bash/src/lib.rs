//! harness-bash (placeholder until its issue lands).
