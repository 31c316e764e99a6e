//! Integration tests of turnkit-host.
mod suite;
