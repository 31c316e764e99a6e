//! Tool calls: synchronous ones driven to their result, async ones awaited later.

use std::sync::Arc;

use serde_json::Value;
use turnkit_core::SessionId;
use turnkit_testkit::MemoryAgent;

use super::lines::{push, result_line};
use super::state::Runner;
use super::waiting::blocked;

impl Runner {
    pub(super) fn agent(&mut self, session: &str) -> Result<Arc<MemoryAgent>, String> {
        let id = SessionId::from(session);
        self.host()?
            .memory_agent(&id)
            .ok_or_else(|| format!("no live agent for session {id}"))
    }

    pub(super) async fn call(
        &mut self,
        id: String,
        tool: String,
        args: Value,
        session: Option<SessionId>,
        is_async: bool,
    ) -> Result<(), String> {
        let host = self.host()?;
        if let Some(session) = &session
            && host.memory_agent(session).is_none()
        {
            return Err(format!("no live agent for session {session}"));
        }
        if is_async {
            if self.calls.contains_key(&id) {
                return Err(format!("async call {id:?} is already pending"));
            }
            let lines = self.lines.clone();
            let call_id = id.clone();
            let handle = tokio::spawn(async move {
                let output = host.answer(&tool, args, session.as_ref()).await;
                push(&lines, result_line(&call_id, &tool, &output));
            });
            self.calls.insert(id, handle);
            return Ok(());
        }
        let mark = turnkit_core::lock(&self.lines).len();
        let what = format!("call {id:?} ({tool})");
        let stuck = blocked(
            &what,
            "make it \"async\":true, then advance the clock or settle the job",
        );
        let registry = self.registry().ok();
        let output = self
            .until_done(
                registry,
                &what,
                stuck,
                host.answer(&tool, args, session.as_ref()),
            )
            .await?;
        let mut lines = turnkit_core::lock(&self.lines);
        let at = mark.min(lines.len());
        lines.insert(at, result_line(&id, &tool, &output));
        Ok(())
    }
}
