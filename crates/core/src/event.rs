//! The session event log's records: [`SessionEvent`], the log's own shared form
//! [`RawEvent`] (envelope plus raw JSON payload), and [`SessionHeader`].

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use smol_str::SmolStr;

use crate::SessionId;

/// One committed event of a session log.
///
/// `seq` starts at 1 in every session and grows by one per event; a fork keeps its parent's
/// sequence numbers for the copied prefix and continues after them. `time` is the host clock's
/// wall time at append, millisecond precision. `data` is the event payload whose shape belongs
/// to the event `type` (for example `todo/write`, `schedule/change`, `turn/start`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionEvent {
    /// Sequence number, 1-based per session.
    pub seq: u64,
    /// Event type, e.g. `todo/write`.
    #[serde(rename = "type")]
    pub r#type: String,
    /// Wall time of the append (UTC, milliseconds).
    #[serde(with = "crate::time::millis_rfc3339")]
    pub time: DateTime<Utc>,
    /// Payload.
    pub data: Value,
}

/// One committed event as a session log holds it: the envelope (`seq`, `type`, `time`) and the
/// payload as raw JSON text.
///
/// This is the read path's form. Cloning one is cheap (the type is a small inline string, the
/// payload text is shared), so a session hands out its events without copying them, and
/// nothing is decoded until a consumer asks: [`RawEvent::decode`] parses the payload straight
/// into the consumer's own typed form, with no `serde_json::Value` tree in between.
/// [`RawEvent::data`] and [`RawEvent::to_event`] build the `Value` form for model- and
/// host-facing uses, where key order is part of the interface.
#[derive(Clone)]
pub struct RawEvent {
    seq: u64,
    r#type: SmolStr,
    time: DateTime<Utc>,
    /// The text holding the payload: the payload alone, or a whole session file whose
    /// events all share it.
    text: Arc<String>,
    /// The payload's byte range in `text` (on character boundaries).
    start: usize,
    end: usize,
}

impl PartialEq for RawEvent {
    fn eq(&self, other: &Self) -> bool {
        self.seq == other.seq
            && self.r#type == other.r#type
            && self.time == other.time
            && self.payload() == other.payload()
    }
}

impl fmt::Debug for RawEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawEvent")
            .field("seq", &self.seq)
            .field("type", &self.r#type.as_str())
            .field("time", &self.time)
            .field("payload", &self.payload())
            .finish()
    }
}

/// The envelope of one event line, borrowed from the line (a raw payload, no allocation for
/// `type` or a canonical `time`).
#[derive(Deserialize)]
struct Envelope<'a> {
    seq: u64,
    #[serde(rename = "type", deserialize_with = "small_string")]
    r#type: SmolStr,
    #[serde(deserialize_with = "instant")]
    time: DateTime<Utc>,
    #[serde(borrow)]
    data: &'a RawValue,
}

/// Reads a string without allocating when it is short (what every event type is).
fn small_string<'de, D: Deserializer<'de>>(d: D) -> Result<SmolStr, D::Error> {
    struct SmallString;
    impl Visitor<'_> for SmallString {
        type Value = SmolStr;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string")
        }
        fn visit_str<E: de::Error>(self, text: &str) -> Result<SmolStr, E> {
            Ok(SmolStr::new(text))
        }
    }
    d.deserialize_string(SmallString)
}

/// Reads an RFC 3339 instant: the canonical form on a fixed-format fast path, borrowed from
/// the line; any other form through chrono, with chrono's error.
fn instant<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
    struct Instant;
    impl<'de> Visitor<'de> for Instant {
        type Value = Cow<'de, str>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string")
        }
        fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
            Ok(Cow::Borrowed(text))
        }
        fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
            Ok(Cow::Owned(text.to_owned()))
        }
    }
    let text = d.deserialize_string(Instant)?;
    crate::time::parse_rfc3339(&text).map_err(de::Error::custom)
}

/// The parts of a line in exactly the form the stores write (`{"seq":N,"type":"…","time":"…",
/// "data":…}`, no whitespace, a type without escapes, a canonical time), read by position;
/// the payload is the text between `"data":` and the final `}`, not yet checked. `None` for
/// any other form, which the general envelope decoder then reads.
fn canonical_parts(line: &[u8]) -> Option<(u64, &str, DateTime<Utc>, &str)> {
    let (seq, r#type, time, payload) = canonical_layout(line)?;
    Some((seq, r#type, time, std::str::from_utf8(&line[payload]).ok()?))
}

/// [`canonical_parts`] with the payload as its byte range in `line`, not checked at all
/// (the line's caller knows it is UTF-8, or checks it).
fn canonical_layout(line: &[u8]) -> Option<(u64, &str, DateTime<Utc>, std::ops::Range<usize>)> {
    let rest = line.strip_prefix(b"{\"seq\":")?;
    let digits = rest.iter().position(|b| !b.is_ascii_digit())?;
    if digits == 0 || (digits > 1 && rest[0] == b'0') {
        return None;
    }
    let seq = rest[..digits].iter().try_fold(0u64, |seq, digit| {
        seq.checked_mul(10)?.checked_add(u64::from(digit - b'0'))
    })?;
    let rest = rest[digits..].strip_prefix(b",\"type\":\"")?;
    let end = rest
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
    if rest[end] != b'"' {
        return None;
    }
    let r#type = std::str::from_utf8(&rest[..end]).ok()?;
    let rest = rest[end..].strip_prefix(b"\",\"time\":\"")?;
    if rest.get(24) != Some(&b'"') {
        return None;
    }
    let millis = crate::parse_canonical_millis(std::str::from_utf8(&rest[..24]).ok()?)?;
    let time = DateTime::from_timestamp_millis(millis)?;
    let payload = rest[25..].strip_prefix(b",\"data\":")?.strip_suffix(b"}")?;
    // `payload` ends where `line` ends, less the final `}`.
    let end = line.len() - 1;
    Some((seq, r#type, time, end - payload.len()..end))
}

/// Whether `text` is one JSON value in compact form that every JSON parser accepts as it
/// is: no whitespace outside strings, strings without escapes or control characters,
/// numbers in JSON's grammar, at most 64 levels of nesting. `false` says nothing: the text
/// may still be valid JSON in some other form (the general parser decides those).
fn is_plain_json(text: &[u8]) -> bool {
    const MAX_DEPTH: u32 = 64;
    let mut i = 0usize;
    // One bit per open container, innermost lowest: 1 for an object, 0 for an array.
    let mut objects = 0u64;
    let mut depth = 0u32;
    loop {
        // A value starts at `i`.
        match text.get(i) {
            Some(b'{' | b'[') if depth == MAX_DEPTH => return false,
            Some(b'{') => {
                objects = (objects << 1) | 1;
                depth += 1;
                i += 1;
                if text.get(i) != Some(&b'}') {
                    if !plain_key(text, &mut i) {
                        return false;
                    }
                    continue;
                }
                // An empty object: closed below.
            }
            Some(b'[') => {
                objects <<= 1;
                depth += 1;
                i += 1;
                if text.get(i) != Some(&b']') {
                    continue;
                }
                // An empty array: closed below.
            }
            Some(b'"') => {
                if !plain_string(text, &mut i) {
                    return false;
                }
            }
            Some(b't') if text[i..].starts_with(b"true") => i += 4,
            Some(b'f') if text[i..].starts_with(b"false") => i += 5,
            Some(b'n') if text[i..].starts_with(b"null") => i += 4,
            Some(b'-' | b'0'..=b'9') => {
                if !plain_number(text, &mut i) {
                    return false;
                }
            }
            _ => return false,
        }
        // A value ended before `i` (or an empty container starts at `i`, closed here).
        loop {
            if depth == 0 {
                return i == text.len();
            }
            let in_object = objects & 1 == 1;
            match text.get(i) {
                Some(b',') => {
                    i += 1;
                    if in_object && !plain_key(text, &mut i) {
                        return false;
                    }
                    break;
                }
                Some(b'}') if in_object => {}
                Some(b']') if !in_object => {}
                _ => return false,
            }
            i += 1;
            objects >>= 1;
            depth -= 1;
        }
    }
}

/// A key and its colon at `text[*i..]` (see [`is_plain_json`]).
fn plain_key(text: &[u8], i: &mut usize) -> bool {
    if text.get(*i) != Some(&b'"') || !plain_string(text, i) || text.get(*i) != Some(&b':') {
        return false;
    }
    *i += 1;
    true
}

/// A string without escapes or control characters at `text[*i..]` (which starts with its
/// opening quote).
fn plain_string(text: &[u8], i: &mut usize) -> bool {
    let body = &text[*i + 1..];
    match string_stop(body) {
        Some(end) if body[end] == b'"' => {
            *i += end + 2;
            true
        }
        _ => false,
    }
}

/// The index of the first `"`, `\\` or control character in `bytes`, eight bytes at a time.
fn string_stop(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let has_zero = |word: u64| (word.wrapping_sub(ONES) & !word & HIGHS) != 0;
    let mut chunks = bytes.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let word = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
        // A byte below 0x20 has none of the bits 0xE0 set.
        if has_zero(word ^ (ONES * u64::from(b'"')))
            || has_zero(word ^ (ONES * u64::from(b'\\')))
            || has_zero(word & (ONES * 0xE0))
        {
            break;
        }
        offset += 8;
    }
    bytes[offset..]
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .map(|index| offset + index)
}

/// A number in JSON's grammar at `text[*i..]`: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
fn plain_number(text: &[u8], i: &mut usize) -> bool {
    let digits = |i: &mut usize| {
        let start = *i;
        while text.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i > start
    };
    if text.get(*i) == Some(&b'-') {
        *i += 1;
    }
    match text.get(*i) {
        Some(b'0') => {
            *i += 1;
            if text.get(*i).is_some_and(u8::is_ascii_digit) {
                return false;
            }
        }
        Some(b'1'..=b'9') => {
            digits(i);
        }
        _ => return false,
    }
    if text.get(*i) == Some(&b'.') {
        *i += 1;
        if !digits(i) {
            return false;
        }
    }
    if matches!(text.get(*i), Some(b'e' | b'E')) {
        *i += 1;
        if matches!(text.get(*i), Some(b'+' | b'-')) {
            *i += 1;
        }
        if !digits(i) {
            return false;
        }
    }
    true
}

impl RawEvent {
    /// An event from its parts; `payload` must be one JSON value (it is checked).
    ///
    /// # Errors
    /// The payload is not valid JSON.
    pub fn new(
        seq: u64,
        r#type: &str,
        time: DateTime<Utc>,
        payload: &str,
    ) -> Result<RawEvent, serde_json::Error> {
        let raw: &RawValue = serde_json::from_str(payload)?;
        Ok(RawEvent::owned(
            seq,
            SmolStr::new(r#type),
            time,
            raw.get().to_owned(),
        ))
    }

    /// [`RawEvent::new`] for a payload held as `text[payload]`, a range of a text that many
    /// events share (a store's buffer of a whole read): the same check and the same event. A
    /// payload in plain compact form keeps its range of `text`, so building many events
    /// from one buffer allocates nothing per event; any other payload gets the full check
    /// and a text of its own.
    ///
    /// # Errors
    /// The payload is not valid JSON, or `payload` is not a range of `text` on character
    /// boundaries.
    pub fn new_shared(
        seq: u64,
        r#type: &str,
        time: DateTime<Utc>,
        text: &Arc<String>,
        payload: std::ops::Range<usize>,
    ) -> Result<RawEvent, serde_json::Error> {
        let Some(slice) = text.get(payload.clone()) else {
            return Err(de::Error::custom(format!(
                "payload range {payload:?} is not within the text"
            )));
        };
        if !is_plain_json(slice.as_bytes()) {
            return RawEvent::new(seq, r#type, time, slice);
        }
        Ok(RawEvent {
            seq,
            r#type: SmolStr::new(r#type),
            time,
            text: Arc::clone(text),
            start: payload.start,
            end: payload.end,
        })
    }

    /// Decodes one event line of a session file (`{"seq","type","time","data"}`; other keys
    /// are ignored): the envelope is read in place and the payload is kept as raw JSON text.
    ///
    /// Every line that a full `serde_json` parse into a [`SessionEvent`] rejects is rejected
    /// with the same error, but for one value-level check that only a full parse makes: a
    /// number beyond the `f64` range inside the payload is accepted here (and fails when the
    /// payload is decoded).
    ///
    /// # Errors
    /// The line is not valid JSON, or not an event.
    pub fn from_line(line: &[u8]) -> Result<RawEvent, serde_json::Error> {
        let (seq, r#type, time, payload) =
            match canonical_parts(line).and_then(|(seq, r#type, time, payload)| {
                let raw = serde_json::from_str::<&RawValue>(payload).ok()?;
                Some((seq, SmolStr::new(r#type), time, raw.get()))
            }) {
                Some(parts) => parts,
                None => match serde_json::from_slice::<Envelope<'_>>(line) {
                    Ok(envelope) => (
                        envelope.seq,
                        envelope.r#type,
                        envelope.time,
                        envelope.data.get(),
                    ),
                    // A line this decoder refuses is decided by the full parse, whose error (and
                    // its position) is the one a reader of the file has always seen.
                    Err(_) => {
                        return serde_json::from_slice::<SessionEvent>(line)
                            .map(|event| RawEvent::from_event(&event));
                    }
                },
            };
        // Capturing raw text skips what decoding a string's escapes checks (a lone UTF-16
        // surrogate); payloads with escapes are rare, so they get the full parse.
        if payload.contains('\\')
            && serde_json::from_str::<Value>(payload).is_err()
            && let Err(error) = serde_json::from_slice::<SessionEvent>(line)
        {
            // The full parse of the line reports the error where it stands in the line.
            return Err(error);
        }
        Ok(RawEvent::owned(seq, r#type, time, payload.to_owned()))
    }

    /// An event whose text is its payload alone.
    pub(crate) fn owned(
        seq: u64,
        r#type: SmolStr,
        time: DateTime<Utc>,
        payload: String,
    ) -> RawEvent {
        let end = payload.len();
        RawEvent {
            seq,
            r#type,
            time,
            text: Arc::new(payload),
            start: 0,
            end,
        }
    }

    /// [`RawEvent::from_line`] for the line `text[start..end]` of a whole file's text: same
    /// event, same error. A line in the stores' own form with a plain payload (what every
    /// line the stores write is) keeps its payload as a range of `text`, shared with every
    /// other such event of the file, so reading a file allocates nothing per event.
    pub(crate) fn from_line_in(
        text: &Arc<String>,
        start: usize,
        end: usize,
    ) -> Result<RawEvent, serde_json::Error> {
        let line = &text.as_bytes()[start..end];
        match canonical_layout(line) {
            Some((seq, r#type, time, payload)) if is_plain_json(&line[payload.clone()]) => {
                Ok(RawEvent {
                    seq,
                    r#type: SmolStr::new(r#type),
                    time,
                    text: Arc::clone(text),
                    start: start + payload.start,
                    end: start + payload.end,
                })
            }
            _ => RawEvent::from_line(line),
        }
    }

    /// The log form of an event (its payload written as compact JSON, key order kept).
    pub fn from_event(event: &SessionEvent) -> RawEvent {
        RawEvent::owned(
            event.seq,
            SmolStr::new(&event.r#type),
            event.time,
            event.data.to_string(),
        )
    }

    /// Appends the event as one JSONL line (with its newline) to `out`: the bytes `serde_json`
    /// writes for the [`SessionEvent`] form when the payload is compact JSON.
    pub fn write_line(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"seq\":");
        out.extend_from_slice(self.seq.to_string().as_bytes());
        out.extend_from_slice(b",\"type\":");
        // Writing a string into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, self.r#type.as_str());
        out.extend_from_slice(b",\"time\":\"");
        out.extend_from_slice(crate::format_instant(self.time).as_bytes());
        out.extend_from_slice(b"\",\"data\":");
        out.extend_from_slice(self.payload().as_bytes());
        out.extend_from_slice(b"}\n");
    }

    /// Sequence number, 1-based per session.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Event type, e.g. `todo/write`.
    pub fn r#type(&self) -> &str {
        &self.r#type
    }

    /// Wall time of the append (UTC, milliseconds).
    pub fn time(&self) -> DateTime<Utc> {
        self.time
    }

    /// The payload as raw JSON text (one JSON value).
    pub fn payload(&self) -> &str {
        self.text.get(self.start..self.end).unwrap_or_default()
    }

    /// Decodes the payload straight into `T` (borrowing from the payload text where `T`
    /// does).
    ///
    /// # Errors
    /// The payload does not decode as `T`; the error's position is within the payload.
    pub fn decode<'a, T: Deserialize<'a>>(&'a self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.payload())
    }

    /// The payload as a `serde_json::Value` (a full parse, key order kept). A payload that
    /// does not parse as a `Value` (a number beyond the `f64` range, from a hand-edited file)
    /// reads as `null`.
    pub fn data(&self) -> Value {
        serde_json::from_str(self.payload()).unwrap_or(Value::Null)
    }

    /// The owned [`SessionEvent`] form (the payload parsed as by [`RawEvent::data`]).
    pub fn to_event(&self) -> SessionEvent {
        SessionEvent {
            seq: self.seq,
            r#type: self.r#type.to_string(),
            time: self.time,
            data: self.data(),
        }
    }
}

impl From<&SessionEvent> for RawEvent {
    fn from(event: &SessionEvent) -> Self {
        RawEvent::from_event(event)
    }
}

/// The header of a session log: its id and the facts fixed at creation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionHeader {
    /// The session id.
    pub id: SessionId,
    /// For a fork: the number of events copied from the parent. Folds that own only their
    /// suffix (schedule §5.1) start after this many events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed_length: Option<u64>,
    /// The IANA zone the session was created in, if the host knows it (decision 6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
}

impl SessionHeader {
    /// A header with only an id.
    pub fn new(id: impl Into<SessionId>) -> Self {
        Self {
            id: id.into(),
            seed_length: None,
            time_zone: None,
        }
    }

    /// Sets the session time zone.
    pub fn with_time_zone(mut self, zone: impl Into<String>) -> Self {
        self.time_zone = Some(zone.into());
        self
    }
}

#[cfg(test)]
#[path = "event_tests.rs"]
mod tests;
