//! The PostgreSQL store followed from the outside: the `sessions` rows listed every
//! [`ROWS_INTERVAL`] (new sessions, live owners, logs that grew), and each session with a
//! live owner followed through the store's [`Follower`](turnkit_store_pg::Follower), which
//! delivers its events as their flush commits. No lease is taken, nothing is written.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use tokio_util::task::AbortOnDropHandle;
use turnkit_core::CancellationToken;
use turnkit_store_pg::{PgStore, SessionRow};

use crate::InspectError;
use crate::folder::Folder;
use crate::session::SessionLog;

/// How often the `sessions` rows are read again: the owner column's latency, and the net
/// for a session whose log grew while it had no follower.
pub(crate) const ROWS_INTERVAL: Duration = Duration::from_secs(1);

/// At most this many sessions are followed at once (each follower holds one `LISTEN`
/// connection); the others are caught up from the rows' `last_seq` every [`ROWS_INTERVAL`].
pub(crate) const MAX_FOLLOWERS: usize = 32;

/// Where a store's sessions are, for the pages.
pub(crate) fn label(store: &PgStore) -> String {
    format!("PostgreSQL schema {}", store.options().schema)
}

fn place(store: &PgStore, id: &str) -> String {
    format!("postgres {}.events session {id}", store.options().schema)
}

/// Reads every session of `store` into a new folder view.
pub(crate) async fn load(store: &PgStore) -> Result<Folder, InspectError> {
    let folder = Folder::empty(std::path::PathBuf::new(), label(store));
    let rows = store.session_rows().await.map_err(InspectError::Store)?;
    for row in rows {
        add(&folder, store, &row).await;
    }
    Ok(folder)
}

async fn add(folder: &Folder, store: &PgStore, row: &SessionRow) {
    let read = store.read_log(&row.id).await;
    let mut log = SessionLog::from_store(row.id.to_string(), place(store, row.id.as_str()), read);
    log.owner = owner_of(row);
    folder.update(row.id.as_str(), |entry| {
        *entry = Some(log);
        true
    });
}

fn owner_of(row: &SessionRow) -> Option<(String, chrono::DateTime<chrono::Utc>)> {
    row.owner.clone().zip(row.lease_expires)
}

/// A follower's task, owned by the loop of [`follow`]: aborted when its session is no longer
/// followed, and all of them when the loop ends.
type Following = AbortOnDropHandle<()>;

/// Keeps `folder` up to date with `store` until `stop` is cancelled.
pub(crate) async fn follow(folder: Arc<Folder>, store: PgStore, stop: CancellationToken) {
    let mut following: HashMap<String, Following> = HashMap::new();
    let mut tick = tokio::time::interval(ROWS_INTERVAL);
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            _ = tick.tick() => {}
        }
        let rows = match store.session_rows().await {
            Ok(rows) => rows,
            Err(error) => {
                tracing::warn!("inspect: cannot list the store's sessions: {error}");
                continue;
            }
        };
        sync(&folder, &store, &rows, &mut following).await;
    }
}

/// Brings the folder in line with the store's rows, starting a follower for each session
/// with a live owner (and dropping it once the session has none).
async fn sync(
    folder: &Arc<Folder>,
    store: &PgStore,
    rows: &[SessionRow],
    following: &mut HashMap<String, Following>,
) {
    let gone: Vec<String> = {
        let sessions = folder.read();
        sessions
            .keys()
            .filter(|id| {
                rows.binary_search_by(|row| row.id.as_str().cmp(id))
                    .is_err()
            })
            .cloned()
            .collect()
    };
    for id in gone {
        following.remove(&id);
        folder.update(&id, |entry| entry.take().is_some());
    }
    for row in rows {
        let id = row.id.as_str();
        let known = folder
            .read()
            .get(id)
            .map(|log| (log.last_seq(), log.owner.clone()));
        let Some((last_seq, owner)) = known else {
            add(folder, store, row).await;
            continue;
        };
        let live = owner_of(row);
        if owner.as_ref().map(|o| &o.0) != live.as_ref().map(|o| &o.0) {
            folder.update(id, |entry| {
                if let Some(log) = entry {
                    log.owner = live.clone();
                }
                true
            });
        } else if owner != live {
            // The same owner renewed its lease: no visible change worth a refresh.
            folder.update(id, |entry| {
                if let Some(log) = entry {
                    log.owner = live.clone();
                }
                false
            });
        }
        if live.is_none() {
            following.remove(id);
        } else if !following.contains_key(id) && following.len() < MAX_FOLLOWERS {
            match store.subscribe(&row.id, last_seq).await {
                Ok(follower) => {
                    let task = tokio::spawn(deliver(Arc::clone(folder), id.to_owned(), follower));
                    following.insert(id.to_owned(), AbortOnDropHandle::new(task));
                    continue;
                }
                Err(error) => tracing::warn!("inspect: cannot follow session {id}: {error}"),
            }
        }
        if row.last_seq > last_seq && !following.contains_key(id) {
            match store.read_after(&row.id, last_seq).await {
                Ok(events) => folder.update(id, |entry| {
                    entry.as_mut().is_some_and(|log| log.extend(events))
                }),
                Err(error) => tracing::warn!("inspect: cannot read session {id}: {error}"),
            }
        }
    }
}

/// Folds what a follower delivers into the session's view, one announcement per batch of
/// events already delivered.
async fn deliver(folder: Arc<Folder>, id: String, mut follower: turnkit_store_pg::Follower) {
    while let Some(first) = follower.next().await {
        let mut batch = vec![first];
        while let Some(Some(more)) = follower.next().now_or_never() {
            batch.push(more);
        }
        folder.update(&id, |entry| {
            let Some(log) = entry else { return false };
            let mut changed = false;
            for item in batch {
                match item {
                    Ok(event) => changed |= log.extend([event]),
                    Err(error) => {
                        log.error = Some(error.to_string());
                        changed = true;
                    }
                }
            }
            changed
        });
    }
}
