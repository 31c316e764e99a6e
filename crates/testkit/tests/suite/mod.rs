mod broken_agent;
mod broken_harness;
mod conformance;
mod host;
mod skip;
mod store_conformance;
