//! The replay path's positional `todo/write` reader against the `Value` decoder: whenever
//! it reads a list, that is the list [`TodoWriteEvent`] decodes from the same text, also under
//! any single-byte corruption.

use pretty_assertions::assert_eq;
use proptest::prelude::*;
use serde::Deserialize;

use super::*;
use crate::TodoStatus;

const PAYLOADS: &[&str] = &[
    r#"{"todos":[{"content":"a","status":"pending"},{"content":"b c","status":"in_progress"},{"content":"d","status":"completed"}]}"#,
    r#"{"todos":[]}"#,
    r#"{"todos":[{"content":" x ","status":"pending"}]}"#,
];

/// What the replay path keeps for `text`: the list it decodes when read, if the payload is in
/// the tool's own form.
fn canonical_todos(text: &str) -> Option<Vec<TodoItem>> {
    let time = serde_json::from_str::<SessionEvent>(
        r#"{"seq":1,"type":"t","time":"2026-08-05T12:00:00.000Z","data":null}"#,
    )
    .unwrap()
    .time;
    is_canonical(text).then(|| {
        let event = turnkit_core::RawEvent::new(1, "todo/write", time, text).unwrap();
        TodoList::checked(&event).items().to_vec()
    })
}

fn by_value(text: &str) -> Option<Vec<TodoItem>> {
    let value: Value = serde_json::from_str(text).ok()?;
    TodoWriteEvent::deserialize(&value).ok().map(|p| p.todos)
}

#[test]
fn reads_the_tool_form() {
    assert_eq!(
        canonical_todos(PAYLOADS[0]),
        Some(vec![
            TodoItem::new("a", TodoStatus::Pending),
            TodoItem::new("b c", TodoStatus::InProgress),
            TodoItem::new("d", TodoStatus::Completed),
        ])
    );
    assert_eq!(canonical_todos(PAYLOADS[1]), Some(Vec::new()));
    assert_eq!(
        canonical_todos(r#"{"todos":[{"content":"a","status":"paused"}]}"#),
        None
    );
    assert_eq!(canonical_todos(r#"{"todos": []}"#), None);
    for payload in PAYLOADS {
        assert_eq!(canonical_todos(payload), by_value(payload), "{payload}");
    }
}

proptest! {
    #[test]
    fn a_list_read_by_position_is_the_decoded_list(
        which in 0..PAYLOADS.len(),
        position in any::<usize>(),
        byte in any::<u8>(),
    ) {
        let mut text = PAYLOADS[which].as_bytes().to_vec();
        let at = position % text.len();
        text[at] = byte;
        if let Ok(text) = std::str::from_utf8(&text)
            && let Some(todos) = canonical_todos(text)
        {
            prop_assert_eq!(Some(todos), by_value(text));
        }
    }
}

/// The invariant check on the log's own form says what the check on the decoded event says.
#[test]
fn raw_invariant_check_agrees_with_the_decoded_check() {
    let time = serde_json::from_str::<SessionEvent>(
        r#"{"seq":1,"type":"t","time":"2026-08-05T12:00:00.000Z","data":null}"#,
    )
    .unwrap()
    .time;
    for payload in PAYLOADS.iter().copied().chain([
        r#"{"todos":[{"content":"a","status":"pending"},{"content":"a","status":"completed"}]}"#,
        r#"{"todos":[{"content":"","status":"pending"}]}"#,
        r#"{"todos":[{"content":"a","status":"paused"}]}"#,
        r#"{"todos":[{"content":"a"}]}"#,
        r#"{"todos":[["a","pending"]]}"#,
        r#"[{"todos":[]}]"#,
        r#"{"todos":{}}"#,
    ]) {
        let event = turnkit_core::RawEvent::new(7, "todo/write", time, payload).unwrap();
        assert_eq!(
            crate::check_raw_event(&event),
            crate::check_event(&event.to_event()),
            "{payload}"
        );
    }
}
