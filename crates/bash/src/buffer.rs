//! [`StreamBuffer`]: the bounded in-memory buffer of one output stream, with a consuming
//! cursor (todo-jobs §6, decision 11).
//!
//! The buffer holds only **unread** bytes, as a queue of chunks. Reading takes them; when new
//! output would push the unread bytes over the cap, the oldest unread bytes are dropped and
//! the next read is marked lossy (the caller then appends the dropped-output notice). Memory
//! is therefore bounded by the cap (plus the slack of partly filled chunks) no matter how
//! much a command writes.
//!
//! Reading is split in two so the lock is held only for pointer moves: [`StreamBuffer::take`]
//! detaches the unread chunks (a [`Segment`]) under the lock, and [`Segment::into_text`]
//! joins and decodes them outside it. Bytes are decoded lossily (invalid UTF-8 becomes
//! U+FFFD; never a panic). While the stream is open, an incomplete UTF-8 sequence at the end
//! stays in the buffer for the next read, so a character split across two pipe reads is not
//! mangled; after a drop, the continuation bytes of a character cut in half at the front are
//! skipped.

use std::collections::VecDeque;

/// The longest UTF-8 sequence.
const MAX_UTF8_LEN: usize = 4;
/// Capacity of the chunks that small writes are coalesced into.
const SMALL_CHUNK: usize = 16 * 1024;

/// One stream's unread output, capped at `cap` bytes.
#[derive(Debug)]
pub(crate) struct StreamBuffer {
    /// Unread bytes; never holds an empty chunk. `head` bytes of the first are consumed.
    chunks: VecDeque<Vec<u8>>,
    head: usize,
    /// Unread bytes in `chunks` (after `head`).
    len: usize,
    cap: usize,
    /// Unread bytes were dropped since the last read.
    dropped: bool,
    /// The front of the unread bytes may start inside a character whose head was dropped.
    cut_front: bool,
    /// The stream reached end of file (or failed): hold nothing back.
    closed: bool,
    /// Total bytes ever pushed.
    total: u64,
    /// Total unread bytes ever dropped.
    dropped_total: u64,
}

/// Unread bytes detached from a [`StreamBuffer`] by one read.
#[derive(Debug, Default)]
pub(crate) struct Segment {
    chunks: VecDeque<Vec<u8>>,
    head: usize,
    len: usize,
    cut_front: bool,
    /// Unread bytes were dropped from memory since the previous read.
    pub(crate) lossy: bool,
}

impl StreamBuffer {
    /// An empty buffer keeping at most `cap` unread bytes (`cap` ≥ 1; 0 is treated as 1).
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            chunks: VecDeque::new(),
            head: 0,
            len: 0,
            cap: cap.max(1),
            dropped: false,
            cut_front: false,
            closed: false,
            total: 0,
            dropped_total: 0,
        }
    }

    /// Appends a copy of `bytes`, coalescing small writes, then drops the oldest unread
    /// bytes beyond the cap.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        match self.chunks.back_mut() {
            Some(last) if last.capacity() - last.len() >= bytes.len() => {
                last.extend_from_slice(bytes);
            }
            _ => {
                let mut chunk = Vec::with_capacity(bytes.len().max(SMALL_CHUNK));
                chunk.extend_from_slice(bytes);
                self.chunks.push_back(chunk);
            }
        }
        self.grew(bytes.len());
    }

    /// Appends `chunk` without copying when it is at least half full (otherwise as
    /// [`StreamBuffer::push`]), then drops the oldest unread bytes beyond the cap.
    pub(crate) fn push_owned(&mut self, chunk: Vec<u8>) {
        if chunk.len() * 2 < chunk.capacity() {
            self.push(&chunk);
            return;
        }
        let len = chunk.len();
        if len == 0 {
            return;
        }
        self.chunks.push_back(chunk);
        self.grew(len);
    }

    fn grew(&mut self, by: usize) {
        self.total += by as u64;
        self.len += by;
        while self.len > self.cap {
            let excess = self.len - self.cap;
            let Some(front) = self.chunks.front() else {
                break;
            };
            let available = front.len() - self.head;
            let dropped = if available <= excess {
                self.chunks.pop_front();
                self.head = 0;
                available
            } else {
                self.head += excess;
                excess
            };
            self.len -= dropped;
            self.dropped = true;
            self.cut_front = true;
            self.dropped_total += dropped as u64;
        }
    }

    /// Marks the end of the stream: the next read takes everything, including an
    /// incomplete trailing UTF-8 sequence (decoded as U+FFFD).
    pub(crate) fn close(&mut self) {
        self.closed = true;
    }

    /// Whether unread bytes (or an unreported drop) are waiting.
    pub(crate) fn has_unread(&self) -> bool {
        self.len > 0 || self.dropped
    }

    /// Total bytes written to the stream so far.
    pub(crate) fn total_bytes(&self) -> u64 {
        self.total
    }

    /// Total unread bytes dropped from memory so far.
    pub(crate) fn dropped_bytes(&self) -> u64 {
        self.dropped_total
    }

    /// The last `k` (≤ 3) unread bytes, oldest first.
    fn last_bytes(&self) -> ([u8; MAX_UTF8_LEN - 1], usize) {
        let mut out = [0u8; MAX_UTF8_LEN - 1];
        let want = self.len.min(MAX_UTF8_LEN - 1);
        let mut got = 0;
        for (index, chunk) in self.chunks.iter().enumerate().rev() {
            let start = if index == 0 { self.head } else { 0 };
            for &byte in chunk[start..].iter().rev() {
                if got == want {
                    break;
                }
                out[want - 1 - got] = byte;
                got += 1;
            }
            if got == want {
                break;
            }
        }
        (out, want)
    }

    /// Detaches the unread bytes (the consuming cursor moves past them), except an
    /// incomplete UTF-8 sequence at the end while the stream is open. Cheap: moves chunks,
    /// copies at most 3 bytes.
    pub(crate) fn take(&mut self) -> Segment {
        let hold = if self.closed {
            0
        } else {
            let (last, count) = self.last_bytes();
            incomplete_tail(&last[..count])
        };
        let mut segment = Segment {
            chunks: std::mem::take(&mut self.chunks),
            head: std::mem::take(&mut self.head),
            len: std::mem::take(&mut self.len),
            cut_front: std::mem::take(&mut self.cut_front),
            lossy: std::mem::take(&mut self.dropped),
        };
        if hold > 0 {
            let mut held = Vec::with_capacity(SMALL_CHUNK);
            let mut need = hold;
            while need > 0 {
                let only = segment.chunks.len() == 1;
                let Some(last) = segment.chunks.back_mut() else {
                    break;
                };
                let start = if only { segment.head } else { 0 };
                let available = last.len() - start;
                if available <= need {
                    held.splice(0..0, last[start..].iter().copied());
                    segment.chunks.pop_back();
                    if only {
                        segment.head = 0;
                    }
                    need -= available;
                } else {
                    let tail = last.split_off(last.len() - need);
                    held.splice(0..0, tail);
                    need = 0;
                }
            }
            segment.len -= hold;
            self.len = held.len();
            self.chunks.push_back(held);
        }
        segment
    }
}

impl Segment {
    /// Whether no bytes were detached.
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Joins and decodes the bytes: UTF-8 (checked fast; one chunk is taken over without a
    /// copy), else lossily. Skips the continuation bytes of a character cut by a drop.
    pub(crate) fn into_text(mut self) -> String {
        let mut bytes = if self.chunks.len() == 1 && self.head == 0 {
            self.chunks.pop_front().unwrap_or_default()
        } else {
            let mut joined = Vec::with_capacity(self.len);
            for (index, chunk) in self.chunks.iter().enumerate() {
                let start = if index == 0 { self.head } else { 0 };
                joined.extend_from_slice(&chunk[start..]);
            }
            joined
        };
        if self.cut_front {
            let skip = bytes
                .iter()
                .take(MAX_UTF8_LEN - 1)
                .take_while(|b| is_continuation(**b))
                .count();
            bytes.drain(..skip);
        }
        match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(error) => String::from_utf8_lossy(error.as_bytes()).into_owned(),
        }
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

/// How many bytes at the end of `tail` (the last ≤ 3 bytes of a stream) form the beginning
/// of a UTF-8 sequence that is not complete yet (0 when the end is complete or invalid
/// anyway).
fn incomplete_tail(tail: &[u8]) -> usize {
    let len = tail.len();
    for back in 1..=len.min(MAX_UTF8_LEN - 1) {
        let byte = tail[len - back];
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
