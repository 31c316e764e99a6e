//! [`Screen`]: terminal output bytes to model-facing text (the read path's normalisation).
//!
//! A PTY prints `\r\n` line ends, echoes erased input as `\b \b`, and programs add colour
//! and cursor escape sequences. The raw bytes are stored as printed; a [`Screen`] turns them
//! into plain text as they are read: escape sequences (CSI, OSC, DCS and the rest) are
//! dropped, `\r` is dropped (so `\r\n` becomes `\n`), a backspace removes the character
//! before it on the current line, `\n` and `\t` are kept, other control bytes are dropped,
//! and invalid UTF-8 becomes U+FFFD. The parser (the `vte` crate) keeps its state between
//! calls, so a sequence or a character split across two reads is decoded once, whole.

/// An incremental decoder of terminal output into plain text (see the module docs).
#[derive(Default)]
pub struct Screen {
    parser: vte::Parser,
}

impl std::fmt::Debug for Screen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Screen").finish_non_exhaustive()
    }
}

struct Text<'a> {
    out: &'a mut String,
    /// Where the text of this call starts: a backspace never removes text handed out
    /// earlier.
    floor: usize,
}

impl vte::Perform for Text<'_> {
    fn print(&mut self, c: char) {
        self.out.push(c);
    }

    fn execute(&mut self, byte: u8) {
        match byte {
            b'\n' | b'\t' => self.out.push(char::from(byte)),
            0x08 if self.out.len() > self.floor && !self.out.ends_with('\n') => {
                self.out.pop();
            }
            _ => {}
        }
    }
}

impl Screen {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes `bytes` (the next part of the stream) and returns their text. A sequence or
    /// character left incomplete at the end is held until the next call.
    pub fn feed(&mut self, bytes: &[u8]) -> String {
        let mut out = String::new();
        self.feed_after(bytes, &mut out);
        out
    }

    /// Like [`Screen::feed`], appending to `out`; a backspace never removes what `out` held
    /// before.
    pub fn feed_after(&mut self, bytes: &[u8], out: &mut String) {
        let floor = out.len();
        let mut text = Text { out, floor };
        self.parser.advance(&mut text, bytes);
    }
}

#[cfg(test)]
#[path = "screen_tests.rs"]
mod tests;
