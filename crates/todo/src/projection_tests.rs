//! Unit tests of the `todos` projection (todo-jobs §2.5).

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use turnkit_core::{
    MemoryStore, Projection, ProjectionSet, ProjectionState, SessionEvent, SessionHeader,
    SessionStore, SystemClock, fold_events,
};

use super::*;
use crate::{TodoItem, TodoStatus};

/// An event at a fixed instant (the projection ignores time).
fn event(seq: u64, r#type: &str, data: Value) -> SessionEvent {
    let mut event: SessionEvent = serde_json::from_value(json!({
        "seq": seq, "type": r#type, "time": "2026-08-05T12:00:00.000Z", "data": null
    }))
    .unwrap();
    event.data = data;
    event
}

fn write(seq: u64, todos: Value) -> SessionEvent {
    let mut data = serde_json::Map::new();
    data.insert("todos".to_owned(), todos);
    event(seq, "todo/write", Value::Object(data))
}

fn view(state: &ProjectionState) -> Value {
    TodosProjection.view(state)
}

#[test]
fn key_init_and_version() {
    assert_eq!(TodosProjection.key(), "todos");
    assert_eq!(TODOS_STATE_VERSION, 2);
    assert_eq!(view(&TodosProjection.init()), Value::Null);
    assert_eq!(TodosProjection::state(&TodosProjection.init()), None);
}

#[test]
fn todo_write_replaces_the_whole_list() {
    let p = TodosProjection;
    let first = p
        .apply(
            &p.init(),
            &write(1, json!([{"content": "a", "status": "pending"}])),
        )
        .unwrap();
    assert_eq!(view(&first), json!([{"content": "a", "status": "pending"}]));
    let second = p
        .apply(&first, &write(2, json!([{"content": "b", "status": "completed"}, {"content": "c", "status": "in_progress"}])))
        .unwrap();
    assert_eq!(
        view(&second),
        json!([{"content": "b", "status": "completed"}, {"content": "c", "status": "in_progress"}])
    );
    assert_eq!(
        TodosProjection::state(&second).as_deref(),
        Some(
            &[
                TodoItem::new("b", TodoStatus::Completed),
                TodoItem::new("c", TodoStatus::InProgress)
            ][..]
        )
    );
}

#[test]
fn an_empty_list_is_distinct_from_null() {
    let p = TodosProjection;
    let empty = p.apply(&p.init(), &write(1, json!([]))).unwrap();
    assert_eq!(view(&empty), json!([]));
    // turn/start clears it to null.
    let cleared = p
        .apply(&empty, &event(2, "turn/start", json!({"turn": 1})))
        .unwrap();
    assert_eq!(view(&cleared), Value::Null);
}

// C-025 (unit level): turn/end keeps the plan; turn/start clears it.
#[test]
fn turn_end_keeps_turn_start_clears() {
    let p = TodosProjection;
    let state = p
        .apply(
            &p.init(),
            &write(1, json!([{"content": "done", "status": "completed"}])),
        )
        .unwrap();
    assert!(
        p.apply(
            &state,
            &event(2, "turn/end", json!({"turn": 1, "reason": "stop"}))
        )
        .is_none()
    );
    assert_eq!(
        view(&state),
        json!([{"content": "done", "status": "completed"}])
    );
    let cleared = p
        .apply(&state, &event(3, "turn/start", json!({"turn": 2})))
        .unwrap();
    assert_eq!(view(&cleared), Value::Null);
    // Already null: turn/start is no change at all.
    assert!(
        p.apply(&cleared, &event(4, "turn/start", json!({"turn": 3})))
            .is_none()
    );
}

// C-027: unrelated events return "unchanged" (no new state, nothing cloned).
#[test]
fn unrelated_events_leave_the_state_unchanged() {
    let p = TodosProjection;
    let state = p
        .apply(
            &p.init(),
            &write(1, json!([{"content": "x", "status": "pending"}])),
        )
        .unwrap();
    for t in [
        "user/message",
        "step/start",
        "turn/end",
        "tools/change",
        "schedule/change",
        "todo/writes",
    ] {
        assert!(
            p.apply(&state, &event(2, t, json!({"todos": []})))
                .is_none(),
            "{t}"
        );
    }
}

#[test]
fn malformed_writes_are_ignored() {
    let p = TodosProjection;
    let state = p
        .apply(
            &p.init(),
            &write(1, json!([{"content": "x", "status": "pending"}])),
        )
        .unwrap();
    for data in [
        json!({"todos": "not-an-array"}),
        json!({"todos": [null]}),
        json!({"todos": [{"content": 42, "status": "pending"}]}),
        json!({"todos": [{"content": "a", "status": "paused"}]}),
        json!({"todos": [{"content": "a", "status": {"pending": null}}]}),
        json!({"todos": [["a", "pending"]]}),
        json!({"todos": [{"content": "a", "status": "pending", "extra": 1}]}),
        json!(["a"]),
        json!(null),
    ] {
        assert!(
            p.apply(&state, &event(2, "todo/write", data.clone()))
                .is_none(),
            "{data}"
        );
    }
    assert_eq!(view(&state), json!([{"content": "x", "status": "pending"}]));
}

#[test]
fn fold_matches_last_write_wins() {
    let events = [
        write(1, json!([{"content": "a", "status": "pending"}])),
        event(2, "turn/end", json!({"turn": 1})),
        write(3, json!([{"content": "b", "status": "pending"}])),
        event(4, "step/start", json!({})),
    ];
    let state = fold_events(&TodosProjection, &events);
    assert_eq!(view(&state), json!([{"content": "b", "status": "pending"}]));
}

// C-023 (building-block level): null before the first write, asOfSeq = last seq.
#[test]
fn through_a_projection_set() {
    let store = MemoryStore::new(Arc::new(SystemClock));
    let session = store.create(SessionHeader::new("s")).unwrap();
    session
        .append("user/message", json!({"text": "hi"}))
        .unwrap();
    let set = ProjectionSet::new();
    let registration = set.register(Arc::new(TodosProjection)).unwrap();
    set.track(session.clone());
    let v = set.view(session.id(), "todos").unwrap();
    assert_eq!((v.value, v.as_of_seq), (Value::Null, 1));

    let appended = session
        .append(
            "todo/write",
            json!({"todos": [{"content": "a", "status": "pending"}]}),
        )
        .unwrap();
    set.apply(session.id(), &appended);
    let v = set.view(session.id(), "todos").unwrap();
    assert_eq!(
        (v.value, v.as_of_seq),
        (json!([{"content": "a", "status": "pending"}]), 2)
    );

    registration.unregister();
    assert_eq!(set.view(session.id(), "todos"), None);
    assert_eq!(set.keys(), Vec::<String>::new());
}

/// A replay keeps a `todo/write` in the tool's own form as its event and decodes the items of
/// the last one only, the first time they are read.
#[test]
fn a_replay_decodes_only_the_list_it_ends_with_once() {
    let raw = |seq: u64, content: &str| {
        let data = json!({"todos": [{"content": content, "status": "pending"}]});
        turnkit_core::RawEvent::new(
            seq,
            "todo/write",
            event(seq, "t", Value::Null).time,
            &data.to_string(),
        )
        .unwrap()
    };
    let events = [raw(1, "a"), raw(2, "b"), raw(3, "c")];
    let state = turnkit_core::fold_raw_events(&TodosProjection, &events);
    let list = stored(&state).unwrap();
    assert!(
        list.items.get().is_none(),
        "nothing is decoded before a read"
    );
    let first = TodosProjection::state(&state).unwrap();
    assert_eq!(&*first, &[TodoItem::new("c", TodoStatus::Pending)][..]);
    let again = TodosProjection::state(&state).unwrap();
    assert!(Arc::ptr_eq(&first, &again), "the items are decoded once");
}
