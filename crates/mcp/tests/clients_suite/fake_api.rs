//! A loopback stand-in for a model API: it replays scripted model turns over SSE and records
//! every request a client sent, with the time it arrived.
//!
//! Two dialects: the Anthropic Messages API (`POST /v1/messages`, what Claude Code speaks) and
//! the OpenAI Responses API (`POST /v1/responses`, Codex CLI's `wire_api = "responses"`). A
//! request is the agent's own when it offers the harness tools; each such request takes the
//! next scripted turn (after running the turn's `before` step, if any). Other requests (a
//! client's side calls) and agent requests past the end of the script get a one-word text
//! answer, `ok`.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::{Value, json};
use tokio::sync::Notify;

/// One block of a scripted model turn.
#[derive(Clone, Debug)]
pub(crate) enum Block {
    /// Assistant text.
    Text(&'static str),
    /// A call of the harness tool `tool` (its MCP name, without any client prefix), with an id
    /// the script chooses (`toolu_…` for Claude, `call_…` for Codex).
    Call {
        id: &'static str,
        tool: &'static str,
        input: Value,
    },
}

/// A step run before a turn is answered (on a blocking thread): e.g. let a gated job end and
/// wait until the server has recorded its settlement.
pub(crate) type Before = Box<dyn FnOnce() + Send>;

/// One scripted model turn.
pub(crate) struct Turn {
    pub(crate) before: Option<Before>,
    pub(crate) blocks: Vec<Block>,
}

impl Turn {
    pub(crate) fn new(blocks: Vec<Block>) -> Self {
        Self {
            before: None,
            blocks,
        }
    }

    pub(crate) fn after(before: impl FnOnce() + Send + 'static, blocks: Vec<Block>) -> Self {
        Self {
            before: Some(Box::new(before)),
            blocks,
        }
    }
}

/// Which API the fake speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// Anthropic Messages API; harness tools are offered as `mcp__harness__<tool>`.
    Messages,
    /// OpenAI Responses API; harness tools are offered in the namespace `mcp__harness`.
    Responses,
}

/// A request the fake received.
#[derive(Clone, Debug)]
pub(crate) struct Recorded {
    pub(crate) at: Instant,
    pub(crate) path: String,
    /// The agent's own request (it offered the harness tools).
    pub(crate) agent: bool,
    pub(crate) body: Value,
}

struct State {
    dialect: Dialect,
    script: Mutex<std::collections::VecDeque<Turn>>,
    recorded: Mutex<Vec<Recorded>>,
    arrived: Notify,
    counter: Mutex<u64>,
}

/// A running fake model API on `127.0.0.1`.
pub(crate) struct FakeApi {
    pub(crate) addr: SocketAddr,
    state: Arc<State>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for FakeApi {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl FakeApi {
    /// Serves `script` on a free loopback port.
    pub(crate) async fn start(dialect: Dialect, script: Vec<Turn>) -> Self {
        let state = Arc::new(State {
            dialect,
            script: Mutex::new(script.into()),
            recorded: Mutex::new(Vec::new()),
            arrived: Notify::new(),
            counter: Mutex::new(0),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = state.clone();
        let app = Router::new()
            .route("/v1/messages", post(answer))
            .route("/v1/responses", post(answer))
            .route("/v1/messages/count_tokens", post(count_tokens))
            .route("/v1/models", get(models))
            .fallback(not_found)
            .with_state(shared);
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self {
            addr,
            state,
            server,
        }
    }

    /// The base URL a client is pointed at (`http://127.0.0.1:PORT`).
    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request so far.
    pub(crate) fn recorded(&self) -> Vec<Recorded> {
        self.state.recorded.lock().unwrap().clone()
    }

    /// The agent's requests so far.
    pub(crate) fn agent_requests(&self) -> Vec<Recorded> {
        self.recorded().into_iter().filter(|r| r.agent).collect()
    }

    /// Waits (at most `bound`) until the agent has sent `n` requests; returns them.
    pub(crate) async fn wait_for_agent_requests(&self, n: usize, bound: Duration) -> Vec<Recorded> {
        let deadline = tokio::time::Instant::now() + bound;
        loop {
            let arrived = self.state.arrived.notified();
            let requests = self.agent_requests();
            if requests.len() >= n {
                return requests;
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                panic!(
                    "the client sent {} model requests within {bound:?}, expected {n}",
                    requests.len()
                );
            }
        }
    }

    /// Scripted turns not yet taken.
    pub(crate) fn turns_left(&self) -> usize {
        self.state.script.lock().unwrap().len()
    }
}

type Shared = Arc<State>;

async fn answer(
    axum::extract::State(state): axum::extract::State<Shared>,
    uri: axum::http::Uri,
    body: Bytes,
) -> Response {
    let at = Instant::now();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let agent = offers_harness_tools(state.dialect, &body);
    let turn = if agent {
        state.script.lock().unwrap().pop_front()
    } else {
        None
    };
    let (before, blocks) = match turn {
        Some(turn) => (turn.before, turn.blocks),
        None => (None, vec![Block::Text("ok")]),
    };
    state.recorded.lock().unwrap().push(Recorded {
        at,
        path: uri.path().to_owned(),
        agent,
        body: body.clone(),
    });
    state.arrived.notify_waiters();
    if let Some(before) = before {
        tokio::task::spawn_blocking(before).await.unwrap();
    }
    let n = {
        let mut counter = state.counter.lock().unwrap();
        *counter += 1;
        *counter
    };
    let model = body["model"].as_str().unwrap_or("fake-model").to_owned();
    let events = match state.dialect {
        Dialect::Messages => messages_events(n, &model, &blocks),
        Dialect::Responses => responses_events(n, &blocks),
    };
    let mut text = String::new();
    for (name, data) in events {
        text.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    }
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from(text))
        .unwrap()
}

fn offers_harness_tools(dialect: Dialect, body: &Value) -> bool {
    let Some(tools) = body["tools"].as_array() else {
        return false;
    };
    tools.iter().any(|tool| {
        let name = tool["name"].as_str().unwrap_or("");
        match dialect {
            Dialect::Messages => name.starts_with("mcp__harness__"),
            Dialect::Responses => name == "mcp__harness",
        }
    })
}

fn messages_events(n: u64, model: &str, blocks: &[Block]) -> Vec<(&'static str, Value)> {
    let mut events = vec![(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": format!("msg_fake_{n}"), "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 1, "output_tokens": 1}}}),
    )];
    let mut calls = false;
    for (index, block) in blocks.iter().enumerate() {
        match block {
            Block::Text(text) => {
                events.push((
                    "content_block_start",
                    json!({"type": "content_block_start", "index": index,
                        "content_block": {"type": "text", "text": ""}}),
                ));
                events.push((
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "text_delta", "text": text}}),
                ));
            }
            Block::Call { id, tool, input } => {
                calls = true;
                events.push((
                    "content_block_start",
                    json!({"type": "content_block_start", "index": index,
                        "content_block": {"type": "tool_use", "id": id,
                            "name": format!("mcp__harness__{tool}"), "input": {}}}),
                ));
                events.push((
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}),
                ));
            }
        }
        events.push((
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
    }
    let stop = if calls { "tool_use" } else { "end_turn" };
    events.push((
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
            "usage": {"output_tokens": 1}}),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));
    events
}

fn responses_events(n: u64, blocks: &[Block]) -> Vec<(&'static str, Value)> {
    let id = format!("resp_fake_{n}");
    let mut events = vec![(
        "response.created",
        json!({"type": "response.created", "response": {"id": id}}),
    )];
    for (index, block) in blocks.iter().enumerate() {
        let item = match block {
            Block::Text(text) => json!({"type": "message", "role": "assistant",
                "id": format!("msg_fake_{n}_{index}"),
                "content": [{"type": "output_text", "text": text}]}),
            Block::Call { id, tool, input } => json!({"type": "function_call",
                "id": format!("fc_fake_{n}_{index}"), "call_id": id,
                "namespace": "mcp__harness", "name": tool, "arguments": input.to_string()}),
        };
        events.push((
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": index, "item": item}),
        ));
    }
    events.push((
        "response.completed",
        json!({"type": "response.completed", "response": {"id": id, "usage": {
            "input_tokens": 1, "input_tokens_details": null, "output_tokens": 1,
            "output_tokens_details": null, "total_tokens": 2}}}),
    ));
    events
}

async fn count_tokens() -> Response {
    json_response(StatusCode::OK, &json!({"input_tokens": 1}))
}

async fn models() -> Response {
    json_response(StatusCode::OK, &json!({"models": []}))
}

async fn not_found() -> Response {
    json_response(
        StatusCode::NOT_FOUND,
        &json!({"type": "error", "error": {"type": "not_found_error", "message": "not found"}}),
    )
}

fn json_response(status: StatusCode, value: &Value) -> Response {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(value.to_string()))
        .unwrap()
}

/// The texts of the `tool_result` blocks of a Messages API request's last message, per
/// `tool_use_id`, in order.
pub(crate) fn claude_tool_results(body: &Value) -> Vec<(String, Vec<String>)> {
    let Some(last) = body["messages"].as_array().and_then(|m| m.last()) else {
        return Vec::new();
    };
    let Some(content) = last["content"].as_array() else {
        return Vec::new();
    };
    content
        .iter()
        .filter(|block| block["type"] == "tool_result")
        .map(|block| {
            let id = block["tool_use_id"].as_str().unwrap_or("").to_owned();
            let texts = match &block["content"] {
                Value::String(text) => vec![text.clone()],
                Value::Array(parts) => parts
                    .iter()
                    .filter_map(|p| p["text"].as_str().map(str::to_owned))
                    .collect(),
                _ => Vec::new(),
            };
            (id, texts)
        })
        .collect()
}

/// The texts of a Messages API request's last message (text blocks, and the text of its
/// `tool_result` blocks), in order: all the model was newly shown.
pub(crate) fn claude_last_message_texts(body: &Value) -> Vec<String> {
    let Some(last) = body["messages"].as_array().and_then(|m| m.last()) else {
        return Vec::new();
    };
    match &last["content"] {
        Value::String(text) => vec![text.clone()],
        Value::Array(blocks) => blocks
            .iter()
            .flat_map(|block| match block["type"].as_str() {
                Some("text") => block["text"]
                    .as_str()
                    .map(str::to_owned)
                    .into_iter()
                    .collect(),
                Some("tool_result") => match &block["content"] {
                    Value::String(text) => vec![text.clone()],
                    Value::Array(parts) => parts
                        .iter()
                        .filter_map(|p| p["text"].as_str().map(str::to_owned))
                        .collect(),
                    _ => Vec::new(),
                },
                _ => Vec::new(),
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The `function_call_output` texts of a Responses API request, per `call_id`, in order.
pub(crate) fn codex_call_outputs(body: &Value) -> Vec<(String, Vec<String>)> {
    let Some(input) = body["input"].as_array() else {
        return Vec::new();
    };
    input
        .iter()
        .filter(|item| item["type"] == "function_call_output")
        .map(|item| {
            let id = item["call_id"].as_str().unwrap_or("").to_owned();
            let texts = match &item["output"] {
                Value::String(text) => vec![text.clone()],
                Value::Array(parts) => parts
                    .iter()
                    .filter_map(|p| p["text"].as_str().map(str::to_owned))
                    .collect(),
                _ => Vec::new(),
            };
            (id, texts)
        })
        .collect()
}
