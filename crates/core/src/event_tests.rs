//! [`RawEvent::from_line`] against a full `serde_json` parse of the line into a
//! [`SessionEvent`]: the same event or the same error, for lines in the stores' form, in other
//! valid forms, and for any single-byte corruption of one.

use pretty_assertions::assert_eq;
use proptest::prelude::*;

use super::*;

const LINES: &[&str] = &[
    r#"{"seq":1,"type":"todo/write","time":"2026-08-05T12:00:00.000Z","data":{"todos":[{"content":"a","status":"pending"}]}}"#,
    r#"{"seq":12,"type":"schedule/change","time":"2026-08-05T12:00:00.123Z","data":{"version":1,"operation":"delete","id":"x"}}"#,
    r#"{"seq":3,"type":"t","time":"2026-08-05T12:00:00Z","data":null}"#,
    r#"{"seq":3,"type":"t","time":"2026-08-05T14:00:00.000+02:00","data":[1,2.5,"x"]}"#,
    r#"{ "seq": 3, "type": "t\/u", "time": "2026-08-05T12:00:00.000Z", "data": { "a" : 1 } }"#,
    r#"{"data":{},"time":"2026-08-05T12:00:00.000Z","type":"t","seq":3,"extra":true}"#,
    r#"{"seq":3,"type":"t","time":"2026-08-05T12:00:00.000Z","data":{"s":"\ud83d\ude00 \n"}}"#,
    r#"{"seq":3,"type":"t","time":"2026-08-05T12:00:00.000Z","data":{"s":"\ud800"}}"#,
    r#"{"seq":3,"type":"t","time":"2026-08-05T12:00:00.000Z"}"#,
    r#"{"seq":3,"type":"t","time":"2026-02-30T12:00:00.000Z","data":1}"#,
    r#"{"seq":03,"type":"t","time":"2026-08-05T12:00:00.000Z","data":1}"#,
    r#"{"seq":3,"type":"t","time":"2026-08-05T12:00:00.000Z","data":1}}"#,
    r#"{"seq":3,"type":"t","time":"2026-08-05T12:00:00.000Z","data":1,"seq":4}"#,
];

fn both(line: &[u8]) -> (Result<SessionEvent, String>, Result<SessionEvent, String>) {
    (
        RawEvent::from_line(line)
            .map(|event| event.to_event())
            .map_err(|e| e.to_string()),
        serde_json::from_slice::<SessionEvent>(line).map_err(|e| e.to_string()),
    )
}

#[test]
fn line_decoder_agrees_with_a_full_parse() {
    for line in LINES {
        let (raw, full) = both(line.as_bytes());
        assert_eq!(raw, full, "{line}");
    }
}

#[test]
fn canonical_lines_keep_their_payload_text_and_write_back_identically() {
    let event = RawEvent::from_line(LINES[0].as_bytes()).unwrap();
    assert_eq!(
        (event.seq(), event.r#type(), event.payload()),
        (
            1,
            "todo/write",
            r#"{"todos":[{"content":"a","status":"pending"}]}"#
        )
    );
    let mut out = Vec::new();
    event.write_line(&mut out);
    assert_eq!(out, format!("{}\n", LINES[0]).into_bytes());
    assert_eq!(RawEvent::from_event(&event.to_event()), event);
}

#[test]
fn canonical_time_matches_the_general_parser() {
    for text in [
        "2026-08-05T12:00:00.000Z",
        "0001-01-01T00:00:00.000Z",
        "9999-12-31T23:59:59.999Z",
        "2024-02-29T23:59:59.999Z",
    ] {
        let general = chrono::DateTime::parse_from_rfc3339(text)
            .unwrap()
            .timestamp_millis();
        assert_eq!(crate::parse_canonical_millis(text), Some(general), "{text}");
    }
    for text in [
        "2026-02-29T12:00:00.000Z",
        "0000-01-01T00:00:00.000Z",
        "2026-08-05T24:00:00.000Z",
        "2026-08-05T12:00:00.000z",
        "2026-08-05 12:00:00.000Z",
        "2026-08-05T12:00:00.00Z",
    ] {
        assert_eq!(crate::parse_canonical_millis(text), None, "{text}");
    }
}

proptest! {
    #[test]
    fn single_byte_corruption_decodes_alike(
        which in 0..LINES.len(),
        position in any::<usize>(),
        byte in any::<u8>(),
    ) {
        let mut line = LINES[which].as_bytes().to_vec();
        let at = position % line.len();
        line[at] = byte;
        let (raw, full) = both(&line);
        prop_assert_eq!(raw, full);
    }
}
