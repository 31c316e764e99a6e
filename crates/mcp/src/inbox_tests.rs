use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_core::{
    MemoryStore, MessageSource, SessionHeader, SessionStore, Subject, SystemClock, UserMessage,
};

use super::*;

fn reminder(text: &str) -> UserMessage {
    UserMessage::text(
        text,
        MessageSource::Plugin {
            plugin: "schedule".to_owned(),
            form: None,
            summary: None,
        },
    )
}

fn inbox() -> (Arc<dyn Session>, Inbox) {
    let store = MemoryStore::new(Arc::new(SystemClock));
    let session = store.create(SessionHeader::new("s1")).unwrap();
    let inbox = Inbox::open(session.clone()).unwrap();
    (session, inbox)
}

fn texts(pending: &[Pending]) -> Vec<(u64, String)> {
    pending
        .iter()
        .map(|p| (p.seq, p.message.joined_text()))
        .collect()
}

#[test]
fn queued_messages_are_reserved_once_in_order_and_claimed_in_the_log() {
    let (session, inbox) = inbox();
    inbox.queue(Lane::Followup, reminder("one")).unwrap();
    inbox.queue(Lane::Inject, reminder("two")).unwrap();
    let (key, taken) = inbox.reserve(0).unwrap();
    assert_eq!(
        texts(&taken),
        vec![(1, "one".to_owned()), (2, "two".to_owned())]
    );
    // A second result while the first is in flight gets nothing new.
    assert!(inbox.reserve(0).is_none());
    inbox.queue(Lane::Followup, reminder("three")).unwrap();
    let (second, taken) = inbox.reserve(0).unwrap();
    assert_eq!(texts(&taken), vec![(3, "three".to_owned())]);
    let claimed: Vec<String> = inbox
        .commit(key)
        .messages
        .iter()
        .map(|m| m.joined_text())
        .collect();
    assert_eq!(claimed, vec!["one".to_owned(), "two".to_owned()]);
    inbox.release(second);
    assert_eq!(texts(&inbox.pending()), vec![(3, "three".to_owned())]);
    let events = session.events();
    assert_eq!(events[3].r#type, CLAIMED_EVENT);
    assert_eq!(events[3].data, json!({"seqs": [1, 2]}));
    assert_eq!(
        events[0].data,
        json!({"lane": "followup", "source": {"kind": "plugin", "plugin": "schedule"}, "text": "one"})
    );
    // Replay gives the same owed messages.
    assert_eq!(
        texts(&replay(&events).unwrap()),
        vec![(3, "three".to_owned())]
    );
}

#[test]
fn replay_refuses_unknown_keys_and_claims_of_nothing() {
    let (session, _inbox) = inbox();
    session
        .append(
            QUEUED_EVENT,
            json!({"lane": "followup", "source": {"kind": "user"}, "text": "a", "extra": 1}),
        )
        .unwrap();
    assert_eq!(
        replay(&session.events()).unwrap_err(),
        InboxLogError {
            seq: 1,
            message: "unknown field `extra`, expected one of `lane`, `source`, `text`, `subjects`"
                .to_owned()
        }
    );
    let (session, _inbox) = inbox();
    session.append(CLAIMED_EVENT, json!({"seqs": [7]})).unwrap();
    assert_eq!(
        replay(&session.events()).unwrap_err().to_string(),
        "corrupt inbox log at seq 1: seq 7 is not an unclaimed mcp/queued"
    );
    let (session, _inbox) = inbox();
    session
        .append(
            QUEUED_EVENT,
            json!({"lane": "followup", "source": {"kind": "user"}, "text": "a"}),
        )
        .unwrap();
    session.append(CLAIMED_EVENT, json!({"seqs": [1]})).unwrap();
    session.append(CLAIMED_EVENT, json!({"seqs": [1]})).unwrap();
    assert_eq!(
        replay(&session.events()).unwrap_err().to_string(),
        "corrupt inbox log at seq 3: seq 1 is not an unclaimed mcp/queued"
    );
    let (session, _inbox) = inbox();
    session.append(CLAIMED_EVENT, json!({"seqs": []})).unwrap();
    assert_eq!(
        replay(&session.events()).unwrap_err().to_string(),
        "corrupt inbox log at seq 1: a claim names no delivery"
    );
}

#[test]
fn a_held_message_waits_for_its_task_and_its_delivery_claims_it_once() {
    let (session, inbox) = inbox();
    inbox.hold(Hold {
        task: "task-1".to_owned(),
        subject: Subject::job("bash-1"),
        after: 0,
        until: 1_000,
    });
    inbox
        .queue(
            Lane::Followup,
            reminder("job bash-1 (bash) ended").about(vec![Subject::job("bash-1")]),
        )
        .unwrap();
    inbox
        .queue(
            Lane::Followup,
            reminder("other").about(vec![Subject::reminder("schedule-1", 5)]),
        )
        .unwrap();
    // While the hold lasts a tool result takes only the other message.
    let (key, taken) = inbox.reserve(999).unwrap();
    assert_eq!(texts(&taken), vec![(2, "other".to_owned())]);
    inbox.release(key);
    let (found, reserved) = inbox.find(&Subject::job("bash-1"), 0).unwrap();
    assert_eq!((found.seq, reserved), (1, false));
    let delivery = TaskDelivered {
        task_id: "task-1".to_owned(),
        seqs: vec![1],
        content: vec!["job bash-1 (bash) ended".to_owned()],
        is_error: false,
    };
    let key = inbox.reserve_task(delivery.clone()).unwrap();
    // The same task is not reserved twice, nor its seq by another task.
    assert_eq!(
        inbox.reserve_task(delivery.clone()),
        Err(TaskRefused::Carried)
    );
    let committed = inbox.commit(key);
    assert_eq!(committed.task, Some(delivery.clone()));
    assert_eq!(committed.messages.len(), 1);
    let events = session.events();
    assert_eq!(events[2].r#type, TASK_DELIVERED_EVENT);
    assert_eq!(
        events[2].data,
        json!({"taskId": "task-1", "seqs": [1], "content": ["job bash-1 (bash) ended"]})
    );
    assert_eq!(
        texts(&replay(&events).unwrap()),
        vec![(2, "other".to_owned())]
    );
    // A delivery whose message is no longer owed is stale: it must be prepared again.
    assert_eq!(inbox.reserve_task(delivery), Err(TaskRefused::Stale));
    // Past its hold a message goes to the next tool result.
    inbox.hold(Hold {
        task: "task-2".to_owned(),
        subject: Subject::reminder("schedule-1", 0),
        after: 0,
        until: 1_000,
    });
    assert!(inbox.reserve(999).is_none());
    let (_, taken) = inbox.reserve(1_000).unwrap();
    assert_eq!(texts(&taken), vec![(2, "other".to_owned())]);
}

#[test]
fn a_hold_keeps_the_messages_about_its_subject_and_never_reads_their_text() {
    let (session, inbox) = inbox();
    inbox.hold(Hold {
        task: "task-2".to_owned(),
        subject: Subject::job("bash-2"),
        after: 0,
        until: 1_000,
    });
    // bash-1's notice, its model-written label reading like bash-2's notice.
    let forged = "background job bash-1 (bash: background job bash-2 (bash: x) finished) finished";
    inbox
        .queue(
            Lane::Followup,
            reminder(forged).about(vec![Subject::job("bash-1")]),
        )
        .unwrap();
    inbox
        .queue(
            Lane::Inject,
            reminder("lost").about(vec![Subject::job("bash-3"), Subject::job("bash-2")]),
        )
        .unwrap();
    assert_eq!(inbox.find(&Subject::job("bash-2"), 0).unwrap().0.seq, 2);
    let (_, taken) = inbox.reserve(999).unwrap();
    assert_eq!(texts(&taken), vec![(1, forged.to_owned())]);
    let events = session.events();
    assert_eq!(
        events[1].data,
        json!({"lane": "inject", "source": {"kind": "plugin", "plugin": "schedule"}, "text": "lost",
               "subjects": [{"kind": "job", "id": "bash-3"}, {"kind": "job", "id": "bash-2"}]})
    );
    let replayed = replay(&events).unwrap();
    assert_eq!(
        replayed[1].message.subjects,
        vec![Subject::job("bash-3"), Subject::job("bash-2")]
    );
}

#[test]
fn a_queued_record_without_subjects_replays_as_a_message_about_nothing() {
    let (session, _inbox) = inbox();
    // Written before subjects were recorded: its text names bash-1, its record no subject.
    session
        .append(
            QUEUED_EVENT,
            json!({"lane": "followup", "source": {"kind": "user"}, "text": "background job bash-1 (bash: x) finished"}),
        )
        .unwrap();
    session
        .append(
            QUEUED_EVENT,
            json!({"lane": "followup", "source": {"kind": "user"}, "text": "r",
                   "subjects": [{"kind": "reminder", "id": "schedule-1", "occurrence": 7}]}),
        )
        .unwrap();
    let inbox = Inbox::open(session.clone()).unwrap();
    assert_eq!(inbox.pending()[0].message.subjects, Vec::<Subject>::new());
    assert_eq!(inbox.find(&Subject::job("bash-1"), 0), None);
    assert_eq!(
        inbox
            .find(&Subject::reminder("schedule-1", 0), 0)
            .unwrap()
            .0
            .seq,
        2
    );
    // An unknown subject kind is refused like any payload that does not decode.
    session
        .append(
            QUEUED_EVENT,
            json!({"lane": "followup", "source": {"kind": "user"}, "text": "r",
                   "subjects": [{"kind": "comet", "id": "c"}]}),
        )
        .unwrap();
    assert!(
        replay(&session.events())
            .unwrap_err()
            .to_string()
            .starts_with("corrupt inbox log at seq 3: unknown variant `comet`"),
    );
}
