use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use turnkit_core::RawEvent;
use turnkit_jobs::JobSnapshot;

use super::*;

fn raw(seq: u64, r#type: &str, data: &Value) -> RawEvent {
    let line =
        json!({"seq": seq, "type": r#type, "time": "2026-08-05T12:00:00.000Z", "data": data});
    RawEvent::from_line(line.to_string().as_bytes()).unwrap()
}

#[test]
fn start_and_settle_round_trip() {
    let payload = start_payload(
        &JobId::new("bash-3"),
        &JobKind::bash(),
        &JobLabel::new("make"),
        5,
        None,
    )
    .unwrap();
    assert_eq!(
        payload.as_str(),
        r#"{"version":1,"id":"bash-3","kind":"bash","label":"make","startedAt":5}"#
    );
    let payload: Value = serde_json::from_str(payload.as_str()).unwrap();
    let start = decode_start(&raw(1, JOB_START_EVENT, &payload)).unwrap();
    assert_eq!((start.id.as_str(), start.started_at), ("bash-3", 5));
}

#[test]
fn unknown_keys_versions_and_statuses_are_refused() {
    let extra = raw(
        7,
        JOB_START_EVENT,
        &json!({"version":1,"id":"bash-1","kind":"bash","label":"x","startedAt":0,"pid":3}),
    );
    let error = decode_start(&extra).unwrap_err().to_string();
    assert!(
        error.starts_with("corrupt job journal at seq 7: unknown field `pid`"),
        "{error}"
    );
    let v2 = raw(
        8,
        JOB_SETTLE_EVENT,
        &json!({"version":2,"id":"bash-1","status":"completed","finishedAt":1}),
    );
    assert_eq!(
        decode_settle(&v2).unwrap_err().to_string(),
        "corrupt job journal at seq 8: unsupported version 2"
    );
    let running = raw(
        9,
        JOB_SETTLE_EVENT,
        &json!({"version":1,"id":"bash-1","status":"running","finishedAt":1}),
    );
    assert_eq!(
        decode_settle(&running).unwrap_err().to_string(),
        "corrupt job journal at seq 9: unknown terminal status \"running\""
    );
}

fn settled(detail: Option<&str>) -> JobSnapshot {
    JobSnapshot {
        id: JobId::new("subagent-2"),
        kind: JobKind::new("subagent"),
        label: JobLabel::new("summarize"),
        output_limit_bytes: None,
        owner_session: None,
        status: turnkit_jobs::JobStatus::Killed,
        detail: detail.map(Into::into),
        started_at: 4,
        finished_at: Some(9),
        reported: false,
    }
}

#[test]
fn settle_payloads_are_the_documented_text() {
    assert_eq!(
        settle_payload(&settled(None), None, None).unwrap().as_str(),
        r#"{"version":1,"id":"subagent-2","status":"killed","finishedAt":9}"#
    );
    assert_eq!(
        settle_payload(&settled(Some("cancelled")), Some("3 notes\n\"done\""), None)
            .unwrap()
            .as_str(),
        r#"{"version":1,"id":"subagent-2","status":"killed","detail":"cancelled","finishedAt":9,"output":"3 notes\n\"done\""}"#
    );
    // Too long: the tail is kept, then the truncation marker, within the bound; a cut
    // inside `é` (two bytes) drops the whole character.
    let long = format!("é{}", "a".repeat(JOURNAL_OUTPUT_BYTES));
    let payload = settle_payload(&settled(None), Some(&long), None).unwrap();
    let expected = format!(
        r#"{{"version":1,"id":"subagent-2","status":"killed","finishedAt":9,"output":"{}\n[output truncated]","outputTruncated":true}}"#,
        "a".repeat(JOURNAL_OUTPUT_BYTES - "\n[output truncated]".len())
    );
    assert_eq!(payload.as_str(), expected);
    // The job's own output limit bounds it when smaller.
    let mut limited = settled(None);
    limited.output_limit_bytes = Some(24);
    let payload = settle_payload(&limited, Some("0123456789abcdef"), None).unwrap();
    assert_eq!(
        payload.as_str(),
        r#"{"version":1,"id":"subagent-2","status":"killed","finishedAt":9,"output":"0123456789abcdef"}"#
    );
    let payload = settle_payload(&limited, Some("0123456789abcdefghijklmnop"), None).unwrap();
    assert_eq!(
        payload.as_str(),
        r#"{"version":1,"id":"subagent-2","status":"killed","finishedAt":9,"output":"lmnop\n[output truncated]","outputTruncated":true}"#
    );
    // A settle with no finish time records its start (never reached by the registry).
    let mut open = settled(None);
    open.finished_at = None;
    assert_eq!(
        settle_payload(&open, None, None).unwrap().as_str(),
        r#"{"version":1,"id":"subagent-2","status":"killed","finishedAt":4}"#
    );
}

/// The text is byte for byte what `serde_json` writes for the payload as a `Value` (what the
/// journal appended before it wrote text), escapes included.
#[test]
fn payload_text_is_the_value_form() {
    let label = JobLabel::new("echo \"hi\"\t\u{1} é \\ </script>");
    let text = start_payload(&JobId::new("bash-12"), &JobKind::bash(), &label, -3, None).unwrap();
    let value = json!({
        "version": JOURNAL_VERSION,
        "id": "bash-12",
        "kind": "bash",
        "label": label.as_str(),
        "startedAt": -3,
    });
    assert_eq!(text.as_str(), value.to_string());
    let output = "line 1\nline 2\r\n\u{7f}\u{2028}";
    let text = settle_payload(&settled(Some("exit \"1\"")), Some(output), None).unwrap();
    let value = json!({
        "version": JOURNAL_VERSION,
        "id": "subagent-2",
        "status": "killed",
        "detail": "exit \"1\"",
        "finishedAt": 9,
        "output": output,
    });
    assert_eq!(text.as_str(), value.to_string());
}

#[test]
fn a_settlement_keeps_its_teardown_reason_and_a_lost_event_its_ids() {
    let snapshot = JobSnapshot {
        id: JobId::new("bash-2"),
        kind: JobKind::bash(),
        label: JobLabel::new("sleep 9"),
        output_limit_bytes: None,
        owner_session: None,
        status: JobStatus::Killed,
        detail: Some("killed by SIGTERM".into()),
        started_at: 1,
        finished_at: Some(2),
        reported: true,
    };
    let payload = settle_payload(&snapshot, None, Some("owner disposed")).unwrap();
    assert_eq!(
        payload.as_str(),
        r#"{"version":1,"id":"bash-2","status":"killed","detail":"killed by SIGTERM","finishedAt":2,"teardown":"owner disposed"}"#
    );
    let payload: Value = serde_json::from_str(payload.as_str()).unwrap();
    let settle = decode_settle(&raw(3, JOB_SETTLE_EVENT, &payload)).unwrap();
    assert_eq!(settle.teardown.as_deref(), Some("owner disposed"));
    let lost = lost_payload(&[JobId::new("bash-2"), JobId::new("fake-1")]);
    assert_eq!(
        lost.to_string(),
        r#"{"version":1,"ids":["bash-2","fake-1"]}"#
    );
    assert_eq!(
        decode_lost(&raw(4, JOB_LOST_EVENT, &lost)).unwrap().ids,
        [JobId::new("bash-2"), JobId::new("fake-1")]
    );
}

#[test]
fn lost_events_are_decoded_strictly() {
    let cases = [
        (
            json!({"version":1,"ids":[]}),
            "corrupt job journal at seq 5: a job/lost event names no job",
        ),
        (
            json!({"version":2,"ids":["bash-1"]}),
            "corrupt job journal at seq 5: unsupported version 2",
        ),
    ];
    for (data, expected) in cases {
        let error = decode_lost(&raw(5, JOB_LOST_EVENT, &data)).unwrap_err();
        assert_eq!(error.to_string(), expected);
    }
    let extra = json!({"version":1,"ids":["bash-1"],"at":3});
    let error = decode_lost(&raw(5, JOB_LOST_EVENT, &extra))
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("corrupt job journal at seq 5: unknown field `at`"),
        "{error}"
    );
}

/// A memory session holding `events` (type, data), forked after the first `seed` of them
/// when `seed` is given.
fn session_with(events: &[(&str, Value)], seed: Option<usize>) -> std::sync::Arc<dyn Session> {
    use turnkit_core::{MemoryStore, SessionHeader, SessionStore};
    let store = MemoryStore::new(std::sync::Arc::new(turnkit_core::SystemClock));
    let parent = store.create(SessionHeader::new("parent")).unwrap();
    let (inherited, own) = events.split_at(seed.unwrap_or(0));
    for (r#type, data) in inherited {
        parent.append(r#type, data.clone()).unwrap();
    }
    let session = match seed {
        Some(_) => store.fork(&*parent, "child".into()).unwrap(),
        None => parent,
    };
    for (r#type, data) in own {
        session.append(r#type, data.clone()).unwrap();
    }
    session
}

fn start(id: &str) -> (&'static str, Value) {
    let kind = id.rsplit_once('-').unwrap().0;
    (
        JOB_START_EVENT,
        json!({"version":1,"id":id,"kind":kind,"label":"l","startedAt":10}),
    )
}

fn settle(id: &str, teardown: Option<&str>) -> (&'static str, Value) {
    let mut data = json!({"version":1,"id":id,"status":"killed","detail":"d","finishedAt":20});
    if let Some(reason) = teardown {
        data["teardown"] = json!(reason);
    }
    (JOB_SETTLE_EVENT, data)
}

fn summary(view: &JournalView) -> (Vec<String>, Vec<&str>, Vec<(String, u64)>) {
    let history = view
        .history
        .iter()
        .map(|e| {
            format!(
                "{} {} {:?} {}",
                e.id,
                e.status,
                e.detail.as_deref(),
                e.finished_at
            )
        })
        .collect();
    let lost = view
        .lost
        .iter()
        .map(|&i| view.history[i].id.as_str())
        .collect();
    let highest = view
        .highest
        .iter()
        .map(|(k, n)| (k.to_string(), *n))
        .collect();
    (history, lost, highest)
}

#[test]
fn the_fold_finds_jobs_lost_by_a_dead_or_a_stopped_host_once() {
    let session = session_with(
        &[
            start("bash-1"),
            settle("bash-1", None),
            start("bash-2"),
            start("bash-3"),
            settle("bash-3", Some("jobs service disposed")),
            start("fake-4"),
            (JOB_LOST_EVENT, json!({"version":1,"ids":["fake-4"]})),
            (JOB_LOST_EVENT, json!({"version":1,"ids":[]})),
        ],
        None,
    );
    let view = read_journal(&*session, 99);
    assert_eq!(
        summary(&view),
        (
            vec![
                "bash-1 killed Some(\"d\") 20".to_owned(),
                "bash-2 failed Some(\"the host stopped while it ran\") 99".to_owned(),
                // Settled by the teardown of a clean shutdown: stopped by it, not lost.
                "bash-3 killed Some(\"stopped by the host's shutdown\") 20".to_owned(),
                "fake-4 failed Some(\"the host stopped while it ran\") 99".to_owned(),
            ],
            vec!["bash-2", "bash-3"],
            vec![("bash".to_owned(), 3), ("fake".to_owned(), 4)],
        )
    );
}

#[test]
fn a_fork_keeps_its_parents_ids_but_neither_shows_nor_reports_its_jobs() {
    let session = session_with(
        &[
            start("bash-1"),
            settle("bash-1", None),
            start("bash-2"),
            start("bash-3"),
        ],
        Some(3),
    );
    assert_eq!(session.header().seed_length, Some(3));
    let view = read_journal(&*session, 99);
    assert_eq!(
        summary(&view),
        (
            vec!["bash-3 failed Some(\"the host stopped while it ran\") 99".to_owned()],
            vec!["bash-3"],
            vec![("bash".to_owned(), 3)],
        )
    );
}
