//! Unit tests of the `todo_write` algorithm, description, schema and tool output.

use std::sync::Arc;

use pretty_assertions::assert_eq;
use proptest::prelude::*;
use serde_json::{Value, json};
use turnkit_core::{
    CancellationToken, MemoryStore, RegistrationScope, Session, SessionHeader, SessionStore,
    SystemClock, ToolRegistry, validate_arguments,
};

use super::*;
use crate::{
    TodoCounts, TodoError, TodoItem, TodoStatus, TodoWriteValue, description, input_schema,
};

/// §2.2, `allowParallelInProgress: true`, copied from the spec.
const DESCRIPTION_TRUE: &str = r#"Record and update a structured task list for the current work. Send the ENTIRE list every call — it REPLACES the previous list (there are no partial updates, no per-item edits). Use it to plan multi-step work and show progress: add one todo per concrete step before you start. Mark every todo being actively worked on `in_progress` — several at once when work genuinely runs in parallel (e.g. concurrent subagents or background commands), one for sequential work; while work remains, at least one task should be `in_progress`. Mark a todo `completed` the moment it is done (do not batch completions), and allow no `in_progress` item only once all work is complete. Skip the list for trivial single-step tasks. Statuses: `pending` (not started), `in_progress` (being worked on now), `completed` (finished)."#;

/// §2.2, `allowParallelInProgress: false`, assembled from the spec's replacement rule.
const DESCRIPTION_FALSE: &str = r#"Record and update a structured task list for the current work. Send the ENTIRE list every call — it REPLACES the previous list (there are no partial updates, no per-item edits). Use it to plan multi-step work and show progress: add one todo per concrete step before you start. Keep AT MOST ONE todo `in_progress` at a time; while work remains, exactly one active task should be `in_progress`. Mark a todo `completed` the moment it is done (do not batch completions), and allow no `in_progress` item only once all work is complete. Skip the list for trivial single-step tasks. Statuses: `pending` (not started), `in_progress` (being worked on now), `completed` (finished)."#;

/// §2.2 parameter schema, copied from the spec.
const SPEC_SCHEMA: &str = r#"{
  "type": "object",
  "properties": {
    "todos": {
      "type": "array",
      "description": "The COMPLETE task list, replacing any previous list.",
      "items": {
        "type": "object",
        "additionalProperties": false,
        "properties": {
          "content": { "type": "string", "description": "What the task is — a short imperative line." },
          "status": {
            "type": "string",
            "description": "pending (not started) | in_progress (now) | completed (done).",
            "enum": ["pending", "in_progress", "completed"]
          }
        },
        "required": ["content", "status"]
      }
    }
  },
  "required": ["todos"]
}"#;

fn new_session() -> Arc<dyn Session> {
    MemoryStore::new(Arc::new(SystemClock))
        .create(SessionHeader::new("writer"))
        .unwrap()
}

fn tool(allow_parallel: bool) -> TodoWriteTool {
    TodoWriteTool::new(InProgressPolicy::from_allow_parallel(allow_parallel))
}

/// The host pipeline without an agent host: schema validation (decision 2), then the body,
/// rendered with the `Error:` envelope.
fn call(
    tool: &TodoWriteTool,
    args: &Value,
    session: Option<&dyn Session>,
) -> (bool, Value, String) {
    let output = match validate_arguments(&tool.definition().input_schema, args) {
        Err(message) => turnkit_core::ToolOutput::error(message),
        Ok(()) => tool.run(args, session),
    };
    (output.is_error, output.value.clone(), output.text())
}

fn todo_writes(session: &dyn Session) -> Vec<Value> {
    session
        .events()
        .into_iter()
        .filter(|e| e.r#type == "todo/write")
        .map(|e| e.data)
        .collect()
}

// C-001: the schema equals the spec's exact JSON, and its shape.
#[test]
fn schema_equals_spec_json() {
    let spec: Value = serde_json::from_str(SPEC_SCHEMA).unwrap();
    assert_eq!(input_schema(), spec);
    let definition = tool(true).definition().clone();
    assert_eq!(definition.name, "todo_write");
    assert_eq!(definition.input_schema, spec);
    let properties = spec["properties"].as_object().unwrap();
    assert_eq!(properties.keys().collect::<Vec<_>>(), ["todos"]);
    assert_eq!(spec["properties"]["todos"]["type"], "array");
    let item = &spec["properties"]["todos"]["items"];
    assert_eq!(
        item["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["content", "status"]
    );
    assert_eq!(
        item["properties"]["status"]["enum"],
        json!(["pending", "in_progress", "completed"])
    );
    assert_eq!(item["required"], json!(["content", "status"]));
    assert_eq!(item["additionalProperties"], json!(false));
    assert_eq!(spec["required"], json!(["todos"]));
}

// C-015: the description follows the flag, byte for byte.
#[test]
fn description_follows_the_flag() {
    assert_eq!(description(InProgressPolicy::Parallel), DESCRIPTION_TRUE);
    assert_eq!(description(InProgressPolicy::Single), DESCRIPTION_FALSE);
    assert_eq!(tool(true).definition().description, DESCRIPTION_TRUE);
    assert_eq!(tool(false).definition().description, DESCRIPTION_FALSE);
    let single = description(InProgressPolicy::Single);
    assert!(single.contains("Keep AT MOST ONE todo `in_progress` "));
    assert!(!single.contains("several at once"));
    let parallel = description(InProgressPolicy::Parallel);
    assert!(parallel.contains("several at once when work genuinely runs in parallel"));
    assert!(!parallel.contains("AT MOST ONE"));
}

#[test]
fn output_schema_accepts_the_canonical_value() {
    let value = json!({
        "todos": [{"content": "a", "status": "pending"}],
        "counts": {"pending": 1, "inProgress": 0, "completed": 0}
    });
    assert_eq!(validate_arguments(&crate::output_schema(), &value), Ok(()));
}

// C-002
#[test]
fn successful_write_appends_the_whole_list() {
    let session = new_session();
    let args = json!({"todos": [
        {"content": "plan", "status": "in_progress"},
        {"content": "build", "status": "pending"}
    ]});
    let list = args["todos"].clone();
    assert_eq!(
        call(&tool(true), &args, Some(session.as_ref())),
        (
            false,
            json!({"todos": list, "counts": {"pending": 1, "inProgress": 1, "completed": 0}}),
            "Updated todo list: 1 pending, 1 in progress, 0 completed.".to_owned()
        )
    );
    assert_eq!(todo_writes(session.as_ref()), [json!({"todos": list})]);
}

// C-003 (and decision 3: JavaScript trim strips U+FEFF and U+3000, not U+200B).
#[test]
fn stored_content_is_trimmed() {
    let session = new_session();
    let args = json!({"todos": [
        {"content": "  plan the work  ", "status": "pending"},
        {"content": "\u{FEFF}\u{3000}ship\n\t", "status": "completed"},
        {"content": "\u{200B}zero width\u{200B}", "status": "pending"}
    ]});
    let (is_error, value, text) = call(&tool(true), &args, Some(session.as_ref()));
    let trimmed = json!([
        {"content": "plan the work", "status": "pending"},
        {"content": "ship", "status": "completed"},
        {"content": "\u{200B}zero width\u{200B}", "status": "pending"}
    ]);
    assert_eq!(
        (is_error, value, text),
        (
            false,
            json!({"todos": trimmed, "counts": {"pending": 2, "inProgress": 0, "completed": 1}}),
            "Updated todo list: 2 pending, 0 in progress, 1 completed.".to_owned()
        )
    );
    assert_eq!(todo_writes(session.as_ref()), [json!({"todos": trimmed})]);
}

fn assert_rejected(allow_parallel: bool, args: &Value, expected_text: &str) {
    let session = new_session();
    assert_eq!(
        call(&tool(allow_parallel), args, Some(session.as_ref())),
        (true, Value::Null, expected_text.to_owned())
    );
    assert_eq!(session.len(), 0, "nothing may be appended");
}

// C-005, C-006, C-007: argument validation before the body.
#[test]
fn schema_violations_are_rejected_before_the_body() {
    assert_rejected(
        true,
        &json!({"todos": [{"content": "x", "status": "doing"}]}),
        r#"Error: invalid arguments: "todos[0].status" must be one of ["pending","in_progress","completed"]"#,
    );
    assert_rejected(
        true,
        &json!({"todos": "nope"}),
        r#"Error: invalid arguments: "todos" must be an array"#,
    );
    assert_rejected(
        true,
        &json!({"todos": [{"content": "a", "status": "pending", "children": []}]}),
        r#"Error: invalid arguments: "todos[0].children" is not a declared property (additionalProperties: false)"#,
    );
    assert_rejected(
        true,
        &json!({}),
        r#"Error: invalid arguments: missing required property "todos""#,
    );
    assert_rejected(
        true,
        &json!({"todos": [{"status": "pending"}]}),
        r#"Error: invalid arguments: missing required property "todos[0].content""#,
    );
}

#[test]
fn the_root_is_open() {
    let session = new_session();
    let args = json!({"todos": [], "note": "extra keys are ignored"});
    let (is_error, _, text) = call(&tool(false), &args, Some(session.as_ref()));
    assert_eq!(
        (is_error, text.as_str()),
        (
            false,
            "Updated todo list: 0 pending, 0 in progress, 0 completed."
        )
    );
    assert_eq!(todo_writes(session.as_ref()), [json!({"todos": []})]);
}

// C-009, C-010, C-014 and the empty-content check.
#[test]
fn content_errors_in_spec_order() {
    assert_rejected(
        true,
        &json!({"todos": [{"content": "dup", "status": "pending"}, {"content": "dup", "status": "completed"}]}),
        r#"Error: invalid todos: duplicate content "dup""#,
    );
    assert_rejected(
        true,
        &json!({"todos": [{"content": "a", "status": "pending"}, {"content": "  a ", "status": "completed"}]}),
        r#"Error: invalid todos: duplicate content "a""#,
    );
    assert_rejected(
        false,
        &json!({"todos": [
            {"content": "a", "status": "in_progress"},
            {"content": "b", "status": "in_progress"},
            {"content": "a", "status": "pending"}
        ]}),
        r#"Error: invalid todos: duplicate content "a""#,
    );
    assert_rejected(
        true,
        &json!({"todos": [{"content": " \u{FEFF} ", "status": "pending"}]}),
        "Error: invalid todo: `content` must be a non-empty string",
    );
    // Per item: item 0's duplicate precedes item 2's emptiness... and item 1's emptiness
    // precedes item 2's duplicate.
    assert_rejected(
        true,
        &json!({"todos": [
            {"content": "x", "status": "pending"},
            {"content": "", "status": "pending"},
            {"content": "x", "status": "pending"}
        ]}),
        "Error: invalid todo: `content` must be a non-empty string",
    );
    // Case-sensitive comparison; quotes and control characters JSON-escaped.
    let session = new_session();
    let args = json!({"todos": [{"content": "Dup", "status": "pending"}, {"content": "dup", "status": "pending"}]});
    assert!(!call(&tool(false), &args, Some(session.as_ref())).0);
    assert_rejected(
        true,
        &json!({"todos": [{"content": "say \"hi\"\n\u{1}", "status": "pending"}, {"content": "say \"hi\"\n\u{1}", "status": "pending"}]}),
        r#"Error: invalid todos: duplicate content "say \"hi\"\n\u0001""#,
    );
}

// C-011, C-013, C-022 (the config decides the at-most-one check).
#[test]
fn in_progress_policy() {
    let parallel = json!({"todos": [
        {"content": "run subagent a", "status": "in_progress"},
        {"content": "run subagent b", "status": "in_progress"},
        {"content": "merge results", "status": "pending"}
    ]});
    let session = new_session();
    let (is_error, value, _) = call(&tool(true), &parallel, Some(session.as_ref()));
    assert!(!is_error);
    assert_eq!(
        value["counts"],
        json!({"pending": 1, "inProgress": 2, "completed": 0})
    );
    assert_eq!(
        todo_writes(session.as_ref()),
        [json!({"todos": parallel["todos"]})]
    );

    assert_rejected(
        false,
        &parallel,
        "Error: invalid todos: at most one task may be in_progress (got 2)",
    );

    let one = json!({"todos": [
        {"content": "run subagent a", "status": "in_progress"},
        {"content": "run subagent b", "status": "pending"}
    ]});
    let session = new_session();
    assert!(!call(&tool(false), &one, Some(session.as_ref())).0);
    assert_eq!(session.len(), 1);
}

// C-017: content validation precedes the agent check; then the agent check.
#[test]
fn caller_without_agent() {
    let t = tool(true);
    let dup = json!({"todos": [{"content": "dup", "status": "pending"}, {"content": "dup", "status": "pending"}]});
    assert_eq!(
        call(&t, &dup, None),
        (
            true,
            Value::Null,
            r#"Error: invalid todos: duplicate content "dup""#.to_owned()
        )
    );
    let two = json!({"todos": [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}]});
    assert_eq!(
        call(&tool(false), &two, None).2,
        "Error: invalid todos: at most one task may be in_progress (got 2)"
    );
    assert_eq!(
        call(&t, &json!({"todos": []}), None),
        (
            true,
            Value::Null,
            "Error: todo_write requires an owning agent session".to_owned()
        )
    );
}

// C-018
#[test]
fn empty_list_is_a_valid_write() {
    let session = new_session();
    assert_eq!(
        call(&tool(false), &json!({"todos": []}), Some(session.as_ref())),
        (
            false,
            json!({"todos": [], "counts": {"pending": 0, "inProgress": 0, "completed": 0}}),
            "Updated todo list: 0 pending, 0 in progress, 0 completed.".to_owned()
        )
    );
    assert_eq!(todo_writes(session.as_ref()), [json!({"todos": []})]);
}

// C-019
#[test]
fn present_call_card() {
    let card = present_call(&json!({"todos": [{"content": "a", "status": "pending"}]}));
    assert_eq!(
        serde_json::to_value(&card).unwrap(),
        json!({"card": "generic", "title": "Update todo list", "kind": "other",
               "rawInput": [{"content": "a", "status": "pending"}]})
    );
    // Soft: anything goes, as given.
    let card = present_call(&json!({"todos": "  not a list "}));
    assert_eq!(card.raw_input, json!("  not a list "));
    assert_eq!(present_call(&json!(42)).raw_input, Value::Null);
}

#[test]
fn error_messages_are_exact() {
    let cases = [
        (
            TodoError::EmptyContent,
            "invalid todo: `content` must be a non-empty string",
        ),
        (
            TodoError::DuplicateContent("dup".into()),
            r#"invalid todos: duplicate content "dup""#,
        ),
        (
            TodoError::TooManyInProgress(3),
            "invalid todos: at most one task may be in_progress (got 3)",
        ),
        (
            TodoError::NoAgent,
            "todo_write requires an owning agent session",
        ),
        (
            TodoError::InvalidArguments(turnkit_core::InvalidArguments::new("x")),
            "invalid arguments: x",
        ),
    ];
    for (error, message) in cases {
        assert_eq!(error.to_string(), message);
    }
}

#[test]
fn canonical_value_serializes_like_the_output() {
    let value = TodoWriteValue::new(vec![
        TodoItem::new("a", TodoStatus::Completed),
        TodoItem::new("b", TodoStatus::InProgress),
    ]);
    assert_eq!(
        value.counts,
        TodoCounts {
            pending: 0,
            in_progress: 1,
            completed: 1
        }
    );
    let session = new_session();
    let output = tool(true).run(
        &json!({"todos": [{"content": "a", "status": "completed"}, {"content": "b", "status": "in_progress"}]}),
        Some(session.as_ref()),
    );
    assert_eq!(output.value, serde_json::to_value(&value).unwrap());
    assert_eq!(
        serde_json::from_value::<TodoWriteValue>(output.value).unwrap(),
        value
    );
}

#[test]
fn validate_todos_returns_the_trimmed_list() {
    assert_eq!(
        validate_todos(
            vec![
                TodoItem::new(" a", TodoStatus::InProgress),
                TodoItem::new("b ", TodoStatus::Pending)
            ],
            InProgressPolicy::Single
        ),
        Ok(vec![
            TodoItem::new("a", TodoStatus::InProgress),
            TodoItem::new("b", TodoStatus::Pending)
        ])
    );
    assert_eq!(
        validate_todos(Vec::new(), InProgressPolicy::Single),
        Ok(Vec::new())
    );
}

// The registry pipeline end to end, without an agent host: validation, envelope, dispatch.
#[tokio::test]
async fn through_the_core_tool_registry() {
    let registry = ToolRegistry::new();
    let _registration = registry
        .register(Arc::new(tool(false)), RegistrationScope::Global)
        .unwrap();
    let output = registry
        .execute(
            "todo_write",
            json!({"todos": [{"content": "x", "status": "doing"}]}),
            None,
            CancellationToken::new(),
        )
        .await;
    assert_eq!(
        output.text(),
        r#"Error: invalid arguments: "todos[0].status" must be one of ["pending","in_progress","completed"]"#
    );
    let output = registry
        .execute(
            "todo_write",
            json!({"todos": []}),
            None,
            CancellationToken::new(),
        )
        .await;
    assert_eq!(
        (output.is_error, output.text().as_str()),
        (true, "Error: todo_write requires an owning agent session")
    );
}

/// Random JSON, biased towards the argument shape so every path is exercised.
fn arb_json() -> impl Strategy<Value = Value> {
    turnkit_testkit::strategies::arb_json(
        &["content", "status", "todos"],
        &["pending", "in_progress", "completed", "doing"],
    )
}

fn arb_item() -> impl Strategy<Value = Value> {
    let content = prop_oneof![
        "[ ab]{0,3}".prop_map(Value::from),
        Just(Value::from("\u{FEFF}a")),
        arb_json(),
    ];
    let status = prop_oneof![
        4 => prop_oneof![Just("pending"), Just("in_progress"), Just("completed")].prop_map(Value::from),
        1 => arb_json(),
    ];
    (content, status, prop::option::weighted(0.1, arb_json())).prop_map(|(c, s, extra)| {
        let mut item = json!({"content": c, "status": s});
        if let Some(extra) = extra {
            item["extra"] = extra;
        }
        item
    })
}

fn arb_arguments() -> impl Strategy<Value = Value> {
    prop_oneof![
        1 => arb_json(),
        4 => (prop::collection::vec(arb_item(), 0..5), prop::option::of(arb_json())).prop_map(|(items, extra)| {
            let mut args = json!({"todos": items});
            if let Some(extra) = extra {
                args["other"] = extra;
            }
            args
        }),
    ]
}

fn is_spec_error(text: &str) -> bool {
    text.starts_with("Error: invalid arguments: ")
        || text == "Error: invalid todo: `content` must be a non-empty string"
        || text.starts_with("Error: invalid todos: duplicate content \"")
        || text.starts_with("Error: invalid todos: at most one task may be in_progress (got ")
        || text == "Error: todo_write requires an owning agent session"
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10_000))]

    // Bad input: never panics; succeeds with one coherent event, or fails with a spec error
    // and appends nothing.
    #[test]
    fn random_arguments_never_panic_or_corrupt(args in arb_arguments(), parallel in any::<bool>(), agent in prop::bool::weighted(0.9)) {
        let t = tool(parallel);
        let session = new_session();
        let (is_error, value, text) = call(&t, &args, agent.then_some(session.as_ref()));
        if is_error {
            prop_assert!(is_spec_error(&text), "unexpected error text {text:?}");
            prop_assert_eq!(value, Value::Null);
            prop_assert_eq!(session.len(), 0);
        } else {
            prop_assert!(agent);
            let events = session.events();
            prop_assert_eq!(events.len(), 1);
            prop_assert_eq!(&events[0].data["todos"], &value["todos"]);
            prop_assert_eq!(crate::check_history(&events), Ok(()));
            let written: TodoWriteValue = serde_json::from_value(value).unwrap();
            prop_assert_eq!(written.counts, TodoCounts::of(&written.todos));
            prop_assert_eq!(text, written.counts.render());
            prop_assert!(parallel || written.counts.in_progress <= 1);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    // The json! schema constant and the typed argument struct accept the same values.
    #[test]
    fn schema_and_typed_arguments_agree(args in arb_arguments()) {
        let by_schema = validate_arguments(&input_schema(), &args).is_ok();
        let by_type = TodoWriteArgs::deserialize(&args).is_ok();
        prop_assert_eq!(by_schema, by_type, "disagree on {}", args);
    }
}

#[test]
fn the_tool_presents_its_call_card() {
    let args = json!({"todos": [{"content": "a", "status": "pending"}]});
    assert_eq!(
        Tool::present_call(&tool(false), &args),
        Some(
            json!({"card": "generic", "title": "Update todo list", "kind": "other",
                    "rawInput": [{"content": "a", "status": "pending"}]})
        )
    );
}
