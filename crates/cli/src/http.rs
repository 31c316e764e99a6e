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
use turnkit_launch::{LaunchConfig, ServedLauncher};
use turnkit_mcp::http::{GeneratedToken, HttpOptions, HttpServer, SessionSource, Tokens};
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
    /// limited to; every request but `GET /healthz` must carry one (`Authorization: Bearer
    /// …`). Without it a random token is generated at start, printed, and written to a file
    /// in `--token-dir`.
    #[arg(
        long,
        value_name = "FILE",
        requires = "http",
        conflicts_with = "no_auth"
    )]
    pub(crate) token_file: Option<PathBuf>,
    /// Where the generated token's file is written (`mcp-http-ADDR-PORT.token`, mode 0600; the
    /// folder is made mode 0700). Default: `$XDG_RUNTIME_DIR/harness`, else
    /// `$XDG_STATE_HOME/harness`, else `~/.local/state/harness`.
    #[arg(long, value_name = "DIR", requires = "http", conflicts_with_all = ["token_file", "no_auth"])]
    pub(crate) token_dir: Option<PathBuf>,
    /// Serve without any token: every local user (and any page or proxy that reaches the
    /// port) can run commands as this user. Refused on a non-loopback address.
    #[arg(long, requires = "http")]
    pub(crate) no_auth: bool,
    /// A browser origin allowed besides loopback ones (`https://app.example`); repeatable.
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    pub(crate) allow_origin: Vec<String>,
    /// Seconds a session with no request in flight, no job running and no terminal whose
    /// program runs stays open before its lease is released (default 300).
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
    /// Seconds a client has, from a request's first byte, to send the request line and
    /// headers before its connection is closed (default 10; fractions allowed).
    #[arg(long, value_name = "SECONDS", requires = "http", value_parser = seconds)]
    pub(crate) header_timeout: Option<Duration>,
    /// Seconds a client has, from the end of a request's headers, to send its body before it
    /// is answered `408 body_timeout` and the connection closed (default 30).
    #[arg(long, value_name = "SECONDS", requires = "http", value_parser = seconds)]
    pub(crate) body_timeout: Option<Duration>,
    /// Seconds a kept-alive connection may sit idle between requests before it is closed
    /// (default 60).
    #[arg(long, value_name = "SECONDS", requires = "http", value_parser = seconds)]
    pub(crate) keep_alive_timeout: Option<Duration>,
    /// The most connections open at once (default 1024). When full, a new connection closes
    /// the oldest one that never carried an authenticated request, or is closed at once when
    /// every open one did.
    #[arg(long, value_name = "N", requires = "http", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_connections: Option<u32>,
    /// The most connections one token may hold (default 256); past it a request is answered
    /// `429 too_many_connections` and its connection closed.
    #[arg(long, value_name = "N", requires = "http", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_connections_per_token: Option<u32>,
    /// The most sessions one token may have open on this server at once (default 100); past
    /// it a request for another session is answered `429 too_many_sessions`.
    #[arg(long, value_name = "N", requires = "http", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_sessions_per_token: Option<u32>,
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
        // Reading and replaying a large log takes a while: not on a thread that serves
        // requests.
        tokio::task::spawn_blocking(move || SessionHost::open(&options))
            .await
            .map_err(|error| ServeError::Unusable(format!("opening the session failed: {error}")))?
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
    /// The host of `session`, opened (its log replayed, its jobs' leftovers stopped) on a
    /// blocking thread, not on one that serves requests; its lease watched: a lost lease, or
    /// one that must stop its work, fences the host (its jobs are stopped).
    async fn host(&self, session: Arc<PgSession>) -> Result<Arc<SessionHost>, ServeError> {
        let id = session.id().clone();
        let options = SessionOptions {
            session: Some(id.as_str().to_owned()),
            ..self.options.clone()
        };
        let mut lost = session.lease().lost_signal();
        let mut must_stop = session.lease().stop_signal();
        let stop_after = session.lease().stop_after();
        let ttl = session.lease().ttl();
        let host =
            tokio::task::spawn_blocking(move || SessionHost::open_in(&Opened(session), &options))
                .await
                .map_err(|error| {
                    ServeError::Unusable(format!("opening the session failed: {error}"))
                })??;
        let fenced = Arc::downgrade(&host);
        let done = self.done.clone();
        self.tasks.spawn(async move {
            let reason = tokio::select! {
                () = done.cancelled() => return,
                taken = lost.wait_for(|lost| *lost) => match taken {
                    Ok(_) => PersistenceError::Fenced(id.clone()).to_string(),
                    // The session was dropped, its lease released.
                    Err(_) => return,
                },
                stop = must_stop.wait_for(|stop| *stop) => match stop {
                    Ok(_) => format!(
                        "session {id}: the session store confirmed no lease renewal for \
                         {stop_after:?}, so this host stopped the session's jobs and \
                         terminals before its lease ({ttl:?}) could lapse and another host \
                         take the session; retry: the next request opens it again once the \
                         store answers"
                    ),
                    Err(_) => return,
                },
            };
            if let Some(host) = fenced.upgrade() {
                host.fence_because(reason).await;
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
        self.host(session).await
    }
}

/// Hands the sessions the reminder scanner claimed to the HTTP server (and to the launcher,
/// which starts the configured agent for what they owe).
struct Adopt {
    source: PgSource,
    server: HttpServer,
    launcher: Option<Arc<ServedLauncher>>,
}

impl Resume for Adopt {
    fn resume(&self, session: Arc<PgSession>) {
        let source = self.source.clone();
        let server = self.server.clone();
        let launcher = self.launcher.clone();
        // Joined on shutdown: a session handed over after the server stopped is shut down.
        self.source.tasks.spawn(async move {
            let id = session.id().clone();
            match source.host(session).await {
                Ok(host) => {
                    server.adopt(host.clone()).await;
                    if let Some(launcher) = launcher {
                        launcher.resumed(host).await;
                    }
                }
                Err(error) => tracing::warn!("mcp http: resuming session {id}: {error}"),
            }
        });
    }
}

#[expect(
    clippy::too_many_arguments,
    reason = "the parts of `harness mcp --http`, passed through as parsed"
)]
pub(crate) fn run(
    args: HttpArgs,
    addr: SocketAddr,
    store: Backing,
    options: SessionOptions,
    shape: ResultShape,
    walls: &[String],
    shutdown_grace: std::time::Duration,
    launch: Option<LaunchConfig>,
) -> anyhow::Result<ExitCode> {
    if args.no_auth && !addr.ip().is_loopback() {
        anyhow::bail!(
            "--no-auth serves without a token, on a loopback address only; {addr} is not one \
             (drop --no-auth: a token is generated)"
        );
    }
    let tokens = args.token_file.as_deref().map(Tokens::read).transpose()?;
    // Without a token file and without --no-auth a token is generated once the port is known.
    let generate = match (&tokens, args.no_auth) {
        (None, false) => Some(match args.token_dir.clone() {
            Some(dir) => dir,
            None => default_token_dir()?,
        }),
        _ => None,
    };
    let mut http_options = HttpOptions {
        shape,
        tokens,
        allowed_origins: args.allow_origin.clone(),
        idle: args
            .idle_release
            .map_or(turnkit_mcp::http::DEFAULT_IDLE, Duration::from_secs),
        ..HttpOptions::default()
    };
    let defaults = HttpOptions::default();
    http_options.header_timeout = args.header_timeout.unwrap_or(defaults.header_timeout);
    http_options.body_timeout = args.body_timeout.unwrap_or(defaults.body_timeout);
    http_options.keep_alive = args.keep_alive_timeout.unwrap_or(defaults.keep_alive);
    let count = |flag: Option<u32>, default: usize| flag.map_or(default, |n| n as usize);
    http_options.max_connections = count(args.max_connections, defaults.max_connections);
    http_options.max_connections_per_token = count(
        args.max_connections_per_token,
        defaults.max_connections_per_token,
    );
    http_options.max_sessions_per_token =
        count(args.max_sessions_per_token, defaults.max_sessions_per_token);
    raise_open_files(http_options.max_connections);
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
    if generate.is_none() {
        http_options.check_bind(addr)?;
    }
    // Every task of the command runs in `tasks`; once the server has stopped, `done` ends the
    // lease watchers and the command waits for them all before it exits.
    let tasks = TaskTracker::new();
    let done = CancellationToken::new();
    let stop = http_options.stop.clone();
    let mut generated: Option<GeneratedToken> = None;
    let generated_slot = &mut generated;
    let served = runtime.block_on(async move {
        let outcome = async {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("listening on {addr}"))?;
            let local = listener.local_addr()?;
            if let Some(dir) = generate {
                let name = format!("mcp-http-{}-{}.token", local.ip(), local.port());
                let token = GeneratedToken::create(&dir, &name)?;
                http_options.tokens = Some(token.tokens()?);
                eprintln!(
                    "harness mcp: token {} (in {}); send it as Authorization: Bearer <token>",
                    token.secret(),
                    token.path().display()
                );
                *generated_slot = Some(token);
            } else if http_options.tokens.is_none() {
                eprintln!(
                    "harness mcp: --no-auth: no token; anyone who reaches {local} can run \
                     commands as this user"
                );
            }
            let (server, pg, folder) = match store {
                Backing::Jsonl(dir) => {
                    std::fs::create_dir_all(&dir)
                        .with_context(|| format!("creating {}", dir.display()))?;
                    let source = JsonlSource {
                        options: SessionOptions {
                            dir: dir.clone(),
                            ..options
                        },
                    };
                    (
                        HttpServer::new(Arc::new(source), http_options),
                        None,
                        Some(dir),
                    )
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
                    (server, Some(source), None)
                }
            };
            let launcher = match launch {
                Some(launch) => {
                    let state = match &folder {
                        Some(dir) => ServedLauncher::folder_state(dir),
                        None => default_token_dir()
                            .unwrap_or_else(|_| std::env::temp_dir())
                            .join(format!("launch-{}", std::process::id())),
                    };
                    let url = format!("http://{local}");
                    eprintln!(
                        "harness mcp: a due reminder in a session no client holds launches {:?}",
                        launch.argv
                    );
                    Some(ServedLauncher::new(server.clone(), launch, url, state)?)
                }
                None => None,
            };
            if let (Some(launcher), Some(dir)) = (&launcher, folder) {
                let launcher = launcher.clone();
                let stop = stop.clone();
                tasks.spawn(async move { launcher.watch_folder(dir, LAUNCH_SCAN, stop).await });
            }
            for line in walls {
                eprintln!("{line}");
            }
            eprintln!("harness mcp: serving http://{local}/sessions/{{id}}/mcp");
            // Every instance runs the reminder scanner: a session no live instance holds whose
            // reminder is due is opened here, and its reminder owed to its next tool result.
            if let Some(source) = pg {
                let store = source.store.clone();
                let resume = Arc::new(Adopt {
                    source,
                    server: server.clone(),
                    launcher: launcher.clone(),
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
    });
    // The token dies with the server.
    if let Some(token) = generated
        && let Err(error) = token.remove()
    {
        tracing::warn!("removing {}: {error}", token.path().display());
    }
    served
}

/// How often a JSONL folder served over HTTP is looked at for due sessions when there is a
/// `launch` entry (a pass stats every session file, and reads the changed ones).
const LAUNCH_SCAN: Duration = Duration::from_secs(1);

/// A duration in seconds, fractions allowed (`0.5`), above zero.
fn seconds(text: &str) -> Result<Duration, String> {
    let value: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !(value > 0.0 && value <= 86_400.0) {
        return Err(format!("{text} is not between 0 and 86400 seconds"));
    }
    Ok(Duration::from_secs_f64(value))
}

/// Raises the soft limit of open files to the hard limit, so `connections` connections (and
/// the session files and jobs beside them) fit; says so when even the hard limit is short.
fn raise_open_files(connections: usize) {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let raised = Rlimit {
        current: limit.maximum,
        maximum: limit.maximum,
    };
    if limit.current != limit.maximum
        && let Err(error) = setrlimit(Resource::Nofile, raised)
    {
        tracing::debug!("raising the open-files limit: {error}");
    }
    let soft = getrlimit(Resource::Nofile).current;
    let wanted = connections as u64 + 256;
    if soft.is_some_and(|soft| soft < wanted) {
        tracing::warn!(
            "the open-files limit ({soft:?}) is below --max-connections + 256 ({wanted}): past \
             it, new connections wait until one closes"
        );
    }
}

/// Where a generated token's file goes by default: `$XDG_RUNTIME_DIR/harness` (a per-user
/// folder the system empties at logout), else `$XDG_STATE_HOME/harness`, else
/// `~/.local/state/harness`.
pub(crate) fn default_token_dir() -> anyhow::Result<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(runtime) = var("XDG_RUNTIME_DIR") {
        return Ok(PathBuf::from(runtime).join("harness"));
    }
    if let Some(state) = var("XDG_STATE_HOME") {
        return Ok(PathBuf::from(state).join("harness"));
    }
    let home = var("HOME").context(
        "no --token-file or --token-dir given and none of XDG_RUNTIME_DIR, XDG_STATE_HOME, \
         HOME is set",
    )?;
    Ok(PathBuf::from(home)
        .join(".local")
        .join("state")
        .join("harness"))
}
