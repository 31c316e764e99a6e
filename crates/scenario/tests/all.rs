//! Integration tests of the scenario runner, its grammar and the catalog and log helpers.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly; clippy's test exemption covers only #[test] bodies"
)]
mod suite;
