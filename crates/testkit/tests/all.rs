//! Integration tests of the in-memory host and the conformance suites.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly; clippy's test exemption covers only #[test] bodies"
)]
mod suite;
