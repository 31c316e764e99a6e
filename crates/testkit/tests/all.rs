//! Integration tests of the in-memory host and the scenario runner.
mod suite;
