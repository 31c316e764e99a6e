//! Decision 8: `read_at` over the bounded per-job history, and progress lines as `detail`.

use pretty_assertions::assert_eq;
use turnkit_jobs::{JobOutcome, JobRegistry, JobStatus};

use super::common::*;

#[tokio::test(start_paused = true)]
async fn read_at_is_non_consuming_for_the_model() {
    let host = Host::new();
    let (id, job) = host.start_ok(bash());
    job.emit("one\n");
    let first = host.registry.read_at(&id, 0, None).unwrap();
    assert_eq!(
        (first.text.as_str(), first.next_cursor, first.dropped),
        ("one\n", 4, false)
    );
    job.emit("two\n");
    let second = host.registry.read_at(&id, first.next_cursor, None).unwrap();
    assert_eq!((second.text.as_str(), second.next_cursor), ("two\n", 8));
    // The model still receives everything once, in order.
    assert_eq!(host.registry.read(&id, None).unwrap().text, "one\ntwo\n");
    assert_eq!(host.registry.read(&id, None).unwrap().text, "");
    // The observer can re-read from any cursor.
    assert_eq!(host.registry.read_at(&id, 4, None).unwrap().text, "two\n");
    job.settle(JobOutcome::completed());
    tick().await;
    assert!(
        !host
            .registry
            .read_at(&id, 0, None)
            .unwrap()
            .snapshot
            .reported
    );
}

#[tokio::test(start_paused = true)]
async fn read_at_reports_dropped_history() {
    let host = Host::new();
    let clock = host.clock;
    let registry = turnkit_jobs_local::LocalJobRegistry::new(
        turnkit_jobs_local::JobLimits::default()
            .with_max_concurrent_jobs_per_owner(10)
            .with_output_history_bytes(8),
        std::sync::Arc::new(clock),
        None,
    );
    let _c = registry.attach_controller(turnkit_core::RegistrationScope::Global, "c");
    let (start, job) = bash().build();
    let id = registry.start(start).unwrap();
    job.emit("0123456789");
    assert_eq!(registry.read(&id, None).unwrap().text, "0123456789");
    let read = registry.read_at(&id, 0, None).unwrap();
    assert_eq!(
        (read.text.as_str(), read.next_cursor, read.dropped),
        ("23456789", 10, true)
    );
}

#[tokio::test(start_paused = true)]
async fn final_output_jobs_read_at_their_output() {
    let host = Host::new();
    let (id, job) = host.start_ok(FakeProducer::new("subagent", "s").stream(false));
    assert_eq!(host.registry.read_at(&id, 0, None).unwrap().text, "");
    job.settle(JobOutcome::completed().with_output("answer"));
    tick().await;
    let read = host.registry.read_at(&id, 2, None).unwrap();
    assert_eq!(
        (read.text.as_str(), read.next_cursor, read.dropped),
        ("swer", 6, false)
    );
    assert!(!read.snapshot.reported);
}

#[tokio::test(start_paused = true)]
async fn progress_lines_show_as_detail_while_running() {
    let host = Host::new();
    let (changes, _o) = record_changes(&host.registry);
    let (id, job) = host.start_ok(bash().with_progress().on_cancel(OnCancel::Hang));
    assert_eq!(host.registry.get(&id, None).unwrap().detail, None);
    job.set_progress("3/10 files");
    let snapshot = host.registry.get(&id, None).unwrap();
    assert_eq!(snapshot.status_line(), "[status: running, 3/10 files]");
    host.registry.kill(&id, None, None).unwrap();
    assert_eq!(
        host.registry.get(&id, None).unwrap().status_line(),
        "[status: stopping, 3/10 files]"
    );
    job.settle(JobOutcome::killed());
    tick().await;
    let snapshot = host.registry.get(&id, None).unwrap();
    assert_eq!(
        (snapshot.status, snapshot.detail),
        (JobStatus::Killed, None)
    );
    job.set_progress("late");
    assert_eq!(host.registry.get(&id, None).unwrap().detail, None);
    // start, progress, stopping, settlement; the late line is not announced.
    assert_eq!(changes.lock().unwrap().len(), 4);
}
