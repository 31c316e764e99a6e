//! C-049 … C-053, C-070, C-071: reads, the owner fence and list visibility.

use pretty_assertions::assert_eq;
use turnkit_jobs::{JobOutcome, JobRegistry, JobStatus};

use super::common::*;

#[tokio::test(start_paused = true)]
async fn c049_output_limit_is_projected() {
    let host = Host::new();
    let (id, job) = host.start_ok(bash().output_limit_bytes(64));
    job.emit("delta");
    let read = host.registry.read(&id, None).unwrap();
    assert_eq!(read.text, "delta");
    assert_eq!(read.snapshot.output_limit_bytes, Some(64));
    assert_eq!(
        host.registry.get(&id, None).unwrap().output_limit_bytes,
        Some(64)
    );
    assert_eq!(host.registry.read(&id, None).unwrap().text, "");
}

#[tokio::test(start_paused = true)]
async fn c050_final_output_reads_are_idempotent() {
    let host = Host::new();
    let (id, job) = host.start_ok(FakeProducer::new("subagent", "research job").stream(false));
    let running = host.registry.read(&id, None).unwrap();
    assert_eq!(
        (
            running.text.as_str(),
            running.snapshot.status,
            running.snapshot.reported
        ),
        ("", JobStatus::Running, false)
    );
    job.settle(JobOutcome::completed().with_output("final answer"));
    tick().await;
    for _ in 0..2 {
        let read = host.registry.read(&id, None).unwrap();
        assert_eq!(read.text, "final answer");
        assert_eq!(read.snapshot.status, JobStatus::Completed);
        assert!(read.snapshot.reported);
    }
}

#[tokio::test(start_paused = true)]
async fn c051_a_settled_final_output_job_without_output() {
    let host = Host::new();
    let (id, job) = host.start_ok(FakeProducer::new("subagent", "research").stream(false));
    job.settle(JobOutcome::failed().with_detail("max-tokens"));
    tick().await;
    let read = host.registry.read(&id, None).unwrap();
    assert_eq!(read.text, "");
    assert_eq!(read.snapshot.status, JobStatus::Failed);
    assert_eq!(read.snapshot.detail.as_deref(), Some("max-tokens"));
}

#[tokio::test(start_paused = true)]
async fn stream_jobs_ignore_output_and_keep_their_tail_after_settlement() {
    let host = Host::new();
    let (id, job) = host.start_ok(bash());
    job.emit("before ");
    job.settle(
        JobOutcome::completed()
            .with_detail("exit code: 0")
            .with_output("ignored"),
    );
    tick().await;
    job.emit("tail");
    let read = host.registry.read(&id, None).unwrap();
    assert_eq!(read.text, "before tail");
    assert_eq!(
        read.snapshot.status_line(),
        "[status: completed, exit code: 0]"
    );
    assert!(read.snapshot.reported);
    assert_eq!(host.registry.read(&id, None).unwrap().text, "");
}

#[tokio::test(start_paused = true)]
async fn a_throwing_read_output_propagates_and_consumes_nothing() {
    let host = Host::new();
    let (id, job) = host.start_ok(bash());
    job.emit("kept");
    job.fail_reads(Some("read exploded".to_owned()));
    assert_eq!(message(host.registry.read(&id, None)), "read exploded");
    job.fail_reads(None);
    assert_eq!(host.registry.read(&id, None).unwrap().text, "kept");
}

#[tokio::test(start_paused = true)]
async fn c053_settlement_is_asynchronous() {
    let host = Host::new();
    let (start, job) = bash().build();
    job.settle(JobOutcome::completed());
    let id = host.registry.start(start).unwrap();
    assert_eq!(
        host.registry.get(&id, None).unwrap().status,
        JobStatus::Running
    );
    tick().await;
    assert_eq!(
        host.registry.get(&id, None).unwrap().status,
        JobStatus::Completed
    );
}

#[tokio::test(start_paused = true)]
async fn get_has_no_side_effects() {
    let host = Host::new();
    let (id, job) = host.start_ok(bash());
    job.emit("unread");
    job.settle(JobOutcome::completed());
    tick().await;
    let snapshot = host.registry.get(&id, None).unwrap();
    assert!(!snapshot.reported);
    assert_eq!(job.unread(), "unread");
    assert!(!host.registry.get(&id, None).unwrap().reported);
}

#[tokio::test(start_paused = true)]
async fn c070_owner_fence() {
    let host = Host::new();
    let owner = host.agent("owner");
    let other = host.agent("other");
    let (owned, _) = host.start_ok(bash().owner(owner.as_dyn()));
    let (open, _) = host.start_ok(bash());
    assert!(host.registry.read(&owned, id_of(&owner)).is_ok());
    assert!(host.registry.read(&open, id_of(&other)).is_ok());
    assert_eq!(
        message(host.registry.read(&owned, id_of(&other))),
        "job bash-1 belongs to another session"
    );
    assert!(
        message(host.registry.kill(&owned, id_of(&other), None))
            .contains("belongs to another session")
    );
    assert!(
        message(
            host.registry
                .wait(
                    &owned,
                    std::time::Duration::from_millis(10),
                    id_of(&other),
                    None
                )
                .await
        )
        .contains("belongs to another session")
    );
    assert_eq!(
        message(host.registry.read(&owned, None)),
        "job bash-1 belongs to another session"
    );
    assert_eq!(
        message(host.registry.get(&owned, None)),
        "job bash-1 belongs to another session"
    );
    assert_eq!(
        message(host.registry.read_at(&owned, 0, None)),
        "job bash-1 belongs to another session"
    );
    assert_eq!(
        message(host.registry.get(&"bash-99".into(), None)),
        "unknown job bash-99"
    );
}

#[tokio::test(start_paused = true)]
async fn c071_list_visibility() {
    let host = Host::new();
    let alice = host.agent("alice");
    let bob = host.agent("bob");
    host.start_ok(FakeProducer::new("bash", "A").owner(alice.as_dyn()));
    host.start_ok(FakeProducer::new("bash", "B").owner(bob.as_dyn()));
    host.start_ok(FakeProducer::new("subagent", "O"));
    assert_eq!(host.list_ids(id_of(&alice)), ["bash-1", "subagent-1"]);
    assert_eq!(host.list_ids(id_of(&bob)), ["bash-2", "subagent-1"]);
    assert_eq!(host.list_ids(None), ["subagent-1"]);
    let snapshot = &host.registry.list(id_of(&alice))[0];
    assert_eq!(
        snapshot.owner_session.as_ref().map(|s| s.as_str()),
        Some("alice")
    );
    assert_eq!(snapshot.started_at, host.clock_millis());
}
