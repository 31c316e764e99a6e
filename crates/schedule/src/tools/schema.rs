//! The model-facing definitions of the three tools (schedule.md §9.1–§9.3): names, exact
//! descriptions, argument schemas and output schemas, written as `json!` constants because the
//! spec fixes them byte for byte.

use serde_json::{Value, json};
use turnkit_core::ToolDefinition;

/// `schedule_create`.
pub const CREATE_NAME: &str = "schedule_create";
/// `schedule_list`.
pub const LIST_NAME: &str = "schedule_list";
/// `schedule_delete`.
pub const DELETE_NAME: &str = "schedule_delete";

/// The exact description of `schedule_create` (§9.1).
pub const CREATE_DESCRIPTION: &str = "Create one reminder in the current session. Supply a non-empty prompt and exactly one selector: a positive safe-integer after_seconds delay, at as a strict offset date-time or local date/time object, or safe-integer every_seconds of at least 300. Fixed-rate reminders stay creation-aligned, skip missed occurrences, and batch one latest occurrence per overdue rule. Delivery is session-local: the reminder runs on time only while this session is live and otherwise becomes overdue until the session is resumed.";

/// The description of `schedule_create` with the `cron` selector accepted.
pub const CREATE_DESCRIPTION_CRON: &str = "Create one reminder in the current session. Supply a non-empty prompt and exactly one selector: a positive safe-integer after_seconds delay, at as a strict offset date-time or local date/time object, safe-integer every_seconds of at least 300, or cron, a five-field calendar rule (minute hour day-of-month month day-of-week, e.g. \"0 9 * * 1-5\") read in the required IANA time_zone. Recurring reminders skip missed occurrences and batch one latest occurrence per overdue rule; fixed-rate ones stay creation-aligned. A cron time skipped by a daylight-saving change fires once at the first minute after the gap, and a repeated one fires once, the first time. Delivery is session-local: the reminder runs on time only while this session is live and otherwise becomes overdue until the session is resumed.";

/// The exact description of `schedule_list` (§9.1).
pub const LIST_DESCRIPTION: &str = "List every active reminder in the current session in creation order, including its exact id, UTC target, scheduled or overdue state, and session-local delivery mode.";

/// The exact description of `schedule_delete` (§9.1).
pub const DELETE_DESCRIPTION: &str = "Delete one active reminder in the current session by the exact id returned by schedule_create or schedule_list. Unknown or already-finished ids return deleted false.";

/// The basic error codes in output-schema order (§9.3).
pub const BASIC_ERROR_CODES: [&str; 9] = [
    "invalid_prompt",
    "invalid_selector",
    "invalid_rule",
    "invalid_time_zone",
    "not_future",
    "time_out_of_range",
    "frequency_too_high",
    "corrupt_schedule_log",
    "internal_error",
];

/// The `schedule_create` argument schema (§9.2 with decision 6: `at.time_zone` is optional).
/// The root is open on purpose: extra root keys pass validation and become `invalid_selector`.
pub fn create_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "prompt": {
                "type": "string",
                "description": "Reminder content to present when the target becomes due."
            },
            "after_seconds": {
                "type": "number",
                "description": "Positive safe-integer delay in seconds."
            },
            "every_seconds": {
                "type": "number",
                "description": "Fixed-rate safe-integer interval in seconds, at least 300."
            },
            "at": {
                "description": "Absolute target as strict offset RFC 3339 or local date/time with an explicit IANA zone.",
                "oneOf": [
                    {"type": "string"},
                    {
                        "type": "object",
                        "properties": {
                            "date": {"type": "string"},
                            "time": {"type": "string"},
                            "time_zone": {"type": "string"}
                        },
                        "required": ["date", "time"],
                        "additionalProperties": false
                    }
                ]
            }
        },
        "required": ["prompt"]
    })
}

/// The `schedule_create` argument schema with the `cron` selector accepted: §9.2's, then
/// `cron` and `time_zone`.
pub fn create_input_schema_cron() -> Value {
    let mut schema = create_input_schema();
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        properties.insert(
            "cron".into(),
            json!({
                "type": "string",
                "description": "Calendar rule: five space-separated fields minute hour day-of-month month day-of-week (numbers, *, a-b, */n, lists), read in time_zone."
            }),
        );
        properties.insert(
            "time_zone".into(),
            json!({
                "type": "string",
                "description": "IANA zone of cron (e.g. Europe/Paris) or UTC; required with cron."
            }),
        );
    }
    schema
}

/// The `schedule_list` argument schema: an empty open object.
pub fn list_input_schema() -> Value {
    json!({"type": "object", "properties": {}})
}

/// The `schedule_delete` argument schema.
pub fn delete_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "Exact session-local schedule id."}
        },
        "required": ["id"]
    })
}

fn view_schema(kind: &str) -> Value {
    let mut properties = serde_json::Map::new();
    properties.insert("id".into(), json!({"type": "string"}));
    properties.insert("kind".into(), json!({"type": "string", "enum": [kind]}));
    properties.insert("prompt".into(), json!({"type": "string"}));
    let mut required = vec!["id", "kind", "prompt"];
    match kind {
        "after" => {
            properties.insert("afterSeconds".into(), json!({"type": "integer"}));
            required.push("afterSeconds");
        }
        "every" => {
            properties.insert("everySeconds".into(), json!({"type": "integer"}));
            required.push("everySeconds");
        }
        "cron" => {
            properties.insert("cron".into(), json!({"type": "string"}));
            properties.insert("timeZone".into(), json!({"type": "string"}));
            required.extend(["cron", "timeZone"]);
        }
        _ => {}
    }
    properties.insert("scheduledAt".into(), json!({"type": "string"}));
    required.push("scheduledAt");
    if kind == "cron" {
        properties.insert("scheduledAtLocal".into(), json!({"type": "string"}));
        required.push("scheduledAtLocal");
    }
    properties.insert(
        "state".into(),
        json!({"type": "string", "enum": ["scheduled", "overdue"]}),
    );
    properties.insert(
        "deliveryMode".into(),
        json!({"type": "string", "enum": ["session-local"]}),
    );
    required.extend(["state", "deliveryMode"]);
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false
    })
}

fn code_schema(code: &str) -> Value {
    json!({
        "type": "object",
        "properties": {
            "code": {"type": "string", "enum": [code]},
            "message": {"type": "string"}
        },
        "required": ["code", "message"],
        "additionalProperties": false
    })
}

fn error_schemas() -> Vec<Value> {
    let mut out: Vec<Value> = BASIC_ERROR_CODES
        .iter()
        .map(|code| code_schema(code))
        .collect();
    out.push(json!({
        "type": "object",
        "properties": {
            "code": {"type": "string", "enum": ["persistence_uncertain"]},
            "message": {"type": "string"},
            "operation": {"type": "string", "enum": ["create", "list", "delete"]},
            "id": {"type": "string"}
        },
        "required": ["code", "message", "operation"],
        "additionalProperties": false
    }));
    out
}

/// The `schedule_create` output schema: a view of each kind, each basic error, the
/// persistence error, and decision 6's confirmation error.
pub fn create_output_schema() -> Value {
    let mut branches = vec![
        view_schema("after"),
        view_schema("at"),
        view_schema("every"),
    ];
    branches.extend(error_schemas());
    branches.push(json!({
        "type": "object",
        "properties": {
            "code": {"type": "string", "enum": ["timezone_confirmation_required"]},
            "message": {"type": "string"},
            "sessionTimeZone": {"type": "string"},
            "clientTimeZones": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["code", "message", "sessionTimeZone", "clientTimeZones"],
        "additionalProperties": false
    }));
    json!({"oneOf": branches})
}

/// The `schedule_create` output schema with the `cron` selector accepted: §9.3's branches
/// with a `cron` view after the `every` view and `no_future_occurrence` at the end.
pub fn create_output_schema_cron() -> Value {
    let mut schema = create_output_schema();
    if let Some(Value::Array(branches)) = schema.get_mut("oneOf") {
        branches.insert(3, view_schema("cron"));
        branches.push(code_schema("no_future_occurrence"));
    }
    schema
}

/// The `schedule_list` output schema with the `cron` selector accepted: views of the four
/// kinds, or an error.
pub fn list_output_schema_cron() -> Value {
    let mut branches = vec![json!({
        "type": "array",
        "items": {"oneOf": [view_schema("after"), view_schema("at"), view_schema("every"), view_schema("cron")]}
    })];
    branches.extend(error_schemas());
    json!({"oneOf": branches})
}

/// The `schedule_list` output schema: an array of views, or an error.
pub fn list_output_schema() -> Value {
    let mut branches = vec![json!({
        "type": "array",
        "items": {"oneOf": [view_schema("after"), view_schema("at"), view_schema("every")]}
    })];
    branches.extend(error_schemas());
    json!({"oneOf": branches})
}

/// The `schedule_delete` output schema: deleted, not found, or an error.
pub fn delete_output_schema() -> Value {
    let mut branches = vec![
        json!({
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "deleted": {"type": "boolean", "enum": [true]}
            },
            "required": ["id", "deleted"],
            "additionalProperties": false
        }),
        json!({
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "deleted": {"type": "boolean", "enum": [false]},
                "code": {"type": "string", "enum": ["schedule_not_found"]}
            },
            "required": ["id", "deleted", "code"],
            "additionalProperties": false
        }),
    ];
    branches.extend(error_schemas());
    json!({"oneOf": branches})
}

/// The three definitions with the `cron` selector accepted (the schedule configuration's
/// `cron` switch): `schedule_create` with [`CREATE_DESCRIPTION_CRON`],
/// [`create_input_schema_cron`] and [`create_output_schema_cron`], `schedule_list` with
/// [`list_output_schema_cron`], `schedule_delete` unchanged.
pub fn calendar_definitions() -> [ToolDefinition; 3] {
    let [mut create, mut list, delete] = definitions();
    create.description = CREATE_DESCRIPTION_CRON.to_owned();
    create.input_schema = create_input_schema_cron();
    create.output_schema = Some(create_output_schema_cron());
    list.output_schema = Some(list_output_schema_cron());
    [create, list, delete]
}

/// The three definitions, in registration order (create, list, delete).
pub fn definitions() -> [ToolDefinition; 3] {
    [
        ToolDefinition {
            name: CREATE_NAME.to_owned(),
            description: CREATE_DESCRIPTION.to_owned(),
            input_schema: create_input_schema(),
            output_schema: Some(create_output_schema()),
            // Each call adds a reminder to the session's own log.
            annotations: Some(turnkit_core::ToolAnnotations {
                read_only: false,
                destructive: false,
                idempotent: false,
                open_world: false,
            }),
        },
        ToolDefinition {
            name: LIST_NAME.to_owned(),
            description: LIST_DESCRIPTION.to_owned(),
            input_schema: list_input_schema(),
            output_schema: Some(list_output_schema()),
            annotations: Some(turnkit_core::ToolAnnotations::READ_ONLY),
        },
        ToolDefinition {
            name: DELETE_NAME.to_owned(),
            description: DELETE_DESCRIPTION.to_owned(),
            input_schema: delete_input_schema(),
            output_schema: Some(delete_output_schema()),
            // Cancels a reminder; deleting it again changes nothing.
            annotations: Some(turnkit_core::ToolAnnotations {
                read_only: false,
                destructive: true,
                idempotent: true,
                open_world: false,
            }),
        },
    ]
}
