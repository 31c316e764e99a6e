//! [`History`]: the bounded per-job text history behind `read_at` (decision 8) and the model's
//! consuming cursor into it.

use std::collections::VecDeque;

/// The text a stream job has produced, as a window `[base, end)` of byte offsets into the
/// job's whole output, holding at most `budget` bytes (older text is dropped at a character
/// boundary). The model's consuming cursor (`model`) lives in the same offset space.
#[derive(Debug)]
pub(crate) struct History {
    bytes: VecDeque<u8>,
    base: u64,
    model: u64,
    budget: usize,
}

/// Prefixed to a consuming read when observer pulls made unread text overflow the history
/// budget (only possible with `read_at` callers; the producer's own notices come first).
pub(crate) const DROPPED_MARKER: &str = "[some output was dropped from memory]\n";

impl History {
    pub(crate) fn new(budget: usize) -> Self {
        Self {
            bytes: VecDeque::new(),
            base: 0,
            model: 0,
            budget,
        }
    }

    /// The offset just past the newest text.
    pub(crate) fn end(&self) -> u64 {
        self.base + self.bytes.len() as u64
    }

    /// Appends freshly pulled producer text, dropping the oldest text beyond the budget.
    pub(crate) fn append(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        if text.len() >= self.budget {
            // Keep only the tail of `text` itself.
            let tail = turnkit_core::tail_utf8(text, self.budget);
            self.base = self.end() + (text.len() - tail.len()) as u64;
            self.bytes.clear();
            self.bytes.extend(tail.as_bytes());
            return;
        }
        self.bytes.extend(text.as_bytes());
        let over = self.bytes.len().saturating_sub(self.budget);
        if over > 0 {
            let mut drop = over;
            // Never leave a partial character at the front.
            while drop < self.bytes.len() && is_continuation(self.bytes[drop]) {
                drop += 1;
            }
            self.bytes.drain(..drop);
            self.base += drop as u64;
        }
    }

    /// The text from `cursor` to the end, whether text before it was dropped, and the end.
    pub(crate) fn text_from(&self, cursor: u64) -> (String, bool, u64) {
        let end = self.end();
        let dropped = cursor < self.base;
        let start = cursor.clamp(self.base, end);
        let mut offset = usize::try_from(start - self.base).unwrap_or(self.bytes.len());
        // A cursor inside a character moves to the next boundary.
        while offset < self.bytes.len() && is_continuation(self.bytes[offset]) {
            offset += 1;
        }
        let (front, back) = self.bytes.as_slices();
        let mut out = Vec::with_capacity(self.bytes.len() - offset);
        if offset < front.len() {
            out.extend_from_slice(&front[offset..]);
            out.extend_from_slice(back);
        } else {
            out.extend_from_slice(&back[offset - front.len()..]);
        }
        let text = String::from_utf8(out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        (text, dropped, end)
    }

    /// What the model has not read yet (after [`DROPPED_MARKER`] when some of it was
    /// dropped), without moving its cursor: the final output the journal keeps of a
    /// settled stream job.
    pub(crate) fn unread(&self) -> String {
        let (text, dropped, _) = self.text_from(self.model);
        if dropped {
            format!("{DROPPED_MARKER}{text}")
        } else {
            text
        }
    }

    /// A consuming read for the model: appends `pulled` and returns everything after the
    /// model's cursor, then moves the cursor to the end. Without observer pulls in between this
    /// is exactly `pulled`.
    pub(crate) fn consume(&mut self, pulled: String) -> String {
        if self.model == self.end() {
            self.append(&pulled);
            self.model = self.end();
            return pulled;
        }
        self.append(&pulled);
        let (text, dropped, end) = self.text_from(self.model);
        self.model = end;
        if dropped {
            let mut marked = String::with_capacity(DROPPED_MARKER.len() + text.len());
            marked.push_str(DROPPED_MARKER);
            marked.push_str(&text);
            marked
        } else {
            text
        }
    }
}

fn is_continuation(byte: u8) -> bool {
    byte & 0b1100_0000 == 0b1000_0000
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;
