//! Transcript lines: one compact JSON object per line.

use std::sync::Mutex;

use serde_json::json;
use turnkit_core::ToolOutput;
use turnkit_testkit::HostRecord;

pub(super) fn take_lines(lines: &Mutex<Vec<String>>) -> Vec<String> {
    std::mem::take(&mut *turnkit_core::lock(lines))
}

pub(super) fn error_line(line: usize, message: &str) -> String {
    json!({"kind": "error", "line": line, "message": message}).to_string()
}

pub(super) fn push(lines: &Mutex<Vec<String>>, line: String) {
    turnkit_core::lock(lines).push(line);
}

pub(super) fn record_line(record: &HostRecord) -> String {
    match record {
        HostRecord::Followup { session, text } => {
            json!({"kind": "followup", "session": session, "text": text})
        }
        HostRecord::Inject { session, text } => {
            json!({"kind": "inject", "session": session, "text": text})
        }
        HostRecord::Claimed {
            session,
            source,
            text,
        } => json!({"kind": "claimed", "session": session, "source": source, "text": text}),
        HostRecord::Turn { session, phase } => {
            json!({"kind": "turn", "session": session, "phase": phase})
        }
    }
    .to_string()
}

pub(super) fn result_line(call: &str, tool: &str, output: &ToolOutput) -> String {
    json!({
        "kind": "result",
        "call": call,
        "tool": tool,
        "isError": output.is_error,
        "value": output.value,
        "text": output.text(),
    })
    .to_string()
}
