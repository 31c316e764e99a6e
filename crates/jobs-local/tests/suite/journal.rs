//! The job journal at a session's reopening (todo-jobs §5.9): earlier jobs come back as
//! terminal records, lost jobs are handed once to the lost-jobs listeners, and the delivery is
//! recorded as `job/lost`.

use std::sync::{Arc, Mutex};

use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_core::{
    Agent, MessageSource, Registration, RegistrationScope, SessionHeader, UserMessage,
};
use turnkit_jobs::{JobOutcome, JobRegistry, JobSnapshot, JobsLostListener};
use turnkit_jobs_local::{JobLimits, LocalJobRegistry};
use turnkit_testkit::{FakeJob, FakeProducer, ManualClock, MemoryAgent, MemoryHarness};

use super::common::tick;

/// One host (sessions survive registries) and the registries of its successive "runs".
struct Runs {
    clock: ManualClock,
    harness: Arc<MemoryHarness>,
}

/// A registry of one run, with a global controller and the lost-jobs calls it made.
struct Run {
    registry: LocalJobRegistry,
    lost: Arc<Mutex<Vec<Vec<String>>>>,
    _registrations: Vec<Registration>,
}

impl Runs {
    fn new() -> Self {
        let clock = ManualClock::at_default();
        let harness = MemoryHarness::new(Arc::new(clock.clone()));
        Self { clock, harness }
    }

    /// A registry with the journal `on`, whose lost-jobs listener answers `delivers`.
    fn run(&self, on: bool, delivers: bool) -> Run {
        let registry = LocalJobRegistry::new(
            JobLimits::default().with_journal(on),
            Arc::new(self.clock.clone()),
            Some(Arc::new(turnkit_jobs_local::HarnessAgents::new(
                &self.harness.as_dyn(),
            ))),
        );
        let lost = Arc::new(Mutex::new(Vec::new()));
        let seen = lost.clone();
        let listener: JobsLostListener =
            Arc::new(move |jobs: &[JobSnapshot], owner: &Arc<dyn Agent>| {
                seen.lock().unwrap().push(
                    jobs.iter()
                        .map(|j| format!("{} {}", j.id, j.status_line()))
                        .collect(),
                );
                if !delivers {
                    return Ok(None);
                }
                // Handed over as a followup, which the host's turn claims.
                let notice = UserMessage::text("lost", MessageSource::User);
                let id = notice.id.clone();
                owner.followup(notice)?;
                Ok(Some(id))
            });
        let registrations = vec![
            registry.attach_controller(RegistrationScope::Global, "test"),
            registry.on_jobs_lost(RegistrationScope::Global, listener),
        ];
        Run {
            registry,
            lost,
            _registrations: registrations,
        }
    }

    /// Session `id`'s agent, (re)opened: a new instance each time.
    fn open(&self, id: &str) -> Arc<MemoryAgent> {
        match self.harness.memory_agent(&id.into()) {
            Some(_) => self.harness.resume(&id.into()),
            None => self.harness.create_session(SessionHeader::new(id)),
        }
        .unwrap()
    }
}

fn log_of(agent: &Arc<MemoryAgent>, r#type: &str) -> Vec<String> {
    agent
        .as_dyn()
        .session()
        .events()
        .into_iter()
        .filter(|e| e.r#type == r#type)
        .map(|e| e.data.to_string())
        .collect()
}

/// Run 1 leaves `fake-1` settled with output and `fake-2` running (the host "dies": its
/// registry is never disposed). Returns what the test keeps alive.
fn first_run(runs: &Runs) -> (Run, FakeJob) {
    let run = runs.run(true, true);
    let agent = runs.open("s1");
    let (start, done) = FakeProducer::new("fake", "build docs")
        .stream(false)
        .owner(agent.as_dyn())
        .build();
    run.registry.start(start).unwrap();
    let (start, running) = FakeProducer::new("fake", "watch tests")
        .owner(agent.as_dyn())
        .build();
    run.registry.start(start).unwrap();
    done.settle(JobOutcome::completed().with_output("built 12 pages"));
    (run, running)
}

#[tokio::test(start_paused = true)]
async fn a_reopened_session_answers_for_its_earlier_jobs_and_reports_the_lost_one_once() {
    let runs = Runs::new();
    let _first = first_run(&runs);
    tick().await;

    let second = runs.run(true, true);
    let agent = runs.open("s1");
    second.registry.session_opened(&agent.as_dyn());
    tick().await;
    assert_eq!(
        *second.lost.lock().unwrap(),
        [["fake-2 [status: failed, the host stopped while it ran]"]]
    );
    assert_eq!(
        log_of(&agent, "job/lost"),
        [r#"{"version":1,"ids":["fake-2"]}"#]
    );
    let caller = Some(agent.id());
    let listed: Vec<String> = second
        .registry
        .list(caller)
        .iter()
        .map(|j| format!("{} {} {}", j.id, j.status_line(), j.reported))
        .collect();
    assert_eq!(
        listed,
        [
            "fake-1 [status: completed] true",
            "fake-2 [status: failed, the host stopped while it ran] true"
        ]
    );
    let read = second.registry.read(&"fake-1".into(), caller).unwrap();
    assert_eq!(read.text, "built 12 pages");
    assert!(
        second
            .registry
            .is_from_earlier_run(&"fake-1".into(), caller)
    );
    assert!(!second.registry.is_from_earlier_run(&"fake-1".into(), None));
    // A new job continues after the journal's ids and is not from an earlier run.
    let (start, _job) = FakeProducer::new("fake", "new")
        .owner(agent.as_dyn())
        .build();
    let id = second.registry.start(start).unwrap();
    assert_eq!(id.as_str(), "fake-3");
    assert!(!second.registry.is_from_earlier_run(&id, caller));

    // Reopened again: `fake-2` was reported; only `fake-3`, running when run 2 stopped, is.
    let third = runs.run(true, true);
    let agent = runs.open("s1");
    third.registry.session_opened(&agent.as_dyn());
    tick().await;
    assert_eq!(
        *third.lost.lock().unwrap(),
        [["fake-3 [status: failed, the host stopped while it ran]"]]
    );
    assert_eq!(
        log_of(&agent, "job/lost"),
        [
            r#"{"version":1,"ids":["fake-2"]}"#,
            r#"{"version":1,"ids":["fake-3"]}"#
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn lost_jobs_no_listener_delivered_are_reported_at_the_next_reopening() {
    let runs = Runs::new();
    let _first = first_run(&runs);
    tick().await;
    let second = runs.run(true, false);
    let agent = runs.open("s1");
    second.registry.session_opened(&agent.as_dyn());
    tick().await;
    assert_eq!(second.lost.lock().unwrap().len(), 1);
    assert_eq!(log_of(&agent, "job/lost").len(), 0);

    let third = runs.run(true, true);
    let agent = runs.open("s1");
    third.registry.session_opened(&agent.as_dyn());
    tick().await;
    assert_eq!(third.lost.lock().unwrap().len(), 1);
    assert_eq!(
        log_of(&agent, "job/lost"),
        [r#"{"version":1,"ids":["fake-2"]}"#]
    );
}

/// The delivery is recorded when a turn claims the notice: a notice still queued when its
/// owner goes away records nothing, and the next reopening reports the jobs again.
#[tokio::test(start_paused = true)]
async fn a_notice_no_turn_claimed_is_not_recorded_and_is_reported_again() {
    let runs = Runs::new();
    let _first = first_run(&runs);
    tick().await;
    runs.harness.set_auto_turns(false);
    let second = runs.run(true, true);
    let agent = runs.open("s1");
    second.registry.session_opened(&agent.as_dyn());
    tick().await;
    assert_eq!(second.lost.lock().unwrap().len(), 1);
    assert_eq!(log_of(&agent, "job/lost"), Vec::<String>::new());
    agent.dispose().await;
    tick().await;
    assert_eq!(log_of(&agent, "job/lost"), Vec::<String>::new());

    runs.harness.set_auto_turns(true);
    let third = runs.run(true, true);
    let agent = runs.open("s1");
    third.registry.session_opened(&agent.as_dyn());
    tick().await;
    assert_eq!(
        *third.lost.lock().unwrap(),
        [["fake-2 [status: failed, the host stopped while it ran]"]]
    );
    assert_eq!(
        log_of(&agent, "job/lost"),
        [r#"{"version":1,"ids":["fake-2"]}"#]
    );
}

#[tokio::test(start_paused = true)]
async fn with_the_journal_off_a_reopening_reads_nothing() {
    let runs = Runs::new();
    let _first = first_run(&runs);
    tick().await;
    let second = runs.run(false, true);
    let agent = runs.open("s1");
    second.registry.session_opened(&agent.as_dyn());
    tick().await;
    assert_eq!(second.lost.lock().unwrap().len(), 0);
    assert_eq!(second.registry.list(Some(agent.id())).len(), 0);
    assert!(
        !second
            .registry
            .is_from_earlier_run(&"fake-1".into(), Some(agent.id()))
    );
}

#[tokio::test(start_paused = true)]
async fn a_teardown_keeps_its_reason_in_the_settlement() {
    let runs = Runs::new();
    let run = runs.run(true, true);
    let agent = runs.open("s1");
    let (start, _job) = FakeProducer::new("fake", "serve")
        .owner(agent.as_dyn())
        .build();
    run.registry.start(start).unwrap();
    run.registry.dispose().await;
    assert_eq!(
        log_of(&agent, "job/settle"),
        [json!({
            "version": 1,
            "id": "fake-1",
            "status": "killed",
            "detail": "cancelled",
            "finishedAt": 1_785_931_200_000_i64,
            "teardown": "jobs service disposed"
        })
        .to_string()]
    );
}

/// A start whose `job/start` the owner's session refuses is stopped before `start` returns:
/// the refusal names the job, the producer heard the kill with its reason, and once the job
/// settles (killed, reported, so no notice) neither event is in the log.
#[tokio::test(start_paused = true)]
async fn a_start_the_journal_cannot_append_is_stopped_and_refused() {
    let runs = Runs::new();
    let run = runs.run(true, true);
    let agent = runs.open("s1");
    runs.harness.faults(&"s1".into()).set_append_fail(true);
    let (start, job) = FakeProducer::new("fake", "build docs")
        .owner(agent.as_dyn())
        .build();
    let error = run.registry.start(start).unwrap_err();
    assert_eq!(
        error.to_string(),
        "background job fake-1 was stopped: its start could not be saved: append rejected: injected append failure"
    );
    assert_eq!(
        job.cancels(),
        vec![Some("its start could not be saved".to_owned())]
    );
    runs.harness.faults(&"s1".into()).set_append_fail(false);
    job.settle(JobOutcome::killed());
    tick().await;
    let snapshot = run
        .registry
        .get(&"fake-1".into(), Some(agent.as_dyn().id()))
        .unwrap();
    assert_eq!(
        (snapshot.status.as_str(), snapshot.reported),
        ("killed", true)
    );
    assert_eq!(log_of(&agent, "job/start"), Vec::<String>::new());
    assert_eq!(log_of(&agent, "job/settle"), Vec::<String>::new());
}

/// A lost-jobs report waits (on a task of the registry) for a turn to claim its notice; the
/// registry's disposal ends that wait and joins the task.
#[tokio::test(start_paused = true)]
async fn disposal_ends_a_lost_jobs_report_still_waiting_for_its_claim() {
    let runs = Runs::new();
    let _first = first_run(&runs);
    tick().await;
    runs.harness.set_auto_turns(false);
    let second = runs.run(true, true);
    let agent = runs.open("s1");
    second.registry.session_opened(&agent.as_dyn());
    tick().await;
    assert_eq!(second.lost.lock().unwrap().len(), 1);
    assert_eq!(second.registry.running_tasks(), 1);
    tokio::time::timeout(
        std::time::Duration::from_secs(60),
        second.registry.dispose(),
    )
    .await
    .expect("disposal must not wait for a claim");
    assert_eq!(second.registry.running_tasks(), 0);
    assert_eq!(log_of(&agent, "job/lost"), Vec::<String>::new());
}

/// A start the journal cannot append never lets the producer's work begin: the job is
/// stopped before its `done` is handed to the driver and before anybody hears of the job, so
/// every change observer already sees it cancelled, and its `done` finds it cancelled at its
/// first poll.
#[tokio::test(start_paused = true)]
async fn an_unsaved_start_is_cancelled_before_its_work_is_polled() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use turnkit_core::RegistrationScope;
    use turnkit_jobs::{JobHooks, JobStart};

    let runs = Runs::new();
    let run = runs.run(true, true);
    let agent = runs.open("s1");
    let token = tokio_util::sync::CancellationToken::new();
    // Whether the job was already cancelled at each change notification.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let _observer = {
        let seen = seen.clone();
        let token = token.clone();
        run.registry.on_jobs_changed(
            RegistrationScope::Global,
            Arc::new(move |_| {
                seen.lock().unwrap().push(token.is_cancelled());
                Ok(())
            }),
        )
    };
    runs.harness.faults(&"s1".into()).set_append_fail(true);
    let worked = Arc::new(AtomicBool::new(false));
    let did = worked.clone();
    let start = JobStart::new("fake", "type into a terminal", move || {
        let cancel = token.clone();
        let done = async move {
            // The producer's work: done only if it was not stopped first.
            if !token.is_cancelled() {
                did.store(true, Ordering::SeqCst);
            }
            token.cancelled().await;
            Ok(JobOutcome::killed())
        };
        Ok(JobHooks::new(
            move |_| {
                cancel.cancel();
                Ok(())
            },
            done,
        ))
    })
    .with_owner(agent.as_dyn());
    let error = run.registry.start(start).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("background job fake-1 was stopped")
    );
    assert_eq!(*seen.lock().unwrap(), [true, true]);
    tick().await;
    let settled = run
        .registry
        .get(&"fake-1".into(), Some(agent.as_dyn().id()))
        .unwrap();
    assert_eq!(settled.status.as_str(), "killed");
    assert!(!worked.load(Ordering::SeqCst), "the job's work ran unsaved");
}

/// An unsaved start whose owner was disposed while its `run` executed is still drained: once
/// it settles its record is removed like every other job of a disposed owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsaved_start_of_an_owner_disposed_during_run_is_removed() {
    let runs = Runs::new();
    let run = runs.run(true, true);
    let agent = runs.open("s1");
    // The owner's first job registers its cleanup.
    let (start, first) = FakeProducer::new("fake", "first")
        .owner(agent.as_dyn())
        .build();
    run.registry.start(start).unwrap();
    first.settle(JobOutcome::completed());
    runs.harness.faults(&"s1".into()).set_append_fail(true);
    let (start, job) = FakeProducer::new("fake", "second")
        .owner(agent.as_dyn())
        .build();
    let disposing = agent.clone();
    let runtime = tokio::runtime::Handle::current();
    let mut start = start;
    let inner = std::mem::replace(&mut start.run, Box::new(|| unreachable!()));
    start.run = Box::new(move || {
        // Another thread disposes the owner while `run` executes.
        std::thread::spawn(move || runtime.block_on(disposing.dispose()))
            .join()
            .unwrap();
        inner()
    });
    let error = run.registry.start(start).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("background job fake-2 was stopped")
    );
    // The drain removes the record and then notifies the change observers.
    let (count, mut counts) = tokio::sync::watch::channel(run.registry.record_count());
    let _observer = {
        let registry = run.registry.clone();
        run.registry.on_jobs_changed(
            turnkit_core::RegistrationScope::Global,
            Arc::new(move |_| {
                count.send_replace(registry.record_count());
                Ok(())
            }),
        )
    };
    job.settle(JobOutcome::killed());
    // A guard against a hang, not a synchronisation: the wait ends on the notification.
    tokio::time::timeout(
        std::time::Duration::from_secs(20),
        counts.wait_for(|n| *n == 0),
    )
    .await
    .expect("the record was never removed")
    .unwrap();
    assert_eq!(run.registry.record_count(), 0);
}

/// A start the journal cannot append whose producer's cancel fails: the refusal says the
/// work may still be running (never that it was stopped), and the record is forced `failed`
/// at once, so it holds no admission place and nothing is journaled.
#[tokio::test(start_paused = true)]
async fn an_unsaved_start_whose_cancel_fails_says_its_work_may_still_run() {
    let runs = Runs::new();
    let run = runs.run(true, true);
    let agent = runs.open("s1");
    runs.harness.faults(&"s1".into()).set_append_fail(true);
    let (start, job) = FakeProducer::new("fake", "build docs")
        .owner(agent.as_dyn())
        .on_cancel(turnkit_testkit::OnCancel::Throw("cancel boom".to_owned()))
        .build();
    let error = run.registry.start(start).unwrap_err();
    assert_eq!(
        error.to_string(),
        "background job fake-1 could not be stopped after its start could not be saved (append rejected: injected append failure); its work may still be running: cancel boom"
    );
    assert_eq!(
        job.cancels(),
        vec![Some("its start could not be saved".to_owned())]
    );
    let snapshot = run
        .registry
        .get(&"fake-1".into(), Some(agent.as_dyn().id()))
        .unwrap();
    assert_eq!(
        (
            snapshot.status.as_str(),
            snapshot.detail.as_deref(),
            snapshot.reported
        ),
        (
            "failed",
            Some(
                "cancel threw after its start could not be saved; work may be orphaned: cancel boom"
            ),
            true
        )
    );
    runs.harness.faults(&"s1".into()).set_append_fail(false);
    tick().await;
    assert_eq!(log_of(&agent, "job/settle"), Vec::<String>::new());
}
