//! `harness inspect`: the read-only live web view of a folder of session files or of a
//! PostgreSQL store.

use std::net::SocketAddr;
use std::process::ExitCode;

use anyhow::Context;
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::task::AbortOnDropHandle;
use turnkit_core::{CancellationToken, SystemClock};
use turnkit_inspect::Inspector;
use turnkit_store_pg::{PgOptions, PgStore};

use crate::mcp::Store;

pub(crate) fn run(store: Store, addr: SocketAddr) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(async {
        let (inspector, source) = match store {
            Store::Jsonl(dir) => (Inspector::open(&dir)?, dir.display().to_string()),
            Store::Postgres(target) => {
                let options = PgOptions {
                    password: target.password.clone(),
                    ..PgOptions::default()
                };
                let pg = PgStore::connect(&target.url, std::sync::Arc::new(SystemClock), options)
                    .context("connecting to the PostgreSQL store")?;
                let source = format!("PostgreSQL schema {}", pg.options().schema);
                (Inspector::open_store(pg).await?, source)
            }
        };
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("listening on {addr}"))?;
        let url = format!("http://{}/", listener.local_addr()?);
        crate::emit(&format!("harness inspect: serving {source} at {url}\n"))?;
        let stop = CancellationToken::new();
        let mut terminate = signal(SignalKind::terminate()).context("installing SIGTERM")?;
        let mut interrupt = signal(SignalKind::interrupt()).context("installing SIGINT")?;
        let on_signal = stop.clone();
        // Held while serving, aborted when the command returns.
        let _signals = AbortOnDropHandle::new(tokio::spawn(async move {
            tokio::select! {
                _ = terminate.recv() => {}
                _ = interrupt.recv() => {}
            }
            on_signal.cancel();
        }));
        inspector.serve(listener, stop).await?;
        Ok(ExitCode::SUCCESS)
    })
}
