use pretty_assertions::assert_eq;

use super::*;

fn taken(text: &str, lossy: bool) -> (String, bool) {
    (text.to_owned(), lossy)
}

trait TakeText {
    fn take_text(&mut self) -> (String, bool);
}

impl TakeText for StreamBuffer {
    fn take_text(&mut self) -> (String, bool) {
        let segment = self.take();
        let lossy = segment.lossy;
        (segment.into_text(), lossy)
    }
}

#[test]
fn reads_consume_what_was_written() {
    let mut buffer = StreamBuffer::new(16);
    buffer.push(b"hello ");
    buffer.push(b"world");
    assert_eq!(buffer.take_text(), taken("hello world", false));
    assert_eq!(buffer.take_text(), taken("", false));
    buffer.push(b"again");
    assert_eq!(buffer.take_text(), taken("again", false));
    assert_eq!(buffer.total_bytes(), 16);
}

#[test]
fn overflow_drops_the_oldest_unread_bytes_and_marks_one_read_lossy() {
    let mut buffer = StreamBuffer::new(4);
    buffer.push(b"abc");
    buffer.push(b"def");
    assert_eq!(buffer.dropped_bytes(), 2);
    assert_eq!(buffer.take_text(), taken("cdef", true));
    buffer.push(b"g");
    assert_eq!(buffer.take_text(), taken("g", false));
}

#[test]
fn a_chunk_larger_than_the_cap_keeps_its_tail() {
    let mut buffer = StreamBuffer::new(3);
    buffer.push(b"ab");
    buffer.push(b"0123456789");
    assert_eq!(buffer.dropped_bytes(), 9);
    assert_eq!(buffer.take_text(), taken("789", true));
}

#[test]
fn a_drop_is_reported_even_when_nothing_is_left_to_read() {
    let mut buffer = StreamBuffer::new(2);
    buffer.push(b"abcd");
    assert!(buffer.has_unread());
    assert_eq!(buffer.take_text(), taken("cd", true));
    assert!(!buffer.has_unread());
}

#[test]
fn an_incomplete_character_waits_for_its_remaining_bytes() {
    let mut buffer = StreamBuffer::new(16);
    let snowman = "☃".as_bytes();
    buffer.push(b"x");
    buffer.push(&snowman[..2]);
    assert_eq!(buffer.take_text(), taken("x", false));
    buffer.push(&snowman[2..]);
    assert_eq!(buffer.take_text(), taken("☃", false));
}

#[test]
fn an_incomplete_character_at_end_of_stream_becomes_a_replacement_character() {
    let mut buffer = StreamBuffer::new(16);
    buffer.push(&"☃".as_bytes()[..2]);
    buffer.close();
    assert_eq!(buffer.take_text(), taken("\u{FFFD}", false));
}

#[test]
fn invalid_utf8_is_replaced_never_a_panic() {
    let mut buffer = StreamBuffer::new(16);
    buffer.push(&[b'a', 0xFF, 0xFE, b'b', 0xC0, 0x80]);
    buffer.close();
    assert_eq!(
        buffer.take_text(),
        taken("a\u{FFFD}\u{FFFD}b\u{FFFD}\u{FFFD}", false)
    );
}

#[test]
fn a_character_cut_by_a_drop_loses_its_continuation_bytes() {
    let mut buffer = StreamBuffer::new(4);
    // "é" is C3 A9; dropping 2 bytes of "aéxy" cuts it in half.
    buffer.push("aéxy".as_bytes());
    buffer.push(b"z");
    assert_eq!(buffer.take_text(), taken("xyz", true));
}

#[test]
fn a_zero_cap_behaves_as_one_byte() {
    let mut buffer = StreamBuffer::new(0);
    buffer.push(b"ab");
    assert_eq!(buffer.take_text(), taken("b", true));
}

#[test]
fn owned_chunks_are_kept_without_copying_and_trimmed_at_the_front() {
    let mut buffer = StreamBuffer::new(6);
    let mut chunk = Vec::with_capacity(4);
    chunk.extend_from_slice(b"abcd");
    buffer.push_owned(chunk);
    let mut chunk = Vec::with_capacity(4);
    chunk.extend_from_slice(b"efgh");
    buffer.push_owned(chunk);
    assert_eq!(buffer.dropped_bytes(), 2);
    assert_eq!(buffer.take_text(), taken("cdefgh", true));
    // A mostly empty chunk is copied (coalesced) instead.
    let mut chunk = Vec::with_capacity(1024);
    chunk.push(b'x');
    buffer.push_owned(chunk);
    buffer.push(b"y");
    assert_eq!(buffer.take_text(), taken("xy", false));
}

#[test]
fn an_incomplete_character_spread_over_chunks_is_held_back_whole() {
    let mut buffer = StreamBuffer::new(64);
    let emoji = "😀".as_bytes();
    buffer.push_owned(b"ab".to_vec());
    buffer.push_owned(vec![emoji[0]]);
    buffer.push_owned(vec![emoji[1]]);
    buffer.push_owned(vec![emoji[2]]);
    assert_eq!(buffer.take_text(), taken("ab", false));
    assert!(buffer.has_unread());
    buffer.push(&emoji[3..]);
    assert_eq!(buffer.take_text(), taken("😀", false));
    assert!(!buffer.has_unread());
}

#[test]
fn a_held_back_tail_after_a_partly_consumed_chunk() {
    let mut buffer = StreamBuffer::new(4);
    // 6 bytes into a cap of 4: head moves 2 into the only chunk, which ends in a partial "é".
    buffer.push(&[b'a', b'b', b'c', b'd', b'e', 0xC3]);
    assert_eq!(buffer.take_text(), taken("cde", true));
    buffer.push(&[0xA9]);
    assert_eq!(buffer.take_text(), taken("é", false));
}

#[test]
fn incomplete_tail_lengths() {
    let of = |bytes: &[u8]| incomplete_tail(bytes);
    assert_eq!(of(b""), 0);
    assert_eq!(of(b"abc"), 0);
    assert_eq!(of(&[0xE2]), 1);
    assert_eq!(of(&[0xE2, 0x98]), 2);
    assert_eq!(of(&[0xE2, 0x98, 0x83]), 0);
    assert_eq!(of(&[0xF0, 0x9F, 0x98]), 3);
    assert_eq!(of(&[0x80, 0x80, 0x80]), 0);
    assert_eq!(of(&[0xFF]), 0);
}
