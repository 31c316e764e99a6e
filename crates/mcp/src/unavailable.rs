//! [`serve_unavailable`]: the MCP server of a session that could not be opened. Clients show
//! neither a server's standard error nor a connection that ends at once, so instead of
//! exiting the server answers the handshake (`initialize` or `server/discover`), lists the
//! tools it would serve, and answers every call with the reason and what to do; its
//! instructions say the same.

use std::borrow::Cow;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CustomRequest, CustomResult, InitializeResult,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use turnkit_core::{StoreError, ToolDefinition};

use crate::lines::Lines;
use crate::server::{Reservations, custom_request_error, mcp_tool};
use crate::transport::Gate;
use crate::{ServeError, ServeOptions};

/// What a person is told when session `session` cannot be served because of `error`, or
/// `None` when `error` is not about who holds the session (a malformed log, a bad
/// configuration: those stop the server at startup).
///
/// * JSONL, [`StoreError::Locked`]: another server (another client, or another window of
///   the same client) has the session open; the text says to give each project and window a
///   session of its own, or to close the other client, then reconnect.
/// * PostgreSQL, [`StoreError::Owned`]: another host holds the session's lease; the text
///   names it and says to use another session or to wait for the lease to expire.
pub fn unavailable_reason(session: &str, error: &ServeError) -> Option<String> {
    let why = match error {
        ServeError::Store(StoreError::Locked { path }) => format!(
            "its session file {path} is locked by another open handle: another harness \
             server (another client, or another window of this one) is serving it. Give each \
             project and each client window a session of its own (start `harness mcp` with \
             its own --session, for example one per working folder), or close the other \
             client"
        ),
        ServeError::Store(StoreError::Owned { owner, .. }) => format!(
            "host {owner} serves it and its lease is live. Give this client a session of its \
             own (start `harness mcp` with its own --session), or wait until that host stops \
             and its lease expires"
        ),
        _ => return None,
    };
    Some(format!(
        "harness cannot serve session {session}: {why}; then reconnect this MCP server \
         (Claude Code: /mcp, then reconnect; Codex: start a new session)."
    ))
}

/// The handler of a session that could not be opened.
#[derive(Clone)]
struct Unavailable {
    reason: String,
    tools: Vec<Value>,
}

impl Unavailable {
    fn instructions(&self) -> String {
        format!(
            "{}\n\nUntil then every harness tool call answers with this error: tell the user \
             exactly this, and do not retry the call.",
            self.reason
        )
    }
}

impl ServerHandler for Unavailable {
    fn get_info(&self) -> ServerConfig {
        let info = json!({
            "protocolVersion": ProtocolVersion::LATEST_WITH_INITIALIZE,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "harness", "version": env!("CARGO_PKG_VERSION")},
            "instructions": self.instructions(),
        });
        serde_json::from_value::<InitializeResult>(info).unwrap_or_default()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::LATEST))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        serde_json::from_value(json!({"tools": self.tools}))
            .map_err(|e| ErrorData::internal_error(format!("could not build a result: {e}"), None))
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let result = json!({
            "content": [{"type": "text", "text": format!("Error: {}", self.reason)}],
            "isError": true,
        });
        let mut result: rmcp::model::CallToolResult =
            serde_json::from_value(result).map_err(|e| {
                ErrorData::internal_error(format!("could not build a result: {e}"), None)
            })?;
        result.result_type = Some(rmcp::model::ResultType::COMPLETE);
        Ok(CallToolResponse::Complete(result))
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        Err(custom_request_error(&request))
    }
}

/// Serves a session that could not be opened over one newline-delimited JSON-RPC stream
/// until the client closes it: the handshake's instructions are `reason` (from
/// [`unavailable_reason`]) and what the model should do; `tools/list` lists `definitions` in
/// `options.shape`; every `tools/call` is an `isError` result whose text is
/// `Error: <reason>`. Nothing is written anywhere.
///
/// # Errors
/// [`ServeError::Transport`] when the connection fails after the handshake; a client that
/// closes the stream before or during the handshake ends it without an error.
pub async fn serve_unavailable<R, W>(
    reason: String,
    definitions: &[ToolDefinition],
    options: ServeOptions,
    read: R,
    write: W,
) -> Result<(), ServeError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let handler = Unavailable {
        reason,
        tools: definitions
            .iter()
            .map(|d| mcp_tool(d, options.shape))
            .collect(),
    };
    let transport = Gate::new(Lines::new(read, write), None, Reservations::default());
    let Ok(running) = handler.serve(transport).await else {
        return Ok(());
    };
    let service = running.cancellation_token();
    let stop = options.stop.clone();
    let stopper = tokio_util::task::AbortOnDropHandle::new(tokio::spawn(async move {
        stop.cancelled().await;
        service.cancel();
    }));
    let result = running
        .waiting()
        .await
        .map(drop)
        .map_err(|e| ServeError::Transport(e.to_string()));
    drop(stopper);
    result
}

/// [`serve_unavailable`] over the standard streams.
///
/// # Errors
/// As [`serve_unavailable`].
pub async fn serve_unavailable_stdio(
    reason: String,
    definitions: &[ToolDefinition],
    options: ServeOptions,
) -> Result<(), ServeError> {
    let (read, write) = rmcp::transport::stdio_pipes();
    serve_unavailable(reason, definitions, options, read, write).await
}
