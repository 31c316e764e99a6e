//! Integration tests of harness-core.
mod suite;
