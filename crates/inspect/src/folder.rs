//! The sessions shown: every `<id>.jsonl` of a folder read once, then followed as it grows
//! (or, for the PostgreSQL store, the rows `crate::store` keeps up to date).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use notify::event::{AccessKind, AccessMode, EventKind, ModifyKind};
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
    /// Returns the files of the sessions it saw for the first time and of those it dropped.
    pub(crate) fn rescan(&self) -> Result<Listing, InspectError> {
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
        let mut listing = Listing::default();
        for id in gone {
            if let Some(log) = self.write().remove(&id) {
                listing.gone.push(log.path);
            }
            let _ = self.changes.send(Arc::from(id));
        }
        for path in paths {
            if self.refresh(&path) {
                listing.new.push(path);
            }
        }
        Ok(listing)
    }

    /// Catches up the session file at `path` (reading only what was appended) and announces
    /// it when its view changed. Returns whether the session was not shown before (a new
    /// file); a file that is gone drops its session.
    pub(crate) fn refresh(&self, path: &Path) -> bool {
        let Some(id) = session_id_of(path) else {
            return false;
        };
        if !path.exists() {
            if self.write().remove(&id).is_some() {
                let _ = self.changes.send(Arc::from(id));
            }
            return false;
        }
        let (new, changed) = {
            let mut sessions = self.write();
            let new = !sessions.contains_key(&id);
            let log = sessions
                .entry(id.clone())
                .or_insert_with(|| SessionLog::new(path.to_owned(), id.clone()));
            (new, log.catch_up())
        };
        if changed {
            let _ = self.changes.send(Arc::from(id));
        }
        new
    }

    /// The files of the sessions shown.
    fn paths(&self) -> Vec<PathBuf> {
        self.read().values().map(|log| log.path.clone()).collect()
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

/// What a listing of the folder found beside the sessions already shown.
#[derive(Default)]
pub(crate) struct Listing {
    /// The files of sessions seen for the first time.
    pub(crate) new: Vec<PathBuf>,
    /// The files of sessions dropped (their file is gone).
    pub(crate) gone: Vec<PathBuf>,
}

/// A file the watcher reported, and whether the report may mean another file now has its
/// name (created, renamed into place), whose own watch must be added again.
type Reported = (PathBuf, bool);

/// Which reports of the watcher say something about a file's content or name: reads (open,
/// close after reading) are left out, the inspector's own among them (each read it makes
/// would otherwise be reported back to it, and read again, without end).
fn reported(kind: &EventKind) -> Option<bool> {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => Some(false),
        EventKind::Access(_) => None,
        EventKind::Create(_) | EventKind::Modify(ModifyKind::Name(_)) => Some(true),
        EventKind::Modify(_) | EventKind::Remove(_) | EventKind::Any | EventKind::Other => {
            Some(false)
        }
    }
}

/// The session files watched one by one, beside the folder's own watch.
///
/// The folder's watch names the file a change went through, which is not always the
/// session's: a writer that created its session under a temporary name and linked it into
/// place (as `JsonlStore` does) writes through the handle it opened on the temporary name,
/// and the folder's watch reports those writes under that name, long removed. A watch on
/// the file itself reports every write to it, whatever name the writer opened.
struct Files {
    watched: HashSet<PathBuf>,
    /// How many files could not be watched (the system's limit on watches): their changes
    /// show at the next listing of the folder.
    unwatched: usize,
}

impl Files {
    fn new() -> Self {
        Self {
            watched: HashSet::new(),
            unwatched: 0,
        }
    }

    /// Watches each of `paths` (again: a file now under a watched name is another file).
    fn watch(&mut self, watcher: &mut impl Watcher, paths: &[PathBuf]) {
        for path in paths {
            match watcher.watch(path, RecursiveMode::NonRecursive) {
                Ok(()) => {
                    self.watched.insert(path.clone());
                }
                // Gone already: the folder's watch reports that.
                Err(_) if !path.exists() => {}
                Err(error) => {
                    self.unwatched += 1;
                    tracing::warn!(
                        "inspect: cannot watch {} ({error}); {} session files unwatched, \
                         their changes show within {}s",
                        path.display(),
                        self.unwatched,
                        RESCAN_INTERVAL.as_secs()
                    );
                }
            }
        }
    }

    fn unwatch(&mut self, watcher: &mut impl Watcher, paths: &[PathBuf]) {
        for path in paths {
            if self.watched.remove(path) {
                // The kernel dropped the watch of a removed file already.
                let _ = watcher.unwatch(path);
            }
        }
    }
}

/// Follows the folder: a `notify` watcher (inotify on Linux) on the folder reports new,
/// renamed and removed files, one on each session file reports its writes; each reported file
/// is caught up on tokio's blocking pool, and the folder is also listed again every
/// [`RESCAN_INTERVAL`] (in case a report was lost: an overflowed queue, a file that could not
/// be watched). Ends when `stop` is cancelled, once every read it started on the blocking
/// pool has ended.
pub(crate) async fn follow(
    folder: Arc<Folder>,
    stop: CancellationToken,
) -> Result<(), InspectError> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Reported>();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else { return };
        let Some(renamed) = reported(&event.kind) else {
            return;
        };
        for path in event.paths {
            let _ = tx.send((path, renamed));
        }
    })
    .map_err(|error| InspectError::Watch(error.to_string()))?;
    watcher
        .watch(folder.dir(), RecursiveMode::NonRecursive)
        .map_err(|error| InspectError::Watch(error.to_string()))?;
    let mut files = Files::new();
    // The reads on the blocking pool, each awaited where it is started.
    let reads = TaskTracker::new();
    // The sessions read before the watches existed, caught up once they do.
    let known = folder.paths();
    files.watch(&mut watcher, &known);
    refresh(&reads, &folder, known).await;
    let mut rescan = tokio::time::interval(RESCAN_INTERVAL);
    rescan.tick().await;
    loop {
        let listing = tokio::select! {
            () = stop.cancelled() => break,
            reported = rx.recv() => {
                let Some(first) = reported else { break };
                let mut batch = vec![first];
                while let Ok(more) = rx.try_recv() {
                    batch.push(more);
                }
                let mut paths: Vec<PathBuf> = Vec::new();
                let mut renamed: Vec<PathBuf> = Vec::new();
                for (path, named) in batch {
                    if named && !renamed.contains(&path) {
                        renamed.push(path.clone());
                    }
                    if !paths.contains(&path) {
                        paths.push(path);
                    }
                }
                let mut listing = refresh(&reads, &folder, paths).await;
                for path in renamed {
                    if !listing.new.contains(&path) && session_id_of(&path).is_some() {
                        listing.new.push(path);
                    }
                }
                listing
            }
            _ = rescan.tick() => {
                let folder = Arc::clone(&folder);
                reads
                    .spawn_blocking(move || {
                        folder.rescan().unwrap_or_else(|error| {
                            tracing::warn!("inspect: {error}");
                            Listing::default()
                        })
                    })
                    .await
                    .unwrap_or_default()
            }
        };
        files.unwatch(&mut watcher, &listing.gone);
        if !listing.new.is_empty() {
            files.watch(&mut watcher, &listing.new);
            // Writes between the read and the watch went unreported: read once more.
            refresh(&reads, &folder, listing.new).await;
        }
    }
    drop(watcher);
    reads.close();
    reads.wait().await;
    Ok(())
}

/// Catches up the session files `paths` on the blocking pool; the listing names the new and
/// the vanished ones.
async fn refresh(reads: &TaskTracker, folder: &Arc<Folder>, paths: Vec<PathBuf>) -> Listing {
    let folder = Arc::clone(folder);
    reads
        .spawn_blocking(move || {
            let mut listing = Listing::default();
            for path in paths {
                if folder.refresh(&path) {
                    listing.new.push(path);
                } else if !path.exists() {
                    listing.gone.push(path);
                }
            }
            listing
        })
        .await
        .unwrap_or_default()
}
