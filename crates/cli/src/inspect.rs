//! `harness inspect`: the read-only live web view of a folder of session files.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use tokio::signal::unix::{SignalKind, signal};
use turnkit_core::CancellationToken;
use turnkit_inspect::Inspector;

pub(crate) fn run(dir: Option<PathBuf>, addr: SocketAddr) -> anyhow::Result<ExitCode> {
    let dir = match dir {
        Some(dir) => dir,
        None => crate::mcp::default_dir()?,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(async {
        let inspector = Inspector::open(&dir)?;
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("listening on {addr}"))?;
        let url = format!("http://{}/", listener.local_addr()?);
        crate::emit(&format!(
            "harness inspect: serving {} at {url}\n",
            dir.display()
        ))?;
        let stop = CancellationToken::new();
        let mut terminate = signal(SignalKind::terminate()).context("installing SIGTERM")?;
        let mut interrupt = signal(SignalKind::interrupt()).context("installing SIGINT")?;
        let on_signal = stop.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = terminate.recv() => {}
                _ = interrupt.recv() => {}
            }
            on_signal.cancel();
        });
        inspector.serve(listener, stop).await?;
        Ok(ExitCode::SUCCESS)
    })
}
