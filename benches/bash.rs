//! Benchmarks for the bash family (written by its issue).

fn main() {}
