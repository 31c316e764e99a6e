#[expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "fixtures outside #[test] functions fail the test by panicking"
)]
mod common;
mod contract;
mod history;
#[expect(
    clippy::unwrap_used,
    reason = "fixtures outside #[test] functions fail the test by panicking"
)]
mod journal;
mod listeners;
#[expect(
    clippy::unwrap_used,
    reason = "the property body runs outside #[test] functions; a poisoned lock fails the case"
)]
mod model;
mod reads;
mod start;
mod stress;
mod tasks;
mod teardown;
mod waits;
