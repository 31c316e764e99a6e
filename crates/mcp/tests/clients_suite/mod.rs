mod claude;
mod codex;
mod fake_api;
mod proxy;
mod support;
