//! Integration tests of turnkit-schedule: tools, runtime, plugin and restart cases of
//! `spec/cases-schedule.md`, on the testkit's in-memory host.

#[cfg(test)]
mod suite;
