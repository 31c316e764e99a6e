use chrono::{DateTime, SecondsFormat, Utc};
use pretty_assertions::assert_eq;
use proptest::prelude::*;

use super::*;

#[test]
fn range_bounds_are_the_spec_values() {
    assert_eq!(Timestamp::MIN.to_string(), "0001-01-01T00:00:00.000Z");
    assert_eq!(Timestamp::MAX.to_string(), "9999-12-31T23:59:59.999Z");
    assert_eq!(Timestamp::from_millis(MIN_MILLIS - 1), None);
    assert_eq!(Timestamp::from_millis(MAX_MILLIS + 1), None);
    assert_eq!(
        Timestamp::parse("2026-08-05T12:00:00.000Z").map(Timestamp::millis),
        Some(1_785_931_200_000)
    );
    assert_eq!(
        Timestamp::parse("2026-08-05T12:00:00.123Z")
            .unwrap()
            .to_string(),
        "2026-08-05T12:00:00.123Z"
    );
}

#[test]
fn parse_rejects_everything_but_the_canonical_form() {
    for text in [
        "0000-01-01T00:00:00.000Z",
        "10000-01-01T00:00:00.000Z",
        "2026-02-30T00:00:00.000Z",
        "2027-02-29T00:00:00.000Z",
        "2026-13-01T00:00:00.000Z",
        "2026-00-01T00:00:00.000Z",
        "2026-01-00T00:00:00.000Z",
        "2026-08-05T24:00:00.000Z",
        "2026-08-05T12:60:00.000Z",
        "2026-08-05T12:00:60.000Z",
        "2026-08-05T12:00:00Z",
        "2026-08-05T12:00:00.00Z",
        "2026-08-05T12:00:00.0000Z",
        "2026-08-05t12:00:00.000Z",
        "2026-08-05T12:00:00.000z",
        "2026-08-05 12:00:00.000Z",
        "2026-08-05T12:00:00.000+00:00",
        " 2026-08-05T12:00:00.000Z",
        "2026-08-05T12:00:00.000Z ",
        "２026-08-05T12:00:00.000Z",
        "",
        "not-an-instant",
    ] {
        assert_eq!(Timestamp::parse(text), None, "{text}");
    }
    assert!(Timestamp::parse("2028-02-29T00:00:00.000Z").is_some());
    assert!(Timestamp::parse("2000-02-29T23:59:59.999Z").is_some());
    assert!(Timestamp::parse("1900-02-29T00:00:00.000Z").is_none());
}

#[test]
fn serde_uses_the_canonical_form() {
    let at = Timestamp::parse("2026-08-05T12:00:00.001Z").unwrap();
    assert_eq!(
        serde_json::to_string(&at).unwrap(),
        "\"2026-08-05T12:00:00.001Z\""
    );
    assert_eq!(
        serde_json::from_str::<Timestamp>("\"2026-08-05T12:00:00.001Z\"").unwrap(),
        at
    );
    assert_eq!(
        serde_json::from_str::<Timestamp>("\"2026-08-05T12:00:00Z\"")
            .unwrap_err()
            .to_string(),
        "not a canonical schedule instant"
    );
}

proptest! {
    /// Formatting agrees with chrono's canonical output and parsing round-trips.
    #[test]
    fn format_agrees_with_chrono(ms in MIN_MILLIS..=MAX_MILLIS) {
        let at = Timestamp::from_millis(ms).unwrap();
        let chrono = DateTime::<Utc>::from_timestamp_millis(ms).unwrap();
        let text = at.to_string();
        prop_assert_eq!(&text, &chrono.to_rfc3339_opts(SecondsFormat::Millis, true));
        prop_assert_eq!(Timestamp::parse(&text), Some(at));
        prop_assert_eq!(Timestamp::from_datetime(chrono), Some(at));
        prop_assert_eq!(at.to_datetime(), chrono);
    }
}
