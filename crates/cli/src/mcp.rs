//! `harness mcp`: one session served over stdio.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use turnkit_core::{
    PersistenceError, RawEvent, Session, SessionHeader, SessionId, SessionStore, StoreError,
    SystemClock,
};
use turnkit_store_pg::{PgSession, PgStore};

use crate::store_password::{PasswordEnv, PgTarget};

use turnkit_mcp::{ResultShape, ServeOptions, SessionHost, SessionOptions};

/// Where the served session is kept (`--store`).
pub(crate) enum Store {
    /// JSONL files in this folder.
    Jsonl(PathBuf),
    /// A PostgreSQL database at this URL, with the password found for it.
    Postgres(PgTarget),
}

impl Store {
    /// The store of `--dir`/`--store` ([`StoreKind::of`] says what a `--store` value names);
    /// for PostgreSQL, with its password found as [`PgTarget::resolve`] says.
    ///
    /// # Errors
    /// A `--store` value [`StoreKind::of`] refuses, `--store-password-file` with a folder,
    /// or a password that cannot be read.
    pub(crate) fn choose(
        dir: Option<PathBuf>,
        store: Option<&str>,
        password_file: Option<&Path>,
    ) -> anyhow::Result<Self> {
        let Some(store) = store else {
            return Ok(Self::Jsonl(match dir {
                Some(dir) => dir,
                None => default_dir()?,
            }));
        };
        Ok(match StoreKind::of(store)? {
            StoreKind::Postgres => Self::Postgres(PgTarget::resolve(
                store.to_owned(),
                password_file,
                &PasswordEnv::current(),
            )?),
            StoreKind::Folder if password_file.is_some() => {
                anyhow::bail!("--store-password-file applies to a PostgreSQL --store only")
            }
            StoreKind::Folder => Self::Jsonl(PathBuf::from(store)),
        })
    }
}

/// What a `--store` value names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoreKind {
    /// A PostgreSQL database: a `postgres://` or `postgresql://` URL, or a libpq key-value
    /// connection string (`host=/run/postgresql dbname=harness user=harness`).
    Postgres,
    /// An existing folder of JSONL session files.
    Folder,
}

impl StoreKind {
    /// Reads `value`, in this order: a `postgres://`/`postgresql://` URL; another `scheme://`
    /// (refused); an existing folder (so a folder named `a=b` is still a folder); a string
    /// whose first word is `keyword=` (a libpq key-value connection string, parsed as the
    /// store parses it, so an unknown keyword or an unclosed quote is refused here).
    ///
    /// # Errors
    /// `--store <value>: unknown store; …` for another URL scheme, `--store <value>: not a
    /// PostgreSQL connection string (<why>); …` for a key-value string that does not parse,
    /// and `--store <value>: no such folder, and not a PostgreSQL connection string; …` for
    /// anything else (a folder that does not exist yet is created by `--dir`, not
    /// `--store`).
    pub(crate) fn of(value: &str) -> anyhow::Result<Self> {
        const GIVE: &str = "give a postgres:// or postgresql:// URL, a PostgreSQL connection \
                            string (host=... dbname=... user=...), or an existing folder for \
                            JSONL files";
        if value.starts_with("postgres://") || value.starts_with("postgresql://") {
            return Ok(Self::Postgres);
        }
        if value.contains("://") {
            anyhow::bail!("--store {value}: unknown store; {GIVE}");
        }
        if Path::new(value).is_dir() {
            return Ok(Self::Folder);
        }
        if key_value_shaped(value) {
            return match value.parse::<tokio_postgres::Config>() {
                Ok(_) => Ok(Self::Postgres),
                Err(error) => {
                    let why = std::error::Error::source(&error)
                        .map_or_else(|| error.to_string(), ToString::to_string);
                    anyhow::bail!(
                        "--store {value}: not a PostgreSQL connection string ({why}); {GIVE}"
                    )
                }
            };
        }
        anyhow::bail!(
            "--store {value}: no such folder, and not a PostgreSQL connection string; {GIVE} \
             (--dir creates its folder)"
        )
    }
}

/// Whether `value` starts as a libpq key-value connection string does: a keyword (letters,
/// digits, `_`), optional spaces, `=`.
fn key_value_shaped(value: &str) -> bool {
    let value = value.trim_start();
    let keyword = value
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(value, |end| &value[..end]);
    !keyword.is_empty() && value[keyword.len()..].trim_start().starts_with('=')
}

impl Store {
    /// What no job may reach: the folder of session files, or the PostgreSQL store's password
    /// files and Unix socket folders.
    fn private_paths(&self) -> Vec<PathBuf> {
        match self {
            Self::Jsonl(dir) => vec![dir.clone()],
            Self::Postgres(target) => {
                let mut paths = target.files.clone();
                paths.extend(turnkit_store_pg::url_socket_folders(&target.url));
                paths
            }
        }
    }
}

/// A [`PgStore`] whose sessions report a lost lease (another host took the session) on
/// `lost`, so the server can stop the session's agent and jobs.
struct Leased {
    store: PgStore,
    lost: mpsc::UnboundedSender<SessionId>,
    /// The command's tasks: each session's lease watcher runs in it until `done`.
    tasks: TaskTracker,
    /// Cancelled once the server has stopped: the watchers end.
    done: CancellationToken,
}

impl Leased {
    fn watch(&self, session: Arc<PgSession>) -> Arc<dyn Session> {
        let mut signal = session.lease().lost_signal();
        let id = session.id().clone();
        let lost = self.lost.clone();
        let done = self.done.clone();
        self.tasks.spawn(async move {
            tokio::select! {
                () = done.cancelled() => {}
                // Err: the session was dropped, its lease released.
                taken = signal.wait_for(|lost| *lost) => {
                    if taken.is_ok() {
                        let _ = lost.send(id);
                    }
                }
            }
        });
        session
    }
}

impl SessionStore for Leased {
    fn create(&self, header: SessionHeader) -> Result<Arc<dyn Session>, StoreError> {
        let session = futures::executor::block_on(self.store.create_session(header))?;
        Ok(self.watch(session))
    }

    fn open(&self, id: &SessionId) -> Result<Arc<dyn Session>, StoreError> {
        let session = futures::executor::block_on(self.store.open_session(id))?;
        Ok(self.watch(session))
    }

    fn list(&self) -> Vec<SessionId> {
        self.store.list()
    }

    /// Not used by the server (a fenced flush still fences it).
    fn create_with_events(
        &self,
        header: SessionHeader,
        events: Vec<RawEvent>,
    ) -> Result<Arc<dyn Session>, StoreError> {
        self.store.create_with_events(header, events)
    }
}

/// The per-user data folder for session files.
pub(crate) fn default_dir() -> anyhow::Result<PathBuf> {
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

#[expect(
    clippy::too_many_arguments,
    reason = "the flags of `harness mcp`, passed through as parsed"
)]
pub(crate) fn run(
    store: Store,
    session: Option<String>,
    config: Option<&PathBuf>,
    structured: bool,
    http: crate::http::HttpArgs,
    walls: crate::walls::Switch,
    shutdown_grace: std::time::Duration,
    job_task_ttl: Option<std::time::Duration>,
) -> anyhow::Result<ExitCode> {
    let configs = match config {
        Some(path) => crate::config::read_config(path)?,
        None => anyhow::bail!(
            "--config FILE.json is required: todo.allowParallelInProgress must be chosen \
             explicitly, e.g. {{\"todo\":{{\"allowParallelInProgress\":false}}}}"
        ),
    };
    // Served over HTTP, every session is a tenant: its jobs are walled off from the others
    // and from the server.
    let (configs, walls) = match (&http.http, config) {
        (Some(_), Some(path)) => {
            // The token file, or the folder of generated ones.
            let tokens = match (&http.token_file, &http.token_dir, http.no_auth) {
                (Some(file), _, _) => vec![file.clone()],
                (None, Some(dir), _) => vec![dir.clone()],
                (None, None, false) => vec![crate::http::default_token_dir()?],
                (None, None, true) => Vec::new(),
            };
            let token_files: Vec<&Path> = tokens.iter().map(PathBuf::as_path).collect();
            let files = crate::walls::server_files(store.private_paths(), path, &token_files);
            crate::walls::wall(configs, &files, walls)?
        }
        _ => (configs, Vec::new()),
    };
    let options = SessionOptions {
        dir: match &store {
            Store::Jsonl(dir) => dir.clone(),
            Store::Postgres(_) => PathBuf::new(),
        },
        session,
        configs,
        job_task_ttl,
    };
    let serve = ServeOptions {
        shape: if structured {
            ResultShape::Structured
        } else {
            ResultShape::Text
        },
        ..ServeOptions::default()
    };
    if let Some(addr) = http.http {
        // A due reminder in a session no client holds starts the configured agent.
        let launch = config
            .map(|path| crate::config::read_launch(path))
            .transpose()?
            .flatten();
        let store = match store {
            Store::Jsonl(dir) => crate::http::Backing::Jsonl(dir),
            Store::Postgres(target) => crate::http::Backing::Postgres(target),
        };
        return crate::http::run(
            http,
            addr,
            store,
            options,
            serve.shape,
            &walls,
            shutdown_grace,
            launch,
        );
    }
    // One thread: owed messages are committed when their response is written (see
    // `turnkit_mcp::serve`).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    // Every task of the command runs in `tasks` until `done` (the server has stopped); the
    // command waits for them before it exits.
    let tasks = TaskTracker::new();
    let done = CancellationToken::new();
    runtime.block_on(async move {
        let outcome = async {
            let opened = match store {
                Store::Jsonl(_) => SessionHost::open(&options),
                Store::Postgres(target) => {
                    // The scanner of any host finds this session's due reminders by the index rows
                    // the families' batches imply (turnkit-families names them).
                    let pg = PgStore::connect(&target.url, Arc::new(SystemClock), target.options())
                        .context("connecting to the PostgreSQL store")?;
                    let (lost, mut lost_rx) = mpsc::unbounded_channel();
                    let leased = Leased {
                        store: pg,
                        lost,
                        tasks: tasks.clone(),
                        done: done.clone(),
                    };
                    let host = match SessionHost::open_in(&leased, &options) {
                        Ok(host) => host,
                        Err(error) => return unavailable(error, &options, serve).await,
                    };
                    // Another host took the session: stop its agent and jobs; tool calls now
                    // answer with the fenced error.
                    let fenced = host.clone();
                    let stopped = done.clone();
                    tasks.spawn(async move {
                        tokio::select! {
                            () = stopped.cancelled() => {}
                            Some(id) = lost_rx.recv() => {
                                fenced.fence(&PersistenceError::Fenced(id)).await;
                            }
                        }
                    });
                    Ok(host)
                }
            };
            let host = match opened {
                Ok(host) => host,
                Err(error) => return unavailable(error, &options, serve).await,
            };
            if host.created() {
                eprintln!("harness mcp: session {}", host.session_id());
            }
            // SIGTERM and SIGINT end the connection like a closed stdin: jobs are stopped and the
            // log is flushed before the process exits, within `shutdown_grace`.
            crate::shutdown::on_signal(&tasks, serve.stop.clone(), done.clone(), shutdown_grace)?;
            turnkit_mcp::serve_stdio(host, serve).await?;
            anyhow::Ok(ExitCode::SUCCESS)
        }
        .await;
        done.cancel();
        tasks.close();
        tasks.wait().await;
        outcome
    })
}

/// Serves a session that could not be opened because another server holds it: the reason
/// goes to standard error at once and to the client (instructions, every tool call) until it
/// disconnects; then the command fails. Any other error stops the command at once.
async fn unavailable(
    error: turnkit_mcp::ServeError,
    options: &SessionOptions,
    serve: ServeOptions,
) -> anyhow::Result<ExitCode> {
    let session = options.session.as_deref().unwrap_or("(new)");
    let Some(reason) = turnkit_mcp::unavailable_reason(session, &error) else {
        return Err(error.into());
    };
    eprintln!("harness: {error}");
    let definitions =
        turnkit_families::catalog(&options.configs, turnkit_families::ChildrenMode::Without)?;
    turnkit_mcp::serve_unavailable_stdio(reason, &definitions, serve).await?;
    Ok(ExitCode::FAILURE)
}
