//! Integration tests: the launch on due through the real `harness` binary (`harness cron`,
//! `harness mcp`), with small bash scripts standing in for headless agents, in real time.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] functions fail loudly too"
)]

mod suite;
