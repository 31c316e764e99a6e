//! The sessions an HTTP server holds open: one [`Live`] per session id, opened on its first
//! request (or adopted from the reminder scanner), released when idle, fenced or stopping.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::StatusCode;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;
use turnkit_core::{StoreError, lock};

use super::SessionSource;
use super::auth::Refusal;
use crate::server::Server;
use crate::session::SessionHost;
use crate::{ResultShape, ServeError};

/// One open session: its host and the MCP transport its connections share.
pub(crate) struct Live {
    pub(crate) host: Arc<SessionHost>,
    pub(crate) service: StreamableHttpService<Server, LocalSessionManager>,
    /// Cancelled when the session is released: every MCP connection to it ends.
    stop: CancellationToken,
    /// The task that drains the session's change feed, ended with the session.
    _drain: Option<AbortOnDropHandle<()>>,
    /// Requests whose response body is still being written (a `GET` event stream counts
    /// while it is open).
    in_flight: AtomicUsize,
    /// `POST`s (the requests that carry calls) whose response body is still being written.
    answering: AtomicUsize,
    /// Woken whenever `answering` goes down.
    answered: Notify,
    last_used: Mutex<Instant>,
    /// The tokens that reached this session since it was opened (each counts it against its
    /// cap of sessions until it is released).
    tokens: Mutex<Vec<usize>>,
}

/// A request counted in flight on its session (and, for a `POST`, as an answer to write)
/// from its start until this is dropped: with its response body, or with the request's
/// future when the connection ends before there is a response.
pub(crate) struct InFlight {
    live: Arc<Live>,
    post: bool,
}

impl InFlight {
    pub(crate) fn new(live: Arc<Live>, post: bool) -> Self {
        live.in_flight.fetch_add(1, Ordering::SeqCst);
        if post {
            live.answering();
        }
        Self { live, post }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.live.touch();
        self.live.in_flight.fetch_sub(1, Ordering::SeqCst);
        if self.post {
            self.live.answered();
        }
    }
}

/// How long a released session waits for the answers of its calls in flight to be written
/// before its connections are closed.
const ANSWERS_BOUND: Duration = Duration::from_secs(5);

impl Live {
    pub(crate) fn touch(&self) {
        *lock(&self.last_used) = Instant::now();
    }

    fn idle_for(&self, now: Instant) -> Option<Duration> {
        // Live work (a running job, a terminal whose program runs) keeps the session: a
        // release would kill it, and the model would learn only from an unknown id.
        if self.in_flight.load(Ordering::SeqCst) > 0
            || self.host.running_jobs() > 0
            || self.host.running_terminals() > 0
        {
            return None;
        }
        Some(now.saturating_duration_since(*lock(&self.last_used)))
    }

    /// A `POST` began: its answer is written before the session's connections close.
    fn answering(&self) {
        self.answering.fetch_add(1, Ordering::SeqCst);
    }

    /// A `POST`'s response body was written (or dropped).
    fn answered(&self) {
        self.answering.fetch_sub(1, Ordering::SeqCst);
        self.answered.notify_waiters();
    }

    /// Ends the calls in flight, waits for their answers to be written, shuts the session
    /// down, then closes its MCP connections: a client whose call was running when the
    /// server stopped gets its answer (`wait aborted`, a foreground job's end), as over stdio.
    async fn release(&self) {
        self.host.end_calls();
        self.answers_written().await;
        self.close().await;
    }

    /// Shuts the session down, then closes its MCP connections.
    async fn close(&self) {
        self.host.shutdown().await;
        self.stop.cancel();
    }

    /// Completes once no `POST`'s answer is left to write, or after [`ANSWERS_BOUND`].
    async fn answers_written(&self) {
        let written = async {
            loop {
                let notified = self.answered.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if self.answering.load(Ordering::SeqCst) == 0 {
                    return;
                }
                notified.await;
            }
        };
        if tokio::time::timeout(ANSWERS_BOUND, written).await.is_err() {
            tracing::warn!(
                "mcp http: session {}: {} answers still unwritten {ANSWERS_BOUND:?} after its calls \
                 were ended; shutting it down",
                self.host.session_id(),
                self.answering.load(Ordering::SeqCst)
            );
        }
    }
}

/// A session id's place: empty until opened; its mutex is held while opening, so a session
/// is opened once however many requests come for it together.
type Slot = Arc<tokio::sync::Mutex<Option<Arc<Live>>>>;

/// Every session this server holds.
pub(crate) struct Sessions {
    source: Arc<dyn SessionSource>,
    shape: ResultShape,
    config: StreamableHttpServerConfig,
    slots: Mutex<HashMap<String, Slot>>,
    /// How many open sessions each token has reached.
    per_token: Mutex<HashMap<usize, usize>>,
    max_per_token: usize,
    failures: Throttled,
    pub(crate) stop: CancellationToken,
}

/// Warnings of failed session opens, at most one a minute with a count of the rest (each
/// failure is logged at debug): a flood of failing requests cannot flood the log.
struct Throttled {
    last: Mutex<Option<Instant>>,
    unreported: AtomicUsize,
}

/// How often a failed session open is warned about.
const WARN_EVERY: Duration = Duration::from_secs(60);

impl Throttled {
    fn note(&self, id: &str, error: &ServeError) {
        tracing::debug!("mcp http: opening session {id}: {error}");
        let now = Instant::now();
        let mut last = lock(&self.last);
        if last.is_some_and(|at| now.saturating_duration_since(at) < WARN_EVERY) {
            self.unreported.fetch_add(1, Ordering::SeqCst);
            return;
        }
        *last = Some(now);
        drop(last);
        let unreported = self.unreported.swap(0, Ordering::SeqCst);
        tracing::warn!(
            "mcp http: opening session {id}: {error} ({unreported} other failed opens since \
             the last such warning)"
        );
    }
}

impl Sessions {
    pub(crate) fn new(
        source: Arc<dyn SessionSource>,
        shape: ResultShape,
        config: StreamableHttpServerConfig,
        max_per_token: usize,
        stop: CancellationToken,
    ) -> Self {
        Self {
            source,
            shape,
            config,
            slots: Mutex::new(HashMap::new()),
            per_token: Mutex::new(HashMap::new()),
            max_per_token: max_per_token.max(1),
            failures: Throttled {
                last: Mutex::new(None),
                unreported: AtomicUsize::new(0),
            },
            stop,
        }
    }

    /// Counts one more open session for `token`, unless it has its cap already.
    fn count(&self, token: usize) -> Result<(), Refusal> {
        let mut per_token = lock(&self.per_token);
        let count = per_token.entry(token).or_default();
        if *count >= self.max_per_token {
            return Err(Refusal::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_sessions",
                format!(
                    "this token has {} sessions open on this server; retry once one is \
                     released (idle)",
                    self.max_per_token
                ),
            ));
        }
        *count += 1;
        Ok(())
    }

    /// Gives `token`'s count of one session back.
    fn uncount(&self, token: usize) {
        let mut per_token = lock(&self.per_token);
        if let Some(count) = per_token.get_mut(&token) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                per_token.remove(&token);
            }
        }
    }

    /// `token` reaches `live`: counted against its cap unless it reached it before.
    fn admit(&self, live: &Live, token: usize) -> Result<(), Refusal> {
        let mut tokens = lock(&live.tokens);
        if tokens.contains(&token) {
            return Ok(());
        }
        self.count(token)?;
        tokens.push(token);
        Ok(())
    }

    /// A session was let go: the tokens that reached it get their counts back.
    fn forget(&self, live: &Live) {
        for token in std::mem::take(&mut *lock(&live.tokens)) {
            self.uncount(token);
        }
    }

    /// Removes `id`'s slot if it is still `slot`, empty, and nobody else waits on it.
    fn drop_empty(&self, id: &str, slot: &Slot) {
        let mut slots = lock(&self.slots);
        if slots.get(id).is_some_and(|s| {
            Arc::ptr_eq(s, slot)
                && Arc::strong_count(s) <= 2
                && s.try_lock().is_ok_and(|guard| guard.is_none())
        }) {
            slots.remove(id);
        }
    }

    fn slot(&self, id: &str) -> Slot {
        lock(&self.slots).entry(id.to_owned()).or_default().clone()
    }

    fn live(&self, host: Arc<SessionHost>) -> Arc<Live> {
        // Not a child of the server's stop: the session's connections close only once its
        // shutdown has answered the calls in flight (`Live::release`).
        let stop = CancellationToken::new();
        let config = self.config.clone().with_cancellation_token(stop.clone());
        let shape = self.shape;
        let factory_host = host.clone();
        let service = StreamableHttpService::new(
            move || Ok(Server::new(factory_host.clone(), shape).without_notifications()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        // Nothing is announced between calls over HTTP; the change feed is drained.
        let drain = host.take_changes().map(|mut changes| {
            AbortOnDropHandle::new(tokio::spawn(async move {
                while changes.recv().await.is_some() {}
            }))
        });
        Arc::new(Live {
            host,
            service,
            stop,
            _drain: drain,
            in_flight: AtomicUsize::new(0),
            answering: AtomicUsize::new(0),
            answered: Notify::new(),
            last_used: Mutex::new(Instant::now()),
            tokens: Mutex::new(Vec::new()),
        })
    }

    /// The open session `id` as `token` reaches it, opened from the source if this server
    /// does not hold it (a fenced one is let go and opened again). A refused or failed open
    /// leaves nothing behind.
    pub(crate) async fn get(&self, id: &str, token: usize) -> Result<Arc<Live>, Refusal> {
        self.get_for(id, Some(token)).await
    }

    /// As [`Sessions::get`] for the server itself (a launch): counted against no token.
    pub(crate) async fn get_untokened(&self, id: &str) -> Result<Arc<Live>, Refusal> {
        self.get_for(id, None).await
    }

    async fn get_for(&self, id: &str, token: Option<usize>) -> Result<Arc<Live>, Refusal> {
        let slot = self.slot(id);
        let got = self.get_in(id, token, &slot).await;
        if got.is_err() {
            self.drop_empty(id, &slot);
        }
        got
    }

    async fn get_in(
        &self,
        id: &str,
        token: Option<usize>,
        slot: &Slot,
    ) -> Result<Arc<Live>, Refusal> {
        let mut guard = slot.lock().await;
        if let Some(live) = guard.as_ref() {
            if !live.host.is_fenced() {
                if let Some(token) = token {
                    self.admit(live, token)?;
                }
                live.touch();
                return Ok(live.clone());
            }
            let fenced = guard.take();
            if let Some(fenced) = fenced {
                self.forget(&fenced);
                fenced.release().await;
            }
        }
        if self.stop.is_cancelled() {
            return Err(stopping());
        }
        // Counted before the open, so that opens in parallel cannot pass the cap together.
        if let Some(token) = token {
            self.count(token)?;
        }
        let host = match self.source.open(id).await {
            Ok(host) => host,
            Err(error) => {
                if let Some(token) = token {
                    self.uncount(token);
                }
                return Err(self.refusal(id, &error));
            }
        };
        let live = self.live(host);
        if let Some(token) = token {
            lock(&live.tokens).push(token);
        }
        *guard = Some(live.clone());
        Ok(live)
    }

    /// Whether this server holds session `id` open and not fenced (not touched: looking is
    /// no use).
    pub(crate) async fn holds(&self, id: &str) -> bool {
        let slot = lock(&self.slots).get(id).cloned();
        match slot {
            Some(slot) => slot
                .lock()
                .await
                .as_ref()
                .is_some_and(|live| !live.host.is_fenced()),
            None => false,
        }
    }

    /// The session `id` if this server holds it open (a `GET` or `DELETE` never opens one),
    /// as `token` reaches it.
    ///
    /// # Errors
    /// `404 session_not_open` when it is not open here (or fenced), `429 too_many_sessions`.
    pub(crate) async fn get_open(&self, id: &str, token: usize) -> Result<Arc<Live>, Refusal> {
        let slot = lock(&self.slots).get(id).cloned();
        if let Some(slot) = slot {
            let guard = slot.lock().await;
            if let Some(live) = guard.as_ref().filter(|live| !live.host.is_fenced()) {
                self.admit(live, token)?;
                live.touch();
                return Ok(live.clone());
            }
        }
        Err(Refusal::new(
            StatusCode::NOT_FOUND,
            "session_not_open",
            format!("session {id} is not open on this server; a POST of an MCP request opens it"),
        ))
    }

    /// Serves `host` (a session opened elsewhere: the reminder scanner's) from now on; if
    /// this server already holds the session, `host` is shut down instead.
    pub(crate) async fn adopt(&self, host: Arc<SessionHost>) {
        let slot = self.slot(host.session_id());
        let mut guard = slot.lock().await;
        if guard.as_ref().is_some_and(|live| !live.host.is_fenced()) || self.stop.is_cancelled() {
            drop(guard);
            host.shutdown().await;
            return;
        }
        if let Some(fenced) = guard.take() {
            self.forget(&fenced);
            fenced.release().await;
        }
        *guard = Some(self.live(host));
    }

    /// Releases every session with no request in flight, no job running, no terminal whose
    /// program runs and no request for at least `idle` (its connections end, its log is flushed, its lease freed); returns
    /// how many.
    pub(crate) async fn release_idle(&self, idle: Duration) -> usize {
        let now = Instant::now();
        let slots: Vec<(String, Slot)> = lock(&self.slots)
            .iter()
            .map(|(id, slot)| (id.clone(), slot.clone()))
            .collect();
        // Each session to release keeps its slot locked until its release is done (a request
        // for it waits, then opens it again); the releases run together, so one that waits
        // on a stalled store does not hold the others back.
        let mut releasing = Vec::new();
        for (id, slot) in slots {
            let Ok(mut guard) = slot.clone().try_lock_owned() else {
                continue;
            };
            let idle_enough = guard
                .as_ref()
                .and_then(|live| live.idle_for(now))
                .is_some_and(|for_| for_ >= idle);
            let fenced = guard.as_ref().is_some_and(|live| live.host.is_fenced());
            if !(idle_enough || fenced) {
                continue;
            }
            if let Some(live) = guard.take() {
                self.forget(&live);
                releasing.push((id, slot, guard, live));
            }
        }
        let released = releasing.len();
        let done = futures::future::join_all(releasing.into_iter().map(
            |(id, slot, guard, live)| async move {
                live.release().await;
                drop(guard);
                (id, slot)
            },
        ))
        .await;
        let mut slots = lock(&self.slots);
        for (id, slot) in done {
            if slots
                .get(&id)
                .is_some_and(|s| Arc::ptr_eq(s, &slot) && Arc::strong_count(s) <= 2)
            {
                slots.remove(&id);
            }
        }
        released
    }

    /// How many sessions are open.
    pub(crate) fn open(&self) -> usize {
        let slots: Vec<Slot> = lock(&self.slots).values().cloned().collect();
        slots
            .iter()
            .filter(|slot| slot.try_lock().map_or(true, |guard| guard.is_some()))
            .count()
    }

    /// Shuts every session down (after `stop` was cancelled). Every session's calls are
    /// ended first, together, and their answers waited for together: a call that takes a
    /// while to end (a foreground job given its kill grace) or an answer never written (a
    /// client stalled in the middle of its request) costs its time once, not once per
    /// session. The sessions are then shut down one by one.
    pub(crate) async fn release_all(&self) {
        let slots: Vec<Slot> = lock(&self.slots).drain().map(|(_, slot)| slot).collect();
        let mut lives = Vec::new();
        for slot in slots {
            let live = slot.lock().await.take();
            if let Some(live) = live {
                self.forget(&live);
                live.host.end_calls();
                lives.push(live);
            }
        }
        futures::future::join_all(lives.iter().map(|live| live.answers_written())).await;
        for live in lives {
            live.close().await;
        }
    }
}

pub(crate) fn stopping() -> Refusal {
    Refusal::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "stopping",
        "this server is stopping; retry on another instance",
    )
}

impl Sessions {
    /// The refusal of a session that could not be opened; the store's own text (paths, SQL)
    /// is logged (throttled), not sent.
    fn refusal(&self, id: &str, error: &ServeError) -> Refusal {
        refusal(id, error, |id, error| self.failures.note(id, error))
    }
}

fn refusal(id: &str, error: &ServeError, log: impl Fn(&str, &ServeError)) -> Refusal {
    match error {
        ServeError::Store(StoreError::Owned { owner, .. }) => {
            let mut refusal = Refusal::new(
                StatusCode::CONFLICT,
                "session_owned",
                format!("session {id} is served by host {owner}; retry after its lease expires"),
            );
            refusal.owner = Some(owner.clone());
            refusal
        }
        ServeError::Store(StoreError::Locked { .. }) => Refusal::new(
            StatusCode::CONFLICT,
            "session_locked",
            format!("session {id} is open in another process"),
        ),
        ServeError::Store(StoreError::Backend(_)) => {
            log(id, error);
            Refusal::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "store_unavailable",
                "the session store could not be reached; retry",
            )
        }
        _ => {
            log(id, error);
            Refusal::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "session_unusable",
                format!("session {id} could not be opened; the server's log says why"),
            )
        }
    }
}
