//! Every task the registry spawns is tracked, and service disposal joins them all: nothing
//! the registry started outlives `dispose`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pretty_assertions::assert_eq;
use turnkit_core::RegistrationScope;
use turnkit_jobs::{JobOutcome, JobRegistry};

use super::common::*;

/// Far more than any of these disposals needs under paused time: a hang fails the test.
const BOUND: Duration = Duration::from_secs(3600);

#[tokio::test(start_paused = true)]
async fn installed_disposal_joins_the_settlement_driver() {
    let clock = turnkit_testkit::ManualClock::at_default();
    let harness = turnkit_testkit::MemoryHarness::new(Arc::new(clock));
    let installed =
        turnkit_jobs_local::install(&harness.as_dyn(), Default::default()).expect("install");
    let jobs = installed.registry();
    let _controller = jobs.attach_controller(RegistrationScope::Global, "tool-jobs");
    assert_eq!(installed.running_tasks(), 0);
    let (start, _job) = bash().build();
    jobs.start(start).expect("start");
    tick().await;
    // One driver polls the pending job's `done`.
    assert_eq!(installed.running_tasks(), 1);
    tokio::time::timeout(BOUND, installed.dispose())
        .await
        .expect("disposal ends");
    assert_eq!(installed.running_tasks(), 0);
}

/// A throwing teardown cancel force-fails its job and leaves its `done` pending for good:
/// the driver holding it is told to stop, so disposal still joins it.
#[tokio::test(start_paused = true)]
async fn disposal_stops_a_driver_holding_a_force_failed_jobs_done() {
    let host = Host::new();
    let (_, job) = host.start_ok(bash().on_cancel(OnCancel::Throw("stuck".into())));
    tick().await;
    assert_eq!(host.registry.running_tasks(), 1);
    tokio::time::timeout(BOUND, host.registry.dispose())
        .await
        .expect("disposal must not wait for a done that never completes");
    assert_eq!(host.registry.running_tasks(), 0);
    assert_eq!(job.cancels(), [Some("jobs service disposed".to_owned())]);
    // A later start is refused and spawns nothing.
    assert!(host.start(bash()).0.is_err());
    assert_eq!(host.registry.running_tasks(), 0);
}

/// The future a completion listener returns is observed on a task of the registry, and
/// disposal awaits it to its end.
#[tokio::test(start_paused = true)]
async fn disposal_awaits_a_listener_future_in_flight() {
    let host = Host::new();
    let finished = Arc::new(AtomicBool::new(false));
    let flag = finished.clone();
    let _listener = host.registry.on_job_done(
        RegistrationScope::Global,
        Arc::new(move |_, _| {
            let flag = flag.clone();
            Ok(Some(Box::pin(async move {
                tokio::time::sleep(Duration::from_secs(10)).await;
                flag.store(true, Ordering::SeqCst);
                Ok(())
            })))
        }),
    );
    let (_, job) = host.start_ok(bash());
    job.settle(JobOutcome::completed());
    tick().await;
    // The driver is done (no pending job); the observation still runs.
    assert_eq!(host.registry.running_tasks(), 1);
    assert!(!finished.load(Ordering::SeqCst));
    tokio::time::timeout(BOUND, host.registry.dispose())
        .await
        .expect("disposal ends");
    assert!(finished.load(Ordering::SeqCst));
    assert_eq!(host.registry.running_tasks(), 0);
}
