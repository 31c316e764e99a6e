#[expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "fixtures outside #[test] functions fail the test by panicking"
)]
mod common;
mod contract;
mod history;
mod listeners;
mod model;
mod reads;
mod start;
mod stress;
mod teardown;
mod waits;
