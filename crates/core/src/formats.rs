//! Tool definitions in the shapes LLM APIs take, and OpenAI's strict structured-outputs form.
//!
//! Pure functions from a [`ToolDefinition`] to the JSON an API expects:
//!
//! | function | shape |
//! |---|---|
//! | [`openai_chat_tool`] | Chat Completions: `{"type":"function","function":{"name","description","parameters","strict"}}` |
//! | [`openai_responses_tool`] | Responses: `{"type":"function","name","description","parameters","strict"}` |
//! | [`anthropic_tool`] | Messages API: `{"name","description","input_schema"}` |
//! | [`mcp_tool`] | MCP `Tool`: `{"name","description","inputSchema","annotations"?,"outputSchema"?}` |
//!
//! With `strict`, the parameters go through [`strict_schema`], which follows OpenAI's
//! structured-outputs rules: every object is closed and lists all its properties as
//! required, an optional property also accepts `null`, and `oneOf` becomes `anyOf`. A model
//! in strict mode therefore sends `null` for every optional argument it leaves out; the
//! [`crate::ToolRegistry`] treats such a `null` exactly like an absent field
//! ([`null_as_absent`]), so the call's result is byte-identical to the same call without the
//! nulls.

use serde_json::{Map, Value, json};

use crate::ToolDefinition;

/// An OpenAI Chat Completions function tool. `strict` selects [`strict_schema`] for the
/// parameters and is emitted as the `strict` key either way (the official SDK types require
/// the key).
pub fn openai_chat_tool(definition: &ToolDefinition, strict: bool) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": definition.name,
            "description": definition.description,
            "parameters": openai_parameters(&definition.input_schema, strict),
            "strict": strict,
        }
    })
}

/// An OpenAI Responses API function tool: the Chat Completions fields, flattened.
pub fn openai_responses_tool(definition: &ToolDefinition, strict: bool) -> Value {
    json!({
        "type": "function",
        "name": definition.name,
        "description": definition.description,
        "parameters": openai_parameters(&definition.input_schema, strict),
        "strict": strict,
    })
}

/// An Anthropic Messages API tool. The input schema is the definition's own.
pub fn anthropic_tool(definition: &ToolDefinition) -> Value {
    json!({
        "name": definition.name,
        "description": definition.description,
        "input_schema": definition.input_schema,
    })
}

/// An MCP tool definition: input schema, the definition's annotations (as `readOnlyHint`,
/// `destructiveHint`, `idempotentHint`, `openWorldHint`) when declared, and — with
/// `output_schema` — the output schema rooted at an object, as MCP requires
/// ([`object_rooted`]).
pub fn mcp_tool(definition: &ToolDefinition, output_schema: bool) -> Value {
    let mut tool = Map::new();
    tool.insert("name".to_owned(), json!(definition.name));
    tool.insert("description".to_owned(), json!(definition.description));
    tool.insert("inputSchema".to_owned(), definition.input_schema.clone());
    if let Some(annotations) = definition.annotations {
        tool.insert("annotations".to_owned(), json!(annotations));
    }
    if output_schema && let Some(schema) = &definition.output_schema {
        tool.insert("outputSchema".to_owned(), object_rooted(schema).0);
    }
    Value::Object(tool)
}

/// The key under which [`object_rooted`] wraps a schema (and [`object_rooted_value`] a value)
/// that cannot be rooted at an object.
pub const WRAPPED_VALUE_KEY: &str = "value";

/// `schema` rooted at an object schema, as MCP requires of an output schema; the flag says
/// whether it was wrapped, so the tool's values are rooted the same way
/// ([`object_rooted_value`]):
///
/// * a schema whose root is `"type": "object"` is kept as is (not wrapped);
/// * a `oneOf` / `anyOf` whose every branch is an object schema (every value is an object)
///   gains `"type": "object"` at its root and is otherwise kept (not wrapped);
/// * anything else (an array, a scalar, a union with a non-object branch) is wrapped as
///   `{"type":"object","properties":{"value": schema},"required":["value"],
///   "additionalProperties":false}` (wrapped): then *every* value is wrapped, objects
///   included, so a value always validates against the schema it is declared under.
pub fn object_rooted(schema: &Value) -> (Value, bool) {
    if schema.get("type").and_then(Value::as_str) == Some("object") {
        return (schema.clone(), false);
    }
    if let Value::Object(map) = schema
        && !map.contains_key("type")
        && let Some(branches) = ["oneOf", "anyOf"]
            .iter()
            .find_map(|key| map.get(*key).and_then(Value::as_array))
        && !branches.is_empty()
        && branches
            .iter()
            .all(|b| b.get("type").and_then(Value::as_str) == Some("object"))
    {
        let mut typed = Map::new();
        typed.insert("type".to_owned(), json!("object"));
        typed.extend(map.iter().map(|(k, v)| (k.clone(), v.clone())));
        return (Value::Object(typed), false);
    }
    let wrapped = json!({
        "type": "object",
        "properties": { WRAPPED_VALUE_KEY: schema },
        "required": [WRAPPED_VALUE_KEY],
        "additionalProperties": false,
    });
    (wrapped, true)
}

/// A tool's value rooted the way its output schema was by [`object_rooted`]: `wrapped` (the
/// flag [`object_rooted`] returned) gives `{"value": value}`, else `value` as is. A tool
/// without an output schema passes `!value.is_object()`, so only non-objects are wrapped.
pub fn object_rooted_value(value: &Value, wrapped: bool) -> Value {
    if wrapped {
        json!({ WRAPPED_VALUE_KEY: value })
    } else {
        value.clone()
    }
}

fn openai_parameters(schema: &Value, strict: bool) -> Value {
    if strict {
        return strict_schema(schema);
    }
    let mut schema = schema.clone();
    // An object without properties still states that nothing is required.
    if let Value::Object(map) = &mut schema
        && map.get("type").and_then(Value::as_str) == Some("object")
        && !map.contains_key("required")
    {
        map.insert("required".to_owned(), json!([]));
    }
    schema
}

/// `schema` rewritten to OpenAI's strict structured-outputs rules:
///
/// * every object schema gets `"additionalProperties": false` and `required` listing every
///   property, in property order (`"required": []` when it has none);
/// * a property that was optional also accepts `null`: a scalar or object `type` becomes
///   `[type, "null"]` (an `enum` gains `null`), an `anyOf` gains a `{"type":"null"}` branch,
///   and a schema with none of these (or with a `const`) becomes
///   `{"anyOf": [schema, {"type":"null"}]}`;
/// * `oneOf` becomes `anyOf` (strict mode refuses `oneOf`).
///
/// Descriptions and every other keyword are kept in place.
pub fn strict_schema(schema: &Value) -> Value {
    strictify(schema, false)
}

fn strictify(schema: &Value, nullable: bool) -> Value {
    let Value::Object(source) = schema else {
        return schema.clone();
    };
    // An optional property that neither a `type`, an `enum` nor branches can make nullable
    // (no `type`, or a `const` that no added type could relax) accepts `null` as a branch.
    let typed = source.contains_key("type")
        || source.contains_key("enum")
        || source.contains_key("anyOf")
        || source.contains_key("oneOf");
    if nullable && (!typed || source.contains_key("const")) {
        return json!({"anyOf": [strictify(schema, false), {"type": "null"}]});
    }
    let mut out = Map::new();
    let required: Vec<&str> = source
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let is_object = source.get("type").and_then(Value::as_str) == Some("object");
    for (key, value) in source {
        match key.as_str() {
            "oneOf" | "anyOf" => {
                let mut branches: Vec<Value> = value
                    .as_array()
                    .map(|b| b.iter().map(|b| strictify(b, false)).collect())
                    .unwrap_or_default();
                if nullable {
                    branches.push(json!({"type": "null"}));
                }
                out.insert("anyOf".to_owned(), Value::Array(branches));
            }
            "type" if nullable => {
                let types = match value {
                    Value::Array(types) => {
                        let mut types = types.clone();
                        if !types.contains(&json!("null")) {
                            types.push(json!("null"));
                        }
                        types
                    }
                    other => vec![other.clone(), json!("null")],
                };
                out.insert(key.clone(), Value::Array(types));
            }
            "enum" if nullable => {
                let mut values = value.as_array().cloned().unwrap_or_default();
                if !values.contains(&Value::Null) {
                    values.push(Value::Null);
                }
                out.insert(key.clone(), Value::Array(values));
            }
            "properties" => {
                let properties: Map<String, Value> = value
                    .as_object()
                    .map(|p| {
                        p.iter()
                            .map(|(name, property)| {
                                let optional = !required.contains(&name.as_str());
                                (name.clone(), strictify(property, optional))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                out.insert(key.clone(), Value::Object(properties));
            }
            "items" => {
                out.insert(key.clone(), strictify(value, false));
            }
            "required" | "additionalProperties" if is_object => {}
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    if is_object {
        let all: Vec<Value> = source
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().map(|k| json!(k)).collect())
            .unwrap_or_default();
        if !out.contains_key("properties") {
            out.insert("properties".to_owned(), json!({}));
        }
        out.insert("required".to_owned(), Value::Array(all));
        out.insert("additionalProperties".to_owned(), json!(false));
    }
    Value::Object(out)
}

/// `arguments` with every `null` that stands for an optional property removed, so an
/// explicit `null` means exactly what an absent field means.
///
/// Walks `schema` alongside the value: in an object schema, a property that is not listed
/// in `required` and whose value is `null` is dropped; declared properties are walked
/// further (object properties, array `items`, and the `oneOf`/`anyOf` branches whose `type`
/// fits the value). When several branches fit, the value is stripped by the first one it
/// then validates against (by the first fitting one if it validates against none), so a
/// `null` is judged by the branch the value is written for. A `null` for a required
/// property, an undeclared key or anything the schema does not describe is left alone, so
/// validation still reports it.
///
/// ```
/// use serde_json::json;
/// let schema = json!({"type": "object", "properties": {
///     "job_id": {"type": "string"}, "wait": {"type": "boolean"}}, "required": ["job_id"]});
/// assert_eq!(
///     turnkit_core::null_as_absent(&schema, json!({"job_id": "bash-1", "wait": null})),
///     json!({"job_id": "bash-1"})
/// );
/// ```
pub fn null_as_absent(schema: &Value, arguments: Value) -> Value {
    let mut value = match arguments {
        Value::Object(map) => Value::Object(strip_object(schema, map)),
        Value::Array(items) => match schema.get("items") {
            Some(item_schema) => Value::Array(
                items
                    .into_iter()
                    .map(|item| null_as_absent(item_schema, item))
                    .collect(),
            ),
            None => Value::Array(items),
        },
        other => return other,
    };
    for keyword in ["oneOf", "anyOf"] {
        if let Some(branches) = schema.get(keyword).and_then(Value::as_array) {
            value = through_branches(branches, value);
        }
    }
    value
}

/// `value` stripped by the branch it is written for: the first fitting branch it validates
/// against once stripped, else the first fitting branch, else unchanged.
fn through_branches(branches: &[Value], value: Value) -> Value {
    let candidates: Vec<(&Value, Value)> = branches
        .iter()
        .filter(|branch| crate::validate::type_fits(branch, &value))
        .map(|branch| (branch, null_as_absent(branch, value.clone())))
        .collect();
    let chosen = candidates
        .iter()
        .position(|(branch, candidate)| crate::validate::conforms(branch, candidate))
        .unwrap_or(0);
    candidates
        .into_iter()
        .nth(chosen)
        .map_or(value, |(_, candidate)| candidate)
}

fn strip_object(schema: &Value, mut map: Map<String, Value>) -> Map<String, Value> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return map;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    map.retain(|key, value| {
        !(value.is_null() && properties.contains_key(key) && !required.contains(&key.as_str()))
    });
    for (key, value) in &mut map {
        if let Some(property) = properties.get(key)
            && (value.is_object() || value.is_array())
        {
            *value = null_as_absent(property, std::mem::take(value));
        }
    }
    map
}

#[cfg(test)]
#[path = "formats_tests.rs"]
mod tests;
