use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{InvalidArguments, decode_arguments, validate_arguments};

fn todo_schema() -> Value {
    json!({
      "type": "object",
      "properties": {
        "todos": {
          "type": "array",
          "items": {
            "type": "object",
            "additionalProperties": false,
            "properties": {
              "content": { "type": "string" },
              "status": { "type": "string", "enum": ["pending", "in_progress", "completed"] },
              "done": { "type": "boolean" },
              "n": { "type": "number" }
            },
            "required": ["content", "status"]
          }
        }
      },
      "required": ["todos"]
    })
}

fn err(args: Value) -> String {
    let args = args;
    validate_arguments(&todo_schema(), &args).unwrap_err().0
}

#[test]
fn each_violation_format() {
    assert_eq!(
        err(json!({"todos": 3})),
        r#"invalid arguments: "todos" must be an array"#
    );
    assert_eq!(
        err(json!({"todos": [{"content": 1, "status": "pending"}]})),
        r#"invalid arguments: "todos[0].content" must be a string"#
    );
    assert_eq!(
        err(json!({"todos": [{"content": "a", "status": "pending", "done": "x"}]})),
        r#"invalid arguments: "todos[0].done" must be a boolean"#
    );
    assert_eq!(
        err(json!({"todos": [{"content": "a", "status": "pending", "n": "x"}]})),
        r#"invalid arguments: "todos[0].n" must be a number"#
    );
    assert_eq!(
        err(json!({"todos": [{"content": "a", "status": "done"}]})),
        r#"invalid arguments: "todos[0].status" must be one of ["pending","in_progress","completed"]"#
    );
    assert_eq!(
        err(json!({})),
        r#"invalid arguments: missing required property "todos""#
    );
    assert_eq!(
        err(json!({"todos": [{"content": "a"}]})),
        r#"invalid arguments: missing required property "todos[0].status""#
    );
    assert_eq!(
        err(json!({"todos": [{"content": "a", "status": "pending", "extra": 1}]})),
        r#"invalid arguments: "todos[0].extra" is not a declared property (additionalProperties: false)"#
    );
}

#[test]
fn violations_are_joined_and_root_is_open() {
    assert_eq!(
        err(json!({"todos": [{"status": "nope"}, {"content": 2, "status": "pending"}]})),
        concat!(
            r#"invalid arguments: missing required property "todos[0].content"; "#,
            r#""todos[0].status" must be one of ["pending","in_progress","completed"]; "#,
            r#""todos[1].content" must be a string"#
        )
    );
    let mut closed_root = todo_schema();
    closed_root["additionalProperties"] = json!(false);
    assert_eq!(
        validate_arguments(&closed_root, &json!({"todos": [], "extra": true})),
        Ok(())
    );
    assert_eq!(
        validate_arguments(&todo_schema(), &json!([])),
        Err(InvalidArguments(
            r#"invalid arguments: "arguments" must be an object"#.to_owned()
        ))
    );
}

#[test]
fn one_of_picks_the_branch_by_type() {
    let schema = json!({
        "type": "object",
        "properties": {"at": {"oneOf": [
            {"type": "string"},
            {"type": "object", "additionalProperties": false,
             "properties": {"date": {"type": "string"}, "time": {"type": "string"}},
             "required": ["date", "time"]}
        ]}}
    });
    assert_eq!(validate_arguments(&schema, &json!({"at": "x"})), Ok(()));
    assert_eq!(
        validate_arguments(&schema, &json!({"at": 5})),
        Err(InvalidArguments(
            r#"invalid arguments: "at" must be a string or an object"#.to_owned()
        ))
    );
    assert_eq!(
        validate_arguments(&schema, &json!({"at": {"date": "d"}})),
        Err(InvalidArguments(
            r#"invalid arguments: missing required property "at.time""#.to_owned()
        ))
    );
}

#[derive(Debug, serde::Deserialize)]
struct CommandArgs {
    command: String,
}

fn call_with(arguments: Value) -> crate::ToolCall {
    crate::ToolCall {
        caller: None,
        arguments,
        cancel: tokio_util::sync::CancellationToken::new(),
        progress: crate::Progress::default(),
    }
}

#[test]
fn a_tool_decodes_its_arguments_with_the_one_invalid_arguments_text() {
    let ok = call_with(json!({"command": "ls", "other": true}));
    assert_eq!(ok.arguments_as::<CommandArgs>().unwrap().command, "ls");

    let bad = call_with(json!({"command": 1}));
    let error: crate::ToolError = bad.arguments_as::<CommandArgs>().unwrap_err().into();
    assert_eq!(
        crate::ToolOutput::error(error).text(),
        "Error: invalid arguments: invalid type: integer `1`, expected a string"
    );
    assert_eq!(
        decode_arguments::<CommandArgs>(&json!({})).unwrap_err(),
        InvalidArguments("invalid arguments: missing field `command`".to_owned())
    );
}
