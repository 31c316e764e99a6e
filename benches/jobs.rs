//! Benchmarks for the jobs family (written by its issue).

fn main() {}
