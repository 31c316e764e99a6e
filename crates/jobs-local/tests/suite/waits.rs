//! C-058 … C-069: kill and wait.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pretty_assertions::assert_eq;
use turnkit_core::RegistrationScope;
use turnkit_jobs::{CancellationToken, JobError, JobOutcome, JobRegistry, JobStatus, KillOutcome};

use super::common::*;

#[tokio::test(start_paused = true)]
async fn c058_kill_of_a_live_job() {
    let host = Host::new();
    let (seen, _l) = record_done(&host.registry);
    let (id, job) = host.start_ok(bash().on_cancel(OnCancel::Hang));
    assert_eq!(
        host.registry
            .kill(&id, None, Some("no longer needed"))
            .unwrap(),
        KillOutcome::Requested
    );
    assert_eq!(job.cancels(), [Some("no longer needed".to_owned())]);
    let listed = &host.registry.list(None)[0];
    assert_eq!(
        (listed.status, listed.reported),
        (JobStatus::Stopping, true)
    );
    job.settle(JobOutcome::killed());
    tick().await;
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        (seen[0].id.clone(), seen[0].status, seen[0].reported),
        (id, JobStatus::Killed, true)
    );
}

#[tokio::test(start_paused = true)]
async fn c059_kill_of_a_finished_job() {
    let host = Host::new();
    let (id, job) = host.start_ok(bash());
    job.settle(JobOutcome::completed());
    tick().await;
    assert!(!host.registry.get(&id, None).unwrap().reported);
    assert_eq!(
        host.registry.kill(&id, None, None).unwrap(),
        KillOutcome::AlreadyFinished
    );
    assert_eq!(job.cancels(), Vec::<Option<String>>::new());
    assert!(host.registry.get(&id, None).unwrap().reported);
}

#[tokio::test(start_paused = true)]
async fn c061_kill_of_a_stopping_job() {
    let host = Host::new();
    let (id, job) = host.start_ok(bash().on_cancel(OnCancel::Hang));
    host.registry.kill(&id, None, Some("r1")).unwrap();
    let (changes, _o) = record_changes(&host.registry);
    assert_eq!(
        host.registry.kill(&id, None, Some("r2")).unwrap(),
        KillOutcome::Requested
    );
    assert_eq!(
        job.cancels(),
        [Some("r1".to_owned()), Some("r2".to_owned())]
    );
    assert_eq!(
        host.registry.get(&id, None).unwrap().status,
        JobStatus::Stopping
    );
    assert_eq!(changes.lock().unwrap().clone(), owners(&[None]));
}

#[tokio::test(start_paused = true)]
async fn a_throwing_kill_changes_nothing() {
    let host = Host::new();
    let (changes, _o) = record_changes(&host.registry);
    let (id, job) = host.start_ok(bash().on_cancel(OnCancel::Throw("cancel boom".into())));
    assert_eq!(message(host.registry.kill(&id, None, None)), "cancel boom");
    assert_eq!(job.cancels(), [None]);
    let snapshot = host.registry.get(&id, None).unwrap();
    assert_eq!(
        (snapshot.status, snapshot.reported),
        (JobStatus::Running, false)
    );
    assert_eq!(changes.lock().unwrap().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn c062_a_wait_that_sees_settlement_delivers_it() {
    let host = Host::new();
    let (seen, _l) = record_done(&host.registry);
    let (id, job) = host.start_ok(bash());
    let registry = host.registry.clone();
    let wait_id = id.clone();
    let waiting = tokio::spawn(async move {
        registry
            .wait(&wait_id, Duration::from_millis(5000), None, None)
            .await
    });
    tick().await;
    job.settle(JobOutcome::completed().with_detail("exit code: 0"));
    let snapshot = waiting.await.unwrap().unwrap();
    assert_eq!(
        (snapshot.status, snapshot.reported),
        (JobStatus::Completed, true)
    );
    tick().await;
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].reported);
}

#[tokio::test(start_paused = true)]
async fn c063_a_wait_timeout_returns_the_live_snapshot() {
    let host = Host::new();
    let (id, _job) = host.start_ok(bash());
    let registry = host.registry.clone();
    let wait_id = id.clone();
    let waiting = tokio::spawn(async move {
        registry
            .wait(&wait_id, Duration::from_millis(5), None, None)
            .await
    });
    tick().await;
    assert!(!waiting.is_finished());
    host.clock.advance(Duration::from_millis(4)).await;
    assert!(!waiting.is_finished());
    host.clock.advance(Duration::from_millis(1)).await;
    let snapshot = waiting.await.unwrap().unwrap();
    assert_eq!(
        (snapshot.status, snapshot.reported),
        (JobStatus::Running, false)
    );
    assert_eq!(
        host.registry.get(&id, None).unwrap().status,
        JobStatus::Running
    );
}

#[tokio::test(start_paused = true)]
async fn c065_a_finished_job_returns_immediately() {
    let host = Host::new();
    let (id, job) = host.start_ok(bash());
    job.settle(JobOutcome::completed());
    tick().await;
    let snapshot = host
        .registry
        .wait(&id, Duration::from_millis(5000), None, None)
        .await
        .unwrap();
    assert_eq!(
        (snapshot.status, snapshot.reported),
        (JobStatus::Completed, true)
    );
}

#[tokio::test(start_paused = true)]
async fn c066_invalid_wait_timeouts() {
    let host = Host::new();
    let (id, job) = host.start_ok(bash());
    assert_eq!(
        message(
            host.registry
                .wait(&id, Duration::from_millis(0), None, None)
                .await
        ),
        "invalid wait timeout: expected a positive number of milliseconds, got 0"
    );
    // A number of milliseconds that is not finite and > 0 cannot become a Duration.
    assert_eq!(
        JobError::wait_timeout(f64::NAN).unwrap_err().to_string(),
        "invalid wait timeout: expected a positive number of milliseconds, got null"
    );
    assert_eq!(
        JobError::wait_timeout(-1.0).unwrap_err().to_string(),
        "invalid wait timeout: expected a positive number of milliseconds, got -1"
    );
    // Checked even when terminal; unknown jobs are reported first.
    job.settle(JobOutcome::completed());
    tick().await;
    assert!(
        message(
            host.registry
                .wait(&id, Duration::from_millis(0), None, None)
                .await
        )
        .contains("got 0")
    );
    assert_eq!(
        message(
            host.registry
                .wait(&"bash-7".into(), Duration::from_millis(0), None, None)
                .await
        ),
        "unknown job bash-7"
    );
}

#[tokio::test(start_paused = true)]
async fn c067_aborting_rejects_only_the_wait() {
    let host = Host::new();
    let (id, _job) = host.start_ok(bash());
    let token = CancellationToken::new();
    let registry = host.registry.clone();
    let (wait_id, wait_token) = (id.clone(), token.clone());
    let waiting = tokio::spawn(async move {
        registry
            .wait(
                &wait_id,
                Duration::from_millis(5000),
                None,
                Some(wait_token),
            )
            .await
    });
    tick().await;
    token.cancel();
    assert_eq!(message(waiting.await.unwrap()), "wait aborted");
    assert_eq!(host.registry.list(None)[0].status, JobStatus::Running);
    assert_eq!(
        message(
            host.registry
                .wait(&id, Duration::from_millis(5000), None, Some(token))
                .await
        ),
        "wait aborted"
    );
}

#[tokio::test(start_paused = true)]
async fn an_abort_before_settlement_is_not_counted() {
    let host = Host::new();
    let (seen, _l) = record_done(&host.registry);
    let (id, job) = host.start_ok(bash());
    let token = CancellationToken::new();
    let registry = host.registry.clone();
    let (wait_id, wait_token) = (id.clone(), token.clone());
    let waiting = tokio::spawn(async move {
        registry
            .wait(
                &wait_id,
                Duration::from_millis(5000),
                None,
                Some(wait_token),
            )
            .await
    });
    tick().await;
    // Abort and settle in the same tick: the settlement must not count the aborted waiter.
    token.cancel();
    job.settle(JobOutcome::completed());
    tick().await;
    assert_eq!(message(waiting.await.unwrap()), "wait aborted");
    assert_eq!(seen.lock().unwrap()[0].reported, false);
}

#[tokio::test(start_paused = true)]
async fn c069_an_abort_after_settlement_is_harmless() {
    let host = Host::new();
    let token = CancellationToken::new();
    let listener_token = token.clone();
    let saw: Arc<Mutex<Vec<bool>>> = Arc::default();
    let sink = saw.clone();
    let _l = host.registry.on_job_done(
        RegistrationScope::Global,
        Arc::new(move |snapshot, _| {
            listener_token.cancel();
            sink.lock().unwrap().push(snapshot.reported);
            Ok(None)
        }),
    );
    let (id, job) = host.start_ok(bash());
    let registry = host.registry.clone();
    let waiting = tokio::spawn(async move {
        registry
            .wait(&id, Duration::from_millis(5000), None, Some(token))
            .await
    });
    tick().await;
    job.settle(JobOutcome::completed());
    let snapshot = waiting.await.unwrap().unwrap();
    assert_eq!(
        (snapshot.status, snapshot.reported),
        (JobStatus::Completed, true)
    );
    assert_eq!(saw.lock().unwrap().clone(), [true]);
}

#[tokio::test(start_paused = true)]
async fn huge_timeouts_are_clamped_not_rejected() {
    let host = Host::new();
    let (id, job) = host.start_ok(bash());
    let registry = host.registry.clone();
    let waiting = tokio::spawn(async move { registry.wait(&id, Duration::MAX, None, None).await });
    tick().await;
    job.settle(JobOutcome::completed());
    assert_eq!(waiting.await.unwrap().unwrap().status, JobStatus::Completed);
}

/// Regression (found with a real bash job on a multi-threaded runtime): a producer that
/// settles while its cancel hook is still running — the settlement continuation runs on
/// another worker — must already see the job as reported, so no completion notice follows a
/// `job_kill` (C-131). The cancel hook below settles, then blocks until the settlement has
/// been observed, which opens that window deterministically.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_settling_during_its_cancel_is_already_reported() {
    let host = Host::new();
    let (observed_tx, observed_rx) = std::sync::mpsc::channel::<bool>();
    let observed_tx = Mutex::new(observed_tx);
    let listener: turnkit_jobs::JobDoneListener = Arc::new(move |snapshot, _owner| {
        let _ = observed_tx.lock().unwrap().send(snapshot.reported);
        Ok(None)
    });
    let _listener = host
        .registry
        .on_job_done(RegistrationScope::Global, listener);
    let (settle_tx, settle_rx) = futures::channel::oneshot::channel::<JobOutcome>();
    let settle_tx = Mutex::new(Some(settle_tx));
    let observed_rx = Mutex::new(observed_rx);
    let seen_during_cancel: Arc<Mutex<Option<bool>>> = Arc::default();
    let seen = seen_during_cancel.clone();
    let start = turnkit_jobs::JobStart::new("bash", "sleep 600", move || {
        let cancel = move |_reason: Option<&str>| {
            if let Some(tx) = settle_tx.lock().unwrap().take() {
                let _ = tx.send(JobOutcome::killed());
            }
            let reported = observed_rx
                .lock()
                .unwrap()
                .recv_timeout(Duration::from_secs(5))
                .ok();
            *seen.lock().unwrap() = reported;
            Ok(())
        };
        let done = async move { settle_rx.await.map_err(|e| e.into()) };
        Ok(turnkit_jobs::JobHooks::new(cancel, done))
    });
    let id = host.registry.start(start).unwrap();
    let outcome = tokio::task::spawn_blocking({
        let registry = host.registry.clone();
        move || registry.kill(&id, None, None)
    })
    .await
    .unwrap();
    assert_eq!(outcome.unwrap(), KillOutcome::Requested);
    assert_eq!(*seen_during_cancel.lock().unwrap(), Some(true));
}
