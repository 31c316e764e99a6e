use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::*;
use crate::domain::error::ErrorCode;
use crate::domain::test_support::{T0, ms};

const YEAR_0000: i64 = -62_167_219_200_000;

fn code(result: Result<ScheduleRecord, InputError>) -> &'static str {
    result.unwrap_err().code().as_str()
}

fn scheduled(result: Result<ScheduleRecord, InputError>) -> String {
    result.unwrap().scheduled_at().to_string()
}

/// Case 21.
#[test]
fn canonical_after_record() {
    let record = create_after("schedule-1", "  check logs  ", &json!(30), 1000).unwrap();
    assert_eq!(
        record.to_value().to_string(),
        r#"{"id":"schedule-1","kind":"after","prompt":"check logs","afterSeconds":30,"scheduledAt":"1970-01-01T00:00:31.000Z"}"#
    );
    assert_eq!(record.view(30_999)["state"], "scheduled");
    assert_eq!(record.view(31_000)["state"], "overdue");
    assert_eq!(record.view(31_000)["deliveryMode"], "session-local");
}

/// Case 22 (NaN has no i64 form; a clock sample beyond ±(2^53−1) stands for it).
#[test]
fn after_seconds_domain_bounds() {
    assert_eq!(
        code(create_after("s", "", &json!(1), 1000)),
        "invalid_prompt"
    );
    assert_eq!(
        code(create_after("s", "x", &json!(0), 1000)),
        "invalid_rule"
    );
    assert_eq!(
        code(create_after("s", "x", &json!(1.5), 1000)),
        "invalid_rule"
    );
    assert_eq!(
        code(create_after(
            "s",
            "x",
            &json!(9_007_199_254_740_991_i64),
            1000
        )),
        "time_out_of_range"
    );
    assert_eq!(
        code(create_after("s", "x", &json!(1), 9_007_199_254_740_992)),
        "time_out_of_range"
    );
    assert_eq!(
        code(create_after("s", "x", &json!(1), i64::MAX)),
        "time_out_of_range"
    );
    assert_eq!(
        code(create_after("s", "x", &json!(1), YEAR_0000)),
        "time_out_of_range"
    );
    assert_eq!(
        code(create_after("s", "x", &json!(1), -9_007_199_254_740_991)),
        "time_out_of_range"
    );
    assert_eq!(
        create_after("s", "x", &json!(0), 1000)
            .unwrap_err()
            .message(),
        "after_seconds must be a positive safe integer."
    );
}

/// Case 23.
#[test]
fn after_seconds_upper_bound_at_t0() {
    assert_eq!(
        scheduled(create_after("s", "x", &json!(251_616_369_599_i64), T0)),
        "9999-12-31T23:59:59.000Z"
    );
    assert_eq!(
        code(create_after("s", "x", &json!(251_616_369_600_i64), T0)),
        "time_out_of_range"
    );
    assert_eq!(code(create_after("s", "x", &json!(-1), T0)), "invalid_rule");
    assert_eq!(
        code(create_after(
            "s",
            "x",
            &json!(9_007_199_254_740_992_u64),
            T0
        )),
        "invalid_rule"
    );
    assert_eq!(
        code(create_after("s", "x", &json!("30"), T0)),
        "invalid_rule"
    );
    assert_eq!(
        scheduled(create_after("s", "x", &json!(30.0), T0)),
        "2026-08-05T12:00:30.000Z"
    );
}

/// Case 29 (+ derived).
#[test]
fn every_first_target_and_domain_bounds() {
    let record = create_every("schedule-every", "  check metrics  ", &json!(300), T0).unwrap();
    assert_eq!(
        serde_json::to_string(&record).unwrap(),
        r#"{"id":"schedule-every","kind":"every","prompt":"check metrics","everySeconds":300,"scheduledAt":"2026-08-05T12:05:00.000Z"}"#
    );
    let cases: [(Value, i64, &str); 9] = [
        (json!(299), T0, "frequency_too_high"),
        (json!(0), T0, "frequency_too_high"),
        (json!(-300), T0, "frequency_too_high"),
        (json!(1.5), T0, "invalid_rule"),
        (json!(300.5), T0, "invalid_rule"),
        (json!(9_007_199_254_740_991_i64), T0, "time_out_of_range"),
        (json!(251_616_369_600_i64), T0, "time_out_of_range"),
        (json!(300), YEAR_0000, "time_out_of_range"),
        (json!(300), -9_007_199_254_740_991, "time_out_of_range"),
    ];
    for (seconds, now, expected) in cases {
        assert_eq!(
            code(create_every("s", "x", &seconds, now)),
            expected,
            "{seconds} {now}"
        );
    }
    assert_eq!(
        code(create_every("s", " ", &json!(300), T0)),
        "invalid_prompt"
    );
    assert_eq!(
        code(create_every("s", "x", &json!(300), i64::MIN)),
        "time_out_of_range"
    );
    assert_eq!(
        scheduled(create_every("s", "x", &json!(251_616_369_599_i64), T0)),
        "9999-12-31T23:59:59.000Z"
    );
    assert_eq!(
        create_every("s", "x", &json!(1.5), T0)
            .unwrap_err()
            .message(),
        "every_seconds must be a safe integer."
    );
    assert_eq!(
        create_every("s", "x", &json!(299), T0)
            .unwrap_err()
            .message(),
        "every_seconds must be at least 300."
    );
}

fn at_offset(text: &str) -> Result<ScheduleRecord, InputError> {
    create_at("schedule-1", "  join meeting  ", &json!(text), T0, None)
}

/// Case 33.
#[test]
fn strict_offset_normalization() {
    for (text, expected) in [
        ("2026-08-06T09:00:00+08:00", "2026-08-06T01:00:00.000Z"),
        ("2026-08-06T01:00:00Z", "2026-08-06T01:00:00.000Z"),
        ("2026-08-06T01:00:00+00:00", "2026-08-06T01:00:00.000Z"),
        ("2026-08-06T01:00:00.1Z", "2026-08-06T01:00:00.100Z"),
        ("2026-08-06T01:00:00.12Z", "2026-08-06T01:00:00.120Z"),
        ("2026-08-06T01:00:00.05Z", "2026-08-06T01:00:00.050Z"),
        ("2026-08-05T20:30:00-05:30", "2026-08-06T02:00:00.000Z"),
        ("2026-08-06T01:00:00-23:59", "2026-08-07T00:59:00.000Z"),
        ("2026-08-06T09:00:00.5+05:45", "2026-08-06T03:15:00.500Z"),
        ("2028-02-29T00:00:00Z", "2028-02-29T00:00:00.000Z"),
    ] {
        let record = at_offset(text).unwrap();
        assert_eq!(record.scheduled_at().to_string(), expected, "{text}");
        assert_eq!(record.prompt(), "join meeting");
        assert_eq!(record.kind(), crate::domain::RecordKind::At);
    }
    assert_eq!(
        at_offset("2026-08-06T09:00:00+08:00")
            .unwrap()
            .to_value()
            .to_string(),
        r#"{"id":"schedule-1","kind":"at","prompt":"join meeting","scheduledAt":"2026-08-06T01:00:00.000Z"}"#
    );
}

/// Case 34 (+ derived).
#[test]
fn invalid_offset_strings() {
    let shape = "at must use YYYY-MM-DDTHH:mm:ss with optional 1-3 digit fractional seconds and an explicit Z or numeric offset.";
    let real = "The at value must be a real ISO calendar date and time.";
    let offset = "The at numeric offset is invalid.";
    for (text, message) in [
        ("2026-08-06T01:00:00", shape),
        ("2026-08-06 01:00:00Z", shape),
        ("2026-02-30T01:00:00Z", real),
        ("2026-08-06T24:00:00Z", real),
        ("2026-08-06T01:00:60Z", real),
        ("2026-08-06T01:00:00.1234Z", shape),
        ("2026-08-06T01:00:00-00:00", offset),
        ("2026-08-06T01:00:00+24:00", offset),
        ("2026-08-06T01:00:00+01:60", offset),
        ("0000-01-01T00:00:00Z", real),
        ("2026-08-06T01:00:00z", shape),
        ("2026-08-06t01:00:00Z", shape),
        ("2026-08-06T01:00:00+0800", shape),
        ("2026-08-06T01:00:00+08", shape),
        ("2026-08-06T01:00Z", shape),
        (" 2026-08-06T01:00:00Z", shape),
        ("2026-08-06T01:00:00Z ", shape),
        ("10000-01-01T00:00:00Z", shape),
        ("2026-08-06T01:00:00.Z", shape),
        ("２026-08-06T01:00:00Z", shape),
        ("2026-08-06T01:00:00+08:00:00", shape),
        ("", shape),
        ("2026-13-01T00:00:00Z", real),
        ("2026-00-10T00:00:00Z", real),
        ("2026-01-00T00:00:00Z", real),
        ("2027-02-29T00:00:00Z", real),
        ("2026-02-30T01:00:00-00:00", real),
    ] {
        let error = at_offset(text).unwrap_err();
        assert_eq!(error.code(), ErrorCode::InvalidRule, "{text}");
        assert_eq!(error.message(), message, "{text}");
    }
}

/// Case 35 (+ derived).
#[test]
fn offset_not_future_boundary() {
    assert_eq!(code(at_offset("2026-08-05T12:00:00Z")), "not_future");
    assert_eq!(code(at_offset("2026-08-05T11:59:59Z")), "not_future");
    assert_eq!(
        scheduled(at_offset("2026-08-05T12:00:00.001Z")),
        "2026-08-05T12:00:00.001Z"
    );
    assert_eq!(code(at_offset("2026-08-05T13:00:00+01:00")), "not_future");
    assert_eq!(
        scheduled(at_offset("2026-08-05T13:00:00.001+01:00")),
        "2026-08-05T12:00:00.001Z"
    );
    assert_eq!(code(at_offset("2026-08-06T01:00:00+23:59")), "not_future");
    // Out of range and in the past: range wins (§8.1).
    assert_eq!(
        code(at_offset("0001-01-01T00:00:00+01:00")),
        "time_out_of_range"
    );
    assert_eq!(
        code(create_at(
            "s",
            "x",
            &json!("9999-12-31T23:59:59.999-00:01"),
            T0,
            None
        )),
        "time_out_of_range"
    );
}

/// §9.5 step 2 and case 25 (pure part): selector, then prompt, then rules.
#[test]
fn pre_queue_validation_order() {
    let cases = [
        (json!({"prompt":"x"}), "invalid_selector"),
        (
            json!({"prompt":"x","after_seconds":1,"every_seconds":300}),
            "invalid_selector",
        ),
        (
            json!({"prompt":"x","after_seconds":1,"time_zone":"UTC"}),
            "invalid_selector",
        ),
        (
            json!({"prompt":"x","cron":"*/5 * * * *","time_zone":"UTC"}),
            "invalid_selector",
        ),
        (
            json!({"prompt":" ","after_seconds":1,"at":"x"}),
            "invalid_selector",
        ),
        (json!({"prompt":" ","after_seconds":0}), "invalid_prompt"),
        (json!({"prompt":"x","after_seconds":0}), "invalid_rule"),
        (json!({"prompt":"x","every_seconds":1.5}), "invalid_rule"),
        (
            json!({"prompt":"x","every_seconds":299}),
            "frequency_too_high",
        ),
        (json!([]), "invalid_selector"),
    ];
    for (arguments, expected) in cases {
        let error = CreateRequest::from_arguments(&arguments).unwrap_err();
        assert_eq!(error.code().as_str(), expected, "{arguments}");
    }
    assert_eq!(
        CreateRequest::from_arguments(&json!({"prompt":"x"}))
            .unwrap_err()
            .to_value(),
        json!({"code":"invalid_selector","message":"schedule_create accepts exactly one of after_seconds, at, or every_seconds."})
    );
    // `at` content is not checked before the preflight.
    let request = CreateRequest::from_arguments(&json!({"prompt":" p ","at":"nonsense"})).unwrap();
    assert_eq!(request.prompt(), "p");
    assert_eq!(request.selector(), &Selector::At(json!("nonsense")));
    assert_eq!(
        request.build("schedule-1", T0, None).unwrap_err().message(),
        "at must use YYYY-MM-DDTHH:mm:ss with optional 1-3 digit fractional seconds and an explicit Z or numeric offset."
    );
}

#[test]
fn build_creates_each_selector() {
    let build = |arguments: Value| {
        CreateRequest::from_arguments(&arguments)
            .unwrap()
            .build("schedule-1", T0, None)
            .unwrap()
            .view(T0)
            .to_string()
    };
    assert_eq!(
        build(json!({"prompt":"  check logs  ","after_seconds":30})),
        r#"{"id":"schedule-1","kind":"after","prompt":"check logs","afterSeconds":30,"scheduledAt":"2026-08-05T12:00:30.000Z","state":"scheduled","deliveryMode":"session-local"}"#
    );
    assert_eq!(
        build(json!({"prompt":"check metrics","every_seconds":300.0})),
        r#"{"id":"schedule-1","kind":"every","prompt":"check metrics","everySeconds":300,"scheduledAt":"2026-08-05T12:05:00.000Z","state":"scheduled","deliveryMode":"session-local"}"#
    );
    assert_eq!(
        build(json!({"prompt":"join meeting","at":"2026-08-06T09:00:00+08:00"})),
        r#"{"id":"schedule-1","kind":"at","prompt":"join meeting","scheduledAt":"2026-08-06T01:00:00.000Z","state":"scheduled","deliveryMode":"session-local"}"#
    );
    assert_eq!(
        build(
            json!({"prompt":"local meeting","at":{"date":"2026-08-07","time":"09:30:00","time_zone":"Asia/Shanghai"}})
        ),
        r#"{"id":"schedule-1","kind":"at","prompt":"local meeting","scheduledAt":"2026-08-07T01:30:00.000Z","state":"scheduled","deliveryMode":"session-local"}"#
    );
}

/// Case 57 (pure part): JavaScript trim semantics for prompts.
#[test]
fn prompt_trimming_uses_javascript_whitespace() {
    for prompt in ["\u{3000}\t\n", "\u{FEFF}", "\u{A0}\u{2028}\u{2029}"] {
        assert_eq!(
            code(create_after("s", prompt, &json!(1), T0)),
            "invalid_prompt"
        );
    }
    assert_eq!(
        create_after("s", "\u{0085}", &json!(1), T0)
            .unwrap()
            .prompt(),
        "\u{0085}"
    );
    assert_eq!(
        create_after("s", "\u{200B}x", &json!(1), T0)
            .unwrap()
            .prompt(),
        "\u{200B}x"
    );
    assert_eq!(
        create_after("s", "\u{180E}", &json!(1), T0)
            .unwrap()
            .prompt(),
        "\u{180E}"
    );
}

/// §9.7 step 1 and case 53 (pure part).
#[test]
fn delete_id_validation() {
    for id in ["", " schedule-1", "schedule-1 ", "\u{FEFF}schedule-1"] {
        let error = validate_delete_id(id).unwrap_err();
        assert_eq!(
            error.to_value(),
            json!({"code":"invalid_rule","message":"schedule_delete id must be non-empty without surrounding whitespace."})
        );
    }
    assert_eq!(validate_delete_id("schedule-1"), Ok(()));
}

#[test]
fn a_bad_allocated_id_is_an_internal_error() {
    assert_eq!(
        create_after(" x", "p", &json!(1), T0)
            .unwrap_err()
            .to_value(),
        json!({"code":"internal_error","message":"The schedule operation failed."})
    );
}

#[test]
fn future_target_checks_range_before_futurity() {
    assert_eq!(future_target(Some(T0), T0), Err(InputError::NotFuture));
    assert_eq!(future_target(None, T0), Err(InputError::TimeOutOfRange));
    assert_eq!(
        future_target(Some(ms("2026-08-05T12:00:00.001Z")), T0).map(|t| t.to_string()),
        Ok("2026-08-05T12:00:00.001Z".to_owned())
    );
    assert_eq!(
        future_target(Some(T0 + 1), 9_007_199_254_740_992),
        Err(InputError::TimeOutOfRange)
    );
}

/// An explicit `null` is a present key, exactly as in the raw map: it counts as a selector
/// (and an `at: null` reaches the build step), and a `null` under an unknown key is still an
/// unknown key.
#[test]
fn explicit_nulls_count_as_present_keys() {
    for arguments in [
        json!({"prompt":"x","after_seconds":1,"at":null}),
        json!({"prompt":"x","after_seconds":1,"zone":null}),
        json!({"prompt":"x","after_seconds":null,"every_seconds":null}),
    ] {
        let error = CreateRequest::from_arguments(&arguments).unwrap_err();
        assert_eq!(error.code().as_str(), "invalid_selector", "{arguments}");
    }
    let request = CreateRequest::from_arguments(&json!({"prompt":"x","at":null})).unwrap();
    assert_eq!(request.selector(), &Selector::At(Value::Null));
    assert_eq!(
        CreateRequest::from_arguments(&json!({"prompt":"x","after_seconds":null}))
            .unwrap_err()
            .code()
            .as_str(),
        "invalid_rule"
    );
}
