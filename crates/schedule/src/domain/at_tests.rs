use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::*;
use crate::domain::error::{ERR_AT_REAL, ERR_GAP, ERR_LOCAL_REAL, ERR_LOCAL_SHAPE, ErrorCode};
use crate::domain::test_support::{T0, ms};
use crate::domain::{Timestamp, create_at};

fn local(date: &str, time: &str, zone: &str) -> Value {
    json!({"date": date, "time": time, "time_zone": zone})
}

fn resolve(at: &Value, now: i64) -> Result<String, InputError> {
    create_at("schedule-1", "x", at, now, None).map(|r| r.scheduled_at().to_string())
}

fn utc(ms: i64) -> String {
    Timestamp::from_millis(ms).unwrap().to_string()
}

/// Case 39 (+ derived), with decision 5: exact, case-sensitive names; links accepted.
#[test]
fn zone_validation() {
    for name in [
        "UTC",
        "America/New_York",
        "US/Eastern",
        "Etc/UTC",
        "Etc/GMT+5",
        "Europe/Kiev",
        "Asia/Calcutta",
        "Asia/Shanghai",
    ] {
        assert!(resolve_time_zone(name).is_ok(), "{name}");
    }
    for name in [
        "",
        " UTC",
        "UTC ",
        "Asia/Shanghai ",
        "CST",
        "PST",
        "GMT",
        "EST",
        "EST5EDT",
        "utc",
        "+08:00",
        "Not/A_Real_Zone",
        "america/new_york",
        "America//New_York",
        "America/",
        "/UTC",
        "1America/New_York",
    ] {
        assert_eq!(
            resolve_time_zone(name),
            Err(InputError::InvalidTimeZone { not_string: false }),
            "{name}"
        );
    }
    // Links resolve to the same offsets as their targets.
    let via_link = resolve(&local("2026-08-06", "09:00:00", "US/Eastern"), T0).unwrap();
    let canonical = resolve(&local("2026-08-06", "09:00:00", "America/New_York"), T0).unwrap();
    assert_eq!(via_link, canonical);
    assert_eq!(via_link, "2026-08-06T13:00:00.000Z");
    assert_eq!(
        resolve(&local("2026-08-06", "09:00:00", "Etc/GMT+5"), T0).unwrap(),
        "2026-08-06T14:00:00.000Z"
    );
    assert_eq!(
        resolve(&local("2026-08-06", "09:00:00", "CST"), T0)
            .unwrap_err()
            .to_value(),
        json!({"code":"invalid_time_zone","message":"time_zone must be UTC or a valid IANA Area/Location name."})
    );
}

/// Case 41 (+ derived) and further DST gap and overlap cases.
#[test]
fn dst_gaps_are_invalid_rule_and_overlaps_take_the_earliest() {
    let gap = InputError::InvalidRule(RuleViolation::DstGap);
    let new_year = ms("2026-01-01T00:00:00Z");
    assert_eq!(
        resolve(
            &local("2026-03-08", "02:30:00", "America/New_York"),
            new_year
        ),
        Err(gap.clone())
    );
    assert_eq!(gap.message(), ERR_GAP);
    // Gap precedes not_future.
    assert_eq!(
        resolve(&local("2026-03-08", "02:30:00", "America/New_York"), T0),
        Err(gap.clone())
    );
    for time in ["02:00:00", "02:30:00", "02:59:59.999"] {
        assert_eq!(
            resolve(&local("2027-03-14", time, "America/New_York"), T0),
            Err(gap.clone()),
            "{time}"
        );
    }
    assert_eq!(
        resolve(&local("2027-03-14", "01:59:59.999", "America/New_York"), T0).unwrap(),
        "2027-03-14T06:59:59.999Z"
    );
    assert_eq!(
        resolve(&local("2027-03-14", "03:00:00", "America/New_York"), T0).unwrap(),
        "2027-03-14T07:00:00.000Z"
    );
    assert_eq!(
        resolve(&local("2026-03-29", "01:30:00", "Europe/London"), new_year),
        Err(gap.clone())
    );
    assert_eq!(
        resolve(
            &local("2011-12-30", "12:00:00", "Pacific/Apia"),
            ms("2010-01-01T00:00:00Z")
        ),
        Err(gap)
    );
    // Overlap: the first occurrence (pre-transition EDT offset).
    assert_eq!(
        resolve(&local("2026-11-01", "01:30:00", "America/New_York"), T0).unwrap(),
        "2026-11-01T05:30:00.000Z"
    );
    assert_eq!(
        resolve(&local("2026-10-25", "01:30:00", "Europe/London"), T0).unwrap(),
        "2026-10-25T00:30:00.000Z"
    );
}

/// §8.5: every candidate out of range → time_out_of_range (LMT offsets included).
#[test]
fn out_of_range_local_times() {
    assert_eq!(
        resolve(&local("9999-12-31", "23:59:59.999", "America/New_York"), T0),
        Err(InputError::TimeOutOfRange)
    );
    assert_eq!(
        resolve(&local("0001-01-01", "00:00:00", "Asia/Shanghai"), T0),
        Err(InputError::TimeOutOfRange)
    );
    assert_eq!(
        resolve(&local("9999-12-31", "23:59:59.999", "UTC"), T0).unwrap(),
        "9999-12-31T23:59:59.999Z"
    );
}

/// Case 42 (+ derived).
#[test]
fn malformed_local_selectors() {
    let rule = |violation| Err(InputError::InvalidRule(violation));
    let cases: Vec<(Value, Result<String, InputError>)> = vec![
        (
            json!({"date":"2026-08-06","time":"09:00:00"}),
            rule(RuleViolation::LocalKeys),
        ),
        (
            json!({"date":"2026-08-06","time":"09:00:00","time_zone":"UTC","extra":true}),
            rule(RuleViolation::LocalKeys),
        ),
        (
            json!({"date":20_260_806,"time":"09:00:00","time_zone":"UTC"}),
            rule(RuleViolation::LocalStrings),
        ),
        (
            json!({"date":"2026-08-06","time":"09:00:00","time_zone":8}),
            Err(InputError::InvalidTimeZone { not_string: true }),
        ),
        (
            local("2026-02-30", "09:00:00", "UTC"),
            rule(RuleViolation::AtNotReal),
        ),
        (
            local("2026-08-06", "24:00:00", "UTC"),
            rule(RuleViolation::LocalNotReal),
        ),
        (
            local("2026/08/06", "09:00:00", "UTC"),
            rule(RuleViolation::LocalShape),
        ),
        (json!(42), rule(RuleViolation::AtType)),
        (json!(null), rule(RuleViolation::AtType)),
        (json!(["2026-08-06"]), rule(RuleViolation::AtType)),
    ];
    for (at, expected) in cases {
        assert_eq!(resolve(&at, T0), expected, "{at}");
    }
    for (date, time) in [
        ("2026-2-06", "09:00:00"),
        ("2026-08-06", "9:00:00"),
        ("2026-08-06", "09:00"),
        ("2026-08-06", "09:00:00.1234"),
        ("2026-08-06", "09:00:00Z"),
        ("2026-08-06T00:00:00", "09:00:00"),
        ("2026-08-06", "09:00:00."),
        ("２026-08-06", "09:00:00"),
    ] {
        let error = resolve(&local(date, time, "UTC"), T0).unwrap_err();
        assert_eq!(error.message(), ERR_LOCAL_SHAPE, "{date} {time}");
    }
    for (date, time) in [
        ("2026-08-06", "09:60:00"),
        ("2026-08-06", "09:00:60"),
        ("0000-01-01", "09:00:00"),
    ] {
        let error = resolve(&local(date, time, "UTC"), T0).unwrap_err();
        assert_eq!(error.message(), ERR_LOCAL_REAL, "{date} {time}");
    }
    let error = resolve(&json!(42), T0).unwrap_err();
    assert_eq!(
        error.message(),
        "at must be an explicit-offset string or local calendar object."
    );
    let error = resolve(
        &json!({"date":"2026-08-06","time":"09:00:00","time_zone":8}),
        T0,
    )
    .unwrap_err();
    assert_eq!(error.code(), ErrorCode::InvalidTimeZone);
    assert_eq!(error.message(), "time_zone must be a string.");
}

/// Case 43.
#[test]
fn calendar_errors_precede_zone_errors() {
    assert_eq!(
        resolve(&local("2026-02-30", "09:00:00", "CST"), T0)
            .unwrap_err()
            .message(),
        ERR_AT_REAL
    );
    assert_eq!(
        resolve(&local("2026-08-06", "24:00:00", "CST"), T0)
            .unwrap_err()
            .message(),
        ERR_LOCAL_REAL
    );
}

/// Case 45, and case 46's conversion.
#[test]
fn local_not_future_boundary() {
    assert_eq!(
        resolve(&local("2026-08-05", "12:00:00", "UTC"), T0),
        Err(InputError::NotFuture)
    );
    assert_eq!(
        resolve(&local("2026-08-05", "20:00:00", "Asia/Shanghai"), T0),
        Err(InputError::NotFuture)
    );
    assert_eq!(
        resolve(&local("2026-08-05", "20:00:00.001", "Asia/Shanghai"), T0).unwrap(),
        "2026-08-05T12:00:00.001Z"
    );
    assert_eq!(
        resolve(&local("2026-08-07", "09:30:00", "Asia/Shanghai"), T0).unwrap(),
        "2026-08-07T01:30:00.000Z"
    );
    assert_eq!(
        resolve(&local("2026-08-07", "09:30:00.5", "Asia/Kathmandu"), T0).unwrap(),
        "2026-08-07T03:45:00.500Z"
    );
}

fn zones(session: Option<&str>, client: Option<&str>) -> ZoneContext {
    ZoneContext {
        session_time_zone: session.map(str::to_owned),
        client_time_zone: client.map(str::to_owned),
    }
}

/// Case 47 (pure part), decision 6.
#[test]
fn session_zone_fallback() {
    let at = json!({"date":"2026-08-06","time":"09:00:00"});
    let create = |context: &ZoneContext| {
        create_at("schedule-1", "x", &at, T0, Some(context)).map(|r| r.scheduled_at().to_string())
    };
    assert_eq!(
        create(&zones(Some("America/New_York"), Some("America/New_York"))).unwrap(),
        "2026-08-06T13:00:00.000Z"
    );
    assert_eq!(
        create(&zones(Some("America/New_York"), None)).unwrap(),
        "2026-08-06T13:00:00.000Z"
    );
    assert_eq!(
        create(&zones(None, None))
            .unwrap_err()
            .to_value()
            .to_string(),
        r#"{"code":"timezone_confirmation_required","message":"Confirm the time zone: pass time_zone explicitly.","sessionTimeZone":"unavailable","clientTimeZones":[]}"#
    );
    assert_eq!(
        create(&zones(Some("America/New_York"), Some("Europe/Berlin")))
            .unwrap_err()
            .to_value()
            .to_string(),
        r#"{"code":"timezone_confirmation_required","message":"Confirm the time zone: pass time_zone explicitly.","sessionTimeZone":"America/New_York","clientTimeZones":["Europe/Berlin"]}"#
    );
    assert_eq!(
        create(&zones(None, Some("Europe/Berlin")))
            .unwrap_err()
            .to_value()["clientTimeZones"],
        json!(["Europe/Berlin"])
    );
    // An invalid session zone is reported as a zone error.
    assert_eq!(
        create(&zones(Some("CST"), None)).unwrap_err().code(),
        ErrorCode::InvalidTimeZone
    );
    // Calendar errors still come first; an explicit zone ignores the context.
    assert_eq!(
        create_at(
            "s",
            "x",
            &json!({"date":"2026-02-30","time":"09:00:00"}),
            T0,
            Some(&zones(None, None))
        )
        .unwrap_err()
        .message(),
        ERR_AT_REAL
    );
    assert_eq!(
        create_at(
            "s",
            "x",
            &local("2026-08-06", "09:00:00", "UTC"),
            T0,
            Some(&zones(None, Some("Europe/Berlin")))
        )
        .unwrap()
        .scheduled_at()
        .to_string(),
        "2026-08-06T09:00:00.000Z"
    );
    // Extra keys stay errors with a context.
    assert_eq!(
        create_at(
            "s",
            "x",
            &json!({"date":"2026-08-06","time":"09:00:00","extra":1}),
            T0,
            Some(&zones(Some("UTC"), None))
        ),
        Err(InputError::InvalidRule(RuleViolation::LocalKeys))
    );
}

#[test]
fn offset_parser_returns_unchecked_epoch_millis() {
    assert_eq!(
        parse_offset_at("0001-01-01T00:00:00+01:00"),
        Ok(crate::domain::MIN_MILLIS - 3_600_000)
    );
    assert_eq!(
        parse_offset_at("2026-08-06T09:00:00+08:00").map(utc),
        Ok("2026-08-06T01:00:00.000Z".to_owned())
    );
    assert_eq!(
        resolve_at(&json!("2026-08-06T01:00:00Z"), None),
        Ok(ms("2026-08-06T01:00:00Z"))
    );
}
