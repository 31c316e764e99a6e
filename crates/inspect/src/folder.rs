//! The sessions shown: every `<id>.jsonl` of a folder read once, then followed as it grows
//! (or, for the PostgreSQL store, the rows `crate::store` keeps up to date).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use notify::{RecursiveMode, Watcher};
use tokio::sync::{broadcast, mpsc};
use tokio_util::task::TaskTracker;
use turnkit_core::CancellationToken;

use crate::InspectError;
use crate::session::{SessionLog, session_id_of};

/// How often the folder is listed again, in case the watcher missed a change (an overflowed
/// inotify queue); the watcher is the fast path.
const RESCAN_INTERVAL: Duration = Duration::from_secs(5);

/// The sessions of one folder (or store) as last read.
pub(crate) struct Folder {
    dir: PathBuf,
    /// What the sessions page says they are in: the folder, or the store.
    label: String,
    sessions: RwLock<BTreeMap<String, SessionLog>>,
    /// The id of each session whose view changed.
    changes: broadcast::Sender<Arc<str>>,
}

impl Folder {
    /// Reads every session file of `dir`.
    pub(crate) fn scan(dir: &Path) -> Result<Self, InspectError> {
        let folder = Self::empty(dir.to_owned(), dir.display().to_string());
        folder.rescan()?;
        Ok(folder)
    }

    /// No session yet; `label` is what the sessions page says they are in.
    pub(crate) fn empty(dir: PathBuf, label: String) -> Self {
        Self {
            dir,
            label,
            sessions: RwLock::new(BTreeMap::new()),
            changes: broadcast::channel(1024).0,
        }
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn label(&self) -> &str {
        &self.label
    }

    /// Tells the pages that session `id`'s view changed.
    pub(crate) fn announce(&self, id: &str) {
        let _ = self.changes.send(Arc::from(id));
    }

    /// Runs `change` on the session `id` (`None`: not shown), and announces the session when
    /// `change` says its view changed.
    pub(crate) fn update(&self, id: &str, change: impl FnOnce(&mut Option<SessionLog>) -> bool) {
        let changed = {
            let mut sessions = self.write();
            let mut entry = sessions.remove(id);
            let changed = change(&mut entry);
            if let Some(log) = entry {
                sessions.insert(id.to_owned(), log);
            }
            changed
        };
        if changed {
            self.announce(id);
        }
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Arc<str>> {
        self.changes.subscribe()
    }

    /// Lists the folder again: new files are read, known ones caught up, vanished ones dropped.
    pub(crate) fn rescan(&self) -> Result<(), InspectError> {
        let entries = std::fs::read_dir(&self.dir).map_err(|source| InspectError::Folder {
            dir: self.dir.display().to_string(),
            source,
        })?;
        let mut paths: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| session_id_of(path).is_some())
            .collect();
        paths.sort();
        let gone: Vec<String> = {
            let sessions = self.read();
            sessions
                .values()
                .filter(|log| !paths.contains(&log.path))
                .map(|log| log.id.clone())
                .collect()
        };
        for id in gone {
            self.write().remove(&id);
            let _ = self.changes.send(Arc::from(id));
        }
        for path in paths {
            self.refresh(&path);
        }
        Ok(())
    }

    /// Catches up the session file at `path` (reading only what was appended) and announces
    /// it when its view changed.
    pub(crate) fn refresh(&self, path: &Path) {
        let Some(id) = session_id_of(path) else {
            return;
        };
        if !path.exists() {
            if self.write().remove(&id).is_some() {
                let _ = self.changes.send(Arc::from(id));
            }
            return;
        }
        let changed = {
            let mut sessions = self.write();
            let log = sessions
                .entry(id.clone())
                .or_insert_with(|| SessionLog::new(path.to_owned(), id.clone()));
            log.catch_up()
        };
        if changed {
            let _ = self.changes.send(Arc::from(id));
        }
    }

    pub(crate) fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, SessionLog>> {
        self.sessions
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, SessionLog>> {
        self.sessions
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Follows the folder: a `notify` watcher (inotify on Linux) reports changed files, each is
/// caught up on tokio's blocking pool; the folder is also listed again every
/// [`RESCAN_INTERVAL`]. Ends when `stop` is cancelled, once every read it started on the
/// blocking pool has ended.
pub(crate) async fn follow(
    folder: Arc<Folder>,
    stop: CancellationToken,
) -> Result<(), InspectError> {
    let (tx, mut rx) = mpsc::unbounded_channel::<PathBuf>();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(event) = event {
            for path in event.paths {
                let _ = tx.send(path);
            }
        }
    })
    .map_err(|error| InspectError::Watch(error.to_string()))?;
    watcher
        .watch(folder.dir(), RecursiveMode::NonRecursive)
        .map_err(|error| InspectError::Watch(error.to_string()))?;
    let mut rescan = tokio::time::interval(RESCAN_INTERVAL);
    rescan.tick().await;
    // The reads on the blocking pool, each awaited where it is started.
    let reads = TaskTracker::new();
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            path = rx.recv() => {
                let Some(path) = path else { break };
                let mut paths = vec![path];
                while let Ok(more) = rx.try_recv() {
                    if !paths.contains(&more) {
                        paths.push(more);
                    }
                }
                let folder = Arc::clone(&folder);
                let _ = reads.spawn_blocking(move || {
                    for path in paths {
                        folder.refresh(&path);
                    }
                })
                .await;
            }
            _ = rescan.tick() => {
                let folder = Arc::clone(&folder);
                let _ = reads.spawn_blocking(move || {
                    if let Err(error) = folder.rescan() {
                        tracing::warn!("inspect: {error}");
                    }
                })
                .await;
            }
        }
    }
    drop(watcher);
    reads.close();
    reads.wait().await;
    Ok(())
}
