use harness_core::RawEvent;
use harness_jobs::JobSnapshot;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

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
        status: harness_jobs::JobStatus::Killed,
        detail: detail.map(Into::into),
        started_at: 4,
        finished_at: Some(9),
        reported: false,
    }
}

#[test]
fn settle_payloads_are_the_documented_text() {
    assert_eq!(
        settle_payload(&settled(None), None).unwrap().as_str(),
        r#"{"version":1,"id":"subagent-2","status":"killed","finishedAt":9}"#
    );
    assert_eq!(
        settle_payload(&settled(Some("cancelled")), Some("3 notes\n\"done\""))
            .unwrap()
            .as_str(),
        r#"{"version":1,"id":"subagent-2","status":"killed","detail":"cancelled","finishedAt":9,"output":"3 notes\n\"done\""}"#
    );
    // Cut at a character boundary below the limit: `é` is two bytes across byte 4096.
    let long = format!("{}é", "a".repeat(JOURNAL_OUTPUT_BYTES - 1));
    let payload = settle_payload(&settled(None), Some(&long)).unwrap();
    let expected = format!(
        r#"{{"version":1,"id":"subagent-2","status":"killed","finishedAt":9,"output":"{}","outputTruncated":true}}"#,
        "a".repeat(JOURNAL_OUTPUT_BYTES - 1)
    );
    assert_eq!(payload.as_str(), expected);
    // A settle with no finish time records its start (never reached by the registry).
    let mut open = settled(None);
    open.finished_at = None;
    assert_eq!(
        settle_payload(&open, None).unwrap().as_str(),
        r#"{"version":1,"id":"subagent-2","status":"killed","finishedAt":4}"#
    );
}

/// The text is byte for byte what `serde_json` writes for the payload as a `Value` (what the
/// journal appended before it wrote text), escapes included.
#[test]
fn payload_text_is_the_value_form() {
    let label = JobLabel::new("echo \"hi\"\t\u{1} é \\ </script>");
    let text = start_payload(&JobId::new("bash-12"), &JobKind::bash(), &label, -3).unwrap();
    let value = json!({
        "version": JOURNAL_VERSION,
        "id": "bash-12",
        "kind": "bash",
        "label": label.as_str(),
        "startedAt": -3,
    });
    assert_eq!(text.as_str(), value.to_string());
    let output = "line 1\nline 2\r\n\u{7f}\u{2028}";
    let text = settle_payload(&settled(Some("exit \"1\"")), Some(output)).unwrap();
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
