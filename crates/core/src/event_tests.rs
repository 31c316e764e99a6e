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

/// [`RawEvent::from_line_in`] on `line` placed between two other lines of a file's text,
/// against [`RawEvent::from_line`] on the line alone.
fn shared_and_alone(line: &str) -> (Result<RawEvent, String>, Result<RawEvent, String>) {
    let text = Arc::new(format!("{{\"id\":\"s\"}}\n{line}\n{}\n", LINES[1]));
    let start = text.find('\n').unwrap() + 1;
    (
        RawEvent::from_line_in(&text, start, start + line.len()).map_err(|e| e.to_string()),
        RawEvent::from_line(line.as_bytes()).map_err(|e| e.to_string()),
    )
}

#[test]
fn shared_line_decoder_agrees_with_the_line_decoder() {
    for line in LINES.iter().chain(PLAIN_PAYLOADS) {
        let (shared, alone) = shared_and_alone(line);
        assert_eq!(shared, alone, "{line}");
    }
    let (shared, _) = shared_and_alone(LINES[1]);
    assert_eq!(
        shared.unwrap().payload(),
        r#"{"version":1,"operation":"delete","id":"x"}"#
    );
}

/// Lines in the stores' form whose payloads exercise the plain-JSON check, valid or not.
const PLAIN_PAYLOADS: &[&str] = &[
    r#"{"seq":1,"type":"t","time":"2026-08-05T12:00:00.000Z","data":{"a long key of some length":"a string well past eight bytes, with ünïcode in it","b":"0123456789abcdef0123456789abcdef"}}"#,
    r#"{"seq":1,"type":"t","time":"2026-08-05T12:00:00.000Z","data":{"a":[],"b":{},"c":[{},[1,-0,0.5,1e3,-2.5E-7,true,false,null,"é"]]}}"#,
    r#"{"seq":1,"type":"t","time":"2026-08-05T12:00:00.000Z","data":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}"#,
    r#"{"seq":1,"type":"t","time":"2026-08-05T12:00:00.000Z","data":01}"#,
    r#"{"seq":1,"type":"t","time":"2026-08-05T12:00:00.000Z","data":1.}"#,
    r#"{"seq":1,"type":"t","time":"2026-08-05T12:00:00.000Z","data":-}"#,
    r#"{"seq":1,"type":"t","time":"2026-08-05T12:00:00.000Z","data":1e}"#,
    r#"{"seq":1,"type":"t","time":"2026-08-05T12:00:00.000Z","data":[1,]}"#,
    r#"{"seq":1,"type":"t","time":"2026-08-05T12:00:00.000Z","data":{"a":1,}}"#,
    r#"{"seq":1,"type":"t","time":"2026-08-05T12:00:00.000Z","data":{"a"}}"#,
    r#"{"seq":1,"type":"t","time":"2026-08-05T12:00:00.000Z","data":{1:2}}"#,
    r#"{"seq":1,"type":"t","time":"2026-08-05T12:00:00.000Z","data":[1 ]}"#,
    r#"{"seq":1,"type":"t","time":"2026-08-05T12:00:00.000Z","data":tru}"#,
    r#"{"seq":1,"type":"t","time":"2026-08-05T12:00:00.000Z","data":"a	b"}"#,
    r#"{"seq":1,"type":"t","time":"2026-08-05T12:00:00.000Z","data":[}"#,
    r#"{"seq":1,"type":"t","time":"2026-08-05T12:00:00.000Z","data":]}"#,
    r#"{"seq":1,"type":"t","time":"2026-08-05T12:00:00.000Z","data":{"a":1}}}"#,
    r#"{"seq":1,"type":"t","time":"2026-08-05T12:00:00.000Z","data":}"#,
];

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

    #[test]
    fn single_byte_corruption_decodes_alike_in_a_shared_text(
        which in 0..LINES.len() + PLAIN_PAYLOADS.len(),
        position in any::<usize>(),
        byte in any::<u8>(),
    ) {
        let line = LINES.iter().chain(PLAIN_PAYLOADS).nth(which).unwrap();
        let mut line = line.as_bytes().to_vec();
        let at = position % line.len();
        line[at] = byte;
        // The shared text is UTF-8 (a file that is not is read line by line).
        if let Ok(line) = String::from_utf8(line) && !line.contains('\n') {
            let (shared, alone) = shared_and_alone(&line);
            prop_assert_eq!(shared, alone);
        }
    }
}

/// [`RawEvent::new_shared`] on a payload placed between two others in one text, against
/// [`RawEvent::new`] on the payload alone: the same event or the same error.
#[test]
fn shared_constructor_agrees_with_the_owned_one() {
    let time = DateTime::from_timestamp_millis(1_785_931_200_000).unwrap();
    let payloads = PLAIN_PAYLOADS
        .iter()
        .map(|line| {
            let start = line.find("\"data\":").unwrap() + 7;
            &line[start..line.len() - 1]
        })
        .chain([
            r#" { "a" : 1 } "#,
            r#"{"s":"\ud800"}"#,
            r#"{"s":"\n"}"#,
            "1e999",
            "",
            "{} {}",
        ]);
    for payload in payloads {
        let text = Arc::new(format!("[1]{payload}\"tail\""));
        let range = 3..3 + payload.len();
        let shared = RawEvent::new_shared(7, "t/u", time, &text, range).map_err(|e| e.to_string());
        let alone = RawEvent::new(7, "t/u", time, payload).map_err(|e| e.to_string());
        assert_eq!(shared, alone, "{payload}");
    }
}

#[test]
fn shared_constructor_keeps_a_plain_payload_as_a_range_of_the_text() {
    let time = DateTime::from_timestamp_millis(0).unwrap();
    let text = Arc::new(r#"{"a":1}[true,null]"#.to_owned());
    let event = RawEvent::new_shared(2, "x", time, &text, 7..18).unwrap();
    assert_eq!(
        (event.seq(), event.r#type(), event.payload()),
        (2, "x", "[true,null]")
    );
    assert!(Arc::ptr_eq(&event.text, &text));
    let padded = RawEvent::new_shared(2, "x", time, &text, 0..7).unwrap();
    assert!(Arc::ptr_eq(&padded.text, &text));
    let error = RawEvent::new_shared(2, "x", time, &text, 7..19).unwrap_err();
    assert_eq!(
        error.to_string(),
        "payload range 7..19 is not within the text"
    );
}
