//! The replay decoder [`decode_change_text`] against the `Value` decoder
//! [`decode_change_json`]: the same change or the same error, for valid payloads in every
//! form and for any single-byte corruption of one.

use pretty_assertions::assert_eq;
use proptest::prelude::*;

use super::*;

/// Where the `cron` records start in [`PAYLOADS`].
const CRON: usize = 24;

/// Payloads in the canonical form, in other valid forms, and invalid ones.
const PAYLOADS: &[&str] = &[
    r#"{"version":1,"operation":"create","schedule":{"id":"schedule-1","kind":"after","prompt":"check logs","afterSeconds":30,"scheduledAt":"2026-08-05T12:00:30.000Z"}}"#,
    r#"{"version":1,"operation":"create","schedule":{"id":"a","kind":"every","prompt":"p","everySeconds":300,"scheduledAt":"2026-08-05T12:05:00.000Z"}}"#,
    r#"{"version":1,"operation":"create","schedule":{"id":"b","kind":"at","prompt":"p q","scheduledAt":"2026-08-05T12:05:00.000Z"}}"#,
    r#"{"version":1,"operation":"delete","id":"schedule-1"}"#,
    r#"{"version":1,"operation":"dispatch","id":"schedule-1"}"#,
    r#"{"version":1,"operation":"dispatch","id":"a","acceptedAt":"2026-08-05T12:05:01.000Z"}"#,
    r#"{"operation":"delete","version":1.0,"id":"x"}"#,
    r#"{ "version": 1, "operation": "delete", "id": "\u0078" }"#,
    r#"{"version":1,"operation":"delete","id":"x","id":"y"}"#,
    r#"{"version":1,"operation":"delete","id":null}"#,
    r#"{"version":1,"operation":"delete","id":" x"}"#,
    r#"{"version":1,"operation":"delete","id":"x","extra":1}"#,
    r#"{"version":"1","operation":"delete","id":"x"}"#,
    r#"{"version":1,"operation":"dispatch","id":"a","acceptedAt":null}"#,
    r#"{"version":1,"operation":"create","schedule":{"id":"a","kind":"after","prompt":"p","afterSeconds":30.0,"scheduledAt":"2026-08-05T12:00:30.000Z"}}"#,
    r#"{"version":1,"operation":"create","schedule":{"id":"a","kind":"after","prompt":"p","afterSeconds":0,"scheduledAt":"2026-08-05T12:00:30.000Z"}}"#,
    r#"{"version":1,"operation":"create","schedule":{"id":"a","kind":"after","prompt":"p","afterSeconds":9007199254740992,"scheduledAt":"2026-08-05T12:00:30.000Z"}}"#,
    r#"{"version":1,"operation":"create","schedule":{"id":"a","kind":"every","prompt":"p","everySeconds":299,"scheduledAt":"2026-08-05T12:00:30.000Z"}}"#,
    r#"{"version":1,"operation":"create","schedule":{"id":"a","kind":"at","prompt":"p","afterSeconds":1,"scheduledAt":"2026-08-05T12:00:30.000Z"}}"#,
    r#"{"version":1,"operation":"create","schedule":{"id":"a","kind":"after","prompt":"","afterSeconds":1,"scheduledAt":"2026-08-05T12:00:30.000Z"}}"#,
    r#"{"version":1,"operation":"create","schedule":{"id":"a","kind":"after","prompt":"p","afterSeconds":1,"scheduledAt":"2026-08-05T12:00:30Z"}}"#,
    r#"{"version":1,"operation":"create","schedule":[],"id":"a"}"#,
    r#"[1,2]"#,
    r#"null"#,
    r#"{"version":1,"operation":"create","schedule":{"id":"c","kind":"cron","prompt":"p","cron":"0 9 * * 1-5","timeZone":"Europe/Paris","scheduledAt":"2026-08-06T07:00:00.000Z"}}"#,
    r#"{"version":1,"operation":"create","schedule":{"kind":"cron","id":"c","prompt":"p","timeZone":"US/Eastern","cron":"*/15 * * * *","scheduledAt":"2026-08-06T07:00:00.000Z"}}"#,
    r#"{"version":1,"operation":"create","schedule":{"id":"c","kind":"cron","prompt":"p","cron":"0 9 * *","timeZone":"UTC","scheduledAt":"2026-08-06T07:00:00.000Z"}}"#,
    r#"{"version":1,"operation":"create","schedule":{"id":"c","kind":"cron","prompt":"p","cron":"0 9 * * *","timeZone":"Mars/Olympus","scheduledAt":"2026-08-06T07:00:00.000Z"}}"#,
    r#"{"version":1,"operation":"create","schedule":{"id":"c","kind":"cron","prompt":"p","cron":"0 9 * * *","scheduledAt":"2026-08-06T07:00:00.000Z"}}"#,
    r#"{"version":1,"operation":"create","schedule":{"id":"c","kind":"every","prompt":"p","everySeconds":300,"cron":"0 9 * * *","timeZone":"UTC","scheduledAt":"2026-08-06T07:00:00.000Z"}}"#,
    r#"{"version":1,"operation":"create","schedule":{"id":"c","kind":"at","prompt":"p","timeZone":"UTC","scheduledAt":"2026-08-06T07:00:00.000Z"}}"#,
    r#"{"version":1,"operation":"create","schedule":{"id":"c","kind":"cron","prompt":"p","cron":1,"timeZone":"UTC","scheduledAt":"2026-08-06T07:00:00.000Z"}}"#,
];

#[test]
fn text_decoder_agrees_with_the_value_decoder() {
    for payload in PAYLOADS {
        assert_eq!(
            decode_change_text(payload),
            decode_change_json(payload.as_bytes()),
            "{payload}"
        );
    }
}

#[test]
fn canonical_payloads_take_the_positional_path() {
    let change = decode_change_text(PAYLOADS[0]).unwrap();
    assert_eq!(serde_json::to_string(&change).unwrap(), PAYLOADS[0]);
    assert_eq!(canonical_change(PAYLOADS[0]), Some(change));
    assert_eq!(canonical_change(PAYLOADS[6]), None);
}

#[test]
fn a_cron_record_round_trips_on_every_path_with_its_text_and_zone_as_written() {
    let cron = PAYLOADS[CRON];
    let change = canonical_change(cron).unwrap();
    assert_eq!(serde_json::to_string(&change).unwrap(), cron);
    assert_eq!(decode_change_text(cron).unwrap(), change);
    assert_eq!(
        decode_change(&serde_json::from_str(cron).unwrap()).unwrap(),
        change
    );
    // Keys in another order take the typed path; a link zone keeps its own name.
    let reordered = decode_change_text(PAYLOADS[CRON + 1]).unwrap();
    assert_eq!(canonical_change(PAYLOADS[CRON + 1]), None);
    assert_eq!(
        serde_json::to_string(&reordered).unwrap(),
        r#"{"version":1,"operation":"create","schedule":{"id":"c","kind":"cron","prompt":"p","cron":"*/15 * * * *","timeZone":"US/Eastern","scheduledAt":"2026-08-06T07:00:00.000Z"}}"#
    );
    // A bad rule, a bad zone, a missing zone, a cron key on another kind: corrupt.
    for bad in &PAYLOADS[CRON + 2..] {
        assert!(decode_change_text(bad).is_err(), "{bad}");
    }
}

/// [`canonical_transition`] reads exactly the deletes and dispatches that
/// [`decode_change_text`] decodes, to the same operation and id.
fn transition_agrees(text: &str) -> Result<(), String> {
    let Some(transition) = canonical_transition(text) else {
        return Ok(());
    };
    let expected = match decode_change_text(text) {
        Ok(ScheduleChange::Delete { id }) => id.to_string(),
        Ok(ScheduleChange::Dispatch { id }) => id.to_string(),
        Ok(ScheduleChange::DispatchEvery { id, accepted_at }) => {
            match transition {
                ChangeRef::DispatchEvery(_, at) if at == accepted_at => {}
                _ => return Err(format!("{text}: {transition:?}")),
            }
            id.to_string()
        }
        other => return Err(format!("{text}: {transition:?} for {other:?}")),
    };
    let operation = match transition {
        ChangeRef::Delete(_) => "delete",
        _ => "dispatch",
    };
    let decoded = decode_change_text(text).map(|change| change.operation());
    if transition.id() == expected && decoded == Ok(operation) {
        Ok(())
    } else {
        Err(format!("{text}: {transition:?}"))
    }
}

#[test]
fn canonical_transitions_borrow_the_id_of_the_decoded_change() {
    for payload in PAYLOADS {
        assert_eq!(transition_agrees(payload), Ok(()));
    }
    assert_eq!(
        canonical_transition(PAYLOADS[5]),
        Some(ChangeRef::DispatchEvery(
            "a",
            Timestamp::parse("2026-08-05T12:05:01.000Z").unwrap()
        ))
    );
    assert_eq!(
        canonical_transition(PAYLOADS[3]),
        Some(ChangeRef::Delete("schedule-1"))
    );
    assert_eq!(
        canonical_transition(PAYLOADS[4]),
        Some(ChangeRef::Dispatch("schedule-1"))
    );
    assert_eq!(canonical_transition(PAYLOADS[0]), None);
    assert_eq!(canonical_transition(PAYLOADS[10]), None);
}

proptest! {
    #[test]
    fn single_byte_corruption_reads_transitions_alike(
        which in 0..PAYLOADS.len(),
        position in any::<usize>(),
        byte in any::<u8>(),
    ) {
        let mut text = PAYLOADS[which].as_bytes().to_vec();
        let at = position % text.len();
        text[at] = byte;
        if let Ok(text) = std::str::from_utf8(&text) {
            prop_assert_eq!(transition_agrees(text), Ok(()));
        }
    }

    #[test]
    fn single_byte_corruption_decodes_alike(
        which in 0..PAYLOADS.len(),
        position in any::<usize>(),
        byte in any::<u8>(),
    ) {
        let mut text = PAYLOADS[which].as_bytes().to_vec();
        let at = position % text.len();
        text[at] = byte;
        if let Ok(text) = std::str::from_utf8(&text) {
            prop_assert_eq!(decode_change_text(text), decode_change_json(text.as_bytes()));
        }
    }
}
