//! The capabilities a server advertises in its `initialize` answer: only what it serves.

use serde_json::{Value, json};

/// The `capabilities` object: `tools`, `resources` and the tasks extension always; with
/// `notifies` (a connection that hears about changes between calls: stdio) also
/// `resources.subscribe` (`notifications/resources/updated`) and `logging`
/// (`notifications/message`). Over HTTP nothing is sent between calls, so neither is
/// advertised there.
pub(crate) fn advertised(notifies: bool) -> Value {
    if notifies {
        json!({
            "tools": {},
            "resources": {"subscribe": true},
            "logging": {},
            "extensions": {rmcp::model::TASKS_EXTENSION_ID: {}},
        })
    } else {
        json!({
            "tools": {},
            "resources": {},
            "extensions": {rmcp::model::TASKS_EXTENSION_ID: {}},
        })
    }
}
