//! C-073 … C-083, C-089, C-093: owner teardown and service disposal.

use std::time::Duration;

use pretty_assertions::assert_eq;
use turnkit_jobs::{JobOutcome, JobRegistry, JobStatus};

use super::common::*;

fn reasons(job: &FakeJob) -> Vec<String> {
    job.cancels()
        .into_iter()
        .map(Option::unwrap_or_default)
        .collect()
}

#[tokio::test(start_paused = true)]
async fn c073_unregistered_owner_then_a_later_valid_start() {
    let host = Host::new();
    let ghost = host.unregistered_agent("ghost");
    let (result, job) = host.start(bash().owner(ghost.as_dyn()));
    assert_eq!(
        message(result),
        "agent \"ghost\" is not the registered agent instance (background job owner must be live)"
    );
    assert!(!job.was_run());
    assert_eq!(host.list_ids(id_of(&ghost)), Vec::<String>::new());
    host.directory.publish(ghost.as_dyn());
    let (id, job) = host.start_ok(bash().owner(ghost.as_dyn()));
    assert_eq!(id, "bash-1");
    ghost.dispose().await;
    assert_eq!(reasons(&job), ["owner disposed"]);
    assert_eq!(host.list_ids(id_of(&ghost)), Vec::<String>::new());
    assert_eq!(
        message(host.registry.get(&id, id_of(&ghost))),
        "unknown job bash-1"
    );
}

#[tokio::test(start_paused = true)]
async fn c075_owner_disposal_drains_the_owner() {
    let host = Host::new();
    let owner = host.agent("owner");
    let (_, j1) = host.start_ok(FakeProducer::new("subagent", "J1").owner(owner.as_dyn()));
    let (_, j2) = host.start_ok(FakeProducer::new("subagent", "J2").owner(owner.as_dyn()));
    j2.settle(JobOutcome::completed());
    tick().await;
    owner.dispose().await;
    assert_eq!(reasons(&j1), ["owner disposed"]);
    assert_eq!(reasons(&j2), Vec::<String>::new());
    assert_eq!(host.list_ids(id_of(&owner)), Vec::<String>::new());
    assert_eq!(host.registry.record_count(), 0);
    assert_eq!(host.registry.owner_cleanups(), 0);
}

#[tokio::test(start_paused = true)]
async fn c077_teardown_marks_the_record_reported() {
    let host = Host::new();
    let (seen, _l) = record_done(&host.registry);
    let owner = host.agent("owner");
    host.start_ok(bash().owner(owner.as_dyn()));
    owner.dispose().await;
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        (seen[0].status, seen[0].reported),
        (JobStatus::Killed, true)
    );
}

#[tokio::test(start_paused = true)]
async fn c078_one_cleanup_hook_per_owner() {
    let host = Host::new();
    let owner = host.scoped_agent("owner", &[]);
    let (_, a) = host.start_ok(bash().owner(owner.clone()));
    let (_, b) = host.start_ok(bash().owner(owner.clone()));
    a.settle(JobOutcome::completed());
    b.settle(JobOutcome::completed());
    tick().await;
    assert_eq!(*owner.hooks_added.lock().unwrap(), 1);
    assert_eq!(host.registry.owner_cleanups(), 1);
    owner.inner.dispose().await;
    assert_eq!(host.list_ids(id_of(&owner)), Vec::<String>::new());
}

#[tokio::test(start_paused = true)]
async fn c079_an_old_cleanup_does_not_touch_a_replacements_job() {
    let host = Host::new();
    let old = host.agent("owner");
    let (_, old_job) = host.start_ok(FakeProducer::new("bash", "old job").owner(old.as_dyn()));
    let replacement = host.agent("owner");
    let (r, r_job) =
        host.start_ok(FakeProducer::new("bash", "replacement job").owner(replacement.as_dyn()));
    old.dispose().await;
    assert_eq!(reasons(&old_job), ["owner disposed"]);
    assert_eq!(reasons(&r_job), Vec::<String>::new());
    assert_eq!(host.list_ids(id_of(&replacement)), [r.to_string()]);
    replacement.dispose().await;
    assert_eq!(reasons(&r_job), ["owner disposed"]);
}

#[tokio::test(start_paused = true)]
async fn c081_a_throwing_teardown_cancel_is_force_failed_without_awaiting_done() {
    let logs = LogCapture::start();
    let host = Host::new();
    let (seen, _l) = record_done(&host.registry);
    let owner = host.agent("owner");
    let (_, job) = host.start_ok(
        bash()
            .owner(owner.as_dyn())
            .on_cancel(OnCancel::Throw("cancel boom".into())),
    );
    tokio::time::timeout(Duration::from_millis(1), owner.dispose())
        .await
        .expect("disposal must not wait for done");
    assert!(logs.text().contains(
        "jobs: cancel of bash-1 threw during teardown; job record forced failed and work may be orphaned: Error: cancel boom"
    ));
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].status, JobStatus::Failed);
        assert_eq!(
            seen[0].detail.as_deref(),
            Some("cancel threw during teardown; work may be orphaned: Error: cancel boom")
        );
        assert!(seen[0].reported);
    }
    assert_eq!(host.list_ids(id_of(&owner)), Vec::<String>::new());
    job.settle(JobOutcome::completed());
    tick().await;
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn c082_service_disposal_cancels_and_silences_listeners() {
    let host = Host::new();
    let (seen, _l) = record_done(&host.registry);
    let (_, job) = host.start_ok(bash());
    host.registry.dispose().await;
    assert_eq!(reasons(&job), ["jobs service disposed"]);
    assert_eq!(seen.lock().unwrap().len(), 0);
    assert_eq!(host.registry.record_count(), 0);
    assert_eq!(
        message(host.start(bash()).0),
        "background jobs unavailable: the job registry is disposed"
    );
}

#[tokio::test(start_paused = true)]
async fn c083_service_disposal_with_a_throwing_cancel() {
    let logs = LogCapture::start();
    let host = Host::new();
    let (seen, _l) = record_done(&host.registry);
    let (_, job) = host.start_ok(bash().on_cancel(OnCancel::Throw("service cancel boom".into())));
    tokio::time::timeout(Duration::from_millis(1), host.registry.dispose())
        .await
        .expect("disposal must not wait for done");
    assert!(logs.text().contains("work may be orphaned"));
    job.settle(JobOutcome::completed());
    tick().await;
    assert_eq!(seen.lock().unwrap().len(), 0);
}

#[tokio::test(start_paused = true)]
async fn c089_owner_disposal_removal_is_announced_and_a_bystander_is_silent() {
    let host = Host::new();
    let alice = host.agent("alice");
    let bob = host.agent("bob");
    let (_, job) = host.start_ok(bash().owner(alice.as_dyn()));
    let (changes, _o) = record_changes(&host.registry);
    job.settle(JobOutcome::completed());
    tick().await;
    assert_eq!(changes.lock().unwrap().clone(), owners(&[Some("alice")]));
    bob.dispose().await;
    assert_eq!(changes.lock().unwrap().clone(), owners(&[Some("alice")]));
    alice.dispose().await;
    assert_eq!(
        changes.lock().unwrap().clone(),
        owners(&[Some("alice"), Some("alice")])
    );
    assert_eq!(host.list_ids(id_of(&alice)), Vec::<String>::new());
}

#[tokio::test(start_paused = true)]
async fn c093_emptying_is_announced_to_an_outside_observer() {
    let host = Host::new();
    let (changes, _o) = record_changes(&host.registry);
    host.start_ok(bash());
    changes.lock().unwrap().clear();
    host.registry.dispose().await;
    assert_eq!(changes.lock().unwrap().clone(), owners(&[None, None, None]));
}

#[tokio::test(start_paused = true)]
async fn service_disposal_notifies_each_owner_once_and_detaches_owner_hooks() {
    let host = Host::new();
    let alice = host.agent("alice");
    host.start_ok(
        bash()
            .owner(alice.as_dyn())
            .on_cancel(OnCancel::Throw("x".into())),
    );
    host.start_ok(
        bash()
            .owner(alice.as_dyn())
            .on_cancel(OnCancel::Throw("x".into())),
    );
    host.start_ok(bash().on_cancel(OnCancel::Throw("x".into())));
    let (changes, _o) = record_changes(&host.registry);
    host.registry.dispose().await;
    // Force-failed (no stopping notices), then one notice per distinct owner.
    assert_eq!(
        changes.lock().unwrap().clone(),
        owners(&[Some("alice"), Some("alice"), None, Some("alice"), None])
    );
    assert_eq!(host.registry.owner_cleanups(), 0);
    // The agent's disposal no longer reaches the registry.
    alice.dispose().await;
    assert_eq!(changes.lock().unwrap().len(), 5);
    host.registry.dispose().await;
    assert_eq!(changes.lock().unwrap().len(), 5);
}

#[tokio::test(start_paused = true)]
async fn a_disposing_owner_is_refused() {
    let host = Host::new();
    let owner = host.agent("owner");
    let (_, job) = host.start_ok(bash().owner(owner.as_dyn()).on_cancel(OnCancel::Hang));
    let disposing = {
        let owner = owner.clone();
        tokio::spawn(async move { owner.dispose().await })
    };
    tick().await;
    assert!(!disposing.is_finished());
    assert_eq!(
        host.registry.list(id_of(&owner))[0].status,
        JobStatus::Stopping
    );
    let (refused, next) = host.start(bash().owner(owner.as_dyn()));
    assert_eq!(refused.unwrap_err().to_string(), "agent owner is disposed");
    assert!(!next.was_run());
    job.settle(JobOutcome::killed());
    disposing.await.unwrap();
    assert_eq!(host.registry.record_count(), 0);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_installed_registry_disposes_it() {
    let clock = turnkit_testkit::ManualClock::at_default();
    let harness = turnkit_testkit::MemoryHarness::new(std::sync::Arc::new(clock));
    let installed = turnkit_jobs_local::install(&harness.as_dyn(), Default::default()).unwrap();
    let registry = installed.local().clone();
    let _controller = registry.attach_controller(turnkit_core::RegistrationScope::Global, "c");
    let (start, job) = bash().build();
    registry.start(start).unwrap();
    drop(installed);
    tick().await;
    assert_eq!(reasons(&job), ["jobs service disposed"]);
    assert!(registry.is_disposed());
    assert_eq!(registry.record_count(), 0);
}

/// A producer whose `done` rejects after its owner's teardown force-failed and removed its
/// job is still named in the §4.12 warning. (After service disposal nothing is polled any
/// more: the settlement driver is stopped and joined.)
#[tokio::test(start_paused = true)]
async fn a_late_rejection_after_removal_still_names_the_job() {
    let logs = LogCapture::start();
    let host = Host::new();
    let owner = host.agent("owner");
    let (_, job) = host.start_ok(
        bash()
            .owner(owner.as_dyn())
            .on_cancel(OnCancel::Throw("stuck".to_owned())),
    );
    owner.dispose().await;
    assert_eq!(host.registry.record_count(), 0);
    job.reject("late failure");
    tick().await;
    assert!(logs.text().contains(
        "jobs: job bash-1 producer done promise rejected (producer contract violation): Error: late failure"
    ), "{}", logs.text());
}

/// After service disposal the settlement driver is gone: a force-failed job's late rejection
/// is not observed.
#[tokio::test(start_paused = true)]
async fn a_late_rejection_after_service_disposal_is_not_observed() {
    let logs = LogCapture::start();
    let host = Host::new();
    let (_, job) = host.start_ok(bash().on_cancel(OnCancel::Throw("stuck".to_owned())));
    host.registry.dispose().await;
    assert_eq!(host.registry.running_tasks(), 0);
    job.reject("late failure");
    tick().await;
    assert!(
        !logs.text().contains("producer done promise rejected"),
        "{}",
        logs.text()
    );
}

/// Service disposal releases the records' producer hooks after its lock: a hook whose drop
/// calls back into the registry must not deadlock it.
#[test]
fn disposal_drops_producer_hooks_outside_the_lock() {
    without_deadlock(|| async {
        let host = Host::new();
        let hook = CallsBack(host.registry.clone());
        let start = turnkit_jobs::JobStart::new("bash", "tail -f log", move || {
            Ok(
                turnkit_jobs::JobHooks::new(|_| Ok(()), async { Ok(JobOutcome::completed()) })
                    .with_read_output(move || {
                        let _ = &hook;
                        Ok(String::new())
                    }),
            )
        });
        host.registry.start(start).unwrap();
        tick().await;
        host.registry.dispose().await;
        assert_eq!(host.registry.record_count(), 0);
    });
}

/// A producer's own progress observer is replaced at start and released at settlement, both
/// after the registry's lock: an observer whose drop calls back into the registry must not
/// deadlock it.
#[test]
fn progress_observers_are_dropped_outside_the_lock() {
    fn observer(registry: &turnkit_jobs_local::LocalJobRegistry) -> turnkit_jobs::ProgressObserver {
        let guard = CallsBack(registry.clone());
        std::sync::Arc::new(move || {
            let _ = &guard;
        })
    }
    without_deadlock(|| async {
        let host = Host::new();
        let progress = turnkit_jobs::JobProgress::new();
        progress.set_observer(Some(observer(&host.registry)));
        let (settle, settled) = tokio::sync::oneshot::channel::<()>();
        let handle = progress.clone();
        let start = turnkit_jobs::JobStart::new("bash", "make", move || {
            Ok(turnkit_jobs::JobHooks::new(|_| Ok(()), async move {
                let _ = settled.await;
                Ok(JobOutcome::completed())
            })
            .with_progress(handle))
        });
        let id = host.registry.start(start).unwrap();
        // The producer takes the observer slot back; settlement releases it.
        progress.set_observer(Some(observer(&host.registry)));
        let _ = settle.send(());
        tick().await;
        assert_eq!(
            host.registry.get(&id, None).unwrap().status,
            turnkit_jobs::JobStatus::Completed
        );
    });
}
