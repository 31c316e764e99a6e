//! The rmcp [`ServerHandler`]: tools, resources, subscriptions, logging and progress over a
//! [`SessionHost`].

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::RequestParamsMeta;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CustomRequest, CustomResult, ErrorCode,
    InitializeResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse,
    ServerConfig, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use turnkit_core::{
    PROGRESS_INTERVAL, Progress, ProgressUpdate, ToolDefinition, ToolOutput, formats, lock,
};

use crate::session::{INBOX_URI, SessionHost};

/// How tool results are shaped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ResultShape {
    /// Text content only, and no output schemas: what clients show the model today.
    #[default]
    Text,
    /// Text content plus `structuredContent` (a non-object value is wrapped as
    /// `{"value": …}`), and the tools' output schemas (wrapped the same way). Clients show
    /// the model only `structuredContent` when a result has it, so the messages owed to the
    /// result (notices and reminders) are also in its [`OWED_FIELD`] field, and every output
    /// schema declares that field.
    Structured,
}

/// The `structuredContent` field of a structured result that carries the notices and
/// reminders owed to it: `[{"source": {…}, "text": "…"}]`, in queue order, present only when
/// something was owed. The same messages are text blocks after the tool's own content.
pub const OWED_FIELD: &str = "harnessMessages";

/// Reservations of owed messages by the JSON text of the request id whose response carries
/// them; shared with the transport, which commits them when it writes the response.
#[derive(Clone, Default)]
pub(crate) struct Reservations {
    inner: Arc<Mutex<HashMap<String, u64>>>,
}

impl Reservations {
    pub(crate) fn insert(&self, id: String, reservation: u64) {
        lock(&self.inner).insert(id, reservation);
    }

    pub(crate) fn take(&self, id: &str) -> Option<u64> {
        lock(&self.inner).remove(id)
    }
}

pub(crate) fn id_key(id: &impl serde::Serialize) -> String {
    serde_json::to_string(id).unwrap_or_default()
}

/// The MCP face of one [`SessionHost`].
#[derive(Clone)]
pub(crate) struct Server {
    pub(crate) host: Arc<SessionHost>,
    pub(crate) shape: ResultShape,
    pub(crate) reservations: Reservations,
    pub(crate) subscribed: Arc<Mutex<BTreeSet<String>>>,
    /// The least severe `notifications/message` level the client asked for with
    /// `logging/setLevel`, as its rank (`LoggingLevel as u8`: `debug` 0 … `emergency` 7);
    /// 0 until it asks, so every message is sent.
    pub(crate) log_level: Arc<AtomicU8>,
    /// Per tool with an output schema, whether its structured values are wrapped ([`wraps`]).
    wrapped: Arc<HashMap<String, bool>>,
    /// Whether changes are sent between calls (stdio), see [`crate::capabilities`].
    notifies: bool,
}

fn decode<T: DeserializeOwned>(value: Value) -> Result<T, ErrorData> {
    serde_json::from_value(value)
        .map_err(|e| ErrorData::internal_error(format!("could not build a result: {e}"), None))
}

/// An output schema with the optional [`OWED_FIELD`] declared at its root and in each
/// `oneOf` / `anyOf` branch (a closed branch would refuse it otherwise).
fn with_owed_field(mut schema: Value) -> Value {
    let owed = json!({
        "type": "array",
        "description": "Notices and reminders delivered with this result, in order.",
        "items": {
            "type": "object",
            "properties": {"source": {"type": "object"}, "text": {"type": "string"}},
            "required": ["source", "text"],
        },
    });
    let Some(root) = schema.as_object_mut() else {
        return schema;
    };
    for key in ["oneOf", "anyOf"] {
        for branch in root
            .get_mut(key)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            declare(branch, &owed);
        }
    }
    declare(&mut schema, &owed);
    schema
}

fn declare(schema: &mut Value, property: &Value) {
    if let Some(properties) = schema
        .as_object_mut()
        .map(|o| o.entry("properties").or_insert_with(|| json!({})))
        .and_then(Value::as_object_mut)
    {
        properties.insert(OWED_FIELD.to_owned(), property.clone());
    }
}

/// The MCP tool this server declares for `definition` under `shape`: name, description,
/// input schema and annotations exactly as in the catalog; in the structured shape also the
/// output schema rooted at an object ([`turnkit_core::formats::object_rooted`]) with the
/// optional [`OWED_FIELD`] declared. `harness tools --format mcp --output-schema` prints
/// this same value.
pub fn mcp_tool(definition: &ToolDefinition, shape: ResultShape) -> Value {
    let mut tool = formats::mcp_tool(definition, shape == ResultShape::Structured);
    if let Some(schema) = tool.get_mut("outputSchema") {
        *schema = with_owed_field(schema.take());
    }
    tool
}

/// Whether the structured values of the tool declared by `definition` are wrapped as
/// `{"value": …}` (its output schema was wrapped to root it at an object); a tool without an
/// output schema wraps exactly its non-object values.
pub(crate) fn wraps(definition: Option<&ToolDefinition>, value: &Value) -> bool {
    match definition.and_then(|d| d.output_schema.as_ref()) {
        Some(schema) => formats::object_rooted(schema).1,
        None => !value.is_object(),
    }
}

/// The MCP result of a tool output whose content already ends with the `owed` messages'
/// blocks; in the structured shape the tool's value rooted the way its output schema is
/// (`wrapped`, from [`wraps`]) is `structuredContent`, with `owed` also in its
/// [`OWED_FIELD`].
pub(crate) fn result_json(
    output: &ToolOutput,
    shape: ResultShape,
    wrapped: bool,
    owed: &[Value],
) -> Value {
    let content: Vec<Value> = output
        .content
        .iter()
        .map(|block| json!({"type": "text", "text": block.as_text()}))
        .collect();
    let mut result = json!({"content": content, "isError": output.is_error});
    if shape == ResultShape::Structured && !output.is_error {
        let mut structured = formats::object_rooted_value(&output.value, wrapped);
        if !owed.is_empty() {
            structured[OWED_FIELD] = Value::Array(owed.to_vec());
        }
        result["structuredContent"] = structured;
    }
    result
}

fn resource(uri: &str, name: &str, description: &str) -> Value {
    json!({"uri": uri, "name": name, "description": description, "mimeType": "application/json"})
}

impl Server {
    /// The server of one connection to `host`.
    pub(crate) fn new(host: Arc<SessionHost>, shape: ResultShape) -> Self {
        let wrapped = host
            .definitions()
            .iter()
            .filter(|d| d.output_schema.is_some())
            .map(|d| (d.name.clone(), wraps(Some(d), &Value::Null)))
            .collect();
        Self {
            wrapped: Arc::new(wrapped),
            host,
            shape,
            reservations: Reservations::default(),
            subscribed: Arc::new(Mutex::new(Default::default())),
            log_level: Arc::default(),
            notifies: true,
        }
    }

    /// This server for a connection sent nothing between calls (HTTP).
    pub(crate) fn without_notifications(mut self) -> Self {
        self.notifies = false;
        self
    }

    /// This server sharing `reservations` with its transport.
    pub(crate) fn with_reservations(mut self, reservations: Reservations) -> Self {
        self.reservations = reservations;
        self
    }

    /// Whether a message at `level` is sent under the client's `logging/setLevel`.
    #[expect(
        deprecated,
        reason = "logging is what clients of the initialize handshake show"
    )]
    pub(crate) fn logs(&self, level: rmcp::model::LoggingLevel) -> bool {
        level as u8 >= self.log_level.load(Ordering::SeqCst)
    }

    /// The subscribed URIs a change of `uri` touches (a family resource's change touches
    /// every resource of its template: a job list change touches every job).
    pub(crate) fn touched(&self, uri: &str) -> Vec<String> {
        let prefix = turnkit_families::resources()
            .iter()
            .find(|r| r.uri == uri)
            .and_then(|r| r.template)
            .map(|t| t.prefix);
        lock(&self.subscribed)
            .iter()
            .filter(|s| s.as_str() == uri || prefix.is_some_and(|p| s.starts_with(p)))
            .cloned()
            .collect()
    }

    fn resource_value(&self, uri: &str) -> Option<Value> {
        self.host.resource_value(uri)
    }

    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let progress_token = context
            .meta
            .get_progress_token()
            .or_else(|| request.progress_token());
        let name = request.name.to_string();
        let tasks_declared = context
            .client_capabilities()
            .is_some_and(|capabilities| capabilities.supports_tasks());
        // A fenced session's tools are gone; every call answers with the fenced error.
        if !self.host.is_tool(&name) && !self.host.is_fenced() {
            return Err(ErrorData::invalid_params(
                format!("unknown tool: {name}"),
                None,
            ));
        }
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        tracing::debug!(?progress_token, "mcp: tools/call {name}");
        // A wait on a job (the families say which calls wait) of a call that declared tasks
        // becomes a task past a short bound.
        let waited = tasks_declared
            .then(|| turnkit_families::waited_target(&name, &arguments))
            .flatten();
        let call_ct = context.ct.child_token();
        // The request's span (OpenTelemetry MCP conventions); the tool call inside it is the
        // `execute_tool` span whose `gen_ai.tool.call.id` is this request id.
        let request_id = context.id.to_string();
        let span = tracing::info_span!(
            "tools/call",
            "otel.name" = %format_args!("tools/call {name}"),
            "mcp.method.name" = "tools/call",
            "jsonrpc.request.id" = %request_id,
            "gen_ai.operation.name" = "execute_tool",
            "gen_ai.tool.name" = %name,
        );
        let answer = async {
            match progress_token {
                None => {
                    self.host
                        .answer(
                            Some(&request_id),
                            &name,
                            arguments,
                            call_ct.clone(),
                            Progress::default(),
                        )
                        .await
                }
                Some(token) => {
                    // The tool queues its reports (a sink must not block); they are sent from
                    // here, in order, while the call runs, and the ones still queued when it ends
                    // go first.
                    let (reports, mut queued) = mpsc::unbounded_channel::<ProgressUpdate>();
                    let progress =
                        Progress::new(self.host.clock(), PROGRESS_INTERVAL, move |update| {
                            let _ = reports.send(update);
                        });
                    let call = self.host.answer(
                        Some(&request_id),
                        &name,
                        arguments,
                        call_ct.clone(),
                        progress,
                    );
                    tokio::pin!(call);
                    let answer = loop {
                        tokio::select! {
                            answer = &mut call => break answer,
                            Some(update) = queued.recv() => {
                                notify_progress(&context, &token, update).await;
                            }
                        }
                    };
                    while let Ok(update) = queued.try_recv() {
                        notify_progress(&context, &token, update).await;
                    }
                    answer
                }
            }
        };
        let answer = tracing::Instrument::instrument(answer, span);
        tokio::pin!(answer);
        // A session that is stopping ends its calls in flight as a cancelled request would;
        // each still answers (`SessionHost::end_calls`).
        let ending = self.host.ending().clone();
        let answer = async {
            tokio::select! {
                biased;
                answer = &mut answer => answer,
                () = ending.cancelled() => {
                    call_ct.cancel();
                    (&mut answer).await
                }
            }
        };
        let bounded = self
            .host
            .bound_wait(answer, waited, &call_ct, |a| a.output.is_error);
        let answer = match bounded.await {
            Ok(answer) => answer,
            Err((entry, moved)) => {
                let created = crate::tasks::protocol::created(&entry, &moved);
                return Ok(CallToolResponse::Task(created));
            }
        };
        // A call that declared the tasks extension in its own `_meta` and started background
        // work, or created a reminder, is answered with a task.
        let task = if tasks_declared && !context.ct.is_cancelled() {
            self.host.open_task(&name, &answer.output).await
        } else {
            None
        };
        self.respond(&name, &answer, task, &context)
    }

    /// The response to a call answered with `answer` (the `task` it opened, if any); its
    /// reservation is handed to the transport, or released when the request was cancelled or
    /// the result cannot be built.
    fn respond(
        &self,
        name: &str,
        answer: &crate::session::Answer,
        task: Option<crate::tasks::Entry>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let wrapped = self
            .wrapped
            .get(name)
            .copied()
            .unwrap_or_else(|| wraps(None, &answer.output.value));
        let result = match decode::<rmcp::model::CallToolResult>(result_json(
            &answer.output,
            self.shape,
            wrapped,
            &answer.owed,
        )) {
            // The SDK drops the discriminator for peers of the initialize handshake.
            Ok(mut result) => {
                result.result_type = Some(rmcp::model::ResultType::COMPLETE);
                result
            }
            Err(error) => {
                if let Some(reservation) = answer.reservation {
                    self.host.release(reservation);
                }
                return Err(error);
            }
        };
        // Owed messages ride a task's answer only for a client that reads its `_meta`.
        let carried = task.is_none()
            || crate::tasks::protocol::reads_agent_task_meta(context.client_info().as_ref());
        match answer.reservation {
            Some(reservation) if carried => self.keep(context, reservation),
            Some(reservation) => self.host.release(reservation),
            None => {}
        }
        Ok(match task {
            Some(entry) => {
                let owed = if carried { 0 } else { answer.owed.len() };
                let immediate = crate::tasks::protocol::immediate(&answer.output, owed);
                CallToolResponse::Task(crate::tasks::protocol::created(&entry, &immediate))
            }
            None => CallToolResponse::Complete(result),
        })
    }

    /// Hands `reservation` to the transport, which commits it once the response to the
    /// request of `context` is written; released if the request is cancelled first.
    fn keep(&self, context: &RequestContext<RoleServer>, reservation: u64) {
        if context.ct.is_cancelled() {
            self.host.release(reservation);
            return;
        }
        if let Some(held) = crate::http::held(context) {
            // Over HTTP the response body commits it once written in full.
            held.hold(reservation);
            return;
        }
        // The serve loop retires the request (cancelling `ct`) and hands its response to the
        // transport in one step, and the transport takes the reservation then; one still here
        // once `ct` fired belongs to a response that was dropped because the client cancelled
        // the request.
        let key = id_key(&context.id);
        self.reservations.insert(key.clone(), reservation);
        let reservations = self.reservations.clone();
        let host = self.host.clone();
        let ct = context.ct.clone();
        let stopping = self.host.stopping().clone();
        // One of the session's own tasks; a request still open when the session shuts down
        // will write no response, so its reservation is released then.
        self.host.spawn(async move {
            tokio::select! {
                () = ct.cancelled() => {}
                () = stopping.cancelled() => {}
            }
            if let Some(reservation) = reservations.take(&key) {
                host.release(reservation);
            }
        });
    }
}

/// Sends one `notifications/progress` for the request of `context` (a closed connection is
/// left to the serve loop to notice).
async fn notify_progress(
    context: &RequestContext<RoleServer>,
    token: &rmcp::model::ProgressToken,
    update: ProgressUpdate,
) {
    let mut param = rmcp::model::ProgressNotificationParam::new(token.clone(), update.progress);
    if let Some(total) = update.total {
        param = param.with_total(total);
    }
    if let Some(message) = update.message {
        param = param.with_message(message);
    }
    let _ = context.peer.notify_progress(param).await;
}

#[expect(
    deprecated,
    reason = "resources/subscribe and logging are how clients of the initialize handshake \
              (every version this server negotiates) hear about changes"
)]
impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        let info = json!({
            "protocolVersion": ProtocolVersion::LATEST_WITH_INITIALIZE,
            "capabilities": crate::capabilities::advertised(self.notifies),
            "serverInfo": {"name": "harness", "version": env!("CARGO_PKG_VERSION")},
            "instructions": self.host.instructions(),
        });
        serde_json::from_value::<InitializeResult>(info).unwrap_or_default()
    }

    /// Every version from 2024-11-05 to 2026-07-28: `initialize` negotiates up to
    /// 2025-11-25, and `server/discover` opens the stateless 2026-07-28 era, whose requests
    /// each carry their own `_meta` (protocol version, client info and capabilities).
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::LATEST))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools: Vec<Value> = self
            .host
            .definitions()
            .iter()
            .map(|d| mcp_tool(d, self.shape))
            .collect();
        decode(json!({"tools": tools}))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.call(request, context).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let mut resources: Vec<Value> = turnkit_families::resources()
            .iter()
            .map(|r| resource(r.uri, r.name, r.description))
            .collect();
        resources.push(resource(
            INBOX_URI,
            "inbox",
            "Notices and reminders owed to the next tool result.",
        ));
        decode(json!({ "resources": resources }))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let templates: Vec<Value> = turnkit_families::resources()
            .iter()
            .filter_map(|r| r.template)
            .map(|t| {
                json!({
                    "uriTemplate": format!("{}{{id}}", t.prefix),
                    "name": t.name,
                    "description": t.description,
                    "mimeType": "application/json",
                })
            })
            .collect();
        decode(json!({ "resourceTemplates": templates }))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let Some(value) = self.resource_value(&request.uri) else {
            return Err(ErrorData::resource_not_found(
                format!("unknown resource: {}", request.uri),
                None,
            ));
        };
        let result: rmcp::model::ReadResourceResult = decode(json!({"contents": [{
            "uri": request.uri,
            "mimeType": "application/json",
            "text": value.to_string(),
        }]}))?;
        Ok(ReadResourceResponse::Complete(result))
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if self.resource_value(&request.uri).is_none() {
            return Err(ErrorData::resource_not_found(
                format!("unknown resource: {}", request.uri),
                None,
            ));
        }
        lock(&self.subscribed).insert(request.uri);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        lock(&self.subscribed).remove(&request.uri);
        Ok(())
    }

    /// From now on only messages at `request.level` or more severe are sent (MCP
    /// "Logging"); every message this server sends is at `info`, so `notice` and above
    /// silence them and `debug` or `info` bring them back.
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.log_level.store(request.level as u8, Ordering::SeqCst);
        Ok(())
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        let Some(view) = self.host.get_task(&request.task_id).await else {
            return Err(unknown_task(&request.task_id));
        };
        let now = turnkit_core::format_instant(self.host.clock().now());
        let result = crate::tasks::protocol::get_result(&view, &now);
        if let Some(reservation) = view.reservation {
            self.keep(&context, reservation);
        }
        Ok(result)
    }

    /// Acknowledged for a known task (see [`SessionHost::update_task`]); -32602 `unknown
    /// task: <id>` otherwise.
    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.host
            .update_task(&request.task_id)
            .map_err(|message| ErrorData::invalid_params(message, None))
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.host
            .cancel_task(&request.task_id)
            .await
            .map_err(|message| ErrorData::invalid_params(message, None))
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        Err(custom_request_error(&request))
    }
}

/// The answer to a request the SDK could not decode as one it knows: -32602 for a method
/// this server serves (its params did not decode; the message names the method and the
/// decoding error), -32601 for any other method.
#[expect(
    deprecated,
    reason = "logging/setLevel is served to clients of the initialize handshake"
)]
pub(crate) fn custom_request_error(request: &CustomRequest) -> ErrorData {
    fn check<T: DeserializeOwned>(request: &CustomRequest) -> Option<String> {
        match request.params_as::<T>() {
            Ok(_) => None,
            Err(error) => Some(error.to_string()),
        }
    }
    let why = match request.method.as_str() {
        "tools/call" => check::<CallToolRequestParams>(request),
        "resources/read" => check::<ReadResourceRequestParams>(request),
        "resources/subscribe" => check::<SubscribeRequestParams>(request),
        "resources/unsubscribe" => check::<UnsubscribeRequestParams>(request),
        "logging/setLevel" => check::<rmcp::model::SetLevelRequestParams>(request),
        "initialize" => check::<rmcp::model::InitializeRequestParams>(request),
        "tasks/get" => check::<rmcp::model::GetTaskParams>(request),
        "tasks/update" => check::<rmcp::model::UpdateTaskParams>(request),
        "tasks/cancel" => check::<rmcp::model::CancelTaskParams>(request),
        "tools/list" | "resources/list" | "resources/templates/list" => {
            check::<PaginatedRequestParams>(request)
        }
        "ping" => None,
        _ => return method_not_found(&request.method),
    };
    let why = why.unwrap_or_else(|| "the params do not match the method".to_owned());
    ErrorData::invalid_params(
        format!("Invalid params for {}: {why}", request.method),
        None,
    )
}

/// JSON-RPC -32602 for a task id this session does not know (never opened, or past its TTL).
fn unknown_task(id: &str) -> ErrorData {
    ErrorData::invalid_params(format!("unknown task: {id}"), None)
}

/// JSON-RPC -32601 for `method`.
pub(crate) fn method_not_found(method: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("Method not found: {method}"),
        None,
    )
}
