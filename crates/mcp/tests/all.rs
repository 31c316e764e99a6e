//! Integration tests: `harness mcp` as a child process, driven by rmcp's own client and by a
//! raw JSON-RPC pipe, in real time.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers outside #[test] functions fail loudly too"
)]

mod suite;
