//! A `harness mcp --http` child process and a raw HTTP client for it.

use std::process::Stdio;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::support::{BOUND, harness_bin};

/// A running `harness mcp --http` process.
pub(crate) struct HttpServer {
    pub child: tokio::process::Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// The token it generated (read from the file its start line names), if it did.
    pub token: Option<String>,
    /// The lines it printed up to its listening line.
    pub start_lines: Vec<String>,
    /// The lines it printed after its listening line (its log: warnings and errors).
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl HttpServer {
    pub(crate) fn url(&self, session: &str) -> String {
        format!("http://{}/sessions/{session}/mcp", self.addr)
    }

    /// The generated token, for [`Connection::open`].
    pub(crate) fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// `Authorization: Bearer <generated token>`.
    pub(crate) fn bearer(&self) -> String {
        format!("Bearer {}", self.token().expect("a generated token"))
    }
}

/// The token and its file of a start line `harness mcp: token T (in PATH); …`: the token is
/// read from the file, and must be the one printed.
pub(crate) fn generated_token(line: &str) -> Option<(String, std::path::PathBuf)> {
    let rest = line.strip_prefix("harness mcp: token ")?;
    let (printed, rest) = rest.split_once(" (in ")?;
    let (path, _) = rest.split_once("); send it as Authorization: Bearer <token>")?;
    let path = std::path::PathBuf::from(path);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text,
        format!("{printed}\n"),
        "the token file holds the printed token"
    );
    Some((printed.to_owned(), path))
}

/// Starts `harness mcp --http 127.0.0.1:0 --config DIR/config.json [args…]` and waits for its
/// listening line. Unless `args` choose (`--token-file`, `--no-auth`), the server generates
/// its token into `DIR/tokens`, and [`HttpServer::token`] is it.
pub(crate) async fn start_http(dir: &std::path::Path, args: &[&str]) -> HttpServer {
    let config = json!({"todo": {"allowParallelInProgress": false}});
    start_http_with(dir, &config, args, &[]).await
}

/// [`start_http`] with `config` as `DIR/config.json` and `env` added to the server's
/// environment.
pub(crate) async fn start_http_with(
    dir: &std::path::Path,
    config: &Value,
    args: &[&str],
    env: &[(&str, &str)],
) -> HttpServer {
    let config_path = dir.join("config.json");
    std::fs::write(&config_path, config.to_string()).unwrap();
    let mut command = tokio::process::Command::new(harness_bin());
    command
        .args(["mcp", "--http", "127.0.0.1:0", "--config"])
        .arg(&config_path)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command.envs(env.iter().copied());
    if !args
        .iter()
        .any(|a| matches!(*a, "--token-file" | "--no-auth" | "--token-dir"))
    {
        command.arg("--token-dir").arg(dir.join("tokens"));
    }
    let mut child = command.spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut start_lines = Vec::new();
    let mut token = None;
    let addr = tokio::time::timeout(BOUND, async {
        loop {
            let Some(line) = lines.next_line().await.unwrap() else {
                panic!("the server exited before listening: {start_lines:#?}");
            };
            start_lines.push(line.clone());
            if let Some((secret, _)) = generated_token(&line) {
                token = Some(secret);
            }
            if let Some(rest) = line.strip_prefix("harness mcp: serving http://") {
                break rest.split('/').next().unwrap().to_owned();
            }
        }
    })
    .await
    .expect("the server listens");
    let addr_copy = addr.clone();
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = log.clone();
    // Drained, so the server never blocks on a full pipe; shown when a test fails.
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::debug!("server {addr_copy}: {line}");
            kept.lock().unwrap().push(line);
        }
    });
    HttpServer {
        child,
        addr,
        token,
        start_lines,
        log,
    }
}

/// Starts an instance of `harness mcp --http` on PostgreSQL `store` as host `id`, with a
/// 2-second lease and sessions released after `idle` seconds without a request; without a
/// token (`--no-auth`: these tests are about leases, and one client talks to both instances).
pub(crate) async fn start_instance(
    dir: &std::path::Path,
    store: &str,
    id: &str,
    idle: &str,
) -> HttpServer {
    start_http(
        dir,
        &[
            "--store",
            store,
            "--host-id",
            id,
            "--lease-ttl",
            "2",
            "--idle-release",
            idle,
            "--no-auth",
        ],
    )
    .await
}

/// A response: status, headers and body text.
#[derive(Debug)]
pub(crate) struct Reply {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: String,
}

impl Reply {
    /// The body as JSON.
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    /// The JSON-RPC messages of an event-stream or JSON body.
    pub(crate) fn messages(&self) -> Vec<Value> {
        if self.body.trim_start().starts_with('{') {
            return vec![self.json()];
        }
        self.body
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .filter(|data| !data.trim().is_empty())
            .map(|data| serde_json::from_str(data).unwrap())
            .collect()
    }
}

pub(crate) fn client() -> Client<HttpConnector, Full<Bytes>> {
    Client::builder(TokioExecutor::new()).build_http()
}

/// Sends one request; `headers` are added to the MCP ones (JSON body, both accept types).
pub(crate) async fn send(
    client: &Client<HttpConnector, Full<Bytes>>,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Result<Reply, hyper_util::client::legacy::Error> {
    let mut request = http::Request::builder()
        .method(method)
        .uri(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Full::new(Bytes::from(body.to_owned())))
        .unwrap();
    let response = client.request(request).await?;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await.map_or_else(
        |_| String::new(),
        |b| String::from_utf8_lossy(&b.to_bytes()).into_owned(),
    );
    Ok(Reply {
        status,
        headers,
        body,
    })
}

/// The `initialize` request of protocol 2025-06-18.
pub(crate) const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}"#;

/// One MCP connection of the `initialize` era to a session URL.
pub(crate) struct Connection {
    pub url: String,
    pub session: String,
    pub auth: Option<String>,
    next_id: u64,
}

impl Connection {
    /// Initializes a connection to `url` (with `Authorization: Bearer token` when given).
    pub(crate) async fn open(
        client: &Client<HttpConnector, Full<Bytes>>,
        url: &str,
        token: Option<&str>,
    ) -> Result<Self, Reply> {
        let auth = token.map(|t| format!("Bearer {t}"));
        let mut headers = Vec::new();
        if let Some(auth) = &auth {
            headers.push(("authorization", auth.as_str()));
        }
        let reply = match send(client, "POST", url, &headers, INITIALIZE).await {
            Ok(reply) => reply,
            Err(error) => {
                return Err(Reply {
                    status: 0,
                    headers: http::HeaderMap::new(),
                    body: error.to_string(),
                });
            }
        };
        let Some(session) = reply
            .headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        else {
            return Err(reply);
        };
        let connection = Self {
            url: url.to_owned(),
            session: session.to_owned(),
            auth,
            next_id: 1,
        };
        let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        let reply = connection.post(client, note).await.map_err(|e| Reply {
            status: 0,
            headers: http::HeaderMap::new(),
            body: e.to_string(),
        })?;
        if reply.status != 202 {
            return Err(reply);
        }
        Ok(connection)
    }

    async fn post(
        &self,
        client: &Client<HttpConnector, Full<Bytes>>,
        body: &str,
    ) -> Result<Reply, hyper_util::client::legacy::Error> {
        let mut headers = vec![
            ("mcp-session-id", self.session.as_str()),
            ("mcp-protocol-version", "2025-06-18"),
        ];
        if let Some(auth) = &self.auth {
            headers.push(("authorization", auth.as_str()));
        }
        send(client, "POST", &self.url, &headers, body).await
    }

    /// Calls tool `name`; the JSON-RPC `result` (or the whole reply when there is none).
    pub(crate) async fn call(
        &mut self,
        client: &Client<HttpConnector, Full<Bytes>>,
        name: &str,
        arguments: Value,
    ) -> Result<Value, Reply> {
        let id = self.next_id;
        self.next_id += 1;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}})
        .to_string();
        let reply = self.post(client, &body).await.map_err(|e| Reply {
            status: 0,
            headers: http::HeaderMap::new(),
            body: e.to_string(),
        })?;
        if reply.status != 200 {
            return Err(reply);
        }
        reply
            .messages()
            .into_iter()
            .find(|m| m.get("id") == Some(&json!(id)))
            .and_then(|m| m.get("result").cloned())
            .ok_or(reply)
    }
}

impl Connection {
    /// Sends a `tools/call` of `name` (JSON-RPC id `id`) from a task of its own, for a call
    /// that stays in flight; the task yields the reply.
    pub(crate) fn call_in_task(
        &self,
        client: &Client<HttpConnector, Full<Bytes>>,
        id: u64,
        name: &str,
        arguments: &Value,
    ) -> tokio::task::JoinHandle<Reply> {
        let client = client.clone();
        let (url, session, auth) = (self.url.clone(), self.session.clone(), self.auth.clone());
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}})
        .to_string();
        tokio::spawn(async move {
            let mut headers = vec![
                ("mcp-session-id", session.as_str()),
                ("mcp-protocol-version", "2025-06-18"),
            ];
            if let Some(auth) = &auth {
                headers.push(("authorization", auth.as_str()));
            }
            send(&client, "POST", &url, &headers, &body).await.unwrap()
        })
    }

    /// Calls `job_list` until its first line starts with `prefix` (a real server: polled,
    /// bounded by [`BOUND`]).
    pub(crate) async fn until_jobs_start_with(
        &mut self,
        client: &Client<HttpConnector, Full<Bytes>>,
        prefix: &str,
    ) {
        let deadline = tokio::time::Instant::now() + BOUND;
        loop {
            let listed = self.call(client, "job_list", json!({})).await.unwrap();
            if texts(&listed)[0].starts_with(prefix) {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "job_list never started with {prefix:?}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
}

/// The session files in `dir`, sorted.
pub(crate) fn session_files(dir: &std::path::Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The text blocks of a tool result.
pub(crate) fn texts(result: &Value) -> Vec<String> {
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["text"].as_str().unwrap().to_owned())
        .collect()
}

/// The `_meta` every 2026-07-28 request carries; `tasks` declares the tasks extension.
pub(crate) fn meta(tasks: bool) -> Value {
    let capabilities = if tasks {
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
    } else {
        json!({})
    };
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    })
}

/// A request of the 2026-07-28 era (no handshake) posted to `url` (with `auth` as its
/// `Authorization` when given): `method` with `params`
/// (whose `_meta` is [`meta`] with `tasks`), the `Mcp-Method` and `Mcp-Name` headers set.
pub(crate) async fn stateless(
    client: &Client<HttpConnector, Full<Bytes>>,
    url: &str,
    auth: Option<&str>,
    method: &str,
    name: Option<&str>,
    mut params: Value,
    tasks: bool,
) -> Reply {
    params["_meta"] = meta(tasks);
    let mut headers = vec![
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
    ];
    if let Some(name) = name {
        headers.push(("mcp-name", name));
    }
    if let Some(auth) = auth {
        headers.push(("authorization", auth));
    }
    let body = json!({"jsonrpc": "2.0", "id": "r", "method": method, "params": params});
    send(client, "POST", url, &headers, &body.to_string())
        .await
        .unwrap()
}

/// The 401 message of a request without a Bearer token.
pub(crate) const NO_TOKEN: &str = "no token was sent: send the token the server printed (a line \
                                   of its token file) as the Bearer token of the Authorization \
                                   header";

/// The 401 message of a Bearer token that is not the server's.
pub(crate) const WRONG_TOKEN: &str = "the token sent is not one of this server's tokens. Send \
                                      the token the server printed (a line of its token file) \
                                      as the Bearer token of the Authorization header";

/// The 401 message of Claude Code's `${HARNESS_TOKEN}` sent as is (the variable was unset).
pub(crate) const UNEXPANDED_TOKEN: &str = "the token sent is the unexpanded text \
                                           ${HARNESS_TOKEN}: set HARNESS_TOKEN to the token the \
                                           server printed in the environment the client starts \
                                           in, then restart the client";
