//! Unit tests of the §2.6 invariant (C-029, C-030).

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::*;

fn event(seq: u64, r#type: &str, data: Value) -> SessionEvent {
    let mut event: SessionEvent = serde_json::from_value(json!({
        "seq": seq, "type": r#type, "time": "2026-08-05T12:00:00.000Z", "data": null
    }))
    .unwrap();
    event.data = data;
    event
}

// C-029: every row of the table, with the exact message.
#[test]
fn rejects_incoherent_snapshots() {
    let cases = [
        (json!("not-an-array"), "todo/write todos must be an array"),
        (json!([null]), "todo/write entries must be objects"),
        (json!([42]), "todo/write entries must be objects"),
        (
            json!([{"content": 42, "status": "pending"}]),
            "todo/write content must be non-empty and already trimmed",
        ),
        (
            json!([{"content": "", "status": "pending"}]),
            "todo/write content must be non-empty and already trimmed",
        ),
        (
            json!([{"content": " padded ", "status": "pending"}]),
            "todo/write content must be non-empty and already trimmed",
        ),
        (
            json!([{"content": "\u{FEFF}bom", "status": "pending"}]),
            "todo/write content must be non-empty and already trimmed",
        ),
        (
            json!([{"status": "pending"}]),
            "todo/write content must be non-empty and already trimmed",
        ),
        (
            json!([{"content": "same", "status": "pending"}, {"content": "same", "status": "completed"}]),
            r#"todo/write repeats content "same""#,
        ),
        (
            json!([{"content": "task", "status": 42}]),
            "todo/write carries unknown status 42",
        ),
        (
            json!([{"content": "task", "status": "paused"}]),
            r#"todo/write carries unknown status "paused""#,
        ),
        (
            json!([{"content": "task"}]),
            "todo/write carries unknown status undefined",
        ),
        // Evaluation order within and across entries.
        (
            json!([{"content": "a", "status": "paused"}, null]),
            r#"todo/write carries unknown status "paused""#,
        ),
        (
            json!([{"content": "a", "status": "pending"}, {"content": "a", "status": "paused"}]),
            r#"todo/write repeats content "a""#,
        ),
    ];
    for (todos, message) in cases {
        let data = json!({ "todos": todos });
        assert_eq!(
            check_todo_write(&data),
            Err(IncoherentWrite(message.to_owned())),
            "{data}"
        );
        assert_eq!(
            check_event(&event(7, "todo/write", data.clone())),
            Err(InvariantViolation {
                seq: 7,
                message: message.to_owned()
            })
        );
    }
    // A payload that is not an object has no todos array.
    assert_eq!(
        check_todo_write(&json!([])),
        Err(IncoherentWrite(
            "todo/write todos must be an array".to_owned()
        ))
    );
}

#[test]
fn accepts_coherent_snapshots_under_any_parallel_policy() {
    for todos in [
        json!([]),
        json!([{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}]),
        json!([{"content": "\u{200B}x", "status": "completed"}, {"content": "A", "status": "pending"}, {"content": "a", "status": "pending"}]),
    ] {
        assert_eq!(check_todo_write(&json!({ "todos": todos })), Ok(()));
    }
}

// C-030: other events pass; a bad history fails naming the repeat.
#[test]
fn ignores_other_events_and_rejects_bad_history() {
    assert_eq!(
        check_event(&event(1, "tools/change", json!("anything"))),
        Ok(())
    );
    assert_eq!(
        check_event(&event(2, "turn/start", json!({"turn": 1}))),
        Ok(())
    );

    let history = [
        event(1, "turn/start", json!({"turn": 1})),
        event(
            2,
            "todo/write",
            json!({"todos": [{"content": "ok", "status": "pending"}]}),
        ),
        event(
            3,
            "todo/write",
            json!({"todos": [{"content": "duplicate", "status": "pending"}, {"content": "duplicate", "status": "pending"}]}),
        ),
        event(4, "todo/write", json!({"todos": "bad"})),
    ];
    let violation = check_history(&history).unwrap_err();
    assert_eq!(
        violation,
        InvariantViolation {
            seq: 3,
            message: r#"todo/write repeats content "duplicate""#.to_owned()
        }
    );
    assert_eq!(
        violation.to_string(),
        r#"event 3: todo/write repeats content "duplicate""#
    );
    assert_eq!(
        find_violations(&history)
            .into_iter()
            .map(|v| v.seq)
            .collect::<Vec<_>>(),
        [3, 4]
    );
    assert_eq!(check_history(&history[..2]), Ok(()));
}
