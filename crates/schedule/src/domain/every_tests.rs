use pretty_assertions::assert_eq;

use super::*;
use crate::domain::test_support::{T0, ms};

fn at(text: &str) -> Timestamp {
    Timestamp::parse(text).unwrap()
}

/// Case 31.
#[test]
fn resolve_exact_late_early_and_bad_inputs() {
    let target = at("2026-08-05T12:05:00.000Z");
    assert_eq!(
        resolve_every(target, 300, ms("2026-08-05T12:05:00Z")).unwrap(),
        Occurrence {
            occurrence_at: at("2026-08-05T12:05:00.000Z"),
            next_scheduled_at: Some(at("2026-08-05T12:10:00.000Z")),
        }
    );
    assert_eq!(
        resolve_every(target, 300, ms("2026-08-05T12:17:34Z")).unwrap(),
        Occurrence {
            occurrence_at: at("2026-08-05T12:15:00.000Z"),
            next_scheduled_at: Some(at("2026-08-05T12:20:00.000Z")),
        }
    );
    let early = resolve_every(target, 300, ms("2026-08-05T12:04:59.999Z")).unwrap_err();
    assert_eq!(early, ResolveError::Precedes);
    assert!(early.to_string().contains("cannot precede"));
    let absurd = resolve_every(target, 300, i64::MAX).unwrap_err();
    assert!(absurd.to_string().contains("acceptedAt"));
    assert!(
        resolve_every(target, 300, 9_007_199_254_740_991)
            .unwrap_err()
            .to_string()
            .contains("acceptedAt")
    );
    let interval = resolve_every(target, 9_007_199_254_740_991, T0 + 300_000).unwrap_err();
    assert!(interval.to_string().contains("interval milliseconds"));
    assert_eq!(
        resolve_every(target, 0, T0 + 300_000),
        Err(ResolveError::IntervalNotSafe)
    );
}

/// §6 worked example with milliseconds on the anchor.
#[test]
fn anchor_milliseconds_are_kept() {
    let result = resolve_every(
        at("2026-08-05T12:05:00.123Z"),
        300,
        ms("2026-08-05T13:02:00Z"),
    )
    .unwrap();
    assert_eq!(result.occurrence_at, at("2026-08-05T13:00:00.123Z"));
    assert_eq!(
        result.next_scheduled_at,
        Some(at("2026-08-05T13:05:00.123Z"))
    );
}

/// Case 13: no representable next target terminates the record.
#[test]
fn no_next_after_year_9999() {
    assert_eq!(
        resolve_every(Timestamp::MAX, 300, Timestamp::MAX.millis()).unwrap(),
        Occurrence {
            occurrence_at: Timestamp::MAX,
            next_scheduled_at: None,
        }
    );
    let target = at("9999-12-31T23:55:00.000Z");
    for decided in ["9999-12-31T23:55:00.000Z", "9999-12-31T23:59:59.999Z"] {
        assert_eq!(
            resolve_every(target, 300, at(decided).millis()).unwrap(),
            Occurrence {
                occurrence_at: target,
                next_scheduled_at: None,
            }
        );
    }
}
