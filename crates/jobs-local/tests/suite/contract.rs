//! Section B through a real registry: C-034 (the invariant companion installed and notified).

use std::sync::Arc;

use turnkit_jobs::{JobOutcome, JobRegistry, install_invariant};

use super::common::*;

#[tokio::test(start_paused = true)]
async fn c034_the_invariant_accepts_coherent_snapshots() {
    let logs = LogCapture::start();
    let host = Host::new();
    let (_, running) = host.start_ok(bash());
    let jobs: Arc<dyn JobRegistry> = Arc::new(host.registry.clone());
    let _invariant = install_invariant(&jobs).expect("running bash-1 is coherent");
    let owner = host.agent("owner");
    let (_, owned) = host.start_ok(FakeProducer::new("subagent", "delegate").owner(owner.as_dyn()));
    host.clock
        .advance(std::time::Duration::from_millis(10))
        .await;
    running.settle(JobOutcome::completed());
    owned.settle(JobOutcome::completed());
    tick().await;
    assert!(!logs.text().contains("listener threw"), "{}", logs.text());
}
