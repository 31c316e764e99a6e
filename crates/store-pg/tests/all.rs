//! Integration tests of the PostgreSQL store against a real server (`HARNESS_TEST_POSTGRES_URL`).

mod suite;
