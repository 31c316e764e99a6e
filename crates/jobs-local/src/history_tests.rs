use pretty_assertions::assert_eq;

use super::*;

#[test]
fn consume_without_observers_returns_the_pull() {
    let mut history = History::new(16);
    assert_eq!(history.consume("abc".to_owned()), "abc");
    assert_eq!(history.consume(String::new()), "");
    assert_eq!(history.consume("def".to_owned()), "def");
    assert_eq!(history.text_from(0), ("abcdef".to_owned(), false, 6));
    assert_eq!(history.text_from(4), ("ef".to_owned(), false, 6));
    assert_eq!(history.text_from(99), (String::new(), false, 6));
}

#[test]
fn observer_pulls_are_still_delivered_to_the_model() {
    let mut history = History::new(64);
    history.append("seen by a UI first\n");
    assert_eq!(
        history.consume("then more".to_owned()),
        "seen by a UI first\nthen more"
    );
    assert_eq!(history.consume(String::new()), "");
}

#[test]
fn budget_drops_oldest_text_at_a_character_boundary() {
    let mut history = History::new(5);
    history.append("ab");
    history.append("界界");
    // 8 bytes, budget 5: dropping 3 bytes would leave "界" cut; drop "ab" + the whole first 界.
    assert_eq!(history.text_from(0), ("界".to_owned(), true, 8));
    assert_eq!(history.text_from(5), ("界".to_owned(), false, 8));
    // A cursor inside a character starts at the next boundary.
    assert_eq!(history.text_from(6), (String::new(), false, 8));
}

#[test]
fn an_oversized_append_keeps_its_tail() {
    let mut history = History::new(4);
    history.append("0123456789");
    assert_eq!(history.text_from(0), ("6789".to_owned(), true, 10));
    assert_eq!(history.end(), 10);
}

#[test]
fn model_reads_after_overflow_are_marked() {
    let mut history = History::new(4);
    history.append("0123456789");
    assert_eq!(
        history.consume("ab".to_owned()),
        format!("{DROPPED_MARKER}89ab")
    );
    assert_eq!(history.consume("c".to_owned()), "c");
}

#[test]
fn zero_budget_keeps_nothing_but_counts_offsets() {
    let mut history = History::new(0);
    assert_eq!(history.consume("abc".to_owned()), "abc");
    assert_eq!(history.text_from(0), (String::new(), true, 3));
}
