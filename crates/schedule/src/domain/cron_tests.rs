#![allow(clippy::unwrap_used, reason = "a test stops on failure")]

use chrono::{DateTime, Offset, TimeZone, Utc};
use chrono_tz::Tz;
use pretty_assertions::assert_eq;
use proptest::prelude::*;

use super::*;
use crate::domain::error::ErrorCode;

fn ts(text: &str) -> Timestamp {
    let at = DateTime::parse_from_rfc3339(text).unwrap();
    Timestamp::from_millis(at.timestamp_millis()).unwrap()
}

fn next(cron: &str, zone: &str, after: &str) -> Option<String> {
    let rule = CronRule::parse(cron).unwrap();
    rule.next_after(zone.parse().unwrap(), ts(after))
        .map(|t| t.to_string())
}

fn error_of(cron: &str) -> (&'static str, &'static str) {
    let error = CronRule::parse(cron).unwrap_err();
    (error.code().as_str(), error.message())
}

#[test]
fn every_error_of_the_grammar() {
    let shape = (
        "invalid_rule",
        "cron must be five space-separated fields: minute hour day-of-month month day-of-week.",
    );
    // A tab is not a separator: `*\t* * * *` is four fields.
    for text in [
        "",
        "* * * *",
        "* * * * * *",
        " * * * * *",
        "* * * * * ",
        "*\t* * * *",
    ] {
        assert_eq!(error_of(text), shape, "{text:?}");
    }
    let minute = "The cron minute field must be *, a number 0-59, a range a-b, a step */n or a-b/n, or a comma-separated list of them.";
    let hour = "The cron hour field must be *, a number 0-23, a range a-b, a step */n or a-b/n, or a comma-separated list of them.";
    let day = "The cron day-of-month field must be *, a number 1-31, a range a-b, a step */n or a-b/n, or a comma-separated list of them.";
    let month = "The cron month field must be *, a number 1-12, a range a-b, a step */n or a-b/n, or a comma-separated list of them.";
    let weekday = "The cron day-of-week field must be *, a number 0-7 (0 and 7 are Sunday), a range a-b, a step */n or a-b/n, or a comma-separated list of them.";
    let cases = [
        ("60 * * * *", minute),
        ("1,,2 * * * *", minute),
        ("a * * * *", minute),
        ("-1 * * * *", minute),
        ("007 * * * *", minute),
        ("*/ * * * *", minute),
        ("1-2-3 * * * *", minute),
        ("* 24 * * *", hour),
        ("* * 0 * *", day),
        ("* * 32 * *", day),
        ("* * * 0 *", month),
        ("* * * 13 *", month),
        ("* * * JAN *", month),
        ("* * * * 8", weekday),
        ("* * * * MON", weekday),
        ("* * * * L", weekday),
    ];
    for (text, message) in cases {
        assert_eq!(error_of(text), ("invalid_rule", message), "{text:?}");
    }
    assert_eq!(
        error_of("30-10 * * * *"),
        (
            "invalid_rule",
            "A cron range a-b must have a no greater than b."
        )
    );
    assert_eq!(
        error_of("*/0 * * * *"),
        ("invalid_rule", "A cron step /n must be at least 1.")
    );
    for never in ["0 0 30 2 *", "0 0 31 2,4,6,9,11 *", "0 0 31 4 *"] {
        assert_eq!(
            error_of(never),
            (
                "no_future_occurrence",
                "The cron expression matches no date before 9999-12-31 (such as February 30)."
            ),
            "{never}"
        );
    }
    assert_eq!(
        CronRule::parse("0 0 30 2 *").unwrap_err().code(),
        ErrorCode::NoFutureOccurrence
    );
    // Restricting the day of week too makes it "day 30 or Monday": it matches.
    assert!(CronRule::parse("0 0 30 2 1").is_ok());
}

#[test]
fn the_grammar_reads_values_ranges_steps_and_lists() {
    let at = "2026-08-05T12:00:00.000Z"; // a Wednesday
    assert_eq!(
        next("*/15 * * * *", "UTC", at).unwrap(),
        "2026-08-05T12:15:00.000Z"
    );
    assert_eq!(
        next("7/20 * * * *", "UTC", at).unwrap(),
        "2026-08-05T12:07:00.000Z"
    );
    assert_eq!(
        next("5-20/5 13 * * *", "UTC", at).unwrap(),
        "2026-08-05T13:05:00.000Z"
    );
    assert_eq!(
        next("0 9 * * 1-5", "Europe/Paris", at).unwrap(),
        "2026-08-06T07:00:00.000Z"
    );
    assert_eq!(
        next("0 9 * * 0", "UTC", at).unwrap(),
        "2026-08-09T09:00:00.000Z"
    );
    assert_eq!(
        next("0 9 * * 7", "UTC", at).unwrap(),
        "2026-08-09T09:00:00.000Z"
    );
    // Day of month or day of week when both are restricted (Vixie cron).
    assert_eq!(
        next("0 0 1 * 5", "UTC", at).unwrap(),
        "2026-08-07T00:00:00.000Z"
    );
    assert_eq!(
        next("0 0 29 2 *", "UTC", at).unwrap(),
        "2028-02-29T00:00:00.000Z"
    );
    assert_eq!(
        next("0,30 12 5 8 *", "UTC", at).unwrap(),
        "2026-08-05T12:30:00.000Z"
    );
    // Strictly after: an occurrence at `after` itself is not the next one.
    assert_eq!(
        next("0 12 * * *", "UTC", at).unwrap(),
        "2026-08-06T12:00:00.000Z"
    );
    // Past the representable range there is none.
    assert_eq!(next("0 0 1 1 *", "UTC", "9999-06-01T00:00:00.000Z"), None);
}

#[test]
fn a_skipped_local_time_fires_once_at_the_first_minute_after_it() {
    // Europe/Paris 2026-03-29: 02:00 CET becomes 03:00 CEST (01:00Z).
    let before = "2026-03-28T12:00:00.000Z";
    assert_eq!(
        next("30 2 * * *", "Europe/Paris", before).unwrap(),
        "2026-03-29T01:00:00.000Z"
    );
    assert_eq!(
        next("30 2 * * *", "Europe/Paris", "2026-03-29T01:00:00.000Z").unwrap(),
        "2026-03-30T00:30:00.000Z"
    );
    // Every quarter hour: 02:00–02:45 do not exist; 03:00 fires once, then 03:15.
    let quarter = "2026-03-29T00:50:00.000Z"; // 01:50 CET
    assert_eq!(
        next("*/15 * * * *", "Europe/Paris", quarter).unwrap(),
        "2026-03-29T01:00:00.000Z"
    );
    assert_eq!(
        next("*/15 * * * *", "Europe/Paris", "2026-03-29T01:00:00.000Z").unwrap(),
        "2026-03-29T01:15:00.000Z"
    );
    // A date rule still holds: Sunday 02:30 fires on that Sunday, at 03:00.
    assert_eq!(
        next("30 2 * * 0", "Europe/Paris", before).unwrap(),
        "2026-03-29T01:00:00.000Z"
    );
    // Australia/Lord_Howe skips half an hour (02:00 → 02:30, +10:30 → +11:00).
    assert_eq!(
        next(
            "15 2 * * *",
            "Australia/Lord_Howe",
            "2026-10-03T12:00:00.000Z"
        )
        .unwrap(),
        "2026-10-03T15:30:00.000Z"
    );
    // America/Havana skips midnight (00:00 → 01:00 on 2026-03-08).
    assert_eq!(
        next("0 0 * * *", "America/Havana", "2026-03-07T12:00:00.000Z").unwrap(),
        "2026-03-08T05:00:00.000Z"
    );
    // Pacific/Apia skipped all of 2011-12-30: 09:00 fires at the first minute of the 31st.
    assert_eq!(
        next("0 9 30 12 *", "Pacific/Apia", "2011-12-28T00:00:00.000Z").unwrap(),
        "2011-12-30T10:00:00.000Z"
    );
}

#[test]
fn a_repeated_local_time_fires_once_the_first() {
    // Europe/Paris 2026-10-25: 03:00 CEST becomes 02:00 CET; 02:00–02:59 occur twice.
    assert_eq!(
        next("30 2 * * *", "Europe/Paris", "2026-10-24T12:00:00.000Z").unwrap(),
        "2026-10-25T00:30:00.000Z"
    );
    assert_eq!(
        next("30 2 * * *", "Europe/Paris", "2026-10-25T00:30:00.000Z").unwrap(),
        "2026-10-26T01:30:00.000Z"
    );
    // Every half hour: 02:00 and 02:30 CEST fire, the CET repeats do not, 03:00 CET does.
    let mut at = ts("2026-10-24T23:45:00.000Z"); // 01:45 CEST
    let rule = CronRule::parse("*/30 * * * *").unwrap();
    let zone: Tz = "Europe/Paris".parse().unwrap();
    let mut fired = Vec::new();
    for _ in 0..4 {
        at = rule.next_after(zone, at).unwrap();
        fired.push(at.to_string());
    }
    assert_eq!(
        fired,
        [
            "2026-10-25T00:00:00.000Z",
            "2026-10-25T00:30:00.000Z",
            "2026-10-25T02:00:00.000Z",
            "2026-10-25T02:30:00.000Z"
        ]
    );
    // America/New_York 2026-11-01 01:30 occurs at 05:30Z (EDT) and 06:30Z (EST).
    assert_eq!(
        next("30 1 * * *", "America/New_York", "2026-11-01T05:30:00.000Z").unwrap(),
        "2026-11-02T06:30:00.000Z"
    );
}

#[test]
fn catch_up_presents_the_latest_occurrence_only() {
    let rule = CronRule::parse("0 9 * * 1-5").unwrap();
    let zone: Tz = "Europe/Paris".parse().unwrap();
    // Down from Friday 2026-12-04 until Tuesday 2026-12-08 12:00Z: Monday and Tuesday
    // 09:00 were missed; the dispatch presents Tuesday's, and the next is Wednesday's.
    let accepted = ts("2026-12-08T12:00:00.000Z");
    assert_eq!(
        rule.latest_at_or_before(zone, accepted)
            .unwrap()
            .to_string(),
        "2026-12-08T08:00:00.000Z"
    );
    assert_eq!(
        rule.next_after(zone, accepted).unwrap().to_string(),
        "2026-12-09T08:00:00.000Z"
    );
    // An occurrence at the instant itself is the latest one.
    assert_eq!(
        rule.latest_at_or_before(zone, ts("2026-12-08T08:00:00.000Z"))
            .unwrap()
            .to_string(),
        "2026-12-08T08:00:00.000Z"
    );
}

/// Zones with transitions of different kinds: one-hour shifts north and south, a half-hour
/// shift, a transition at midnight, and no transition at all.
const ZONES: [&str; 8] = [
    "Europe/Paris",
    "America/New_York",
    "Australia/Sydney",
    "Australia/Lord_Howe",
    "America/Havana",
    "America/Santiago",
    "Europe/London",
    "Asia/Tokyo",
];

/// croner's next occurrence strictly after `after` (whole seconds).
fn croner_next(cron: &croner::Cron, zone: Tz, after: Timestamp) -> Option<i64> {
    let start = zone.timestamp_millis_opt(after.millis()).single()?;
    cron.find_next_occurrence(&start, false)
        .ok()
        .map(|t| t.timestamp_millis())
}

/// Whether `at` is the later of the two instants of a repeated wall-clock time in `zone`.
fn is_repeat(zone: Tz, at: i64) -> bool {
    let local = zone.timestamp_millis_opt(at).unwrap().naive_local();
    match zone.from_local_datetime(&local) {
        LocalResult::Ambiguous(first, _) => first.timestamp_millis() < at,
        _ => false,
    }
}

fn offset_at(zone: Tz, at: i64) -> i32 {
    zone.timestamp_millis_opt(at)
        .unwrap()
        .offset()
        .fix()
        .local_minus_utc()
}

/// The instants (epoch ms) in 2024–2028 where `zone`'s offset changes, found by day and
/// then bisected to the second.
fn transitions(zone: Tz) -> Vec<i64> {
    let from = Utc
        .with_ymd_and_hms(2024, 1, 1, 0, 0, 0)
        .unwrap()
        .timestamp_millis();
    let day = 86_400_000;
    let mut found = Vec::new();
    let mut at = from;
    while at < from + 5 * 366 * day {
        if offset_at(zone, at) != offset_at(zone, at + day) {
            let (mut low, mut high) = (at, at + day);
            while high - low > 1000 {
                let mid = low + (high - low) / 2000 * 1000;
                if offset_at(zone, mid) == offset_at(zone, low) {
                    low = mid;
                } else {
                    high = mid;
                }
            }
            found.push(high);
        }
        at += day;
    }
    found
}

/// A zone and a start instant (whole seconds): half the time anywhere in 2024–2028, half
/// within two days before or one after one of the zone's transitions.
fn zone_and_start() -> impl Strategy<Value = (Tz, i64)> {
    let from = Utc
        .with_ymd_and_hms(2024, 1, 1, 0, 0, 0)
        .unwrap()
        .timestamp();
    let to = Utc
        .with_ymd_and_hms(2028, 12, 31, 0, 0, 0)
        .unwrap()
        .timestamp();
    (
        proptest::sample::select(&ZONES[..]),
        any::<proptest::sample::Index>(),
        -2 * 86_400i64..86_400,
        from..to,
        any::<bool>(),
    )
        .prop_map(|(zone, which, around, anywhere, near)| {
            let zone: Tz = zone.parse().unwrap();
            let list = transitions(zone);
            let start = if near && !list.is_empty() {
                list[which.index(list.len())] / 1000 + around
            } else {
                anywhere
            };
            (zone, start * 1000)
        })
}

/// A field item of `min..=max`, restricted (never starting with `*`) when `restricted`.
fn item(min: u32, max: u32, restricted: bool) -> BoxedStrategy<String> {
    let single = (min..=max).prop_map(|v| v.to_string());
    let range = (min..=max, min..=max).prop_map(|(a, b)| format!("{}-{}", a.min(b), a.max(b)));
    let stepped = (min..=max, 1..=max.max(1)).prop_map(move |(a, s)| format!("{a}-{max}/{s}"));
    if restricted {
        prop_oneof![single, range, stepped].boxed()
    } else {
        let star_step = (1..=max.max(1)).prop_map(|s| format!("*/{s}"));
        prop_oneof![Just("*".to_owned()), star_step, single, range, stepped].boxed()
    }
}

/// One item, or (restricted) a list of one to three: croner takes no `*` inside a list.
fn list(min: u32, max: u32, restricted: bool) -> BoxedStrategy<String> {
    let items =
        proptest::collection::vec(item(min, max, true), 1..4).prop_map(|items| items.join(","));
    if restricted {
        items.boxed()
    } else {
        prop_oneof![item(min, max, false), items].boxed()
    }
}

/// Day-of-month and day-of-week fields: `*`, or a restricted list (so both readings of
/// "restricted" agree).
fn date_fields() -> impl Strategy<Value = (String, String, String)> {
    let day = prop_oneof![Just("*".to_owned()), list(1, 28, true)];
    let weekday = prop_oneof![Just("*".to_owned()), list(0, 6, true)];
    let month = prop_oneof![Just("*".to_owned()), list(1, 12, false)];
    (day, month, weekday)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// A fixed time of day (one minute, one hour): croner's rules for those are the ones
    /// here (a skipped time runs at the first instant after the gap, a repeated one at the
    /// first), so both must give the same instant, over every kind of transition.
    #[test]
    fn a_fixed_time_agrees_with_croner(
        (zone, after) in zone_and_start(),
        minute in prop_oneof![Just(0u32), Just(15), Just(30), 0u32..60],
        hour in prop_oneof![0u32..4, 0u32..24],
        (day, month, weekday) in date_fields(),
    ) {
        let text = format!("{minute} {hour} {day} {month} {weekday}");
        let rule = CronRule::parse(&text).unwrap();
        let reference: croner::Cron = text.parse().unwrap();
        let after = Timestamp::from_millis(after).unwrap();
        let mine = rule.next_after(zone, after).map(|t| t.millis());
        prop_assert_eq!(mine, croner_next(&reference, zone, after), "{} in {}", text, zone);
    }

    /// Any rule: croner's answer, less the second instant of a repeated time (croner runs
    /// interval rules on both), is the next occurrence here, except where a skipped time
    /// fires first: then the answer here is a transition instant that moves clocks forward,
    /// strictly before croner's.
    #[test]
    fn any_rule_agrees_with_croner_outside_skipped_times(
        (zone, after) in zone_and_start(),
        minute in list(0, 59, false),
        hour in list(0, 23, false),
        (day, month, weekday) in date_fields(),
    ) {
        let text = format!("{minute} {hour} {day} {month} {weekday}");
        let rule = CronRule::parse(&text).unwrap();
        let reference: croner::Cron = text.parse().unwrap();
        let after = Timestamp::from_millis(after).unwrap();
        let mine = rule.next_after(zone, after).map(|t| t.millis());
        let mut theirs = croner_next(&reference, zone, after);
        while let Some(at) = theirs.filter(|at| is_repeat(zone, *at)) {
            theirs = croner_next(&reference, zone, Timestamp::from_millis(at).unwrap());
        }
        // Latest-only catch-up: the latest occurrence at or before the next one is itself,
        // and none lies between the latest one before `after` and the next one.
        if let Some(next) = mine {
            let next_ts = Timestamp::from_millis(next).unwrap();
            prop_assert_eq!(rule.latest_at_or_before(zone, next_ts), Some(next_ts));
            if let Some(latest) = rule.latest_at_or_before(zone, after) {
                prop_assert!(latest <= after);
                prop_assert_eq!(rule.next_after(zone, latest), Some(next_ts));
            }
        }
        if mine != theirs {
            let (Some(mine), Some(theirs)) = (mine, theirs) else {
                return Err(TestCaseError::fail(format!("{text} in {zone}: {mine:?} vs {theirs:?}")));
            };
            prop_assert!(mine < theirs, "{} in {}: {} vs {}", text, zone, mine, theirs);
            prop_assert!(
                offset_at(zone, mine - 1000) < offset_at(zone, mine),
                "{} in {}: {} is not the end of a skipped time", text, zone, mine
            );
        }
    }
}
