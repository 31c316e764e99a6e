//! What the model sees of `todo_write`: the name, the description per mode, and the exact
//! parameter schema (todo-jobs §2.2), plus the declared output schema.

use serde_json::{Value, json};

use crate::InProgressPolicy;

/// The tool name (exact).
pub const TOOL_NAME: &str = "todo_write";

const DESCRIPTION_HEAD: &str = "Record and update a structured task list for the current work. \
Send the ENTIRE list every call \u{2014} it REPLACES the previous list (there are no partial \
updates, no per-item edits). Use it to plan multi-step work and show progress: add one todo per \
concrete step before you start. ";

const DESCRIPTION_PARALLEL: &str = "Mark every todo being actively worked on `in_progress` \
\u{2014} several at once when work genuinely runs in parallel (e.g. concurrent subagents or \
background commands), one for sequential work; while work remains, at least one task should be \
`in_progress`. ";

const DESCRIPTION_SINGLE: &str = "Keep AT MOST ONE todo `in_progress` at a time; while work \
remains, exactly one active task should be `in_progress`. ";

const DESCRIPTION_TAIL: &str = "Mark a todo `completed` the moment it is done (do not batch \
completions), and allow no `in_progress` item only once all work is complete. Skip the list for \
trivial single-step tasks. Statuses: `pending` (not started), `in_progress` (being worked on \
now), `completed` (finished).";

/// The exact model-facing description for a policy (todo-jobs §2.2): the middle clause says
/// "several at once" under [`InProgressPolicy::Parallel`] and "AT MOST ONE" under
/// [`InProgressPolicy::Single`].
pub fn description(policy: InProgressPolicy) -> String {
    let middle = match policy {
        InProgressPolicy::Parallel => DESCRIPTION_PARALLEL,
        InProgressPolicy::Single => DESCRIPTION_SINGLE,
    };
    [DESCRIPTION_HEAD, middle, DESCRIPTION_TAIL].concat()
}

/// The exact parameter schema of `todo_write` (todo-jobs §2.2). The root object is open
/// (extra top-level keys are ignored); items are closed. No size bounds.
///
/// The typed argument struct ([`crate::TodoItem`] with `deny_unknown_fields`, inside an open
/// root) accepts exactly the values this schema accepts; a property test checks that.
pub fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "description": "The COMPLETE task list, replacing any previous list.",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": {
                        "content": {
                            "type": "string",
                            "description": "What the task is \u{2014} a short imperative line."
                        },
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
    })
}

/// The declared schema of the canonical value ([`crate::TodoWriteValue`]): every field
/// required, no extra keys (todo-jobs §2.2).
pub fn output_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "todos": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": {
                        "content": { "type": "string" },
                        "status": { "type": "string", "enum": ["pending", "in_progress", "completed"] }
                    },
                    "required": ["content", "status"]
                }
            },
            "counts": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "pending": { "type": "integer" },
                    "inProgress": { "type": "integer" },
                    "completed": { "type": "integer" }
                },
                "required": ["pending", "inProgress", "completed"]
            }
        },
        "required": ["todos", "counts"]
    })
}

/// The full definition of `todo_write` for a policy.
pub fn definition(policy: InProgressPolicy) -> turnkit_core::ToolDefinition {
    turnkit_core::ToolDefinition {
        name: TOOL_NAME.to_owned(),
        description: description(policy),
        input_schema: input_schema(),
        output_schema: Some(output_schema()),
        // Replaces the model's own checklist; the same list again leaves the same state.
        annotations: Some(turnkit_core::ToolAnnotations {
            read_only: false,
            destructive: false,
            idempotent: true,
            open_world: false,
        }),
    }
}
