//! Reading a session file: [`SessionFile`], [`TornTail`], and the parser that tells a torn
//! last line from corruption.

use std::path::Path;
use std::sync::Arc;

use super::fault::malformed;
use crate::store::error::StoreError;
use crate::{RawEvent, SessionHeader};

/// What [`JsonlStore::inspect`](super::JsonlStore::inspect) found at the end of a file: a torn last line that `open`
/// would truncate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TornTail {
    /// Byte offset where the torn line starts (the length the file would be cut to).
    pub offset: u64,
    /// Its 1-based line number.
    pub line: usize,
    /// Why it is torn.
    pub reason: String,
}

/// A session file's parsed content.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionFile {
    /// The header line.
    pub header: SessionHeader,
    /// The complete, valid events in order, in the log's shared form (payloads as raw JSON).
    pub events: Vec<RawEvent>,
    /// A torn last line, if any (not part of `events`).
    pub torn: Option<TornTail>,
}

/// Where the torn tail of a file starts, if it has one.
///
/// This is the one place that tells a torn line from a corrupt one. A flush writes whole lines
/// and is acknowledged only after they are synced, so an interrupted append can leave only an
/// unterminated last line; that line was never acknowledged and may be cut. Every
/// newline-terminated line is complete, and one that does not parse (a bit flip, invalid UTF-8,
/// a blank line) is corruption wherever it stands.
fn torn_tail_start(bytes: &[u8]) -> Option<usize> {
    match bytes.iter().rposition(|&b| b == b'\n') {
        Some(end) if end + 1 == bytes.len() => None,
        Some(end) => Some(end + 1),
        None if bytes.is_empty() => None,
        None => Some(0),
    }
}

/// Parses the bytes of a session file at `path` without changing anything, keeping every
/// event.
pub(super) fn parse_bytes(path: &Path, bytes: Vec<u8>) -> Result<SessionFile, StoreError> {
    let mut events = Vec::new();
    let (header, torn) = parse_bytes_each(path, bytes, &mut |_, event| events.push(event))?;
    Ok(SessionFile {
        header,
        events,
        torn,
    })
}

/// Parses the bytes of a session file at `path` without changing anything, handing each
/// event to `visit` (with the header) as it is read.
///
/// The events of a file whose complete lines are all UTF-8 (every file the stores write)
/// share one copy of its text; any other file is read line by line, with the same result.
pub(super) fn parse_bytes_each(
    path: &Path,
    mut bytes: Vec<u8>,
    visit: &mut dyn FnMut(&SessionHeader, RawEvent),
) -> Result<(SessionHeader, Option<TornTail>), StoreError> {
    let torn_start = torn_tail_start(&bytes);
    // The torn tail is never parsed (only its position is reported).
    bytes.truncate(torn_start.unwrap_or(bytes.len()));
    let text = match String::from_utf8(bytes) {
        Ok(text) => Ok(Arc::new(text)),
        Err(error) => Err(error.into_bytes()),
    };
    let body = match &text {
        Ok(text) => text.as_bytes(),
        Err(bytes) => bytes.as_slice(),
    };
    if body.is_empty() {
        // No complete header line: what a create interrupted in an older, non-atomic build
        // leaves (zero bytes, or a header without its newline).
        return Err(StoreError::InterruptedCreate {
            file: path.display().to_string(),
        });
    }
    let mut header: Option<SessionHeader> = None;
    let mut count = 0u64;
    let mut number = 0usize;
    let mut offset = 0usize;
    // `body` ends with a newline, so every line found here is complete.
    while let Some(end) = find_newline(&body[offset..]) {
        let (start, stop) = (offset, offset + end);
        offset += end + 1;
        number += 1;
        let parsed = match &text {
            Ok(text) if header.is_some() => parse_event_in(text, start, stop, count + 1),
            _ => parse_line(&body[start..stop], header.is_none(), count + 1),
        };
        match parsed {
            Ok(Line::Header(h)) => header = Some(h),
            Ok(Line::Event(e)) => {
                count += 1;
                if let Some(header) = &header {
                    visit(header, e);
                }
            }
            Err(message) => return Err(malformed(path, number, message)),
        }
    }
    let header = header.ok_or_else(|| malformed(path, 1, "missing session header"))?;
    let torn = torn_start.map(|start| TornTail {
        offset: start as u64,
        line: number + 1,
        reason: "missing trailing newline".to_owned(),
    });
    Ok((header, torn))
}

/// The index of the first `\n` in `bytes`, eight bytes at a time (a session file is mostly
/// long lines, and this scan runs over every byte of it on open).
fn find_newline(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    const NEWLINES: u64 = ONES * b'\n' as u64;
    let mut chunks = bytes.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let word = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8])) ^ NEWLINES;
        // A zero byte in `word` is a newline in `chunk` (the classic has-zero-byte test).
        if (word.wrapping_sub(ONES) & !word & HIGHS) != 0 {
            break;
        }
        offset += 8;
    }
    bytes[offset..]
        .iter()
        .position(|&b| b == b'\n')
        .map(|index| offset + index)
}

enum Line {
    Header(SessionHeader),
    Event(RawEvent),
}

fn parse_line(line: &[u8], want_header: bool, expected_seq: u64) -> Result<Line, String> {
    if want_header {
        return serde_json::from_slice::<SessionHeader>(line)
            .map(Line::Header)
            .map_err(|e| format!("invalid session header: {e}"));
    }
    let event = RawEvent::from_line(line).map_err(|e| format!("invalid event: {e}"))?;
    check_seq(event, expected_seq)
}

/// [`parse_line`] for an event line `text[start..end]` of a file's shared text.
fn parse_event_in(
    text: &Arc<String>,
    start: usize,
    end: usize,
    expected_seq: u64,
) -> Result<Line, String> {
    let event =
        RawEvent::from_line_in(text, start, end).map_err(|e| format!("invalid event: {e}"))?;
    check_seq(event, expected_seq)
}

fn check_seq(event: RawEvent, expected_seq: u64) -> Result<Line, String> {
    if event.seq() != expected_seq {
        return Err(format!(
            "event seq {} where {expected_seq} was expected",
            event.seq()
        ));
    }
    Ok(Line::Event(event))
}
