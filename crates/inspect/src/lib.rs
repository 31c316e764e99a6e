#![doc = include_str!("../README.md")]

mod access;
mod folder;
mod launches;
mod pages;
mod session;
mod store;

use std::convert::Infallible;
use std::future::IntoFuture as _;
use std::path::Path;
use std::sync::Arc;

use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use chrono::Utc;
use futures::StreamExt as _;
use maud::Markup;
use tokio::net::TcpListener;
use tokio::sync::broadcast;
use turnkit_core::CancellationToken;
use turnkit_store_pg::PgStore;

pub use access::{Access, TOKEN_COOKIE};
pub use pages::{ListQuery, SessionQuery, SortKey, TIMELINE_PAGE};

use folder::Folder;

/// How long requests being answered when the server is asked to stop may take to finish
/// (500 ms); connections still open past it are left to be dropped.
pub const SHUTDOWN_BOUND: std::time::Duration = std::time::Duration::from_millis(500);

/// The request header the page's script sends to get only the page's `<main>` content.
pub const FRAGMENT_HEADER: &str = "x-inspect-fragment";

/// Why the inspector could not start or follow its folder.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InspectError {
    /// The folder could not be listed.
    #[error("cannot list {dir}: {source}")]
    Folder {
        /// The folder.
        dir: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The file watcher could not be set up (`notify`'s message).
    #[error("cannot watch the folder: {0}")]
    Watch(String),
    /// The PostgreSQL store could not be read (its error).
    #[error("cannot read the store: {0}")]
    Store(turnkit_core::StoreError),
    /// The access settings are unusable (no token, a short one, an open non-loopback
    /// address); the message says which.
    #[error("{0}")]
    Access(String),
    /// The HTTP server failed.
    #[error("the HTTP server failed: {0}")]
    Serve(std::io::Error),
}

/// A read-only view of a folder of JSONL session files (`docs/event-log.md`).
///
/// Each `<id>.jsonl` is read without a lock (the writer's lock is never taken or waited for)
/// and folded with the families' own folds: turnkit-todo's `todos` projection,
/// turnkit-schedule's [`ScheduleFold`](turnkit_schedule::domain::ScheduleFold) and
/// turnkit-jobs-local's [`JournalFold`](turnkit_jobs_local::JournalFold). A later read takes
/// only the bytes appended since; an unterminated last line waits for its newline; a line that
/// is not a valid header or event marks the session malformed, with the file and line, and the
/// rest of the folder is shown as usual. Nothing is ever written.
///
/// [`Inspector::open_store`] shows the sessions of a PostgreSQL store instead, with each
/// session's live owner (the host holding its lease), followed without a lease.
#[derive(Clone)]
pub struct Inspector {
    folder: Arc<Folder>,
    store: Option<PgStore>,
    access: Access,
    /// Cancelled when the server stops: ends every `/updates` stream.
    closing: CancellationToken,
}

impl Inspector {
    /// Reads every session file of `dir`.
    ///
    /// # Errors
    /// [`InspectError::Folder`] when the folder cannot be listed.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, InspectError> {
        Ok(Self {
            folder: Arc::new(Folder::scan(dir.as_ref())?),
            store: None,
            access: Access::default(),
            closing: CancellationToken::new(),
        })
    }

    /// Reads every session of a PostgreSQL store: each log in one snapshot, with the host
    /// holding its lease while the lease is live. No lease is taken and nothing is written
    /// (connecting the store applies its migrations, as [`PgStore::connect`] says).
    /// [`Inspector::serve`] then lists the `sessions` rows every second (new sessions,
    /// owners, logs that grew) and follows each session with a live owner through
    /// [`PgStore::subscribe`] (up to 32 at once), so an append shows within a second.
    ///
    /// # Errors
    /// [`InspectError::Store`] when the sessions cannot be listed; a session whose log cannot
    /// be read is shown with its error.
    pub async fn open_store(store: PgStore) -> Result<Self, InspectError> {
        Ok(Self {
            folder: Arc::new(store::load(&store).await?),
            store: Some(store),
            access: Access::default(),
            closing: CancellationToken::new(),
        })
    }

    /// The same inspector answering only the requests `access` lets through (default:
    /// [`Access::default`], the `Host` and `Origin` checks of a loopback listener, no token).
    #[must_use]
    pub fn with_access(mut self, access: Access) -> Self {
        self.access = access;
        self
    }

    /// Lists the folder again and catches up every session (what the watcher does for the
    /// files it reports).
    ///
    /// # Errors
    /// As [`Inspector::open`].
    pub fn rescan(&self) -> Result<(), InspectError> {
        if self.store.is_some() {
            return Ok(());
        }
        self.folder.rescan().map(drop)
    }

    /// The sessions page's `<main>` content, as HTML.
    pub fn sessions_fragment(&self, query: &ListQuery) -> String {
        self.sessions_markup(query).into_string()
    }

    /// A session page's `<main>` content, as HTML; `None` when the folder has no such session.
    pub fn session_fragment(&self, id: &str, query: &SessionQuery) -> Option<String> {
        self.session_markup(id, query).map(Markup::into_string)
    }

    fn sessions_markup(&self, query: &ListQuery) -> Markup {
        let sessions = self.folder.read();
        pages::sessions(&sessions, query, self.folder.label(), self.store.is_some())
    }

    fn session_markup(&self, id: &str, query: &SessionQuery) -> Option<Markup> {
        let sessions = self.folder.read();
        let log = sessions.get(id)?;
        let children: Vec<_> = sessions
            .values()
            .filter(|child| child.folds.parent.as_deref() == Some(id))
            .collect();
        Some(pages::session(log, &children, query, Utc::now()))
    }

    /// The HTTP routes: `/` (sessions), `/session/{id}` (a session), `/session/{id}/event/{seq}`
    /// (one event's raw JSON line) and `/updates` (server-sent `change` events whose data is
    /// the id of a session whose view changed); every request passes the checks of the
    /// inspector's [`Access`] first (403 for a foreign `Host` or `Origin`, 401 without a valid
    /// token).
    pub fn router(&self) -> axum::Router {
        axum::Router::new()
            .route("/", get(sessions_page))
            .route("/session/{id}", get(session_page))
            .route("/session/{id}/event/{seq}", get(raw_event))
            .route("/updates", get(updates))
            .with_state(self.clone())
            .layer(axum::middleware::from_fn_with_state(
                self.access.clone(),
                access::guard,
            ))
    }

    /// Serves [`Inspector::router`] on `listener` and follows the folder (`notify` watches on
    /// the folder and on each session file, and a listing every 5 s in case one missed a
    /// change) or the store (see [`Inspector::open_store`]) until `stop` is cancelled.
    ///
    /// Once `stop` is cancelled every `/updates` stream ends, idle connections are closed and
    /// requests being answered get [`SHUTDOWN_BOUND`] to finish; then it returns, whatever
    /// connections are still open (a page that never reads its answer cannot hold it).
    ///
    /// # Errors
    /// [`InspectError::Watch`] when the watcher cannot be set up, [`InspectError::Serve`]
    /// when the server fails.
    pub async fn serve(
        mut self,
        listener: TcpListener,
        stop: CancellationToken,
    ) -> Result<(), InspectError> {
        self.closing = stop.clone();
        let folder = Arc::clone(&self.folder);
        let store = self.store.clone();
        let watch = stop.clone();
        let follow = async move {
            match store {
                Some(store) => {
                    store::follow(folder, store, watch).await;
                    Ok(())
                }
                None => folder::follow(folder, watch).await,
            }
        };
        let server = axum::serve(listener, self.router())
            .with_graceful_shutdown(stop.clone().cancelled_owned())
            .into_future();
        let bound = async {
            stop.cancelled().await;
            tokio::time::sleep(SHUTDOWN_BOUND).await;
        };
        let (followed, served) = tokio::join!(follow, async {
            let result = tokio::select! {
                result = server => result.map_err(InspectError::Serve),
                // The connections still open are dropped with the runtime.
                () = bound => Ok(()),
            };
            stop.cancel();
            result
        });
        followed.and(served)
    }
}

fn page(headers: &HeaderMap, title: &str, watch: Option<&str>, content: &Markup) -> Response {
    let html = if headers.contains_key(FRAGMENT_HEADER) {
        content.clone().into_string()
    } else {
        pages::layout(title, watch, content).into_string()
    };
    (
        [
            (header::VARY, FRAGMENT_HEADER),
            (header::CACHE_CONTROL, "no-store"),
        ],
        Html(html),
    )
        .into_response()
}

async fn sessions_page(
    State(inspector): State<Inspector>,
    Query(query): Query<ListQuery>,
    headers: HeaderMap,
) -> Response {
    let content = inspector.sessions_markup(&query);
    page(&headers, "sessions", None, &content)
}

async fn session_page(
    State(inspector): State<Inspector>,
    UrlPath(id): UrlPath<String>,
    Query(query): Query<SessionQuery>,
    headers: HeaderMap,
) -> Response {
    match inspector.session_markup(&id, &query) {
        Some(content) => page(&headers, &id, Some(&id), &content),
        None => {
            let mut response = page(&headers, &id, Some(&id), &pages::missing(&id));
            *response.status_mut() = StatusCode::NOT_FOUND;
            response
        }
    }
}

async fn raw_event(
    State(inspector): State<Inspector>,
    UrlPath((id, seq)): UrlPath<(String, u64)>,
) -> Response {
    let sessions = inspector.folder.read();
    let event = sessions.get(&id).and_then(|log| {
        let i = log.events.partition_point(|event| event.seq() < seq);
        log.events.get(i).filter(|event| event.seq() == seq)
    });
    match event {
        Some(event) => {
            let mut line = Vec::new();
            event.write_line(&mut line);
            ([(header::CONTENT_TYPE, "application/json")], line).into_response()
        }
        None => (StatusCode::NOT_FOUND, "no such event\n").into_response(),
    }
}

async fn updates(
    State(inspector): State<Inspector>,
) -> Sse<impl futures::Stream<Item = Result<Event, Infallible>>> {
    let receiver = inspector.folder.subscribe();
    let closing = inspector.closing;
    let stream = futures::stream::unfold(receiver, |mut receiver| async move {
        let data = match receiver.recv().await {
            Ok(id) => id,
            // A page that fell behind missed some: an empty id makes every page refresh.
            Err(broadcast::error::RecvError::Lagged(_)) => Arc::from(""),
            Err(broadcast::error::RecvError::Closed) => return None,
        };
        Some((Ok(Event::default().event("change").data(&*data)), receiver))
    })
    // A stopping server ends the stream, so its connection can close.
    .take_until(closing.cancelled_owned());
    Sse::new(stream).keep_alive(KeepAlive::default())
}
