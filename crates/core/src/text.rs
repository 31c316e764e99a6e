//! Text helpers shared by every family: JavaScript-compatible trimming (decision 3), safe
//! integers (decision 4), and UTF-8-safe truncation.

use serde_json::Value;

/// Whether `c` is removed by JavaScript's `String.prototype.trim`: Unicode `White_Space`
/// plus U+FEFF, but not U+0085, U+180E or U+200B (decision 3; schedule §17.1).
pub fn is_js_whitespace(c: char) -> bool {
    match c {
        '\u{FEFF}' => true,
        '\u{0085}' => false,
        _ => c.is_whitespace(),
    }
}

/// `String.prototype.trim`: strips [`is_js_whitespace`] characters from both ends.
///
/// ```
/// use turnkit_core::js_trim;
/// assert_eq!(js_trim("\u{FEFF} task \u{3000}"), "task");
/// assert_eq!(js_trim("\u{0085}x\u{200B}"), "\u{0085}x\u{200B}");
/// ```
pub fn js_trim(text: &str) -> &str {
    text.trim_matches(is_js_whitespace)
}

/// The largest integer JavaScript represents exactly: 2^53 − 1.
pub const MAX_SAFE_INTEGER: i64 = 9_007_199_254_740_991;

/// Reads a JSON number as a safe integer (decision 4): integral and |n| ≤ 2^53−1. `30.0`
/// counts as `30`. Returns `None` for non-numbers, fractions, and out-of-range values.
pub fn as_safe_integer(value: &Value) -> Option<i64> {
    let number = value.as_number()?;
    if let Some(i) = number.as_i64() {
        // `unsigned_abs`: `i64::MIN.abs()` overflows (a log or model can send that number).
        return (i.unsigned_abs() <= MAX_SAFE_INTEGER.unsigned_abs()).then_some(i);
    }
    if number.as_u64().is_some() {
        return None;
    }
    let f = number.as_f64()?;
    if f.fract() != 0.0 || !f.is_finite() || f.abs() > MAX_SAFE_INTEGER as f64 {
        return None;
    }
    #[expect(
        clippy::cast_possible_truncation,
        reason = "f is integral and within ±2^53−1, so the cast is exact"
    )]
    Some(f as i64)
}

/// The longest prefix of `text` that is at most `max_bytes` long and ends on a character
/// boundary (a trailing partial code point is dropped, so the result can be shorter).
///
/// ```
/// assert_eq!(turnkit_core::truncate_utf8("界a", 2), "");
/// assert_eq!(turnkit_core::truncate_utf8("界a", 3), "界");
/// ```
pub fn truncate_utf8(text: &str, max_bytes: usize) -> &str {
    &text[..text.floor_char_boundary(max_bytes)]
}

/// The longest suffix of `text` that is at most `max_bytes` long and starts on a character
/// boundary (a leading partial code point is dropped, so the result can be shorter).
///
/// ```
/// assert_eq!(turnkit_core::tail_utf8("a界", 2), "");
/// assert_eq!(turnkit_core::tail_utf8("a界", 3), "界");
/// ```
pub fn tail_utf8(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    &text[text.ceil_char_boundary(text.len() - max_bytes)..]
}

/// Cuts `text` to at most `max_chars` Unicode scalar values; a longer text keeps its first
/// `max_chars - 1` characters followed by `…` (U+2026). Used for one-line summaries
/// (todo-jobs §1.5: 120 characters).
pub fn summarize_chars(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max_chars.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
