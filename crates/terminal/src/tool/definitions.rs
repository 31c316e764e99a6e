//! The model-facing definitions of the three tools: descriptions, argument schemas and
//! annotations (exact text).

use std::sync::LazyLock;

use serde_json::{Value, json};
use turnkit_core::{ToolAnnotations, ToolDefinition};

use super::{KILL_TOOL, SEND_TOOL, START_TOOL};

const START_DESCRIPTION: &str = "Open an interactive terminal (a PTY) running `command` with `bash -c`, or an interactive shell when no command is given, and return its id (`term-<N>`). Use a terminal for programs that prompt or keep running: REPLs, installers that ask questions, dev servers. Type into it with terminal_send; stop it with terminal_kill. Terminals are stopped when this session ends.";

const SEND_DESCRIPTION: &str = "Type into a terminal: `text` first, then each of `keys` (e.g. [\"enter\"], [\"ctrl-c\"]), and return what the terminal printed in response — everything it printed since the previous send, including the echo of your input, with escape sequences removed — followed by `[status: ...]`. The response ends when `wait_for` text appears, or (without `wait_for`) once the output has been quiet for `settle_ms`, or when the program exits, or after `timeout_ms`. Send nothing (no text, no keys) to just collect new output. With `run_in_background: true` it returns `started background job <id>` at once; collect the response with job_output. One send per terminal at a time.";

const KILL_DESCRIPTION: &str = "Stop a terminal and every process it started (SIGHUP and SIGTERM, then SIGKILL), and say how it ended.";

fn start_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "command": {
                "type": "string",
                "description": "The command to run, as `bash -c COMMAND`. Leave out for an interactive shell."
            }
        }
    })
}

fn send_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "terminal_id": {
                "type": "string",
                "description": "The terminal, as returned by terminal_start."
            },
            "text": {
                "type": "string",
                "description": "Text to type. A newline in it is a line end (Enter)."
            },
            "keys": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Keys to press after the text, in order: enter, tab, backspace, escape, space, up, down, right, left, home, end, page-up, page-down, delete, ctrl-a … ctrl-z (ctrl-c interrupts the running program, ctrl-d ends input)."
            },
            "wait_for": {
                "type": "string",
                "description": "End the response as soon as this text appears in the output (e.g. the next prompt). The echo of your own input counts as output, so choose text your input does not contain."
            },
            "settle_ms": {
                "type": "number",
                "description": "Without wait_for: end the response once nothing has been printed for this many milliseconds. Defaults to the configured value."
            },
            "timeout_ms": {
                "type": "number",
                "description": "End the response after this many milliseconds at most. Defaults to the configured timeout; capped by the configured maximum."
            },
            "run_in_background": {
                "type": "boolean",
                "description": "Return the job id at once instead of waiting for the response."
            }
        },
        "required": ["terminal_id"]
    })
}

fn kill_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "terminal_id": {
                "type": "string",
                "description": "The terminal to stop."
            }
        },
        "required": ["terminal_id"]
    })
}

pub(super) static START_DEFINITION: LazyLock<ToolDefinition> = LazyLock::new(|| ToolDefinition {
    name: START_TOOL.to_owned(),
    description: START_DESCRIPTION.to_owned(),
    input_schema: start_schema(),
    output_schema: Some(json!({
        "type": "object",
        "properties": {"terminalId": {"type": "string"}},
        "required": ["terminalId"],
        "additionalProperties": false
    })),
    // Runs an arbitrary program: it may change or destroy anything the host user can reach.
    annotations: Some(ToolAnnotations {
        read_only: false,
        destructive: true,
        idempotent: false,
        open_world: true,
    }),
});

pub(super) static SEND_DEFINITION: LazyLock<ToolDefinition> = LazyLock::new(|| ToolDefinition {
    name: SEND_TOOL.to_owned(),
    description: SEND_DESCRIPTION.to_owned(),
    input_schema: send_schema(),
    output_schema: Some(json!({
        "oneOf": [
            {
                "type": "object",
                "properties": {
                    "kind": {"const": "background"},
                    "jobId": {"type": "string"},
                    "terminalId": {"type": "string"}
                },
                "required": ["kind", "jobId", "terminalId"],
                "additionalProperties": false
            },
            {
                "type": "object",
                "properties": {
                    "kind": {"const": "foreground"},
                    "jobId": {"type": "string"},
                    "terminalId": {"type": "string"},
                    "output": {"type": "string"},
                    "status": {"enum": ["running", "stopping", "completed", "killed", "failed"]},
                    "detail": {"type": "string"}
                },
                "required": ["kind", "jobId", "terminalId", "output", "status"],
                "additionalProperties": false
            }
        ]
    })),
    // Typing into a program can do anything the program does.
    annotations: Some(ToolAnnotations {
        read_only: false,
        destructive: true,
        idempotent: false,
        open_world: true,
    }),
});

pub(super) static KILL_DEFINITION: LazyLock<ToolDefinition> = LazyLock::new(|| ToolDefinition {
    name: KILL_TOOL.to_owned(),
    description: KILL_DESCRIPTION.to_owned(),
    input_schema: kill_schema(),
    output_schema: Some(json!({
        "type": "object",
        "properties": {
            "terminalId": {"type": "string"},
            "stopped": {"type": "boolean"},
            "exit": {"type": "string"}
        },
        "required": ["terminalId", "stopped"],
        "additionalProperties": false
    })),
    annotations: Some(ToolAnnotations {
        read_only: false,
        destructive: true,
        idempotent: true,
        open_world: false,
    }),
});
