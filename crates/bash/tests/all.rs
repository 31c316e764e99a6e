//! Integration tests of harness-bash, with real processes and real time.

mod suite;
