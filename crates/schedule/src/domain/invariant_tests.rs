use serde_json::json;

use super::*;
use crate::domain::test_support::{
    changes, create_after, create_every, delete, dispatch, dispatch_every, events,
};

/// Case 102 (pure part).
#[test]
fn accepts_valid_and_vetoes_invalid_candidates() {
    let log = events(&[
        ("turn/start", json!({"turn": 1})),
        (
            "schedule/change",
            create_after("schedule-1", "x", 1, "2026-08-05T12:00:01.000Z"),
        ),
    ]);
    check_schedule_log(&log, None).unwrap();
    let veto = check_schedule_append(&log, None, SCHEDULE_CHANGE, &delete("missing")).unwrap_err();
    assert!(veto.detail.contains("inactive id"));
    check_schedule_append(&log, None, SCHEDULE_CHANGE, &dispatch("schedule-1")).unwrap();
    check_schedule_append(&log, None, "turn/start", &json!("anything")).unwrap();
    assert_eq!(
        check_schedule_append(&log, None, SCHEDULE_CHANGE, &json!({"version":9}))
            .unwrap_err()
            .to_string(),
        "corrupt schedule log: change version must be 1"
    );
}

/// Case 103 (pure part).
#[test]
fn every_dispatch_needs_accepted_at() {
    let log = changes(&[create_every(
        "schedule-every",
        "x",
        300,
        "2026-08-05T12:05:00.000Z",
    )]);
    assert!(
        check_schedule_append(&log, None, SCHEDULE_CHANGE, &dispatch("schedule-every"))
            .unwrap_err()
            .detail
            .contains("must contain acceptedAt")
    );
    check_schedule_append(
        &log,
        None,
        SCHEDULE_CHANGE,
        &dispatch_every("schedule-every", "2026-08-05T12:17:34.000Z"),
    )
    .unwrap();
}

/// Cases 105 and 106 (pure part): a malformed owned stream fails; the same event in a
/// fork's inherited prefix is ignored.
#[test]
fn malformed_owned_logs_fail_and_inherited_prefixes_are_ignored() {
    let seed = changes(&[json!({"version":9,"operation":"delete","id":"schedule-1"})]);
    assert_eq!(
        check_schedule_log(&seed, None).unwrap_err().to_string(),
        "corrupt schedule log: change version must be 1"
    );
    check_schedule_log(&seed, Some(1)).unwrap();
    check_schedule_append(
        &seed,
        Some(1),
        SCHEDULE_CHANGE,
        &create_after("child", "x", 1, "2026-08-05T12:00:01.000Z"),
    )
    .unwrap();
    assert_eq!(
        check_schedule_log(&seed, Some(2)).unwrap_err().to_string(),
        "corrupt schedule log: seedLength 2 exceeds the log length 1"
    );
}
