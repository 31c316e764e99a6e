//! Launch on due in `harness mcp --http`: a reminder due in a session that the server does
//! not hold open (no client is using it) starts the configured agent, pointed at the
//! session's own URL with a token that reaches that session only.
//!
//! **Which sessions.** On a JSONL folder, [`ServedLauncher::watch_folder`] keeps the same due
//! index as `harness cron` (`<dir>/.harness-cron/index.json`) and looks at the due sessions
//! the server does not hold. On PostgreSQL the store's reminder scanner hands a due session
//! no live instance holds to the server (`HttpServer::adopt`), and
//! [`ServedLauncher::resumed`] is told of it. A session the server already holds is a
//! client's: its reminder is delivered by pull, never launched.
//!
//! **The launch.** The session is opened in the server (`HttpServer::session`), its due
//! reminders fired, the owed ones claimed (`mcp/launchClaimed`, flushed before anything
//! starts), and the command run with `{endpoint}` the session's URL and the environment
//! variable [`TOKEN_ENV`] a token granted for that session alone (revoked when the command
//! ends). The end is recorded in the session as the server holds it then.
//!
//! **Crashes.** While a launch runs, its OS lock `<state>/<launch id>.lock` is held; a claim
//! without an end whose lock nobody holds is reported as `mcp/launchUnknown` when the
//! session is next opened for a launch.

use std::collections::{BTreeMap, HashSet};
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use turnkit_core::{Clock, JsonlStore, SystemClock, lock};
use turnkit_mcp::http::HttpServer;
use turnkit_mcp::{ServeError, SessionHost};

use super::claim::{record_end_in, report_unknown_launches};
use super::config::{LaunchConfig, LaunchVars};
use super::cron::{DueIndex, LaunchLock, fresh_lock, settle_due, state_dir};
use super::run::run_launch;

/// The environment variable that carries the launched agent's token (reaching its session
/// only) under `harness mcp --http`.
pub const TOKEN_ENV: &str = "HARNESS_TOKEN";

/// The launches of one HTTP server.
pub struct ServedLauncher {
    server: HttpServer,
    launch: LaunchConfig,
    /// `http://ADDR`: a session's endpoint is `<url>/sessions/<id>/mcp`.
    url: String,
    /// The folder of the launch locks (mode 0700).
    state: PathBuf,
    running: Mutex<HashSet<String>>,
    tasks: TaskTracker,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for ServedLauncher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServedLauncher")
            .field("url", &self.url)
            .field("argv", &self.launch.argv)
            .finish_non_exhaustive()
    }
}

impl ServedLauncher {
    /// Launches for `server`, reached at `url` (`http://127.0.0.1:8080`); `state` holds the
    /// launch locks (`<dir>/.harness-cron` for a JSONL folder), created mode 0700.
    ///
    /// # Errors
    /// [`ServeError::Unusable`] when `state` cannot be created.
    pub fn new(
        server: HttpServer,
        launch: LaunchConfig,
        url: String,
        state: PathBuf,
    ) -> Result<Arc<Self>, ServeError> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&state)
            .map_err(|error| {
                ServeError::Unusable(format!("cannot create {}: {error}", state.display()))
            })?;
        Ok(Arc::new(Self {
            server,
            launch,
            url,
            state,
            running: Mutex::new(HashSet::new()),
            tasks: TaskTracker::new(),
            clock: Arc::new(SystemClock),
        }))
    }

    /// The folder of a JSONL store's launch locks and due index.
    #[must_use]
    pub fn folder_state(dir: &std::path::Path) -> PathBuf {
        state_dir(dir)
    }

    /// Looks at the JSONL folder `dir` every `interval` until `stop`, launching for every due
    /// session the server does not hold; then waits for the launches still running.
    pub async fn watch_folder(
        self: Arc<Self>,
        dir: PathBuf,
        interval: Duration,
        stop: CancellationToken,
    ) {
        let store = match JsonlStore::new(&dir, self.clock.clone()) {
            Ok(store) => store,
            Err(error) => {
                tracing::warn!("launch: cannot watch {}: {error}", dir.display());
                return;
            }
        };
        let mut index = DueIndex::load(&dir);
        loop {
            let now = self.clock.now_millis();
            if index.refresh(&store, now) {
                index.save(&dir);
            }
            for id in index.due(now) {
                if self.full() {
                    break;
                }
                if !self.server.holds(&id).await {
                    self.clone().begin(&id, None).await;
                }
            }
            tokio::select! {
                () = stop.cancelled() => break,
                () = self.clock.sleep(interval) => {}
            }
        }
        self.wait().await;
    }

    /// A session the reminder scanner opened as `host` and handed to the server: if the
    /// server serves that very host (no client had the session), its owed reminders are
    /// launched for.
    pub async fn resumed(self: Arc<Self>, host: Arc<SessionHost>) {
        let id = host.session_id().to_owned();
        self.begin(&id, Some(host)).await;
    }

    /// Waits for the launches still running (each ends by its timeout at the latest).
    pub async fn wait(&self) {
        self.tasks.close();
        self.tasks.wait().await;
    }

    fn full(&self) -> bool {
        lock(&self.running).len() >= self.launch.max_concurrent
    }

    /// Opens `id` in the server (or, with `adopted`, checks the server serves that host),
    /// reports dead claims, fires what is due, claims and starts the launch in the
    /// background.
    async fn begin(self: Arc<Self>, id: &str, adopted: Option<Arc<SessionHost>>) {
        if self.full() || lock(&self.running).contains(id) {
            return;
        }
        let host = match self.server.session(id).await {
            Ok(host) => host,
            Err(refusal) => {
                tracing::debug!(session = id, "launch: not opened: {}", refusal.message);
                return;
            }
        };
        if adopted.is_some_and(|a| !Arc::ptr_eq(&a, &host)) {
            return;
        }
        let state = self.state.clone();
        if let Err(error) =
            report_unknown_launches(&host, &|launch| LaunchLock::held(&state, launch)).await
        {
            tracing::warn!(session = id, "launch: {error}");
        }
        settle_due(&host, &self.clock).await;
        // The launch's lock is taken before its claim: a claim is never left without one.
        let Some((launch, launch_lock)) = fresh_lock(&self.state) else {
            return;
        };
        let Some(claim) = host.claim_owed_reminders(&launch).await else {
            drop(launch_lock);
            LaunchLock::remove(&self.state, &launch);
            return;
        };
        lock(&self.running).insert(id.to_owned());
        let me = self.clone();
        let id = id.to_owned();
        self.tasks.spawn(async move {
            me.run(&id, &claim.launch, &claim.prompt).await;
            drop(launch_lock);
            LaunchLock::remove(&me.state, &claim.launch);
            lock(&me.running).remove(&id);
        });
    }

    /// Runs one claimed launch with a token for its session, and records its end.
    async fn run(&self, id: &str, launch: &str, prompt: &str) {
        let endpoint = format!("{}/sessions/{id}/mcp", self.url);
        let grant = match self.server.grant_session(id) {
            Ok(grant) => grant,
            Err(error) => {
                tracing::warn!(session = id, "launch: no token for the agent: {error}");
                return;
            }
        };
        let argv = self.launch.expand(&LaunchVars {
            session: id,
            prompt,
            endpoint: &endpoint,
        });
        let env = BTreeMap::from([(TOKEN_ENV.to_owned(), grant.secret().to_owned())]);
        tracing::info!(session = id, launch, "launch: starting the agent");
        let outcome = run_launch(&self.launch, &argv, &env, &self.clock).await;
        drop(grant);
        tracing::info!(session = id, launch, status = %outcome.status, "launch: the agent ended");
        // The session may have been released meanwhile: the server opens it again.
        for _ in 0..600 {
            match self.server.session(id).await {
                Ok(host) => {
                    match record_end_in(host.session_log(), launch, outcome.clone()).await {
                        Ok(()) => return,
                        Err(error) => {
                            tracing::debug!(session = id, "launch: end not recorded yet: {error}")
                        }
                    }
                }
                Err(refusal) => tracing::debug!(
                    session = id,
                    "launch: end not recorded yet: {}",
                    refusal.message
                ),
            }
            self.clock.sleep(Duration::from_millis(100)).await;
        }
        tracing::warn!(
            session = id,
            launch,
            "launch: could not record the launch's end"
        );
    }
}
