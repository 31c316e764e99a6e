//! harness-testkit (placeholder until its issue lands).
