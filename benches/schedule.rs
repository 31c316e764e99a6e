//! Benchmarks for the schedule family (written by its issue).

fn main() {}
