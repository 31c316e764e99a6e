use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pretty_assertions::assert_eq;
use turnkit_core::{
    Agent, AgentEvent, AgentStatus, Busy, Clock, MessageSource, PersistenceError, SessionHeader,
    SessionId, UserMessage,
};
use turnkit_testkit::{HostRecord, ManualClock, MemoryHarness, settle};

fn notice(text: &str) -> UserMessage {
    UserMessage::text(
        text,
        MessageSource::Plugin {
            plugin: "tool-jobs".to_owned(),
            form: Some("notice".to_owned()),
            summary: Some(text.to_owned()),
        },
    )
}

fn recorded(host: &MemoryHarness) -> Arc<Mutex<Vec<HostRecord>>> {
    let records = Arc::new(Mutex::new(Vec::new()));
    let sink = records.clone();
    host.set_recorder(Arc::new(move |r| sink.lock().unwrap().push(r)));
    records
}

fn turn(phase: &'static str) -> HostRecord {
    HostRecord::Turn {
        session: "s1".to_owned(),
        phase,
    }
}

fn claimed(source: &str, text: &str) -> HostRecord {
    HostRecord::Claimed {
        session: "s1".to_owned(),
        source: source.to_owned(),
        text: text.to_owned(),
    }
}

#[tokio::test(start_paused = true)]
async fn followup_wakes_an_idle_agent_and_inject_does_not() {
    let host = MemoryHarness::new(Arc::new(ManualClock::at_default()));
    let records = recorded(&host);
    let agent = host.create_session(SessionHeader::new("s1")).unwrap();
    agent.inject(notice("n1")).unwrap();
    settle().await;
    assert_eq!(agent.turns(), 0);
    assert_eq!(agent.pending_injected(), vec!["n1".to_owned()]);
    agent.followup(notice("f1")).unwrap();
    settle().await;
    assert_eq!(agent.turns(), 1);
    assert_eq!(agent.status(), AgentStatus::Idle);
    assert_eq!(
        *records.lock().unwrap(),
        vec![
            HostRecord::Inject {
                session: "s1".to_owned(),
                text: "n1".to_owned()
            },
            HostRecord::Followup {
                session: "s1".to_owned(),
                text: "f1".to_owned()
            },
            turn("start"),
            claimed("tool-jobs", "f1"),
            claimed("tool-jobs", "n1"),
            turn("end"),
        ]
    );
    let types: Vec<String> = agent
        .session()
        .events()
        .into_iter()
        .map(|e| e.r#type)
        .collect();
    assert_eq!(types, ["turn/start", "turn/end"]);
}

#[tokio::test(start_paused = true)]
async fn a_turn_cannot_end_with_an_unclaimed_injected_message() {
    let host = MemoryHarness::new(Arc::new(ManualClock::at_default()));
    let records = recorded(&host);
    let agent = host.create_session(SessionHeader::new("s1")).unwrap();
    // A listener that injects once more when the first notice is claimed.
    let again = agent.clone();
    let count = AtomicUsize::new(0);
    let _sub = agent.subscribe(Arc::new(move |event: &AgentEvent| {
        if let AgentEvent::InboxClaimed { message, .. } = event
            && message.joined_text() == "n1"
            && count.fetch_add(1, Ordering::SeqCst) == 0
        {
            again.inject(notice("n2")).unwrap();
        }
    }));
    agent.start_turn();
    agent.inject(notice("n1")).unwrap();
    agent.end_turn();
    assert_eq!(
        *records.lock().unwrap(),
        vec![
            turn("start"),
            HostRecord::Inject {
                session: "s1".to_owned(),
                text: "n1".to_owned()
            },
            claimed("tool-jobs", "n1"),
            HostRecord::Inject {
                session: "s1".to_owned(),
                text: "n2".to_owned()
            },
            claimed("tool-jobs", "n2"),
            turn("end"),
        ]
    );
    assert!(agent.pending_injected().is_empty());
}

#[tokio::test(start_paused = true)]
async fn claimed_events_carry_sources_and_status_transitions() {
    let host = MemoryHarness::new(Arc::new(ManualClock::at_default()));
    let agent = host.create_session(SessionHeader::new("s1")).unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let _sub = agent.subscribe(Arc::new(move |e: &AgentEvent| {
        sink.lock().unwrap().push(match e {
            AgentEvent::Status(s) => format!("status {s:?}"),
            AgentEvent::InboxClaimed { message, turn } => {
                format!("claimed turn {turn} from {}", message.source.name())
            }
            AgentEvent::Disposed => "disposed".to_owned(),
        })
    }));
    agent
        .send_user("hi", Some("Europe/Paris".to_owned()))
        .unwrap();
    settle().await;
    assert_eq!(agent.client_time_zone().as_deref(), Some("Europe/Paris"));
    agent.dispose().await;
    assert_eq!(
        *events.lock().unwrap(),
        [
            "status Running",
            "claimed turn 1 from user",
            "status Idle",
            "disposed"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn maintenance_is_refused_while_a_turn_runs_and_parks_input() {
    let host = MemoryHarness::new(Arc::new(ManualClock::at_default()));
    let agent = host.create_session(SessionHeader::new("s1")).unwrap();
    agent.start_turn();
    assert!(matches!(agent.try_begin_maintenance(), Err(Busy)));
    agent.end_turn();
    let guard = agent.try_begin_maintenance().unwrap();
    assert!(matches!(agent.try_begin_maintenance(), Err(Busy)));
    agent.followup(notice("parked")).unwrap();
    settle().await;
    assert_eq!(
        agent.turns(),
        1,
        "input waits while maintenance holds the agent"
    );
    assert_eq!(agent.pending_input(), ["parked"]);
    let idle = {
        let agent = agent.clone();
        tokio::spawn(async move { agent.when_idle().await })
    };
    settle().await;
    assert!(!idle.is_finished());
    drop(guard);
    settle().await;
    assert!(idle.is_finished());
    assert_eq!(agent.turns(), 2);
}

#[tokio::test(start_paused = true)]
async fn disposal_awaits_hooks_and_refuses_input() {
    let clock = ManualClock::at_default();
    let host = MemoryHarness::new(Arc::new(clock.clone()));
    let agent = host.create_session(SessionHeader::new("s1")).unwrap();
    let done = Arc::new(AtomicUsize::new(0));
    let flag = done.clone();
    let sleeper = clock.clone();
    agent
        .add_dispose_hook(Box::new(move || {
            Box::pin(async move {
                sleeper.sleep(Duration::from_secs(5)).await;
                flag.store(1, Ordering::SeqCst);
            })
        }))
        .unwrap();
    let removed = agent
        .add_dispose_hook(Box::new(|| Box::pin(async {})))
        .unwrap();
    assert!(agent.remove_dispose_hook(removed).is_some());
    assert!(agent.remove_dispose_hook(removed).is_none());
    let disposing = {
        let agent = agent.clone();
        tokio::spawn(async move { agent.dispose().await })
    };
    settle().await;
    assert!(!disposing.is_finished(), "disposal waits for the hook");
    assert_eq!(
        agent.followup(notice("late")).unwrap_err().to_string(),
        "agent s1 is disposed"
    );
    clock.advance(Duration::from_secs(5)).await;
    assert!(disposing.is_finished());
    assert_eq!(done.load(Ordering::SeqCst), 1);
    assert!(host.memory_agent(&SessionId::from("s1")).is_none());
    assert_eq!(
        agent
            .add_dispose_hook(Box::new(|| Box::pin(async {})))
            .unwrap_err()
            .to_string(),
        "agent s1 is disposed"
    );
}

#[tokio::test(start_paused = true)]
async fn flush_failure_is_reported_and_append_faults_change_nothing() {
    let host = MemoryHarness::new(Arc::new(ManualClock::at_default()));
    let agent = host.create_session(SessionHeader::new("s1")).unwrap();
    let session = agent.session();
    let faults = host.faults(&SessionId::from("s1"));
    faults.set_flush_fail(true);
    assert_eq!(
        session.flush().await,
        Err(PersistenceError::Failed(
            "injected flush failure".to_owned()
        ))
    );
    faults.set_flush_fail(false);
    faults.script_flushes([false, true]);
    assert_eq!(
        session.flush().await.unwrap_err().to_string(),
        "flush failed: injected flush failure"
    );
    assert!(session.flush().await.is_ok());
    assert!(session.flush().await.is_ok());
    assert_eq!(faults.flush_count(), 4);
    faults.set_append_fail(true);
    assert_eq!(
        session
            .append("x", serde_json::json!({}))
            .unwrap_err()
            .to_string(),
        "append rejected: injected append failure"
    );
    let payload = turnkit_core::JsonText::serialize(&serde_json::json!({})).unwrap();
    assert_eq!(
        session.append_raw("x", payload).unwrap_err().to_string(),
        "append rejected: injected append failure"
    );
    assert_eq!(session.len(), 0);
}

/// Counts the events of type `x/count` it folds (a state of `u64`).
struct CountX;

impl turnkit_core::Projection for CountX {
    fn key(&self) -> &str {
        "countX"
    }

    fn init(&self) -> turnkit_core::ProjectionState {
        Arc::new(0u64)
    }

    fn apply(
        &self,
        state: &turnkit_core::ProjectionState,
        event: &turnkit_core::SessionEvent,
    ) -> Option<turnkit_core::ProjectionState> {
        let n = *state.downcast_ref::<u64>()?;
        (event.r#type == "x/count").then(|| Arc::new(n + 1) as turnkit_core::ProjectionState)
    }

    fn view(&self, state: &turnkit_core::ProjectionState) -> serde_json::Value {
        serde_json::json!(state.downcast_ref::<u64>().copied())
    }
}

/// An event appended as text is folded into the host's projections as it is appended, like
/// one appended as a value, and not before a projection exists.
#[tokio::test(start_paused = true)]
async fn raw_appends_are_folded_into_projections() {
    let host = MemoryHarness::new(Arc::new(ManualClock::at_default()));
    let agent = host.create_session(SessionHeader::new("s1")).unwrap();
    let session = agent.session();
    let raw = || turnkit_core::JsonText::serialize(&serde_json::json!({"n": 1})).unwrap();
    // No projection yet: nothing is folded, and the one registered next replays the log.
    session.append_raw("x/count", raw()).unwrap();
    let _registration = host.projections().register(Arc::new(CountX)).unwrap();
    session.append_raw("x/count", raw()).unwrap();
    session.append_raw("x/other", raw()).unwrap();
    session.append("x/count", serde_json::json!({})).unwrap();
    let view = host
        .projections()
        .view(&SessionId::from("s1"), "countX")
        .unwrap();
    assert_eq!((view.value, view.as_of_seq), (serde_json::json!(3), 4));
}

#[tokio::test(start_paused = true)]
async fn manual_clock_fires_sleeps_in_order_and_set_fires_nothing() {
    let clock = ManualClock::at_default();
    let order = Arc::new(Mutex::new(Vec::new()));
    for (name, secs) in [("b", 20u64), ("a", 10)] {
        let clock2 = clock.clone();
        let order = order.clone();
        tokio::spawn(async move {
            clock2.sleep(Duration::from_secs(secs)).await;
            let now = turnkit_core::format_instant(clock2.now());
            order.lock().unwrap().push(format!("{name} {now}"));
        });
    }
    settle().await;
    clock.set(
        chrono::DateTime::parse_from_rfc3339("2030-01-01T00:00:00Z")
            .unwrap()
            .into(),
    );
    settle().await;
    assert!(order.lock().unwrap().is_empty());
    clock.set(
        chrono::DateTime::parse_from_rfc3339("2026-08-05T12:00:00Z")
            .unwrap()
            .into(),
    );
    clock.advance(Duration::from_secs(30)).await;
    assert_eq!(
        *order.lock().unwrap(),
        ["a 2026-08-05T12:00:10.000Z", "b 2026-08-05T12:00:20.000Z"]
    );
    clock.fail_next("boom");
    assert_eq!(
        clock.try_now().unwrap_err().to_string(),
        "clock unavailable: boom"
    );
    assert!(clock.try_now().is_ok());
}

/// `now()` reads without the clock's lock; a reader on another thread must only ever see a
/// time that was set, never half of one and half of another.
#[test]
fn manual_clock_readers_never_see_a_torn_time() {
    let parse = |text: &str| -> chrono::DateTime<chrono::Utc> {
        chrono::DateTime::parse_from_rfc3339(text).unwrap().into()
    };
    let a = parse("2026-08-05T12:00:00.000Z");
    let b = parse("1999-01-01T00:00:00.123Z");
    let clock = ManualClock::new(a);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let clock = clock.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut reads = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let now = clock.now();
                    assert!(now == a || now == b, "torn read: {now}");
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    for i in 0..200_000 {
        clock.set(if i % 2 == 0 { b } else { a });
    }
    stop.store(true, Ordering::Relaxed);
    for reader in readers {
        assert!(reader.join().unwrap() > 0);
    }
    assert_eq!(clock.now(), a);
}

#[tokio::test(start_paused = true)]
async fn manual_clock_millis_agree_with_now_before_and_after_the_epoch() {
    let parse = |text: &str| -> chrono::DateTime<chrono::Utc> {
        chrono::DateTime::parse_from_rfc3339(text).unwrap().into()
    };
    let clock = ManualClock::new(parse("1969-12-31T23:59:59.500Z"));
    assert_eq!(clock.now_millis(), -500);
    clock.advance(Duration::from_micros(1_250)).await;
    assert_eq!(clock.now_millis(), -499);
    assert_eq!(clock.now_millis(), clock.now().timestamp_millis());
    clock.set(parse("2026-08-05T12:00:00.007Z"));
    assert_eq!(clock.now_millis(), 1_785_931_200_007);
    assert_eq!(clock.now_millis(), clock.now().timestamp_millis());
}

/// The agent registry's generation moves with every published, replaced or removed agent and
/// with nothing else (the job registry trusts an owner check while it stays put).
#[tokio::test(start_paused = true)]
async fn the_agents_generation_moves_with_every_change_of_the_live_agents() {
    let host = MemoryHarness::new(Arc::new(ManualClock::at_default()));
    let harness = host.as_dyn();
    let generation = || harness.agents_generation().unwrap();
    let start = generation();
    host.create_session(SessionHeader::new("a")).unwrap();
    assert_eq!(generation(), start + 1);
    let first = host.create_session(SessionHeader::new("b")).unwrap();
    assert_eq!(generation(), start + 2);
    let _ = harness.agent(&"a".into());
    let _ = harness.agents();
    assert_eq!(generation(), start + 2);
    let replacement = host.resume(&"b".into()).unwrap();
    assert!(!Arc::ptr_eq(&first, &replacement));
    assert_eq!(generation(), start + 3);
    assert!(host.dispose_agent(&"b".into()).await);
    assert_eq!(generation(), start + 4);
    // Disposing the replaced instance, which the registry no longer holds, changes nothing.
    assert!(host.dispose_agent(&"b".into()).await);
    assert!(first.is_disposed());
    assert_eq!(generation(), start + 4);
}

/// Every record describes state that is already true: when the recorder sees a followup or
/// an injected message, the agent already holds it, so a runtime that opens a turn on that
/// report claims it in that turn.
#[tokio::test(start_paused = true)]
async fn a_reported_followup_or_inject_is_already_queued() {
    let host = MemoryHarness::new(Arc::new(ManualClock::at_default()));
    host.set_auto_turns(false);
    let agent = host.create_session(SessionHeader::new("s1")).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (sink, watched) = (seen.clone(), Arc::downgrade(&agent));
    host.set_recorder(Arc::new(move |record| {
        let Some(agent) = watched.upgrade() else {
            return;
        };
        match record {
            HostRecord::Followup { text, .. } => {
                sink.lock().unwrap().push(format!(
                    "followup {text}: queued {:?}",
                    agent.pending_input()
                ));
                // A runtime's loop opening the turn the moment it is told.
                agent.start_turn();
            }
            HostRecord::Inject { text, .. } => sink.lock().unwrap().push(format!(
                "inject {text}: inbox {:?}",
                agent.pending_injected()
            )),
            HostRecord::Claimed { text, .. } => {
                sink.lock().unwrap().push(format!("claimed {text}"));
            }
            HostRecord::Turn { .. } => {}
        }
    }));
    agent.inject(notice("n1")).unwrap();
    agent.followup(notice("f1")).unwrap();
    agent.end_turn();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            r#"inject n1: inbox ["n1"]"#,
            r#"followup f1: queued ["f1"]"#,
            "claimed f1",
            "claimed n1",
        ]
    );
    assert_eq!(agent.turns(), 1);
    assert_eq!(agent.pending_input(), Vec::<String>::new());
}

/// Outside a tokio runtime the in-memory host refuses to publish an agent (its turn loop is a
/// task) with a clear error instead of panicking, and creates nothing.
#[test]
fn publishing_an_agent_outside_a_runtime_is_an_error_not_a_panic() {
    let host = MemoryHarness::new(Arc::new(ManualClock::at_default()));
    let error = host.create_session(SessionHeader::new("s1")).unwrap_err();
    assert_eq!(
        error.to_string(),
        "the in-memory host runs each agent's turn loop on a tokio runtime: call this inside one"
    );
    let error = host.resume(&SessionId::from("s1")).unwrap_err();
    assert!(matches!(error, turnkit_testkit::HostError::NoRuntime));
    assert!(host.memory_agent(&SessionId::from("s1")).is_none());
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_disposed_agent_lets_go_of_its_jsonl_session_so_a_restart_can_resume_it() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(chrono::Utc::now());
    let store =
        Arc::new(turnkit_core::JsonlStore::new(dir.path(), Arc::new(clock.clone())).unwrap());
    let host = MemoryHarness::with_store(store.clone(), Arc::new(clock.clone()));
    let agent = host.create_session(SessionHeader::new("s1")).unwrap();
    agent.session().append("a", serde_json::json!({})).unwrap();
    drop(agent);
    host.dispose_all().await;
    // The file's lock went with the last handle: a restarted host resumes the session.
    let restarted = MemoryHarness::restarted_from(&host);
    assert_eq!(
        restarted
            .resume(&SessionId::from("s1"))
            .unwrap()
            .session()
            .len(),
        1
    );
}
