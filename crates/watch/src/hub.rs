//! [`Hub`]: one OS file watcher (inotify on Linux, through `notify`) shared by every path
//! watch of a family, so a thousand watches cost one inotify instance and one watch per
//! folder, and nothing polls.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc;
use turnkit_core::lock;

/// A subscriber: the folder it watches, whether at any depth, and where its paths go.
struct Sub {
    dir: PathBuf,
    recursive: bool,
    tx: mpsc::UnboundedSender<PathBuf>,
}

#[derive(Default)]
struct Subs {
    next: u64,
    by_id: HashMap<u64, Sub>,
}

/// One OS watch per folder, counted: how many subscribers, and whether one is recursive.
#[derive(Default)]
struct Watched {
    count: usize,
    recursive: bool,
}

struct Inner {
    subs: Arc<Mutex<Subs>>,
    // Held apart from `subs`: the watcher's event thread takes `subs` in its callback, and
    // `watch` waits for that thread, so `subs` is never held across a watcher call.
    watcher: Mutex<Option<notify::RecommendedWatcher>>,
    watched: Mutex<HashMap<PathBuf, Watched>>,
}

/// The shared watcher; cheap to clone.
#[derive(Clone)]
pub(crate) struct Hub {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("folders", &lock(&self.inner.watched).len())
            .finish_non_exhaustive()
    }
}

/// A subscription; dropping it stops the deliveries and releases its folder's OS watch.
pub(crate) struct Subscription {
    hub: Hub,
    id: u64,
    dir: PathBuf,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        lock(&self.hub.inner.subs).by_id.remove(&self.id);
        self.hub.release(&self.dir);
    }
}

impl Hub {
    pub(crate) fn new() -> Self {
        Self {
            inner: Arc::new(Inner {
                subs: Arc::new(Mutex::new(Subs::default())),
                watcher: Mutex::new(None),
                watched: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The number of folders the OS watches for this hub (one inotify watch each, plus one
    /// per subfolder of a recursive one).
    pub(crate) fn folders(&self) -> usize {
        lock(&self.inner.watched).len()
    }

    /// Sends every path the OS reports in `dir` (directly, or at any depth when
    /// `recursive`) to `tx`, until the subscription is dropped.
    ///
    /// # Errors
    /// The watcher's error text (`dir` cannot be watched: missing, no permission, the
    /// user's inotify limits reached).
    pub(crate) fn subscribe(
        &self,
        dir: &Path,
        recursive: bool,
        tx: mpsc::UnboundedSender<PathBuf>,
    ) -> Result<Subscription, String> {
        self.acquire(dir, recursive)?;
        let id = {
            let mut subs = lock(&self.inner.subs);
            subs.next += 1;
            let id = subs.next;
            subs.by_id.insert(
                id,
                Sub {
                    dir: dir.to_path_buf(),
                    recursive,
                    tx,
                },
            );
            id
        };
        Ok(Subscription {
            hub: self.clone(),
            id,
            dir: dir.to_path_buf(),
        })
    }

    fn acquire(&self, dir: &Path, recursive: bool) -> Result<(), String> {
        let mut watched = lock(&self.inner.watched);
        let entry = watched.get(dir);
        let needs_watch = match entry {
            None => true,
            Some(w) => recursive && !w.recursive,
        };
        if needs_watch {
            let mode = if recursive || entry.is_some_and(|w| w.recursive) {
                RecursiveMode::Recursive
            } else {
                RecursiveMode::NonRecursive
            };
            let mut slot = lock(&self.inner.watcher);
            if slot.is_none() {
                *slot = Some(self.make_watcher()?);
            }
            if let Some(watcher) = slot.as_mut() {
                if entry.is_some() {
                    let _ = watcher.unwatch(dir);
                }
                watcher.watch(dir, mode).map_err(|e| e.to_string())?;
            }
        }
        let w = watched.entry(dir.to_path_buf()).or_default();
        w.count += 1;
        w.recursive |= recursive;
        Ok(())
    }

    fn release(&self, dir: &Path) {
        let mut watched = lock(&self.inner.watched);
        let Some(w) = watched.get_mut(dir) else {
            return;
        };
        w.count -= 1;
        if w.count > 0 {
            return;
        }
        watched.remove(dir);
        if let Some(watcher) = lock(&self.inner.watcher).as_mut() {
            // The kernel dropped the watch already when the folder was removed.
            let _ = watcher.unwatch(dir);
        }
    }

    fn make_watcher(&self) -> Result<notify::RecommendedWatcher, String> {
        let subs = self.inner.subs.clone();
        notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            let Ok(event) = event else { return };
            if matches!(event.kind, notify::EventKind::Access(_)) {
                return;
            }
            let subs = lock(&subs);
            for path in &event.paths {
                for sub in subs.by_id.values() {
                    let covered = match path.parent() {
                        Some(parent) if parent == sub.dir => true,
                        _ => path == &sub.dir || (sub.recursive && path.starts_with(&sub.dir)),
                    };
                    if covered {
                        let _ = sub.tx.send(path.clone());
                    }
                }
            }
        })
        .map_err(|e| e.to_string())
    }
}
