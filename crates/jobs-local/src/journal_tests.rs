use harness_core::RawEvent;
use pretty_assertions::assert_eq;
use serde_json::json;

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
    );
    assert_eq!(
        serde_json::to_string(&payload).unwrap(),
        r#"{"version":1,"id":"bash-3","kind":"bash","label":"make","startedAt":5}"#
    );
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
