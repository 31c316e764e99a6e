//! `harness mcp`: one session served over stdio.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use tokio::signal::unix::{SignalKind, signal};

use harness_mcp::{FamilyConfigs, ResultShape, ServeOptions, SessionHost, SessionOptions};

/// The per-user data folder for session files.
fn default_dir() -> anyhow::Result<PathBuf> {
    if let Some(data) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(data).join("harness").join("sessions"));
    }
    let home = std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .context("no --dir given and neither XDG_DATA_HOME nor HOME is set")?;
    Ok(PathBuf::from(home)
        .join(".local")
        .join("share")
        .join("harness")
        .join("sessions"))
}

pub(crate) fn run(
    dir: Option<PathBuf>,
    session: Option<String>,
    config: Option<&PathBuf>,
    structured: bool,
) -> anyhow::Result<ExitCode> {
    let configs = match config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            let value: serde_json::Value = serde_json::from_str(&text)
                .with_context(|| format!("{}: not JSON", path.display()))?;
            FamilyConfigs::from_json(&value)
                .with_context(|| format!("{}: invalid configuration", path.display()))?
        }
        None => anyhow::bail!(
            "--config FILE.json is required: todo.allowParallelInProgress must be chosen \
             explicitly, e.g. {{\"todo\":{{\"allowParallelInProgress\":false}}}}"
        ),
    };
    let dir = match dir {
        Some(dir) => dir,
        None => default_dir()?,
    };
    let options = SessionOptions {
        dir,
        session,
        configs,
    };
    let serve = ServeOptions {
        shape: if structured {
            ResultShape::Structured
        } else {
            ResultShape::Text
        },
        ..ServeOptions::default()
    };
    // One thread: owed messages are committed when their response is written (see
    // `harness_mcp::serve`).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(async move {
        let host = SessionHost::open(&options)?;
        if host.created() {
            eprintln!("harness mcp: session {}", host.session_id());
        }
        // SIGTERM and SIGINT end the connection like a closed stdin: jobs are stopped and the
        // log is flushed before the process exits.
        let stop = serve.stop.clone();
        let mut terminate = signal(SignalKind::terminate()).context("listening for SIGTERM")?;
        let mut interrupt = signal(SignalKind::interrupt()).context("listening for SIGINT")?;
        tokio::spawn(async move {
            tokio::select! {
                _ = terminate.recv() => {}
                _ = interrupt.recv() => {}
            }
            stop.cancel();
        });
        harness_mcp::serve_stdio(host, serve).await?;
        anyhow::Ok(ExitCode::SUCCESS)
    })
}
