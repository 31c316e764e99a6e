//! [`StreamBuffer`]: the bounded in-memory buffer of one output stream, with a consuming
//! cursor (todo-jobs §6, decision 11).
//!
//! The buffer holds only **unread** bytes. Reading takes them; when new output would push
//! the unread bytes over the cap, the oldest unread bytes are dropped and the next read is
//! marked lossy (the caller then appends the dropped-output notice). Memory is therefore
//! bounded by the cap no matter how much a command writes.
//!
//! Bytes are converted to text on read, lossily (invalid UTF-8 becomes U+FFFD; never a
//! panic). While the stream is open, an incomplete UTF-8 sequence at the end is held back
//! for the next read so a character split across two pipe reads is not mangled, and after a
//! drop the continuation bytes of a character cut in half at the front are skipped.

use std::collections::VecDeque;

/// The longest UTF-8 sequence.
const MAX_UTF8_LEN: usize = 4;

/// One stream's unread output, capped at `cap` bytes.
#[derive(Debug)]
pub(crate) struct StreamBuffer {
    data: VecDeque<u8>,
    cap: usize,
    /// Unread bytes were dropped since the last read.
    dropped: bool,
    /// The front of `data` may start inside a character whose head was dropped.
    cut_front: bool,
    /// The stream reached end of file (or failed): hold nothing back.
    closed: bool,
    /// Total bytes ever pushed.
    total: u64,
    /// Total unread bytes ever dropped.
    dropped_total: u64,
}

/// What one read of a [`StreamBuffer`] returned.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Taken {
    /// The text (lossy UTF-8).
    pub(crate) text: String,
    /// Unread bytes were dropped from memory since the previous read.
    pub(crate) lossy: bool,
}

impl StreamBuffer {
    /// An empty buffer keeping at most `cap` unread bytes (`cap` ≥ 1; 0 is treated as 1).
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            data: VecDeque::new(),
            cap: cap.max(1),
            dropped: false,
            cut_front: false,
            closed: false,
            total: 0,
            dropped_total: 0,
        }
    }

    /// Appends `bytes`, dropping the oldest unread bytes beyond the cap.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let incoming = if bytes.len() > self.cap {
            let skip = bytes.len() - self.cap;
            self.note_drop(self.data.len() + skip);
            self.data.clear();
            &bytes[skip..]
        } else {
            bytes
        };
        let overflow = (self.data.len() + incoming.len()).saturating_sub(self.cap);
        if overflow > 0 {
            self.note_drop(overflow);
            self.data.drain(..overflow);
        }
        self.data.extend(incoming);
    }

    fn note_drop(&mut self, count: usize) {
        if count > 0 {
            self.dropped = true;
            self.cut_front = true;
            self.dropped_total += count as u64;
        }
    }

    /// Marks the end of the stream: the next read takes everything, including an
    /// incomplete trailing UTF-8 sequence (rendered as U+FFFD).
    pub(crate) fn close(&mut self) {
        self.closed = true;
    }

    /// Whether unread bytes (or an unreported drop) are waiting.
    pub(crate) fn has_unread(&self) -> bool {
        !self.data.is_empty() || self.dropped
    }

    /// Total bytes written to the stream so far.
    pub(crate) fn total_bytes(&self) -> u64 {
        self.total
    }

    /// Total unread bytes dropped from memory so far.
    pub(crate) fn dropped_bytes(&self) -> u64 {
        self.dropped_total
    }

    /// Takes the unread text (the consuming cursor moves past it).
    pub(crate) fn take(&mut self) -> Taken {
        let lossy = std::mem::take(&mut self.dropped);
        if std::mem::take(&mut self.cut_front) {
            let skip = self
                .data
                .iter()
                .take(MAX_UTF8_LEN - 1)
                .take_while(|b| is_continuation(**b))
                .count();
            self.data.drain(..skip);
        }
        let end = if self.closed {
            self.data.len()
        } else {
            self.data.len() - incomplete_tail(&self.data)
        };
        let slice = &self.data.make_contiguous()[..end];
        let text = String::from_utf8_lossy(slice).into_owned();
        self.data.drain(..end);
        if self.data.is_empty() {
            // Give memory back after a burst: a long-lived job should not keep a full cap
            // allocated once its output has been read.
            self.data.shrink_to(self.cap.min(64 * 1024));
        }
        Taken { text, lossy }
    }
}

fn is_continuation(byte: u8) -> bool {
    byte & 0b1100_0000 == 0b1000_0000
}

/// The expected length of a UTF-8 sequence starting with `lead`, or `None` for a byte that
/// cannot start one.
fn sequence_len(lead: u8) -> Option<usize> {
    match lead {
        0x00..=0x7F => Some(1),
        0xC2..=0xDF => Some(2),
        0xE0..=0xEF => Some(3),
        0xF0..=0xF4 => Some(4),
        _ => None,
    }
}

/// How many bytes at the end of `data` form the beginning of a UTF-8 sequence that is not
/// complete yet (0 when the end is complete or invalid anyway).
fn incomplete_tail(data: &VecDeque<u8>) -> usize {
    let len = data.len();
    for back in 1..=len.min(MAX_UTF8_LEN - 1) {
        let byte = data[len - back];
        if is_continuation(byte) {
            continue;
        }
        return match sequence_len(byte) {
            Some(need) if need > back => back,
            _ => 0,
        };
    }
    0
}

#[cfg(test)]
#[path = "buffer_tests.rs"]
mod tests;
