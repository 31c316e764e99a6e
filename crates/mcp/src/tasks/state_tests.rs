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
    assert_eq!(
        entry.delivered,
        Some(Completion {
            content: vec!["done".to_owned()],
            is_error: false,
        })
    );
    assert_eq!(entry.created_ms, 1_785_931_200_000);
    assert_eq!(entry.seen_ms, 5);
    assert_eq!(entry.hold(), None);

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
            subject: Subject::job("bash-1"),
            after: 1,
            until: 1_785_931_210_000,
        }]
    );
    let reminder = Target::Reminder {
        schedule: "schedule-1".to_owned(),
        due: 0,
    };
    assert_eq!(reminder.subject(), Subject::reminder("schedule-1", 0));
}

#[test]
fn a_task_id_opened_twice_keeps_its_first_record_and_the_rest_of_the_log() {
    let log = session();
    log.append(TASK_EVENT, opened()).unwrap();
    let mut again = opened();
    again["job"] = json!("bash-2");
    log.append(TASK_EVENT, again).unwrap();
    log.append(
        TASK_DELIVERED_EVENT,
        json!({"taskId": "task-1", "seqs": [], "content": ["oops"], "isError": true}),
    )
    .unwrap();
    let tasks = Tasks::replay(&log.events(), 5).unwrap();
    assert_eq!(tasks.len(), 1);
    let entry = tasks.update("task-1", |_| {}).unwrap();
    assert_eq!(
        (entry.seq, entry.target),
        (1, Target::Job("bash-1".to_owned()))
    );
    assert_eq!(
        entry.delivered,
        Some(Completion {
            content: vec!["oops".to_owned()],
            is_error: true,
        })
    );
}

#[test]
fn ids_are_random_uuids_reserved_until_pushed_and_expired_tasks_are_pruned() {
    let log = session();
    log.append(TASK_EVENT, opened()).unwrap();
    // Replayed past its TTL, the task is read (the delivery naming it decodes) and left out.
    log.append(
        TASK_DELIVERED_EVENT,
        json!({"taskId": "task-1", "seqs": [], "content": ["done"]}),
    )
    .unwrap();
    let created = 1_785_931_200_000;
    let tasks = Tasks::replay(&log.events(), created + 86_400_000).unwrap();
    assert_eq!(tasks.len(), 0);
    let tasks = Tasks::replay(&log.events(), created + 86_399_999).unwrap();
    assert_eq!(tasks.len(), 1);

    let ids: Vec<String> = (0..1000).map(|_| tasks.reserve_id().unwrap()).collect();
    let distinct: std::collections::HashSet<&String> = ids.iter().collect();
    assert_eq!(distinct.len(), 1000);
    for id in &ids {
        // 8-4-4-4-12 lowercase hex, version 4, RFC 4122 variant.
        let parsed = uuid::Uuid::parse_str(id).unwrap();
        assert_eq!(parsed.hyphenated().to_string(), *id);
        assert_eq!(parsed.get_version_num(), 4);
        assert_eq!(parsed.get_variant(), uuid::Variant::RFC4122);
    }
    let mut entry = tasks.update("task-1", |_| {}).unwrap();
    entry.id.clone_from(&ids[0]);
    entry.created_ms = created + 1_000;
    tasks.push(entry);
    assert_eq!(tasks.len(), 2);
    assert_eq!(tasks.prune(created + 86_399_999), Vec::<String>::new());
    assert_eq!(tasks.prune(created + 86_400_000), vec!["task-1".to_owned()]);
    assert_eq!(tasks.prune(created + 86_401_000), vec![ids[0].clone()]);
    assert_eq!(tasks.len(), 0);
}
