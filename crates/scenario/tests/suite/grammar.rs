//! The grammar as serde sees it: the step table of `docs/scenarios.md` lists exactly the
//! variants and fields of [`Step`], and decoding errors name the step.

use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_scenario::{Phase, Step, run_scenario};

/// The backticked names in `text` (`` `a`, `b` `` gives `["a", "b"]`).
fn backticked(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// `text` without its parenthesized parts (nested parentheses included).
fn without_parentheses(text: &str) -> String {
    let mut depth = 0usize;
    let mut out = String::new();
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            c if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// The step names serde's derive knows, in declaration order (from its own error message).
fn serde_variants() -> Vec<String> {
    let error = serde_json::from_value::<Step>(json!({"do": "?"}))
        .unwrap_err()
        .to_string();
    let (_, expected) = error.split_once("expected one of").unwrap();
    backticked(expected)
}

/// The fields serde's derive accepts for step `name` (from its unknown-field message).
fn serde_fields(name: &str) -> Vec<String> {
    let error = serde_json::from_value::<Step>(json!({"do": name, "?": 0}))
        .unwrap_err()
        .to_string();
    let rest = error
        .strip_prefix("unknown field `?`, ")
        .unwrap_or_else(|| panic!("{name}: {error}"));
    if rest == "there are no fields" {
        Vec::new()
    } else {
        backticked(rest)
    }
}

/// The rows of the step table in `docs/scenarios.md`: each step name with its fields.
fn documented_steps() -> Vec<(String, Vec<String>)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/scenarios.md");
    let page = std::fs::read_to_string(path).unwrap();
    let table = page
        .split_once("| step | fields | effect |\n|---|---|---|\n")
        .unwrap()
        .1;
    let mut rows = Vec::new();
    for line in table.lines().take_while(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let fields = backticked(&without_parentheses(cells[2]));
        for name in backticked(cells[1]) {
            rows.push((name, fields.clone()));
        }
    }
    rows
}

#[test]
fn the_step_table_lists_every_variant_and_its_fields() {
    let variants = serde_variants();
    assert_eq!(variants, Step::NAMES);
    let from_serde: Vec<(String, Vec<String>)> = variants
        .iter()
        .map(|name| (name.clone(), serde_fields(name)))
        .collect();
    assert_eq!(documented_steps(), from_serde);
}

#[test]
fn serde_fields_reads_the_derives_field_list() {
    assert_eq!(serde_fields("restart"), Vec::<String>::new());
    assert_eq!(serde_fields("await"), ["call"]);
    assert_eq!(serde_fields("emit"), ["job", "text"]);
    assert_eq!(serde_fields("fault"), ["session", "flush", "append"]);
}

#[test]
fn steps_decode_into_their_variants_with_camel_case_fields() {
    assert_eq!(
        Step::from_value(json!({"do": "session", "id": "s1", "timeZone": "Europe/Paris"})),
        Ok(Step::Session {
            id: "s1".to_owned(),
            time_zone: Some("Europe/Paris".to_owned()),
        })
    );
    assert_eq!(
        Step::from_value(json!({"do": "turn", "session": "s1", "phase": "end"})),
        Ok(Step::Turn {
            session: "s1".to_owned(),
            phase: Phase::End,
        })
    );
    assert_eq!(
        Step::from_value(json!({"do": "await_job", "job": "bash-1", "timeoutMs": null})),
        Ok(Step::AwaitJob {
            job: "bash-1".to_owned(),
            timeout_ms: None,
        })
    );
    assert_eq!(
        Step::from_value(json!({"do": "restart"})),
        Ok(Step::Restart {})
    );
    for name in Step::NAMES {
        let decoded = Step::from_value(json!({"do": name}));
        if let Ok(step) = decoded {
            assert_eq!(step.name(), name);
        }
    }
}

#[test]
fn decoding_errors_name_the_step_and_the_problem() {
    let cases = [
        (json!([1]), "a step must be a JSON object"),
        (json!({"id": "s1"}), "missing field \"do\""),
        (json!({"do": 5}), "field \"do\" must be a string"),
        (json!({"do": "nope"}), "unknown step \"nope\""),
        (
            json!({"do": "restart", "now": true}),
            "restart: unknown field `now`, there are no fields",
        ),
        (
            json!({"do": "session", "id": "s1", "timezone": "UTC"}),
            "session: unknown field `timezone`, expected `id` or `timeZone`",
        ),
        (
            json!({"do": "turn", "session": "s1", "phase": "middle"}),
            "turn: unknown variant `middle`, expected `start` or `end`",
        ),
        (
            json!({"do": "call", "tool": "todo_write"}),
            "call: missing field `args`",
        ),
        (
            json!({"do": "advance", "ms": -1}),
            "advance: invalid value: integer `-1`, expected u64",
        ),
        (
            json!({"do": "config", "todo": null}),
            "config: invalid type: null, expected a map",
        ),
        (
            json!({"do": "config", "clock": {"mode": "manual", "begin": "x"}}),
            "config: unknown field `begin`, expected `mode` or `start`",
        ),
        (
            json!({"do": "settle", "job": "j", "status": "done"}),
            "settle: unknown variant `done`, expected one of `completed`, `killed`, `failed`",
        ),
    ];
    for (value, expected) in cases {
        assert_eq!(
            Step::from_value(value.clone()),
            Err(expected.to_owned()),
            "{value}"
        );
    }
}

#[test]
fn a_decoding_error_stops_the_run_on_its_line() {
    let transcript = run_scenario(
        "{\"do\":\"session\",\"id\":\"s1\"}\n{\"do\":\"fault\",\"session\":\"s1\",\"flush\":\"sometimes\"}\n{\"do\":\"user\",\"session\":\"s1\",\"text\":\"never\"}\n",
    );
    assert!(transcript.failed);
    assert_eq!(
        transcript.lines,
        [
            r#"{"kind":"error","line":2,"message":"fault: unknown variant `sometimes`, expected `fail` or `ok`"}"#
        ]
    );
}

/// The `config` step accepts exactly the families' keys (declared once, by
/// `turnkit_families::FamiliesConfig::KEYS`) and the host's own, in that order.
#[test]
fn the_config_step_takes_the_families_keys_then_the_hosts() {
    let error = serde_json::from_value::<Step>(json!({"do": "config", "tooljobs": {}}))
        .unwrap_err()
        .to_string();
    let (_, expected) = error.split_once("expected one of").unwrap();
    let mut keys: Vec<String> = turnkit_families::FamiliesConfig::KEYS
        .iter()
        .map(|k| (*k).to_owned())
        .collect();
    keys.extend(["clock", "store", "autoTurns"].map(str::to_owned));
    assert_eq!(backticked(expected), keys, "{error}");
}
