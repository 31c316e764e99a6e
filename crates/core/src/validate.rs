//! Argument validation against a tool's JSON Schema (decision 2; todo-jobs §1.4).
//!
//! The walker covers the keywords the tool schemas use — `type`, `enum`, `properties`,
//! `required`, `additionalProperties: false`, `items` and `oneOf` — and reports violations
//! in the exact formats of todo-jobs §1.4, in a fixed order: type, enum, missing required
//! properties (in `required` order), undeclared properties (in argument order), then each
//! declared property (in schema order) and each array item. The root object is open: an
//! `additionalProperties: false` at the root is not enforced, as the spec's implicit root is.
//! Other keywords (bounds, formats) are left to the tool body, which owns those messages.

use serde_json::{Map, Value};

/// Validates `arguments` against `schema`.
///
/// # Errors
/// [`InvalidArguments`], whose text is the full message
/// `invalid arguments: <violation>; <violation>…`.
///
/// ```
/// use serde_json::json;
/// let schema = json!({"type":"object","properties":{"n":{"type":"number"}},"required":["n"]});
/// assert_eq!(
///     turnkit_core::validate_arguments(&schema, &json!({})).unwrap_err().to_string(),
///     "invalid arguments: missing required property \"n\""
/// );
/// ```
pub fn validate_arguments(schema: &Value, arguments: &Value) -> Result<(), InvalidArguments> {
    let mut violations = Vec::new();
    check(schema, arguments, "", true, &mut violations);
    if violations.is_empty() {
        Ok(())
    } else {
        Err(InvalidArguments::new(violations.join("; ")))
    }
}

/// Arguments that break their tool's input schema. The text is the model-facing message
/// (todo-jobs §1.4), e.g. `invalid arguments: missing required property "n"`; a tool result
/// shows it as `Error: <text>`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidArguments(pub String);

impl InvalidArguments {
    /// The message for `detail`: `invalid arguments: <detail>`, the one prefix of every
    /// argument failure, whether the schema check or a tool's decoding found it.
    pub fn new(detail: impl std::fmt::Display) -> Self {
        Self(format!("invalid arguments: {detail}"))
    }
}

/// Decodes a tool's arguments into its typed form `T` (borrowing from `arguments` where `T`
/// does). This is how every tool body reads its arguments; [`crate::ToolCall::arguments_as`]
/// is the same on a call.
///
/// # Errors
/// [`InvalidArguments`] `invalid arguments: <serde message>`, e.g.
/// `invalid arguments: missing field `command``. Arguments that passed
/// [`validate_arguments`] against a schema that describes `T` do not fail.
///
/// ```
/// #[derive(Debug, serde::Deserialize)]
/// struct Args { n: f64 }
/// let error = turnkit_core::decode_arguments::<Args>(&serde_json::json!({})).unwrap_err();
/// assert_eq!(error.to_string(), "invalid arguments: missing field `n`");
/// ```
pub fn decode_arguments<'de, T: serde::Deserialize<'de>>(
    arguments: &'de Value,
) -> Result<T, InvalidArguments> {
    T::deserialize(arguments).map_err(InvalidArguments::new)
}

/// Whether `value` (not at the root) satisfies `schema` as [`validate_arguments`] checks it.
pub(crate) fn conforms(schema: &Value, value: &Value) -> bool {
    let mut violations = Vec::new();
    check(schema, value, "", false, &mut violations);
    violations.is_empty()
}

/// Whether `value`'s type is one `schema` declares (any, when it declares none): how a
/// `oneOf` branch is told to fit.
pub(crate) fn type_fits(schema: &Value, value: &Value) -> bool {
    let types = declared_types(schema);
    types.is_empty() || types.iter().any(|t| type_matches(t, value))
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn shown(path: &str) -> &str {
    if path.is_empty() { "arguments" } else { path }
}

fn type_matches(name: &str, value: &Value) -> bool {
    match name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "number" => value.is_number(),
        "integer" => value.as_f64().is_some_and(|f| f.fract() == 0.0),
        "null" => value.is_null(),
        _ => true,
    }
}

fn article(name: &str) -> String {
    match name {
        "object" | "array" | "integer" => format!("an {name}"),
        "null" => "null".to_owned(),
        _ => format!("a {name}"),
    }
}

fn declared_types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(name)) => vec![name.as_str()],
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn check(schema: &Value, value: &Value, path: &str, root: bool, out: &mut Vec<String>) {
    if let Some(Value::Array(branches)) = schema.get("oneOf") {
        check_one_of(branches, value, path, out);
        return;
    }
    let types = declared_types(schema);
    if !types.is_empty() && !types.iter().any(|t| type_matches(t, value)) {
        let wanted: Vec<String> = types.iter().map(|t| article(t)).collect();
        out.push(format!(
            "\"{}\" must be {}",
            shown(path),
            wanted.join(" or ")
        ));
        return;
    }
    if let Some(Value::Array(allowed)) = schema.get("enum")
        && !allowed.contains(value)
    {
        let list = Value::Array(allowed.clone()).to_string();
        out.push(format!("\"{}\" must be one of {list}", shown(path)));
        return;
    }
    if let Value::Object(object) = value {
        check_object(schema, object, path, root, out);
    }
    if let (Value::Array(items), Some(item_schema)) = (value, schema.get("items")) {
        for (i, item) in items.iter().enumerate() {
            check(item_schema, item, &format!("{path}[{i}]"), false, out);
        }
    }
}

fn check_object(
    schema: &Value,
    object: &Map<String, Value>,
    path: &str,
    root: bool,
    out: &mut Vec<String>,
) {
    let properties = schema.get("properties").and_then(Value::as_object);
    if let Some(Value::Array(required)) = schema.get("required") {
        for name in required.iter().filter_map(Value::as_str) {
            if !object.contains_key(name) {
                out.push(format!(
                    "missing required property \"{}\"",
                    child(path, name)
                ));
            }
        }
    }
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    if closed && !root {
        for key in object.keys() {
            if !properties.is_some_and(|p| p.contains_key(key)) {
                out.push(format!(
                    "\"{}\" is not a declared property (additionalProperties: false)",
                    child(path, key)
                ));
            }
        }
    }
    if let Some(properties) = properties {
        for (name, property_schema) in properties {
            if let Some(member) = object.get(name) {
                check(property_schema, member, &child(path, name), false, out);
            }
        }
    }
}

/// `oneOf` over branches told apart by type (the only use in these tools): the branch whose
/// type fits decides; no fitting branch is a type violation naming every branch's type.
fn check_one_of(branches: &[Value], value: &Value, path: &str, out: &mut Vec<String>) {
    let fitting: Vec<&Value> = branches.iter().filter(|b| type_fits(b, value)).collect();
    match fitting.as_slice() {
        [] => {
            let wanted: Vec<String> = branches
                .iter()
                .flat_map(|b| declared_types(b))
                .map(article)
                .collect();
            out.push(format!(
                "\"{}\" must be {}",
                shown(path),
                wanted.join(" or ")
            ));
        }
        [only] => check(only, value, path, false, out),
        several => {
            let mut firsts = Vec::new();
            for branch in several {
                let mut local = Vec::new();
                check(branch, value, path, false, &mut local);
                if local.is_empty() {
                    return;
                }
                firsts.push(local);
            }
            if let Some(first) = firsts.into_iter().next() {
                out.extend(first);
            }
        }
    }
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
