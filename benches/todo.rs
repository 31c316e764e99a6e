//! Benchmarks for the todo family (written by its issue).

fn main() {}
