use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

#[test]
fn js_trim_table() {
    let cases: &[(&str, &str)] = &[
        ("  a  ", "a"),
        ("\u{FEFF}a\u{FEFF}", "a"),
        ("\u{00A0}a\u{3000}", "a"),
        ("\u{2028}a\u{2029}", "a"),
        ("\t\n\u{000B}\u{000C}\ra", "a"),
        ("\u{0085}a", "\u{0085}a"),
        ("a\u{200B}", "a\u{200B}"),
        ("\u{180E}a", "\u{180E}a"),
        ("", ""),
        ("   ", ""),
    ];
    for (input, expected) in cases {
        assert_eq!(js_trim(input), *expected, "input {input:?}");
    }
}

#[test]
fn safe_integers() {
    assert_eq!(as_safe_integer(&json!(30)), Some(30));
    assert_eq!(as_safe_integer(&json!(30.0)), Some(30));
    assert_eq!(as_safe_integer(&json!(-5)), Some(-5));
    assert_eq!(as_safe_integer(&json!(30.5)), None);
    assert_eq!(
        as_safe_integer(&json!(9_007_199_254_740_991_i64)),
        Some(MAX_SAFE_INTEGER)
    );
    assert_eq!(as_safe_integer(&json!(9_007_199_254_740_992_i64)), None);
    assert_eq!(as_safe_integer(&json!(u64::MAX)), None);
    assert_eq!(as_safe_integer(&json!(1e300)), None);
    assert_eq!(as_safe_integer(&json!("3")), None);
    assert_eq!(as_safe_integer(&json!(i64::MIN)), None);
    assert_eq!(
        as_safe_integer(&json!(-9_007_199_254_740_991_i64)),
        Some(-MAX_SAFE_INTEGER)
    );
}

#[test]
fn summaries_count_scalar_values() {
    let long = "é".repeat(130);
    let cut = summarize_chars(&long, 120);
    assert_eq!(cut.chars().count(), 120);
    assert_eq!(cut, format!("{}…", "é".repeat(119)));
    assert_eq!(summarize_chars("short", 120), "short");
    assert_eq!(truncate_utf8("héllo", 2), "h");
}
