//! Integration tests of turnkit-bash, with real processes and real time.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers outside #[test] functions fail loudly too"
)]

mod suite;
