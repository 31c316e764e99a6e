//! `harness cron`'s loop over a JSONL session folder: find the sessions with a reminder due
//! that no client holds open, and launch the configured agent for each, at most once per
//! occurrence.
//!
//! **The due index.** `<dir>/.harness-cron/index.json` keeps, per session file, its length,
//! modification time and the earliest instant something is due in it (a reminder's target,
//! or "now" for a reminder already owed or a launch claimed without an end). A pass stats
//! every file and reads only the ones that changed since the index saw them, so an idle folder
//! of 10,000 sessions costs 10,000 `stat`s, not 10,000 replays.
//!
//! **Who delivers.** A session file held by a live `harness mcp` (its OS lock) has a client:
//! that server delivers the reminder by pull, and the cron leaves it alone. Otherwise the cron
//! opens the session, lets its schedule runtime fire what is due, claims the owed reminders
//! (`mcp/launchClaimed`, flushed before anything starts), releases the session so the agent's
//! own `harness mcp --dir {endpoint} --session {session}` can open it, and runs the command.
//! Its end is recorded once the session is free again.
//!
//! **Crashes.** While a launch runs, the cron holds an OS lock on
//! `<dir>/.harness-cron/<launch id>.lock`. A claim without an end whose lock nobody holds
//! belonged to a cron that died: it is recorded as `mcp/launchUnknown` and reported to the
//! model once, and never started again.

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use turnkit_core::{Clock, JsonlStore, SessionId, SessionStore, StoreError, SystemClock, lock};
use turnkit_families::FamiliesConfig;
use turnkit_schedule::domain::ScheduleFold;

use turnkit_mcp::{ServeError, SessionHost, SessionOptions};

use super::claim::{fresh_launch_id, record_end, report_unknown_launches};
use super::config::{LaunchConfig, LaunchVars};
use super::record::open_claims;
use super::run::run_launch;

/// How `harness cron` runs.
#[derive(Clone, Debug)]
pub struct CronOptions {
    /// The folder of session files (`<id>.jsonl`).
    pub dir: PathBuf,
    /// The families' configuration the sessions are opened with (the same as `harness mcp`'s).
    pub configs: FamiliesConfig,
    /// What is started for a due reminder.
    pub launch: LaunchConfig,
    /// The time between two passes over the folder.
    pub interval: Duration,
}

/// What the index knows of one session file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    len: u64,
    mtime_ns: i128,
    /// The earliest instant something is due (epoch ms), `None`: nothing.
    due: Option<i64>,
}

/// The due index of a folder (see the module documentation).
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct DueIndex {
    sessions: BTreeMap<String, Entry>,
}

/// The folder of the index and the launch locks (mode 0700).
pub(crate) fn state_dir(dir: &Path) -> PathBuf {
    dir.join(".harness-cron")
}

impl DueIndex {
    pub(crate) fn load(dir: &Path) -> Self {
        std::fs::read(state_dir(dir).join("index.json"))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    pub(crate) fn save(&self, dir: &Path) {
        let path = state_dir(dir).join("index.json");
        let tmp = state_dir(dir).join("index.json.tmp");
        let written = serde_json::to_vec(self)
            .map_err(std::io::Error::other)
            .and_then(|bytes| std::fs::write(&tmp, bytes))
            .and_then(|()| std::fs::rename(&tmp, &path));
        if let Err(error) = written {
            tracing::warn!("harness cron: could not save the due index: {error}");
        }
    }

    /// Stats every session file and reads the changed ones; forgets removed ones. Returns
    /// whether anything changed.
    pub(crate) fn refresh(&mut self, store: &JsonlStore, now: i64) -> bool {
        let dir = store.dir();
        let Ok(entries) = std::fs::read_dir(dir) else {
            return false;
        };
        let mut seen = HashSet::new();
        let mut changed = false;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".jsonl")) else {
                continue;
            };
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            seen.insert(id.to_owned());
            let mtime_ns = i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
            if self
                .sessions
                .get(id)
                .is_some_and(|e| e.len == meta.len() && e.mtime_ns == mtime_ns)
            {
                continue;
            }
            match due_of(store, id, now) {
                Some(due) => {
                    self.sessions.insert(
                        id.to_owned(),
                        Entry {
                            len: meta.len(),
                            mtime_ns,
                            due,
                        },
                    );
                    changed = true;
                }
                // Held open by a server (it delivers), or unreadable: looked at again next pass.
                None => {
                    changed |= self.sessions.remove(id).is_some();
                }
            }
        }
        let before = self.sessions.len();
        self.sessions.retain(|id, _| seen.contains(id));
        changed || before != self.sessions.len()
    }

    /// The sessions with something due at `now`, earliest first.
    pub(crate) fn due(&self, now: i64) -> Vec<String> {
        let mut due: Vec<(i64, &String)> = self
            .sessions
            .iter()
            .filter_map(|(id, e)| e.due.filter(|d| *d <= now).map(|d| (d, id)))
            .collect();
        due.sort();
        due.into_iter().map(|(_, id)| id.clone()).collect()
    }
}

/// Reads session `id` (taking and releasing its lock): `Some(due)` with the earliest instant
/// something is due in it; `None` when another process holds it or it cannot be read.
fn due_of(store: &JsonlStore, id: &str, now: i64) -> Option<Option<i64>> {
    let session = match store.open(&SessionId::from(id)) {
        Ok(session) => session,
        Err(StoreError::Locked { .. }) => return None,
        Err(error) => {
            tracing::warn!(
                session = id,
                "harness cron: cannot read the session: {error}"
            );
            return None;
        }
    };
    let events = session.events();
    let owed = turnkit_mcp::owes_reminder(&events).ok()?;
    let unended = open_claims(&events).ok().is_some_and(|c| !c.is_empty());
    if owed || unended {
        return Some(Some(now));
    }
    let fold = ScheduleFold::open(&events, session.header().seed_length).ok()?;
    Some(fold.next_target().map(|t| t.millis()))
}

/// An OS lock on `<dir>/.harness-cron/<launch>.lock`, held while the launch runs.
pub(crate) struct LaunchLock {
    _file: File,
}

impl LaunchLock {
    /// `<state>/<launch>.lock`, `state` the folder of [`state_dir`] (or another of its kind).
    fn path(state: &Path, launch: &str) -> PathBuf {
        state.join(format!("{launch}.lock"))
    }

    /// Takes the lock, `None` when another process holds it (or the file cannot be made).
    pub(crate) fn take(dir: &Path, launch: &str) -> Option<Self> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(Self::path(dir, launch))
            .ok()?;
        rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).ok()?;
        Some(Self { _file: file })
    }

    /// Whether a live process runs `launch` (holds its lock).
    pub(crate) fn held(dir: &Path, launch: &str) -> bool {
        if !Self::path(dir, launch).exists() {
            return false;
        }
        Self::take(dir, launch).is_none()
    }

    pub(crate) fn remove(dir: &Path, launch: &str) {
        let _ = std::fs::remove_file(Self::path(dir, launch));
    }
}

/// A fresh launch id and its lock in `state`; `None` (logged) when either cannot be had.
pub(crate) fn fresh_lock(state: &Path) -> Option<(String, LaunchLock)> {
    let launch = match fresh_launch_id() {
        Ok(launch) => launch,
        Err(error) => {
            tracing::warn!("launch: no launch id: {error}");
            return None;
        }
    };
    match LaunchLock::take(state, &launch) {
        Some(lock) => Some((launch, lock)),
        None => {
            tracing::warn!(
                launch,
                "launch: cannot lock the launch in {}",
                state.display()
            );
            None
        }
    }
}

/// Runs passes over `options.dir` every `options.interval` until `stop` fires, then waits for
/// the launches still running (each stops at its timeout) and returns.
///
/// # Errors
/// [`ServeError::Store`] / [`ServeError::Unusable`] when the folder cannot be used.
pub async fn run_cron(options: CronOptions, stop: CancellationToken) -> Result<(), ServeError> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let store = JsonlStore::new(&options.dir, clock.clone())?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(state_dir(&options.dir))
        .map_err(|error| {
            ServeError::Unusable(format!(
                "cannot create {}: {error}",
                state_dir(&options.dir).display()
            ))
        })?;
    let mut index = DueIndex::load(&options.dir);
    let running: Arc<Mutex<HashSet<String>>> = Arc::default();
    let launches = TaskTracker::new();
    loop {
        let now = clock.now_millis();
        if index.refresh(&store, now) {
            index.save(&options.dir);
        }
        for id in index.due(now) {
            if lock(&running).len() >= options.launch.max_concurrent {
                break;
            }
            if lock(&running).contains(&id) {
                continue;
            }
            if let Some(started) = begin(&options, &id, &clock).await {
                lock(&running).insert(id.clone());
                let running = running.clone();
                let options = options.clone();
                let clock = clock.clone();
                launches.spawn(async move {
                    finish(&options, &id, started, &clock).await;
                    lock(&running).remove(&id);
                });
            }
        }
        tokio::select! {
            () = stop.cancelled() => break,
            () = clock.sleep(options.interval) => {}
        }
    }
    launches.close();
    launches.wait().await;
    Ok(())
}

/// A launch claimed and ready to start.
struct Started {
    launch: String,
    prompt: String,
    lock: LaunchLock,
}

/// Opens session `id`, reports claims whose launch died, lets the schedule runtime fire what
/// is due, claims the owed reminders and releases the session. `None` when the session is
/// held by a server (a client is connected), nothing is owed, or the claim failed.
async fn begin(options: &CronOptions, id: &str, clock: &Arc<dyn Clock>) -> Option<Started> {
    let session_options = SessionOptions {
        dir: options.dir.clone(),
        session: Some(id.to_owned()),
        configs: options.configs.clone(),
        job_task_ttl: None,
    };
    let host = match SessionHost::open(&session_options) {
        Ok(host) => host,
        Err(ServeError::Store(StoreError::Locked { .. })) => return None,
        Err(error) => {
            tracing::warn!(
                session = id,
                "harness cron: cannot open the session: {error}"
            );
            return None;
        }
    };
    let dir = options.dir.clone();
    if let Err(error) =
        report_unknown_launches(&host, &|launch| LaunchLock::held(&state_dir(&dir), launch)).await
    {
        tracing::warn!(session = id, "harness cron: {error}");
    }
    settle_due(&host, clock).await;
    // The launch's lock is taken before its claim: a claim is never left without one.
    let Some((launch, lock)) = fresh_lock(&state_dir(&options.dir)) else {
        host.shutdown().await;
        return None;
    };
    let claim = host.claim_owed_reminders(&launch).await;
    host.shutdown().await;
    let Some(claim) = claim else {
        drop(lock);
        LaunchLock::remove(&state_dir(&options.dir), &launch);
        return None;
    };
    Some(Started {
        launch: claim.launch,
        prompt: claim.prompt,
        lock,
    })
}

/// Waits (at most 10 s) until the session's schedule runtime has queued every reminder due
/// now: the log's fold has nothing due any more.
pub(crate) async fn settle_due(host: &SessionHost, clock: &Arc<dyn Clock>) {
    let deadline = clock.now_millis() + 10_000;
    loop {
        let now = clock.now_millis();
        let events = host.session_log().events();
        let due = ScheduleFold::open(&events, host.session_log().header().seed_length)
            .ok()
            .and_then(|fold| fold.next_target())
            .is_some_and(|target| target.millis() <= now);
        if !due || now >= deadline {
            return;
        }
        clock.sleep(Duration::from_millis(20)).await;
    }
}

/// Runs a claimed launch and records its end once the session is free.
async fn finish(options: &CronOptions, id: &str, started: Started, clock: &Arc<dyn Clock>) {
    let endpoint = options.dir.display().to_string();
    let vars = LaunchVars {
        session: id,
        prompt: &started.prompt,
        endpoint: &endpoint,
    };
    let argv = options.launch.expand(&vars);
    tracing::info!(session = id, launch = %started.launch, "harness cron: launching");
    let outcome = run_launch(&options.launch, &argv, &BTreeMap::new(), clock).await;
    tracing::info!(session = id, launch = %started.launch, status = %outcome.status, "harness cron: launch ended");
    let Ok(store) = JsonlStore::new(&options.dir, clock.clone()) else {
        return;
    };
    // The agent's own server may still be closing the session: try again for a minute.
    for _ in 0..600 {
        match record_end(&store, id, &started.launch, outcome.clone()).await {
            Ok(()) => {
                drop(started.lock);
                LaunchLock::remove(&state_dir(&options.dir), &started.launch);
                return;
            }
            Err(error) => {
                tracing::debug!(session = id, "harness cron: end not recorded yet: {error}")
            }
        }
        clock.sleep(Duration::from_millis(100)).await;
    }
    tracing::warn!(session = id, launch = %started.launch, "harness cron: could not record the launch's end");
}
