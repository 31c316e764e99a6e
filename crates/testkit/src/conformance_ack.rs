//! The `reply_is_an_acknowledgement` check of the [`HostCandidate`] suite: a host answers a
//! tool call that appended only after the caller's session flushed, and answers an error
//! with the stable words of [`turnkit_core::unsaved_message`] when that flush fails
//! (docs/host-contract.md, "Harness"; spec decision 21).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::{Notify, watch};
use turnkit_core::{
    HookedSession, MemoryStore, PersistenceError, RegistrationScope, SessionHeader, SessionHooks,
    SessionStore, Tool, ToolCall, ToolDefinition, ToolError, ToolOutput,
};

use super::HostCandidate;

/// The hooks of a memory session whose flush announces itself, waits for its gate to open,
/// and then succeeds or fails as switched.
struct Gate {
    started: Notify,
    open: watch::Sender<bool>,
    fail: AtomicBool,
}

#[async_trait]
impl SessionHooks for Gate {
    async fn before_flush(&self) -> Result<(), PersistenceError> {
        self.started.notify_one();
        let mut open = self.open.subscribe();
        let _ = open.wait_for(|open| *open).await;
        if self.fail.load(Ordering::SeqCst) {
            return Err(PersistenceError::Failed("the disk is full".to_owned()));
        }
        Ok(())
    }
}

/// A tool that appends one `conformance/append` event to its caller's session.
struct Appends {
    definition: ToolDefinition,
}

#[async_trait]
impl Tool for Appends {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, call: ToolCall) -> Result<ToolOutput, ToolError> {
        let caller = call.caller.ok_or_else(|| ToolError::msg("no caller"))?;
        caller
            .session()
            .append("conformance/append", json!({}))
            .map_err(|e| ToolError::msg(e.to_string()))?;
        Ok(ToolOutput::success(Value::Null, "appended"))
    }
}

pub(super) async fn reply_is_an_acknowledgement(h: &dyn HostCandidate) -> Result<(), String> {
    let store = MemoryStore::new(h.harness().clock());
    let inner = store
        .create(SessionHeader::new("a"))
        .map_err(|e| format!("could not create the check's session: {e}"))?;
    let gated = Arc::new(Gate {
        started: Notify::new(),
        open: watch::channel(false).0,
        fail: AtomicBool::new(false),
    });
    let agent = h.start_agent_in(Arc::new(HookedSession::new(inner, gated.clone())));
    let tool = Arc::new(Appends {
        definition: ToolDefinition {
            name: "conformance_append".to_owned(),
            description: "conformance: appends one event".to_owned(),
            input_schema: json!({"type": "object", "additionalProperties": false}),
            output_schema: None,
            annotations: None,
        },
    });
    let _tool = h
        .harness()
        .register_tool(tool, RegistrationScope::Global)
        .map_err(|e| format!("registration refused: {e}"))?;
    let result = async {
        // The answer waits for the flush: it is not given while the flush is held.
        let mut call = h.call("conformance_append", json!({}), Some(agent.clone()));
        tokio::select! {
            biased;
            () = gated.started.notified() => {}
            early = &mut call => {
                return Err(format!(
                    "a call that appended was answered {:?} before any flush of its session",
                    early.text()
                ));
            }
        }
        gated.open.send_replace(true);
        let saved = call.await;
        if saved.is_error || saved.text() != "appended" {
            return Err(format!(
                "a call whose flush succeeded answered {:?}, expected \"appended\"",
                saved.text()
            ));
        }
        // A failed flush makes the answer an error in the stable words.
        gated.fail.store(true, Ordering::SeqCst);
        let unsaved = h
            .call("conformance_append", json!({}), Some(agent.clone()))
            .await;
        let why = PersistenceError::Failed("the disk is full".to_owned());
        let expected = format!("Error: {}\nappended", turnkit_core::unsaved_message(&why));
        if !unsaved.is_error || unsaved.text() != expected {
            return Err(format!(
                "a call whose flush failed answered {:?} (is_error {}), expected {expected:?}",
                unsaved.text(),
                unsaved.is_error
            ));
        }
        Ok(())
    }
    .await;
    gated.fail.store(false, Ordering::SeqCst);
    gated.open.send_replace(true);
    h.dispose_agent(agent).await;
    result
}
