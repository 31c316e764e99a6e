//! Integration tests of turnkit-jobs-local: cases-todo-jobs sections B and C, decision 8,
//! a model-based property test and a multi-threaded stress test.

mod suite;
