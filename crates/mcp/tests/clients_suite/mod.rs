mod claude;
mod claude_setup;
mod claude_structured;
mod codex;
mod fake_api;
mod proxy;
mod support;
