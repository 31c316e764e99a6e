use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::*;

/// Every ASCII character, alone and among plain text, and a few beyond ASCII (including the
/// line separators JSON allows unescaped) are written as `serde_json` writes them.
#[test]
fn strings_are_escaped_as_serde_json_escapes_them() {
    let mut samples: Vec<String> = (0u8..0x80).map(|b| char::from(b).to_string()).collect();
    samples.extend((0u8..0x80).map(|b| format!("ab{}cd", char::from(b))));
    samples.extend(
        ["", "é", "\u{2028}\u{2029}", "日本\n語", "\u{7f}\u{10ffff}", "\"\\\"\\"].map(String::from),
    );
    for sample in &samples {
        let text = JsonObject::with_capacity(0).str(sample, sample).finish();
        let mut expected = serde_json::Map::new();
        expected.insert(sample.clone(), json!(sample));
        assert_eq!(text.as_str(), Value::Object(expected).to_string(), "{sample:?}");
    }
}

#[test]
fn objects_are_the_value_form() {
    let text = JsonObject::with_capacity(8)
        .u64("version", 1)
        .u64("max", u64::MAX)
        .i64("min", i64::MIN)
        .i64("zero", 0)
        .str("id", "bash-3")
        .bool("yes", true)
        .bool("no", false)
        .finish();
    let value = json!({
        "version": 1,
        "max": u64::MAX,
        "min": i64::MIN,
        "zero": 0,
        "id": "bash-3",
        "yes": true,
        "no": false,
    });
    assert_eq!(text.as_str(), value.to_string());
    assert_eq!(JsonObject::with_capacity(0).finish().as_str(), "{}");
}

#[test]
fn serialized_and_raw_values_keep_their_text() {
    let value = json!({"a": [1, "x\ty"], "b": null});
    assert_eq!(
        JsonText::serialize(&value).unwrap().into_string(),
        value.to_string()
    );
    let raw = serde_json::value::to_raw_value(&value).unwrap();
    assert_eq!(JsonText::from(raw).as_str(), r#"{"a":[1,"x\ty"],"b":null}"#);
}
