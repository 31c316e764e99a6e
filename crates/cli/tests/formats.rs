//! `harness tools --format …`: the shapes LLM APIs take, checked against their rules.
#![allow(
    clippy::unwrap_used,
    reason = "test helpers fail loudly; clippy's test exemption covers only #[test] bodies"
)]

use std::process::Command;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const NAMES: [&str; 8] = [
    "todo_write",
    "job_output",
    "job_list",
    "job_kill",
    "bash",
    "schedule_create",
    "schedule_list",
    "schedule_delete",
];

fn tools(args: &[&str]) -> Vec<Value> {
    let output = Command::new(env!("CARGO_BIN_EXE_harness"))
        .arg("tools")
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "harness tools {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice::<Value>(&output.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// OpenAI's structured-outputs rules for a strict function's parameters, as problems found
/// (empty: the schema passes). The root is an object schema; every object is closed and
/// lists all its properties as required; only the supported keywords appear (no `oneOf`,
/// `allOf`, `not`, conditionals or pattern properties); every schema states a type (or is an
/// `anyOf`); enum values match the type; at most 10 levels of nesting and 5,000 properties.
fn strict_problems(parameters: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    if parameters.get("type") != Some(&json!("object")) {
        problems.push("$: the root must be an object schema".to_owned());
    }
    if parameters.get("anyOf").is_some() {
        problems.push("$: the root must not be an anyOf".to_owned());
    }
    let mut properties = 0;
    check(parameters, "$", 0, &mut properties, &mut problems);
    if properties > 5000 {
        problems.push(format!("$: {properties} properties (at most 5000)"));
    }
    problems
}

const SUPPORTED: [&str; 12] = [
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "anyOf",
    "description",
    "title",
    "$ref",
    "$defs",
];

fn check(schema: &Value, path: &str, depth: usize, count: &mut usize, out: &mut Vec<String>) {
    let Some(map) = schema.as_object() else {
        out.push(format!("{path}: a schema must be an object"));
        return;
    };
    if depth > 10 {
        out.push(format!("{path}: nested deeper than 10 levels"));
    }
    for key in map.keys() {
        if !SUPPORTED.contains(&key.as_str()) {
            out.push(format!("{path}: keyword {key:?} is not supported"));
        }
    }
    let types: Vec<&str> = match map.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        Some(_) => {
            out.push(format!(
                "{path}: type must be a string or an array of strings"
            ));
            Vec::new()
        }
        None => Vec::new(),
    };
    if types.is_empty() && !map.contains_key("anyOf") && !map.contains_key("$ref") {
        out.push(format!("{path}: no type"));
    }
    if types.contains(&"object") || map.contains_key("properties") {
        if map.get("additionalProperties") != Some(&json!(false)) {
            out.push(format!("{path}: additionalProperties must be false"));
        }
        let declared: Vec<&str> = map
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let required: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if map.get("required").is_none() {
            out.push(format!("{path}: required is missing"));
        }
        for name in &declared {
            if !required.contains(name) {
                out.push(format!("{path}: property {name:?} is not required"));
            }
        }
        *count += declared.len();
        if let Some(properties) = map.get("properties").and_then(Value::as_object) {
            for (name, property) in properties {
                check(property, &format!("{path}.{name}"), depth + 1, count, out);
            }
        }
    }
    if let Some(items) = map.get("items") {
        check(items, &format!("{path}[]"), depth + 1, count, out);
    }
    if let Some(branches) = map.get("anyOf").and_then(Value::as_array) {
        for (i, branch) in branches.iter().enumerate() {
            check(branch, &format!("{path}.anyOf[{i}]"), depth + 1, count, out);
        }
    }
    if let Some(values) = map.get("enum").and_then(Value::as_array) {
        for value in values {
            let fits = types.iter().any(|t| match *t {
                "string" => value.is_string(),
                "null" => value.is_null(),
                "number" | "integer" => value.is_number(),
                "boolean" => value.is_boolean(),
                _ => false,
            });
            if !fits {
                out.push(format!(
                    "{path}: enum value {value} does not match {types:?}"
                ));
            }
        }
    }
}

#[test]
fn every_tool_passes_openai_strict_mode() {
    let tools = tools(&["--format", "openai", "--strict"]);
    let names: Vec<&str> = tools
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, NAMES);
    for tool in &tools {
        let function = &tool["function"];
        assert_eq!(tool["type"], "function");
        assert_eq!(function["strict"], true, "{}", function["name"]);
        assert_eq!(
            strict_problems(&function["parameters"]),
            Vec::<String>::new(),
            "{}",
            function["name"]
        );
    }
}

/// The checker has teeth: the parameters as the crates declare them break the rules in every
/// tool (open objects, optional properties, `oneOf`).
#[test]
fn no_tool_passes_strict_mode_without_the_rewrite() {
    let tools = tools(&["--format", "openai"]);
    for tool in &tools {
        let function = &tool["function"];
        assert_eq!(function["strict"], false);
        assert!(
            !strict_problems(&function["parameters"]).is_empty(),
            "{} passes strict mode unrewritten",
            function["name"]
        );
    }
    let create = &tools[5]["function"]["parameters"];
    assert_eq!(
        strict_problems(create),
        [
            "$: additionalProperties must be false",
            "$: property \"after_seconds\" is not required",
            "$: property \"every_seconds\" is not required",
            "$: property \"at\" is not required",
            "$.at: keyword \"oneOf\" is not supported",
            "$.at: no type",
        ]
    );
    // An object without properties still says that nothing is required.
    assert_eq!(
        tools[2]["function"]["parameters"],
        json!({"type": "object", "properties": {}, "required": []})
    );
}

#[test]
fn strict_parameters_of_schedule_create_allow_null_for_each_optional_argument() {
    let tools = tools(&["--format", "openai-responses", "--strict"]);
    let create = &tools[5];
    assert_eq!(create["type"], "function");
    assert_eq!(create["name"], "schedule_create");
    assert_eq!(create["strict"], true);
    let parameters = &create["parameters"];
    assert_eq!(
        parameters["required"],
        json!(["prompt", "after_seconds", "every_seconds", "at"])
    );
    assert_eq!(
        parameters["properties"]["after_seconds"]["type"],
        json!(["number", "null"])
    );
    assert_eq!(
        parameters["properties"]["at"]["anyOf"],
        json!([
            {"type": "string"},
            {
                "type": "object",
                "properties": {
                    "date": {"type": "string"},
                    "time": {"type": "string"},
                    "time_zone": {"type": ["string", "null"]}
                },
                "required": ["date", "time", "time_zone"],
                "additionalProperties": false
            },
            {"type": "null"}
        ])
    );
}

#[test]
fn anthropic_tools_carry_the_input_schema_as_declared() {
    let tools = tools(&["--format", "anthropic"]);
    let definitions = tools_as_declared();
    assert_eq!(tools.len(), 8);
    for (tool, definition) in tools.iter().zip(&definitions) {
        let keys: Vec<&String> = tool.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["name", "description", "input_schema"]);
        assert_eq!(tool["name"], definition["name"]);
        assert_eq!(tool["description"], definition["description"]);
        assert_eq!(tool["input_schema"], definition["inputSchema"]);
    }
}

fn tools_as_declared() -> Vec<Value> {
    let output = Command::new(env!("CARGO_BIN_EXE_harness"))
        .arg("tools")
        .output()
        .unwrap();
    serde_json::from_slice::<Value>(&output.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn mcp_tools_have_annotations_and_object_rooted_output_schemas() {
    let plain = tools(&["--format", "mcp"]);
    for tool in &plain {
        let keys: Vec<&String> = tool.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["name", "description", "inputSchema", "annotations"]);
    }
    assert_eq!(
        plain[4]["annotations"],
        json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true})
    );
    let with_output = tools(&["--format", "mcp", "--output-schema"]);
    let declared = tools_as_declared();
    let mut wrapped = Vec::new();
    let mut typed = Vec::new();
    for (tool, definition) in with_output.iter().zip(&declared) {
        let mut schema = tool["outputSchema"].clone();
        assert_eq!(schema["type"], "object", "{}", tool["name"]);
        // The owed messages' field is declared at the root and in every branch.
        let owed = schema["properties"]
            .as_object_mut()
            .unwrap()
            .remove("harnessMessages")
            .unwrap();
        assert_eq!(owed["type"], "array");
        if schema["properties"].as_object().unwrap().is_empty() {
            schema.as_object_mut().unwrap().remove("properties");
        }
        for branch in schema
            .get_mut("oneOf")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            let removed = branch["properties"]
                .as_object_mut()
                .unwrap()
                .remove("harnessMessages");
            assert_eq!(removed.as_ref(), Some(&owed), "{}", tool["name"]);
        }
        let name = tool["name"].as_str().unwrap();
        if schema == definition["outputSchema"] {
            continue;
        }
        if schema.get("oneOf").is_some() {
            let mut union = definition["outputSchema"].clone();
            union["type"] = json!("object");
            assert_eq!(schema, union, "{name}");
            typed.push(name);
        } else {
            assert_eq!(
                schema,
                json!({
                    "type": "object",
                    "properties": {"value": definition["outputSchema"]},
                    "required": ["value"],
                    "additionalProperties": false
                })
            );
            wrapped.push(name);
        }
    }
    // Only the tools with values that are not objects are wrapped as {"value": …}.
    assert_eq!(wrapped, ["job_list", "schedule_list"]);
    assert_eq!(typed, ["bash", "schedule_create", "schedule_delete"]);
}

#[test]
fn format_flags_that_do_not_apply_are_refused() {
    let output = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["tools", "--format", "anthropic", "--strict"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "harness: --strict applies to --format openai and openai-responses only\n"
    );
}
