//! Host-level tests of turnkit-todo on the testkit's in-memory host.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] functions unwrap their fixtures"
)]

mod suite;
