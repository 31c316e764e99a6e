use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::*;
use crate::domain::ErrorCode;

const AFTER: &str = r#"{"version":1,"operation":"create","schedule":{"id":"schedule-1","kind":"after","prompt":"check logs","afterSeconds":30,"scheduledAt":"2026-08-05T12:00:00.000Z"}}"#;
const AT: &str = r#"{"version":1,"operation":"create","schedule":{"id":"schedule-at","kind":"at","prompt":"join meeting","scheduledAt":"2026-08-06T01:00:00.000Z"}}"#;
const EVERY: &str = r#"{"version":1,"operation":"create","schedule":{"id":"schedule-every","kind":"every","prompt":"check metrics","everySeconds":300,"scheduledAt":"2026-08-05T12:05:00.000Z"}}"#;

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

fn assert_corrupt(value: &Value) {
    let error = decode_change(value).expect_err(&value.to_string());
    assert_eq!(error.code(), ErrorCode::CorruptScheduleLog);
    assert_eq!(error.message(), "The session schedule log is corrupt.");
    assert_eq!(
        error.to_value(),
        json!({"code":"corrupt_schedule_log","message":"The session schedule log is corrupt."})
    );
}

/// Case 1: every exact v1 variant decodes and re-encodes unchanged (text and value).
#[test]
fn every_exact_variant_round_trips() {
    for text in [
        AFTER,
        AT,
        EVERY,
        r#"{"version":1,"operation":"delete","id":"schedule-1"}"#,
        r#"{"version":1,"operation":"dispatch","id":"schedule-1"}"#,
        r#"{"version":1,"operation":"dispatch","id":"schedule-every","acceptedAt":"2026-08-05T12:05:00.000Z"}"#,
    ] {
        let change = decode_change(&parse(text)).unwrap();
        assert_eq!(serde_json::to_string(&change).unwrap(), text);
        assert_eq!(change.to_value().to_string(), text);
        assert_eq!(change.to_value(), parse(text));
    }
}

#[test]
fn decoded_variants_have_the_expected_shape() {
    let change = decode_change(&parse(EVERY)).unwrap();
    let ScheduleChange::Create(record) = change else {
        panic!("not a create");
    };
    assert_eq!(record.id(), "schedule-every");
    assert_eq!(record.kind(), RecordKind::Every);
    assert_eq!(record.rule(), &Rule::Every { seconds: 300 });
    assert_eq!(record.every_seconds(), Some(300));
    assert_eq!(record.prompt(), "check metrics");
    assert_eq!(
        record.scheduled_at().to_string(),
        "2026-08-05T12:05:00.000Z"
    );
    assert_eq!(
        decode_change(&parse(
            r#"{"version":1,"operation":"dispatch","id":"e","acceptedAt":"2026-08-05T12:05:00.000Z"}"#
        ))
        .unwrap(),
        ScheduleChange::DispatchEvery {
            id: "e".into(),
            accepted_at: Timestamp::parse("2026-08-05T12:05:00.000Z").unwrap(),
        }
    );
}

/// §3.2: `1.0` parses to the number 1 and is accepted; integers are re-emitted without a
/// decimal point (decision 4).
#[test]
fn version_one_point_zero_and_integral_floats_are_accepted() {
    let change = decode_change(&parse(
        r#"{"version":1.0,"operation":"create","schedule":{"id":"a","kind":"after","prompt":"p","afterSeconds":30.0,"scheduledAt":"2026-08-05T12:00:00.000Z"}}"#,
    ))
    .unwrap();
    assert_eq!(
        serde_json::to_string(&change).unwrap(),
        r#"{"version":1,"operation":"create","schedule":{"id":"a","kind":"after","prompt":"p","afterSeconds":30,"scheduledAt":"2026-08-05T12:00:00.000Z"}}"#
    );
    assert_corrupt(&parse(r#"{"version":"1","operation":"delete","id":"a"}"#));
}

/// Case 2: malformed top-level changes.
#[test]
fn malformed_top_level_changes_are_corrupt() {
    let mut after_extra = parse(AFTER);
    after_extra["extra"] = json!(true);
    for value in [
        Value::Null,
        json!([]),
        json!("x"),
        parse(r#"{"version":2,"operation":"delete","id":"schedule-1"}"#),
        parse(r#"{"operation":"delete","id":"schedule-1"}"#),
        parse(r#"{"version":1,"operation":"pause","id":"schedule-1"}"#),
        parse(r#"{"version":1,"id":"schedule-1"}"#),
        parse(r#"{"version":1,"operation":"delete","id":"schedule-1","extra":true}"#),
        parse(r#"{"version":1,"operation":"delete","id":1}"#),
        parse(r#"{"version":1,"operation":"dispatch","id":""}"#),
        parse(r#"{"version":1,"operation":"dispatch","id":" schedule-1"}"#),
        parse(r#"{"version":1,"operation":"dispatch","id":"schedule-1\u3000"}"#),
        parse(
            r#"{"version":1,"operation":"dispatch","id":"schedule-1","acceptedAt":"not-an-instant"}"#,
        ),
        parse(
            r#"{"version":1,"operation":"dispatch","id":"schedule-1","acceptedAt":"2026-08-05T12:05:00.000Z","extra":true}"#,
        ),
        parse(
            r#"{"version":1,"operation":"dispatch","id":"schedule-1","extra":"2026-08-05T12:05:00.000Z"}"#,
        ),
        after_extra,
        parse(r#"{"version":1,"operation":"create","schedule":null}"#),
        parse(r#"{"version":1,"operation":"create"}"#),
    ] {
        assert_corrupt(&value);
    }
}

fn mutate(base: &str, edit: impl FnOnce(&mut serde_json::Map<String, Value>)) -> Value {
    let mut value = parse(base);
    edit(value["schedule"].as_object_mut().unwrap());
    value
}

/// Case 3: malformed records.
#[test]
fn malformed_records_are_corrupt() {
    let cases = vec![
        mutate(AFTER, |r| {
            r.insert("extra".into(), json!(true));
        }),
        mutate(AFTER, |r| {
            r.insert("kind".into(), json!("at"));
        }),
        mutate(AT, |r| {
            r.insert("extra".into(), json!(true));
        }),
        mutate(AT, |r| {
            r.insert("prompt".into(), json!(" "));
        }),
        mutate(EVERY, |r| {
            r.insert("extra".into(), json!(true));
        }),
        mutate(EVERY, |r| {
            r.insert("prompt".into(), json!(" "));
        }),
        mutate(EVERY, |r| {
            r.insert("everySeconds".into(), json!(299));
        }),
        mutate(EVERY, |r| {
            r.insert("everySeconds".into(), json!(300.5));
        }),
        mutate(EVERY, |r| {
            r.insert("everySeconds".into(), json!("300"));
        }),
        mutate(EVERY, |r| {
            r.insert("everySeconds".into(), json!(9_007_199_254_740_991_i64));
        }),
        mutate(AFTER, |r| {
            r.insert("prompt".into(), json!(" "));
        }),
        mutate(AFTER, |r| {
            r.insert("prompt".into(), json!(" padded"));
        }),
        mutate(AFTER, |r| {
            r.insert("afterSeconds".into(), json!(0));
        }),
        mutate(AFTER, |r| {
            r.insert("afterSeconds".into(), json!(1.5));
        }),
        mutate(AFTER, |r| {
            r.insert("afterSeconds".into(), json!(-30));
        }),
        mutate(AFTER, |r| {
            r.insert("afterSeconds".into(), json!(9_007_199_254_740_992_u64));
        }),
        mutate(AFTER, |r| {
            r.insert("scheduledAt".into(), json!("2026-02-30T00:00:00.000Z"));
        }),
        mutate(AFTER, |r| {
            r.insert("scheduledAt".into(), json!("10000-01-01T00:00:00.000Z"));
        }),
        mutate(AFTER, |r| {
            r.insert("scheduledAt".into(), json!("2026-08-05T12:00:00Z"));
        }),
        mutate(AFTER, |r| {
            r.insert("id".into(), json!(""));
        }),
        mutate(AFTER, |r| {
            r.remove("id");
        }),
        mutate(AT, |r| {
            r.insert("kind".into(), json!("every"));
        }),
        mutate(AFTER, |r| {
            r.insert("kind".into(), json!("later"));
        }),
        mutate(AFTER, |r| {
            r.insert("kind".into(), json!("cron"));
        }),
    ];
    for value in cases {
        assert_corrupt(&value);
    }
}

/// §3.1: the largest interval whose milliseconds are still safe decodes.
#[test]
fn every_seconds_limit_is_the_millisecond_safe_bound() {
    let ok = mutate(EVERY, |r| {
        r.insert("everySeconds".into(), json!(9_007_199_254_740_i64));
    });
    assert!(decode_change(&ok).is_ok());
    let bad = mutate(EVERY, |r| {
        r.insert("everySeconds".into(), json!(9_007_199_254_741_i64));
    });
    assert_corrupt(&bad);
}

/// Case 21 (view part): key order, state boundary and delivery mode.
#[test]
fn view_has_state_and_delivery_mode() {
    let at = Timestamp::parse("1970-01-01T00:00:31.000Z").unwrap();
    let record =
        ScheduleRecord::new("schedule-1", "check logs", Rule::After { seconds: 30 }, at).unwrap();
    assert_eq!(
        record.view(30_999).to_string(),
        r#"{"id":"schedule-1","kind":"after","prompt":"check logs","afterSeconds":30,"scheduledAt":"1970-01-01T00:00:31.000Z","state":"scheduled","deliveryMode":"session-local"}"#
    );
    assert_eq!(
        record.view(31_000).to_string(),
        r#"{"id":"schedule-1","kind":"after","prompt":"check logs","afterSeconds":30,"scheduledAt":"1970-01-01T00:00:31.000Z","state":"overdue","deliveryMode":"session-local"}"#
    );
    assert_eq!(record.state_at(31_000), ReminderState::Overdue);
    assert_eq!(record.state_at(30_999), ReminderState::Scheduled);
}

#[test]
fn record_constructor_enforces_the_record_rules() {
    let at = Timestamp::parse("2026-08-05T12:00:00.000Z").unwrap();
    assert_eq!(
        ScheduleRecord::new(" a", "p", Rule::At, at)
            .unwrap_err()
            .to_string(),
        "corrupt schedule log: id must be non-empty without surrounding whitespace"
    );
    assert_eq!(
        ScheduleRecord::new("a", "p\n", Rule::At, at)
            .unwrap_err()
            .to_string(),
        "corrupt schedule log: prompt must be non-empty without surrounding whitespace"
    );
    assert_eq!(
        ScheduleRecord::new("a", "", Rule::At, at)
            .unwrap_err()
            .to_string(),
        "corrupt schedule log: prompt must be non-empty without surrounding whitespace"
    );
    assert_eq!(
        ScheduleRecord::new("a", "p", Rule::After { seconds: 0 }, at)
            .unwrap_err()
            .to_string(),
        "corrupt schedule log: afterSeconds must be a positive safe integer"
    );
    assert_eq!(
        ScheduleRecord::new("a", "p", Rule::Every { seconds: 299 }, at)
            .unwrap_err()
            .to_string(),
        "corrupt schedule log: everySeconds must be at least 300"
    );
    assert!(ScheduleRecord::new("a", "\u{0085}", Rule::At, at).is_ok());
    assert!(ScheduleRecord::new("a\u{200B}", "p", Rule::At, at).is_ok());
}
