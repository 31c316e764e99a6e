//! harness-todo (placeholder until its issue lands).
