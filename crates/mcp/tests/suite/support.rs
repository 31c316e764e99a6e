//! A `harness mcp` child process driven by rmcp's client, with every notification recorded.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

#[expect(
    deprecated,
    reason = "the server's logging notifications are what we test"
)]
use rmcp::model::LoggingMessageNotificationParam;
use rmcp::model::{
    CallToolRequestParams, ClientConfig, ProgressNotificationParam, ProtocolVersion,
    ResourceUpdatedNotificationParam,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// How long a test waits for something the server will do in real time.
pub(crate) const BOUND: Duration = Duration::from_secs(20);

/// The `harness` binary, built once per test process.
pub(crate) fn harness_bin() -> PathBuf {
    turnkit_testkit::binary::built("turnkit-cli", "harness")
}

/// A notification the client received.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Note {
    /// `notifications/message`: its `data`.
    Log(Value),
    /// `notifications/resources/updated`: the URI.
    Updated(String),
    /// `notifications/progress`: the progress count and message.
    Progress(Option<String>),
}

pub(crate) struct Recorder {
    notes: mpsc::UnboundedSender<Note>,
}

impl Recorder {
    /// A client handler that sends every notification on `notes`.
    pub(crate) fn new(notes: mpsc::UnboundedSender<Note>) -> Self {
        Self { notes }
    }
}

impl ClientHandler for Recorder {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::default().with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    #[expect(
        deprecated,
        reason = "the server's logging notifications are what we test"
    )]
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.notes.send(Note::Log(params.data));
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.notes.send(Note::Updated(params.uri));
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.notes.send(Note::Progress(params.message));
    }
}

/// The default configuration of the tests.
pub(crate) fn config() -> Value {
    json!({"todo": {"allowParallelInProgress": false}})
}

/// One running server and its client.
pub(crate) struct Server {
    pub client: RunningService<RoleClient, Recorder>,
    pub notes: mpsc::UnboundedReceiver<Note>,
}

/// Writes `config` next to the sessions and starts `harness mcp --dir DIR/sessions --session
/// ID --config DIR/config.json [extra…]`.
pub(crate) async fn start(dir: &Path, session: &str, config: &Value, extra: &[&str]) -> Server {
    let config_path = dir.join("config.json");
    std::fs::write(&config_path, config.to_string()).unwrap();
    let mut command = tokio::process::Command::new(harness_bin());
    command
        .arg("mcp")
        .arg("--dir")
        .arg(dir.join("sessions"))
        .args(["--session", session])
        .arg("--config")
        .arg(&config_path)
        .args(extra);
    serve_command(command).await.0
}

/// Starts `command` (a `harness mcp` invocation) and connects the client; also returns the
/// server's pid.
pub(crate) async fn serve_command(command: tokio::process::Command) -> (Server, u32) {
    let (transport, _stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = transport.id().expect("a running server");
    let (tx, notes) = mpsc::unbounded_channel();
    let client = Recorder { notes: tx }.serve(transport).await.unwrap();
    (Server { client, notes }, pid)
}

impl Server {
    /// Calls `name` and returns the result as JSON.
    pub(crate) async fn call(&self, name: &str, arguments: Value) -> Value {
        let mut params = CallToolRequestParams::new(name.to_owned());
        if let Value::Object(map) = arguments {
            params = params.with_arguments(map);
        }
        let result = tokio::time::timeout(BOUND, self.client.call_tool(params))
            .await
            .expect("a tool result in time")
            .unwrap();
        serde_json::to_value(result).unwrap()
    }

    /// Calls `name` and returns the texts of its content blocks.
    pub(crate) async fn texts(&self, name: &str, arguments: Value) -> Vec<String> {
        texts(&self.call(name, arguments).await)
    }

    /// Waits for the next notification that `pick` accepts, skipping others.
    pub(crate) async fn wait_for(&mut self, mut pick: impl FnMut(&Note) -> bool) -> Note {
        let wait = async {
            loop {
                let note = self.notes.recv().await.expect("client alive");
                if pick(&note) {
                    return note;
                }
            }
        };
        tokio::time::timeout(BOUND, wait)
            .await
            .expect("the notification in time")
    }

    /// Drops every notification received so far.
    pub(crate) fn drain(&mut self) {
        while self.notes.try_recv().is_ok() {}
    }

    /// Closes standard input and waits for the server to exit.
    pub(crate) async fn stop(mut self) {
        tokio::time::timeout(BOUND, self.client.close())
            .await
            .expect("the server exits in time")
            .unwrap();
    }
}

/// The texts of a result's content blocks.
pub(crate) fn texts(result: &Value) -> Vec<String> {
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| block["text"].as_str().unwrap().to_owned())
        .collect()
}

/// Sends `signal` (`TERM`, `KILL`, …) to process `pid` with kill(1), asserting it was sent.
pub(crate) fn kill(signal: &str, pid: u32) {
    let status = std::process::Command::new("kill")
        .args([format!("-{signal}"), pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -{signal} {pid}");
}
