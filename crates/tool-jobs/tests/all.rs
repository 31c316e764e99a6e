//! Integration tests of turnkit-tool-jobs over the testkit host and the local registry.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] functions unwrap their fixtures"
)]

mod suite;
