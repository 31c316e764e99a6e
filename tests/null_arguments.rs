//! A model in OpenAI strict mode sends `null` for every optional argument it leaves out. Such
//! a call must give byte-identical results to the same call without the nulls, for every
//! optional argument of every tool.
#![allow(
    clippy::unwrap_used,
    reason = "test helpers fail loudly; clippy's test exemption covers only #[test] bodies"
)]

use std::collections::BTreeSet;

use pretty_assertions::assert_eq;
use serde_json::{Map, Value, json};
use turnkit_scenario::run_scenario;

/// One call with nulls, after `setup` scenario lines.
struct Case {
    setup: &'static str,
    tool: &'static str,
    args: Value,
}

const SESSION: &str = r#"{"do":"session","id":"s1","timeZone":"Europe/Paris"}"#;
const FAKE_JOB: &str = r#"{"do":"fake_job","session":"s1","kind":"subagent","label":"notes"}"#;

fn cases() -> Vec<Case> {
    vec![
        Case {
            setup: FAKE_JOB,
            tool: "job_output",
            args: json!({"job_id": "subagent-1", "wait": null, "timeout_ms": null}),
        },
        Case {
            setup: FAKE_JOB,
            tool: "job_kill",
            args: json!({"job_id": "subagent-1", "reason": null}),
        },
        Case {
            setup: "",
            tool: "bash",
            args: json!({
                "command": "echo hi",
                "description": null,
                "run_in_background": null,
                "timeout_ms": null
            }),
        },
        Case {
            setup: "",
            tool: "schedule_create",
            args: json!({"prompt": "p", "after_seconds": 60, "every_seconds": null, "at": null}),
        },
        Case {
            setup: "",
            tool: "schedule_create",
            args: json!({
                "prompt": "p",
                "after_seconds": null,
                "every_seconds": null,
                "at": {"date": "2026-08-06", "time": "09:00", "time_zone": null}
            }),
        },
    ]
}

fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect::<Map<String, Value>>(),
        ),
        other => other.clone(),
    }
}

fn null_paths(tool: &str, value: &Value, path: &str, out: &mut BTreeSet<String>) {
    if let Value::Object(map) = value {
        for (key, v) in map {
            let here = format!("{path}.{key}");
            if v.is_null() {
                out.insert(format!("{tool}{here}"));
            }
            null_paths(tool, v, &here, out);
        }
    }
}

/// Every optional property, as `tool.path`, from the declared schemas (object branches of a
/// `oneOf` included).
fn optional_paths(tool: &str, schema: &Value, path: &str, out: &mut BTreeSet<String>) {
    if let Some(branches) = schema.get("oneOf").and_then(Value::as_array) {
        for branch in branches {
            optional_paths(tool, branch, path, out);
        }
    }
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let required = schema.get("required").cloned().unwrap_or(json!([]));
    for (name, property) in properties {
        let here = format!("{path}.{name}");
        if !required.as_array().unwrap().contains(&json!(name)) {
            out.insert(format!("{tool}{here}"));
        }
        if property.get("type") != Some(&json!("array")) {
            optional_paths(tool, property, &here, out);
        }
    }
}

fn transcript(setup: &str, tool: &str, args: &Value) -> Vec<String> {
    let call = json!({"do": "call", "session": "s1", "tool": tool, "args": args});
    let source = format!("{SESSION}\n{setup}\n{call}\n");
    let transcript = run_scenario(&source);
    assert!(!transcript.failed, "{:?}", transcript.lines);
    transcript.lines
}

#[test]
fn an_explicit_null_is_an_absent_optional_argument() {
    let mut covered = BTreeSet::new();
    for case in cases() {
        null_paths(case.tool, &case.args, "", &mut covered);
        let with_nulls = transcript(case.setup, case.tool, &case.args);
        let without = transcript(case.setup, case.tool, &without_nulls(&case.args));
        assert_eq!(with_nulls, without, "{} {}", case.tool, case.args);
        let result = with_nulls
            .iter()
            .find(|l| l.starts_with(r#"{"kind":"result""#))
            .unwrap();
        assert!(
            result.contains(r#""isError":false"#),
            "{} {}: {result}",
            case.tool,
            case.args
        );
    }
    let mut optional = BTreeSet::new();
    for definition in turnkit_families::catalog(
        &turnkit_families::FamiliesConfig::defaults(),
        turnkit_families::ChildrenMode::Without,
    )
    .unwrap()
    {
        optional_paths(
            &definition.name,
            &definition.input_schema,
            "",
            &mut optional,
        );
    }
    assert_eq!(covered, optional, "every optional argument is covered");
    assert_eq!(
        optional.into_iter().collect::<Vec<_>>(),
        [
            "bash.description",
            "bash.run_in_background",
            "bash.timeout_ms",
            "job_kill.reason",
            "job_output.timeout_ms",
            "job_output.wait",
            "schedule_create.after_seconds",
            "schedule_create.at",
            "schedule_create.at.time_zone",
            "schedule_create.every_seconds",
        ]
    );
}

/// A `null` for a required argument is still refused with the validator's message.
#[test]
fn a_null_required_argument_is_still_an_error() {
    let lines = transcript("", "schedule_delete", &json!({"id": null}));
    assert_eq!(
        lines,
        [
            r#"{"kind":"result","call":"L3","tool":"schedule_delete","isError":true,"value":null,"text":"Error: invalid arguments: \"id\" must be a string"}"#
        ]
    );
}
