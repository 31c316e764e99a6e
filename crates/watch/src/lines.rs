//! [`Lines`]: turns a job's output, read in chunks, into complete lines without terminal
//! escape sequences.

/// Collects the printable text of output chunks (escape sequences and control bytes
/// dropped, tabs kept) and hands back complete lines. A carriage return ends a line like a
/// newline (a progress bar's redraws are lines), and empty lines are never returned. A line
/// that grows past `max_partial` bytes without an end is returned as it stands.
pub(crate) struct Lines {
    parser: vte::Parser,
    partial: String,
    done: Vec<String>,
    max_partial: usize,
}

struct Collect<'a> {
    partial: &'a mut String,
    done: &'a mut Vec<String>,
    max_partial: usize,
}

impl Collect<'_> {
    fn end_line(&mut self) {
        if !self.partial.is_empty() {
            self.done.push(std::mem::take(self.partial));
        }
    }
}

impl vte::Perform for Collect<'_> {
    fn print(&mut self, c: char) {
        self.partial.push(c);
        if self.partial.len() >= self.max_partial {
            self.end_line();
        }
    }

    fn execute(&mut self, byte: u8) {
        match byte {
            b'\n' | b'\r' => self.end_line(),
            b'\t' => self.partial.push('\t'),
            _ => {}
        }
    }
}

impl Lines {
    pub(crate) fn new(max_partial: usize) -> Self {
        Self {
            parser: vte::Parser::new(),
            partial: String::new(),
            done: Vec::new(),
            max_partial: max_partial.max(1),
        }
    }

    /// Feeds `chunk` and returns the lines it completed, in order.
    pub(crate) fn push(&mut self, chunk: &str) -> Vec<String> {
        let mut collect = Collect {
            partial: &mut self.partial,
            done: &mut self.done,
            max_partial: self.max_partial,
        };
        self.parser.advance(&mut collect, chunk.as_bytes());
        std::mem::take(&mut self.done)
    }

    /// Ends the output: the unfinished last line, if any.
    pub(crate) fn finish(&mut self) -> Option<String> {
        Some(std::mem::take(&mut self.partial)).filter(|line| !line.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::Lines;

    #[test]
    fn escapes_are_stripped_across_chunks_and_lines_end_at_newline_or_return() {
        let mut lines = Lines::new(1024);
        assert_eq!(lines.push("\u{1b}[31mERR"), Vec::<String>::new());
        assert_eq!(lines.push("OR\u{1b}[0"), Vec::<String>::new());
        assert_eq!(
            lines.push("m: disk\tfull\r\n\n50%\r60%\rtail"),
            ["ERROR: disk\tfull", "50%", "60%"]
        );
        assert_eq!(lines.finish().as_deref(), Some("tail"));
        assert_eq!(lines.finish(), None);
    }

    #[test]
    fn a_line_without_an_end_is_cut_at_the_bound() {
        let mut lines = Lines::new(4);
        assert_eq!(lines.push("abcdefghij\n"), ["abcd", "efgh", "ij"]);
    }
}
