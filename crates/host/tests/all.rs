//! Integration tests of harness-host.
mod suite;
