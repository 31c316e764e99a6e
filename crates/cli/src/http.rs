//! `harness mcp --http ADDR`: every session of the store served over streamable HTTP, one URL
//! per session (`/sessions/{id}/mcp`); with PostgreSQL, several instances share the store.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use async_trait::async_trait;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use turnkit_core::{
    PersistenceError, RawEvent, Session, SessionHeader, SessionId, SessionStore, StoreError,
    SystemClock,
};
use turnkit_mcp::http::{HttpOptions, HttpServer, SessionSource, Tokens};
use turnkit_mcp::{ResultShape, ServeError, SessionHost, SessionOptions};
use turnkit_store_pg::{PgSession, PgStore, ReminderScanner, Resume, ScanOptions};

/// Where the sessions are kept.
pub(crate) enum Backing {
    /// JSONL files in this folder.
    Jsonl(PathBuf),
    /// A PostgreSQL database at this URL, with its password.
    Postgres(crate::store_password::PgTarget),
}

/// The options of `harness mcp` that apply to `--http` only.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct HttpArgs {
    /// Serve every session of the store over MCP's streamable HTTP transport at this address
    /// (`127.0.0.1:8080`; port 0 picks a free one), one URL per session:
    /// `http://ADDR/sessions/{id}/mcp`. The listening URL is printed to stderr.
    #[arg(long, value_name = "ADDR", conflicts_with = "session")]
    pub(crate) http: Option<SocketAddr>,
    /// Bearer tokens, one a line, each optionally followed by the session-id prefixes it is
    /// limited to; every request must carry one (`Authorization: Bearer …`). Required for a
    /// non-loopback address.
    #[arg(long, value_name = "FILE", requires = "http")]
    pub(crate) token_file: Option<PathBuf>,
    /// A browser origin allowed besides loopback ones (`https://app.example`); repeatable.
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    pub(crate) allow_origin: Vec<String>,
    /// Seconds a session with no request in flight and no job running stays open before its
    /// lease is released (default 300).
    #[arg(long, value_name = "SECONDS", requires = "http")]
    pub(crate) idle_release: Option<u64>,
    /// PostgreSQL only: seconds a lease lives without renewal, how long the sessions of an
    /// instance that died stay unreachable (default 30).
    #[arg(long, value_name = "SECONDS", requires = "http")]
    pub(crate) lease_ttl: Option<u64>,
    /// PostgreSQL only: this instance's host id, written as the owner of its leases and named
    /// in `session_owned` refusals; unique per process (default `<hostname>-<pid>-<start>`).
    #[arg(long, value_name = "ID", requires = "http")]
    pub(crate) host_id: Option<String>,
    /// Threads serving HTTP requests and tool calls (default 1). One thread answers a call
    /// fastest (no hand-over between threads; the store's writes run on threads of their
    /// own); more spread many concurrent clients over cores (`docs/deployment.md` has the
    /// figures).
    #[arg(long, value_name = "N", requires = "http", value_parser = clap::value_parser!(u16).range(1..))]
    pub(crate) workers: Option<u16>,
}

/// A store holding one session already opened: what [`SessionHost::open_in`] is given for a
/// session the PostgreSQL store opened asynchronously.
struct Opened(Arc<dyn Session>);

impl SessionStore for Opened {
    fn create(&self, header: SessionHeader) -> Result<Arc<dyn Session>, StoreError> {
        Err(StoreError::AlreadyExists(header.id))
    }

    fn open(&self, _id: &SessionId) -> Result<Arc<dyn Session>, StoreError> {
        Ok(self.0.clone())
    }

    fn list(&self) -> Vec<SessionId> {
        Vec::new()
    }

    fn create_with_events(
        &self,
        header: SessionHeader,
        _events: Vec<RawEvent>,
    ) -> Result<Arc<dyn Session>, StoreError> {
        Err(StoreError::AlreadyExists(header.id))
    }
}

/// Sessions from JSONL files in one folder.
struct JsonlSource {
    options: SessionOptions,
}

#[async_trait]
impl SessionSource for JsonlSource {
    async fn open(&self, id: &str) -> Result<Arc<SessionHost>, ServeError> {
        let options = SessionOptions {
            session: Some(id.to_owned()),
            ..self.options.clone()
        };
        SessionHost::open(&options)
    }
}

/// Sessions from PostgreSQL: opening takes the session's lease (refused while another live
/// instance holds it); a lost lease fences the session's host.
#[derive(Clone)]
struct PgSource {
    store: PgStore,
    options: SessionOptions,
    /// The command's tasks: each session's lease watcher, and each session the scanner hands
    /// over, runs in it.
    tasks: TaskTracker,
    /// Cancelled once the server has stopped: the lease watchers end.
    done: CancellationToken,
}

impl PgSource {
    fn host(&self, session: Arc<PgSession>) -> Result<Arc<SessionHost>, ServeError> {
        let id = session.id().clone();
        let options = SessionOptions {
            session: Some(id.as_str().to_owned()),
            ..self.options.clone()
        };
        let mut lost = session.lease().lost_signal();
        let host = SessionHost::open_in(&Opened(session), &options)?;
        let fenced = Arc::downgrade(&host);
        let done = self.done.clone();
        self.tasks.spawn(async move {
            let taken = tokio::select! {
                () = done.cancelled() => return,
                taken = lost.wait_for(|lost| *lost) => taken.is_ok(),
            };
            // Not taken: the session was dropped, its lease released.
            if taken && let Some(host) = fenced.upgrade() {
                host.fence(&PersistenceError::Fenced(id)).await;
            }
        });
        Ok(host)
    }
}

#[async_trait]
impl SessionSource for PgSource {
    async fn open(&self, id: &str) -> Result<Arc<SessionHost>, ServeError> {
        let id = SessionId::from(id);
        let session = match self.store.open_session(&id).await {
            Err(StoreError::NotFound(_)) => {
                match self
                    .store
                    .create_session(SessionHeader::new(id.clone()))
                    .await
                {
                    // Another instance created it meanwhile.
                    Err(StoreError::AlreadyExists(_)) => self.store.open_session(&id).await?,
                    other => other?,
                }
            }
            other => other?,
        };
        self.host(session)
    }
}

/// Hands the sessions the reminder scanner claimed to the HTTP server.
struct Adopt {
    source: PgSource,
    server: HttpServer,
}

impl Resume for Adopt {
    fn resume(&self, session: Arc<PgSession>) {
        let source = self.source.clone();
        let server = self.server.clone();
        // Joined on shutdown: a session handed over after the server stopped is shut down.
        self.source.tasks.spawn(async move {
            let id = session.id().clone();
            match source.host(session) {
                Ok(host) => server.adopt(host).await,
                Err(error) => tracing::warn!("mcp http: resuming session {id}: {error}"),
            }
        });
    }
}

pub(crate) fn run(
    args: HttpArgs,
    addr: SocketAddr,
    store: Backing,
    options: SessionOptions,
    shape: ResultShape,
    shutdown_grace: std::time::Duration,
) -> anyhow::Result<ExitCode> {
    let tokens = args.token_file.as_deref().map(Tokens::read).transpose()?;
    let http_options = HttpOptions {
        shape,
        tokens,
        allowed_origins: args.allow_origin.clone(),
        idle: args
            .idle_release
            .map_or(turnkit_mcp::http::DEFAULT_IDLE, Duration::from_secs),
        ..HttpOptions::default()
    };
    let runtime = match args.workers.unwrap_or(1) {
        1 => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        n => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(usize::from(n))
            .enable_all()
            .build(),
    }
    .context("starting the runtime")?;
    http_options.check_bind(addr)?;
    // Every task of the command runs in `tasks`; once the server has stopped, `done` ends the
    // lease watchers and the command waits for them all before it exits.
    let tasks = TaskTracker::new();
    let done = CancellationToken::new();
    let stop = http_options.stop.clone();
    runtime.block_on(async move {
        let outcome = async {
            let (server, pg) = match store {
                Backing::Jsonl(dir) => {
                    std::fs::create_dir_all(&dir)
                        .with_context(|| format!("creating {}", dir.display()))?;
                    let source = JsonlSource {
                        options: SessionOptions { dir, ..options },
                    };
                    (HttpServer::new(Arc::new(source), http_options), None)
                }
                Backing::Postgres(target) => {
                    let mut pg_options = target.options();
                    if let Some(ttl) = args.lease_ttl {
                        pg_options.lease_ttl = Duration::from_secs(ttl.max(1));
                    }
                    if let Some(host) = args.host_id.clone() {
                        pg_options.host = host;
                    }
                    let pg = PgStore::connect(&target.url, Arc::new(SystemClock), pg_options)
                        .context("connecting to the PostgreSQL store")?;
                    let source = PgSource {
                        store: pg,
                        options,
                        tasks: tasks.clone(),
                        done: done.clone(),
                    };
                    let server = HttpServer::new(Arc::new(source.clone()), http_options);
                    (server, Some(source))
                }
            };
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("listening on {addr}"))?;
            let local = listener.local_addr()?;
            eprintln!("harness mcp: serving http://{local}/sessions/{{id}}/mcp");
            // Every instance runs the reminder scanner: a session no live instance holds whose
            // reminder is due is opened here, and its reminder owed to its next tool result.
            if let Some(source) = pg {
                let store = source.store.clone();
                let resume = Arc::new(Adopt {
                    source,
                    server: server.clone(),
                });
                let scanner = Arc::new(ReminderScanner::new(store, resume, ScanOptions::default()));
                let stop = stop.clone();
                tasks.spawn(async move { scanner.run(stop).await });
            }
            crate::shutdown::on_signal(&tasks, stop.clone(), stop.clone(), shutdown_grace)?;
            server.serve(listener).await?;
            anyhow::Ok(ExitCode::SUCCESS)
        }
        .await;
        // After a failure too: the scanner and the signal task stop.
        stop.cancel();
        done.cancel();
        tasks.close();
        tasks.wait().await;
        outcome
    })
}
