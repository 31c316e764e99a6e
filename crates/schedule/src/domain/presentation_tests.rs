use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use crate::domain::test_support::{
    create_after, create_every, delete, dispatch, dispatch_every, events,
};

fn at(text: &str) -> Timestamp {
    Timestamp::parse(text).unwrap()
}

fn log() -> Vec<SessionEvent> {
    events(&[
        (
            "schedule/change",
            create_after("schedule-1", "check logs", 30, "2026-08-05T12:00:30.000Z"),
        ),
        (
            "schedule/change",
            create_every("schedule-2", "metrics", 300, "2026-08-05T12:05:00.123Z"),
        ),
        ("turn/start", json!({"turn": 1})),
        ("schedule/change", dispatch("schedule-1")),
        (
            "schedule/change",
            dispatch_every("schedule-2", "2026-08-05T12:17:34.000Z"),
        ),
        (
            "schedule/change",
            dispatch_every("schedule-2", "2026-08-05T13:02:00.000Z"),
        ),
        ("schedule/change", delete("schedule-2")),
    ])
}

/// Decision 7: one-shot → its scheduledAt; every → the latest occurrence at acceptedAt.
#[test]
fn presents_one_shot_and_every_dispatches() {
    let log = log();
    assert_eq!(
        schedule_reminder_presentation(&log, 4, None),
        Some(ReminderPresentation {
            schedule_id: "schedule-1".into(),
            prompt: "check logs".into(),
            occurrence_at: at("2026-08-05T12:00:30.000Z"),
        })
    );
    assert_eq!(
        schedule_reminder_presentation(&log, 5, None).map(|p| p.occurrence_at),
        Some(at("2026-08-05T12:15:00.123Z"))
    );
    let later = schedule_reminder_presentation(&log, 6, None).unwrap();
    assert_eq!(
        serde_json::to_value(&later).unwrap(),
        json!({"scheduleId":"schedule-2","prompt":"metrics","occurrenceAt":"2026-08-05T13:00:00.123Z"})
    );
}

#[test]
fn non_dispatch_sequences_have_no_presentation() {
    let log = log();
    for seq in [0, 1, 2, 3, 7, 99] {
        assert_eq!(
            schedule_reminder_presentation(&log, seq, None),
            None,
            "{seq}"
        );
    }
}

/// Appendix A: an owned dispatch looks only in the owned segment; an inherited dispatch in
/// the inherited prefix.
#[test]
fn fork_segments_are_respected() {
    let mut log = log();
    // Seed boundary after the first dispatch (seq 4): a child re-creating schedule-1.
    log.truncate(4);
    log.extend(
        events(&[
            ("x", json!(null)),
            ("x", json!(null)),
            ("x", json!(null)),
            ("x", json!(null)),
            (
                "schedule/change",
                create_after("schedule-1", "child", 1, "2026-08-05T12:00:01.000Z"),
            ),
            ("schedule/change", dispatch("schedule-1")),
            ("schedule/change", dispatch("schedule-9")),
        ])[4..]
            .iter()
            .cloned(),
    );
    assert_eq!(
        schedule_reminder_presentation(&log, 6, Some(4)).map(|p| p.prompt),
        Some("child".into())
    );
    assert_eq!(
        schedule_reminder_presentation(&log, 4, Some(4)).map(|p| p.prompt),
        Some("check logs".into())
    );
    assert_eq!(schedule_reminder_presentation(&log, 7, Some(4)), None);
    // An owned dispatch of an id created only in the prefix has no presentation.
    let mut orphan = log.clone();
    orphan[6].data = dispatch("schedule-2");
    assert_eq!(schedule_reminder_presentation(&orphan, 7, Some(4)), None);
}
