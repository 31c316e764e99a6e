//! Integration tests: `harness mcp` driven as a child process by rmcp's client.
mod suite;
