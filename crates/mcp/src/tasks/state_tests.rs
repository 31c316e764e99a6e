use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_core::{MemoryStore, Session, SessionHeader, SessionStore, SystemClock};

use super::*;

fn session() -> Arc<dyn Session> {
    MemoryStore::new(Arc::new(SystemClock))
        .create(SessionHeader::new("s1"))
        .unwrap()
}

fn opened() -> serde_json::Value {
    json!({"taskId": "task-1", "job": "bash-1", "createdAt": "2026-08-05T12:00:00.000Z", "ttlMs": 86_400_000, "pollIntervalMs": 500})
}

#[test]
fn replay_rebuilds_tasks_and_refuses_what_breaks_the_rules() {
    let log = session();
    log.append(TASK_EVENT, opened()).unwrap();
    log.append(
        TASK_DELIVERED_EVENT,
        json!({"taskId": "task-1", "seqs": [], "content": ["done"]}),
    )
    .unwrap();
    let tasks = Tasks::replay(&log.events(), 5).unwrap();
    let entry = tasks.update("task-1", |_| {}).unwrap();
    assert_eq!(entry.target, Target::Job("bash-1".to_owned()));
    assert_eq!(entry.delivered, Some(vec!["done".to_owned()]));
    assert_eq!(entry.created_ms, 1_785_931_200_000);
    assert_eq!(entry.seen_ms, 5);
    assert_eq!(entry.hold(), None);
    assert_eq!(tasks.next_id(), "task-2");

    let log = session();
    log.append(TASK_EVENT, opened()).unwrap();
    log.append(TASK_EVENT, opened()).unwrap();
    assert_eq!(
        Tasks::replay(&log.events(), 0).unwrap_err().to_string(),
        "corrupt inbox log at seq 2: task task-1 opened twice"
    );
    let log = session();
    log.append(TASK_CANCELLED_EVENT, json!({"taskId": "task-3"}))
        .unwrap();
    assert_eq!(
        Tasks::replay(&log.events(), 0).unwrap_err().to_string(),
        "corrupt inbox log at seq 1: no task task-3"
    );
    let log = session();
    log.append(
        TASK_EVENT,
        json!({"taskId": "task-1", "job": "bash-1", "schedule": "schedule-1", "createdAt": "2026-08-05T12:00:00.000Z", "ttlMs": 1, "pollIntervalMs": 1}),
    )
    .unwrap();
    assert_eq!(
        Tasks::replay(&log.events(), 0).unwrap_err().to_string(),
        "corrupt inbox log at seq 1: a task names one job, or one schedule with its dueAt"
    );
}

#[test]
fn an_open_task_holds_its_delivery_for_three_polls_at_least_ten_seconds() {
    let log = session();
    log.append(TASK_EVENT, opened()).unwrap();
    let tasks = Tasks::replay(&log.events(), 1_785_931_200_000).unwrap();
    assert_eq!(
        tasks.holds(),
        vec![Hold {
            task: "task-1".to_owned(),
            needle: "background job bash-1 (".to_owned(),
            after: 1,
            until: 1_785_931_210_000,
        }]
    );
    let reminder = Target::Reminder {
        schedule: "schedule-1".to_owned(),
        due: 0,
    };
    assert_eq!(reminder.needle(), "schedule_id_json: \"schedule-1\"\n");
}
