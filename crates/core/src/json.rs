//! [`JsonText`]: one JSON value as compact text, valid by construction, and [`JsonObject`],
//! a writer of flat objects, for [`Session::append_raw`](crate::Session::append_raw).

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::value::RawValue;

/// One JSON value as compact text, in exactly the form `serde_json` writes it (no
/// whitespace, `serde_json`'s string escapes and number forms), so its text is byte for byte
/// what [`Session::append`](crate::Session::append) stores for the same value.
///
/// Made only from something that is JSON by construction: a serialization
/// ([`JsonText::serialize`]), a `serde_json` [`RawValue`] (`From`; kept as it is, so it
/// should hold the compact form), or a [`JsonObject`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonText(String);

impl JsonText {
    /// `value` serialized by `serde_json` (compact).
    ///
    /// # Errors
    /// `value`'s `Serialize` failed (a map with non-string keys, a custom error).
    pub fn serialize<T: Serialize + ?Sized>(value: &T) -> Result<JsonText, serde_json::Error> {
        serde_json::to_string(value).map(JsonText)
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The text, owned.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl From<Box<RawValue>> for JsonText {
    fn from(raw: Box<RawValue>) -> Self {
        let text: Box<str> = raw.into();
        JsonText(text.into())
    }
}

/// Writes one flat JSON object field by field, straight into its text: the fields in the
/// order written, each value escaped or formatted as `serde_json` writes it, so the result
/// is the text `serde_json` writes for the same object as a `Value` (given distinct keys).
/// For hot-path event payloads (the job journal) that should not build a `Value` tree or go
/// through a serializer.
///
/// ```
/// use harness_core::JsonObject;
/// let text = JsonObject::with_capacity(64)
///     .u64("version", 1)
///     .str("label", "say \"hi\"\n")
///     .i64("at", -3)
///     .bool("done", true)
///     .finish();
/// assert_eq!(
///     text.as_str(),
///     r#"{"version":1,"label":"say \"hi\"\n","at":-3,"done":true}"#
/// );
/// ```
#[derive(Debug)]
pub struct JsonObject {
    text: String,
}

impl JsonObject {
    /// An empty object whose text has room for `bytes` bytes before it grows.
    pub fn with_capacity(bytes: usize) -> Self {
        let mut text = String::with_capacity(bytes.max(2));
        text.push('{');
        Self { text }
    }

    /// Writes the next key (escaped) and its colon.
    fn key(&mut self, key: &str) {
        if self.text.len() > 1 {
            self.text.push(',');
        }
        push_string(&mut self.text, key);
        self.text.push(':');
    }

    /// Adds field `key` with an unsigned integer.
    pub fn u64(mut self, key: &str, value: u64) -> Self {
        self.key(key);
        // Writing into a String cannot fail.
        let _ = write!(self.text, "{value}");
        self
    }

    /// Adds field `key` with a signed integer.
    pub fn i64(mut self, key: &str, value: i64) -> Self {
        self.key(key);
        let _ = write!(self.text, "{value}");
        self
    }

    /// Adds field `key` with a string, escaped as `serde_json` escapes it.
    pub fn str(mut self, key: &str, value: &str) -> Self {
        self.key(key);
        push_string(&mut self.text, value);
        self
    }

    /// Adds field `key` with a boolean.
    pub fn bool(mut self, key: &str, value: bool) -> Self {
        self.key(key);
        self.text.push_str(if value { "true" } else { "false" });
        self
    }

    /// The finished object.
    pub fn finish(mut self) -> JsonText {
        self.text.push('}');
        JsonText(self.text)
    }
}

/// Appends `value` as a JSON string the way `serde_json` writes one: `"` and `\` escaped,
/// control characters below U+0020 as `\b`, `\t`, `\n`, `\f`, `\r` or `\u00xx` (lowercase
/// hex), everything else as it is.
fn push_string(out: &mut String, value: &str) {
    out.push('"');
    let mut plain = 0;
    for (at, byte) in value.bytes().enumerate() {
        let escape = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\x08' => "\\b",
            b'\t' => "\\t",
            b'\n' => "\\n",
            b'\x0c' => "\\f",
            b'\r' => "\\r",
            0..0x20 => "",
            _ => continue,
        };
        // Every byte escaped is ASCII, so `plain..at` lies on character boundaries.
        out.push_str(&value[plain..at]);
        if escape.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0xf)]));
        } else {
            out.push_str(escape);
        }
        plain = at + 1;
    }
    out.push_str(&value[plain..]);
    out.push('"');
}

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;
