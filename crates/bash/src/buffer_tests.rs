use pretty_assertions::assert_eq;

use super::*;

fn taken(text: &str, lossy: bool) -> Taken {
    Taken {
        text: text.to_owned(),
        lossy,
    }
}

#[test]
fn reads_consume_what_was_written() {
    let mut buffer = StreamBuffer::new(16);
    buffer.push(b"hello ");
    buffer.push(b"world");
    assert_eq!(buffer.take(), taken("hello world", false));
    assert_eq!(buffer.take(), taken("", false));
    buffer.push(b"again");
    assert_eq!(buffer.take(), taken("again", false));
    assert_eq!(buffer.total_bytes(), 16);
}

#[test]
fn overflow_drops_the_oldest_unread_bytes_and_marks_one_read_lossy() {
    let mut buffer = StreamBuffer::new(4);
    buffer.push(b"abc");
    buffer.push(b"def");
    assert_eq!(buffer.dropped_bytes(), 2);
    assert_eq!(buffer.take(), taken("cdef", true));
    buffer.push(b"g");
    assert_eq!(buffer.take(), taken("g", false));
}

#[test]
fn a_chunk_larger_than_the_cap_keeps_its_tail() {
    let mut buffer = StreamBuffer::new(3);
    buffer.push(b"ab");
    buffer.push(b"0123456789");
    assert_eq!(buffer.dropped_bytes(), 9);
    assert_eq!(buffer.take(), taken("789", true));
}

#[test]
fn a_drop_is_reported_even_when_nothing_is_left_to_read() {
    let mut buffer = StreamBuffer::new(2);
    buffer.push(b"abcd");
    assert!(buffer.has_unread());
    assert_eq!(buffer.take(), taken("cd", true));
    assert!(!buffer.has_unread());
}

#[test]
fn an_incomplete_character_waits_for_its_remaining_bytes() {
    let mut buffer = StreamBuffer::new(16);
    let snowman = "☃".as_bytes();
    buffer.push(b"x");
    buffer.push(&snowman[..2]);
    assert_eq!(buffer.take(), taken("x", false));
    buffer.push(&snowman[2..]);
    assert_eq!(buffer.take(), taken("☃", false));
}

#[test]
fn an_incomplete_character_at_end_of_stream_becomes_a_replacement_character() {
    let mut buffer = StreamBuffer::new(16);
    buffer.push(&"☃".as_bytes()[..2]);
    buffer.close();
    assert_eq!(buffer.take(), taken("\u{FFFD}", false));
}

#[test]
fn invalid_utf8_is_replaced_never_a_panic() {
    let mut buffer = StreamBuffer::new(16);
    buffer.push(&[b'a', 0xFF, 0xFE, b'b', 0xC0, 0x80]);
    buffer.close();
    assert_eq!(
        buffer.take(),
        taken("a\u{FFFD}\u{FFFD}b\u{FFFD}\u{FFFD}", false)
    );
}

#[test]
fn a_character_cut_by_a_drop_loses_its_continuation_bytes() {
    let mut buffer = StreamBuffer::new(4);
    // "é" is C3 A9; dropping 2 bytes of "aéxy" cuts it in half.
    buffer.push("aéxy".as_bytes());
    buffer.push(b"z");
    assert_eq!(buffer.take(), taken("xyz", true));
}

#[test]
fn a_zero_cap_behaves_as_one_byte() {
    let mut buffer = StreamBuffer::new(0);
    buffer.push(b"ab");
    assert_eq!(buffer.take(), taken("b", true));
}

#[test]
fn incomplete_tail_lengths() {
    let of = |bytes: &[u8]| incomplete_tail(&bytes.iter().copied().collect());
    assert_eq!(of(b""), 0);
    assert_eq!(of(b"abc"), 0);
    assert_eq!(of(&[0xE2]), 1);
    assert_eq!(of(&[0xE2, 0x98]), 2);
    assert_eq!(of(&[0xE2, 0x98, 0x83]), 0);
    assert_eq!(of(&[0xF0, 0x9F, 0x98]), 3);
    assert_eq!(of(&[0x80, 0x80, 0x80]), 0);
    assert_eq!(of(&[0xFF]), 0);
}
