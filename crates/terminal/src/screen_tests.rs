use pretty_assertions::assert_eq;

use super::*;

#[test]
fn line_ends_escapes_and_erased_input_become_plain_text() {
    let mut screen = Screen::new();
    assert_eq!(
        screen.feed(b"\x1b[32mgreen\x1b[0m\r\nab\x08 \x08c\tz\x07\r\n\x1b]0;title\x07done"),
        "green\nac\tz\ndone"
    );
}

#[test]
fn a_sequence_or_character_split_across_reads_is_decoded_once() {
    let mut screen = Screen::new();
    let bytes = "\x1b[1mé\x1b[0m!".as_bytes();
    // Cut inside the escape sequence and inside the two-byte character.
    assert_eq!(screen.feed(&bytes[..2]), "");
    assert_eq!(screen.feed(&bytes[2..5]), "");
    assert_eq!(screen.feed(&bytes[5..]), "é!");
}

#[test]
fn invalid_utf8_becomes_the_replacement_character() {
    let mut screen = Screen::new();
    assert_eq!(screen.feed(b"a\xffb"), "a\u{fffd}b");
}

#[test]
fn a_backspace_never_removes_text_handed_out_before() {
    let mut screen = Screen::new();
    let mut out = "old".to_owned();
    screen.feed_after(b"\x08\x08x", &mut out);
    assert_eq!(out, "oldx");
}
