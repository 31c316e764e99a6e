//! The todo benchmarks' session log: `todo/write` JSONL event lines as a JSONL store writes
//! them, shared by `benches/todo.rs` and `benches/replay.rs`.

use serde_json::{Value, json};
use turnkit::core::SessionEvent;

/// `events` `todo/write` event lines; write `i` holds `1 + i % 10` items.
pub(crate) fn replay_lines(events: usize) -> Vec<String> {
    let time = serde_json::from_value::<SessionEvent>(json!({
        "seq": 1, "type": "todo/write", "time": "2026-08-05T12:00:00.000Z", "data": null
    }))
    .unwrap()
    .time;
    (0..events)
        .map(|i| {
            let count = 1 + i % 10;
            let todos: Vec<Value> = (0..count)
                .map(|j| {
                    let status = ["pending", "in_progress", "completed"][(i + j) % 3];
                    json!({"content": format!("task {j} of write {i}"), "status": status})
                })
                .collect();
            let event = SessionEvent {
                seq: i as u64 + 1,
                r#type: "todo/write".to_owned(),
                time,
                data: json!({ "todos": todos }),
            };
            serde_json::to_string(&event).unwrap()
        })
        .collect()
}
