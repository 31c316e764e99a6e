//! `harness inspect`: the read-only live web view of a folder of session files or of a
//! PostgreSQL store.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::task::AbortOnDropHandle;
use turnkit_core::{CancellationToken, SystemClock};
use turnkit_inspect::{Access, Inspector};
use turnkit_mcp::http::Tokens;
use turnkit_store_pg::{PgOptions, PgStore};

use crate::mcp::Store;

/// Who may read the inspector (`harness inspect` options).
#[derive(clap::Args, Debug)]
pub(crate) struct AccessArgs {
    /// A token file in the format of `harness mcp --token-file`; its tokens limited to no
    /// session prefix open the inspector. Default: a random token, printed in the URL.
    #[arg(long, value_name = "FILE", conflicts_with = "no_auth")]
    token_file: Option<PathBuf>,
    /// Serve without a token (every local user can then read every session); refused for a
    /// non-loopback address.
    #[arg(long)]
    no_auth: bool,
}

impl AccessArgs {
    /// The access and the URL query that opens it (`?token=…` for a generated token).
    fn access(&self, addr: SocketAddr) -> anyhow::Result<(Access, String)> {
        if self.no_auth {
            return Ok((Access::open(addr)?, String::new()));
        }
        if let Some(path) = &self.token_file {
            // The server's own parser: one format, read one way.
            let tokens = Tokens::read(path)?.unlimited();
            if tokens.is_empty() {
                anyhow::bail!(
                    "the token file {} holds no token without session prefixes (the inspector \
                     shows every session, so it takes an unlimited token only)",
                    path.display()
                );
            }
            return Ok((Access::with_tokens(tokens, addr)?, String::new()));
        }
        let token = Access::generate_token()?;
        let query = format!("?token={token}");
        Ok((Access::with_tokens(vec![token], addr)?, query))
    }
}

pub(crate) fn run(store: Store, addr: SocketAddr, access: &AccessArgs) -> anyhow::Result<ExitCode> {
    let (access, query) = access.access(addr)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let served = runtime.block_on(async {
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
        let local = listener.local_addr()?;
        let mut lines = format!("harness inspect: serving {source} at http://{local}/{query}\n");
        if !access.requires_token() {
            lines.push_str("harness inspect: no token: every local user can read every session\n");
        } else if query.is_empty() {
            lines.push_str("harness inspect: open it with ?token=<a token of the token file>\n");
        }
        if !local.ip().is_loopback() {
            lines.push_str(&format!(
                "harness inspect: {local} is reachable from other machines; every request needs \
                 the token\n"
            ));
        }
        crate::emit(&lines)?;
        let inspector = inspector.with_access(access);
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
    });
    // Connections still open once serving ended (a page that does not read its answer) and
    // reads still under way end with the runtime; none may hold the process past the bound.
    runtime.shutdown_timeout(turnkit_inspect::SHUTDOWN_BOUND);
    served
}
