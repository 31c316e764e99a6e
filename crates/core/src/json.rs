//! [`JsonText`]: one JSON value as compact text, valid by construction, for
//! [`Session::append_raw`](crate::Session::append_raw).

use serde::Serialize;
use serde_json::value::RawValue;

/// One JSON value as compact text, in exactly the form `serde_json` writes it (no
/// whitespace, `serde_json`'s string escapes and number forms), so its text is byte for byte
/// what [`Session::append`](crate::Session::append) stores for the same value.
///
/// Made only from something that is JSON by construction: a serialization
/// ([`JsonText::serialize`]) or a `serde_json` [`RawValue`] (`From`; kept as it is, so it
/// should hold the compact form `serde_json::value::to_raw_value` writes).
///
/// ```
/// use turnkit_core::JsonText;
/// #[derive(serde::Serialize)]
/// #[serde(rename_all = "camelCase")]
/// struct Start<'a> {
///     id: &'a str,
///     started_at: i64,
/// }
/// let text = JsonText::serialize(&Start { id: "bash-1", started_at: 5 }).unwrap();
/// assert_eq!(text.as_str(), r#"{"id":"bash-1","startedAt":5}"#);
/// ```
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

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;
