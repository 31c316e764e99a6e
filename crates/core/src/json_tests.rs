use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

/// Serialized text is what `serde_json` writes for the value as a `Value` (escapes
/// included); a raw value keeps its text.
#[test]
fn serialized_and_raw_values_keep_their_text() {
    let value = json!({"a": [1, "x\ty\u{1}\u{2028}"], "b": null, "c": -3});
    let text = JsonText::serialize(&value).unwrap();
    assert_eq!(
        text.as_str(),
        "{\"a\":[1,\"x\\ty\\u0001\u{2028}\"],\"b\":null,\"c\":-3}"
    );
    assert_eq!(text.into_string(), value.to_string());
    let raw = serde_json::value::to_raw_value(&value).unwrap();
    assert_eq!(JsonText::from(raw).as_str(), value.to_string());
}

/// A value `serde_json` cannot write as JSON is an error, not text.
#[test]
fn a_map_with_non_string_keys_is_refused() {
    let map = std::collections::BTreeMap::from([((1, 2), "x")]);
    assert_eq!(
        JsonText::serialize(&map).unwrap_err().to_string(),
        "key must be a string"
    );
}
