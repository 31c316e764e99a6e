//! Integration tests of turnkit-core.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly; clippy's test exemption covers only #[test] bodies"
)]
mod suite;
