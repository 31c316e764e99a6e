//! Real MCP clients driving `harness mcp`: Claude Code and Codex CLI (the pinned npm packages
//! `.ci/run` installs; `HARNESS_TEST_CLAUDE` / `HARNESS_TEST_CODEX` name their binaries), each
//! against a loopback fake of its model API that replays scripted tool calls and records what
//! the model was sent. Without the variables the tests skip, and fail with `CI=true`.

#![allow(
    missing_docs,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code"
)]

mod clients_suite;
