//! [`HttpServer`]: every session of a store served over MCP's streamable HTTP transport, one
//! URL per session (`/sessions/{id}/mcp`), to many clients at once.
//!
//! Each session's URL is an MCP endpoint of its own, with the same tools, resources and
//! delivery as `harness mcp` over stdio: the session id is in the path, so any MCP client can
//! be pointed at one session with nothing but a URL, a load balancer can route by path, and a
//! token can be limited to session-id prefixes. Both protocol eras are served: clients of the
//! `initialize` handshake get an `Mcp-Session-Id` connection (many connections may share one
//! harness session), and 2026-07-28 clients are served request by request.
//!
//! Before a request reaches its session: its `Origin` is checked (absent, a loopback origin,
//! or one allowed: DNS-rebinding protection), its `Authorization: Bearer` token (when the
//! server has tokens), the session id's shape, the token's prefixes, its cap of connections
//! and the body's length; then its method (a `POST` may open or create a session, a `GET` or
//! `DELETE` only reaches one open here), its body (read in full within
//! [`HttpOptions::body_timeout`], and a JSON-RPC message) and the token's cap of sessions.
//! Each refusal is a status and a stable JSON body ([`Refusal`]); nothing is kept for one.
//!
//! The server runs its own accept loop over hyper's HTTP/1.1 connections, so that each
//! connection is bounded: [`HttpOptions::header_timeout`] from a request's first byte to the
//! end of its head, [`HttpOptions::keep_alive`] idle between requests, and at most
//! [`HttpOptions::max_connections`] open (a full server closes the oldest connection that
//! never carried an authenticated request to admit a new one) and
//! [`HttpOptions::max_connections_per_token`] per token.

mod auth;
mod conn;
mod generated;
mod grants;
mod held;
mod plain;
mod refused_log;
mod request;
mod sessions;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::transport::StreamableHttpServerConfig;
use tokio_util::sync::CancellationToken;
use tokio_util::task::{AbortOnDropHandle, TaskTracker};

pub use auth::{MAX_SESSION_ID, MIN_TOKEN, Refusal, Tokens};
pub use generated::{GENERATED_TOKEN_BYTES, GeneratedToken};
pub use grants::{GRANT_BYTES, SessionGrant};
pub(crate) use held::held;

use crate::session::SessionHost;
use crate::{ResultShape, ServeError};
use conn::{Connections, Limits};
use grants::Grants;
use sessions::Sessions;

/// The largest request body accepted by default, in bytes (1 MiB).
pub const DEFAULT_MAX_BODY: usize = 1024 * 1024;

/// How long a session with no request in flight, no job running and no terminal whose
/// program runs stays open by default before its lease is released (5 minutes).
pub const DEFAULT_IDLE: Duration = Duration::from_secs(300);

/// Where the HTTP server's sessions come from.
#[async_trait]
pub trait SessionSource: Send + Sync + 'static {
    /// Opens session `id` for this server, creating it if the store has none (the id has
    /// passed the URL's checks: 1 to [`MAX_SESSION_ID`] bytes of `A-Z a-z 0-9 . _ -`).
    ///
    /// # Errors
    /// As [`SessionHost::open_in`]; a `StoreError::Owned` is answered `409 session_owned`
    /// naming the owner, a `StoreError::Backend` `503 store_unavailable`, anything else
    /// `500 session_unusable` (the error itself is logged, not sent).
    async fn open(&self, id: &str) -> Result<Arc<SessionHost>, ServeError>;
}

/// How to serve over HTTP.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// The shape of tool results (default: text only).
    pub shape: ResultShape,
    /// The bearer tokens every request but `GET /healthz` must carry one of (a token file's,
    /// or a [`GeneratedToken`]); `None` serves without tokens, on a loopback address only.
    pub tokens: Option<Tokens>,
    /// Browser origins allowed besides loopback ones, exactly as sent (`https://app.example`,
    /// `http://host:8080`).
    pub allowed_origins: Vec<String>,
    /// How long a session with no request in flight, no job running and no terminal whose
    /// program runs stays open before it is released (connections ended, log flushed, lease freed), so another instance can
    /// take it; default [`DEFAULT_IDLE`].
    pub idle: Duration,
    /// The largest request body, in bytes; default [`DEFAULT_MAX_BODY`].
    pub max_body: usize,
    /// How long a client has, from a request's first byte, to send its whole head (request
    /// line and headers) before its connection is closed; default [`DEFAULT_HEADER_TIMEOUT`].
    pub header_timeout: Duration,
    /// How long a client has, from the end of a request's head, to send its whole body before
    /// it is answered `408 body_timeout` and its connection closed; default
    /// [`DEFAULT_BODY_TIMEOUT`].
    pub body_timeout: Duration,
    /// How long a connection may sit idle between requests (kept alive) before it is closed;
    /// default [`DEFAULT_KEEP_ALIVE`].
    pub keep_alive: Duration,
    /// The most connections open at once. When full, a new connection closes the oldest one
    /// that never carried an authenticated request, or is closed itself when every open one
    /// did; default [`DEFAULT_MAX_CONNECTIONS`].
    pub max_connections: usize,
    /// The most connections one token may hold (a connection counts for the token of its
    /// first authenticated request); over it a request is answered `429
    /// too_many_connections` and its connection closed; default
    /// [`DEFAULT_MAX_CONNECTIONS_PER_TOKEN`].
    pub max_connections_per_token: usize,
    /// The most sessions one token may have open on this server at once (a session counts for
    /// every token that reached it since it was opened, until it is released); over it a
    /// request for another session is answered `429 too_many_sessions`; default
    /// [`DEFAULT_MAX_SESSIONS_PER_TOKEN`].
    pub max_sessions_per_token: usize,
    /// Cancelling it stops the server: no new requests, every session shut down.
    pub stop: CancellationToken,
}

/// The default [`HttpOptions::header_timeout`] (10 s).
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// The default [`HttpOptions::body_timeout`] (30 s).
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// The default [`HttpOptions::keep_alive`] (60 s).
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(60);

/// The default [`HttpOptions::max_connections`] (1,024).
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// The default [`HttpOptions::max_connections_per_token`] (256).
pub const DEFAULT_MAX_CONNECTIONS_PER_TOKEN: usize = 256;

/// The default [`HttpOptions::max_sessions_per_token`] (100).
pub const DEFAULT_MAX_SESSIONS_PER_TOKEN: usize = 100;

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            shape: ResultShape::default(),
            tokens: None,
            allowed_origins: Vec::new(),
            idle: DEFAULT_IDLE,
            max_body: DEFAULT_MAX_BODY,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            keep_alive: DEFAULT_KEEP_ALIVE,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_connections_per_token: DEFAULT_MAX_CONNECTIONS_PER_TOKEN,
            max_sessions_per_token: DEFAULT_MAX_SESSIONS_PER_TOKEN,
            stop: CancellationToken::new(),
        }
    }
}

impl HttpOptions {
    /// Refuses to serve `addr` when it is not a loopback address and there are no tokens.
    ///
    /// # Errors
    /// [`ServeError::Unusable`]: `0.0.0.0:8080 is not a loopback address: serving it without a
    /// token is refused (drop --no-auth)`.
    pub fn check_bind(&self, addr: std::net::SocketAddr) -> Result<(), ServeError> {
        auth::check_bind(addr, self.tokens.as_ref())
    }
}

/// Serves the sessions of a [`SessionSource`] over streamable HTTP.
#[derive(Clone)]
pub struct HttpServer {
    sessions: Arc<Sessions>,
    connections: Arc<Connections>,
    options: HttpOptions,
    /// Whether the listener is on a loopback address: then a request's `Host` must be a
    /// loopback name too.
    loopback: Arc<AtomicBool>,
    /// The tokens granted at run time, one session each.
    grants: Arc<Grants>,
    /// The token refusals told on standard error, one line per code and window.
    refused: Arc<refused_log::RefusedLog>,
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl HttpServer {
    /// A server of `source`'s sessions; nothing is served until [`HttpServer::serve`].
    pub fn new(source: Arc<dyn SessionSource>, options: HttpOptions) -> Self {
        // `Host` is checked before a request reaches the transport (loopback names on a
        // loopback listener; any name elsewhere, where the token is the guard).
        let config = StreamableHttpServerConfig::default()
            .with_max_request_body_bytes(options.max_body)
            .with_json_response(true)
            .disable_allowed_hosts();
        let sessions = Sessions::new(
            source,
            options.shape,
            config,
            options.max_sessions_per_token,
            options.stop.clone(),
        );
        let connections = Connections::new(Limits {
            header_timeout: options.header_timeout,
            keep_alive: options.keep_alive,
            max_connections: options.max_connections.max(1),
            max_connections_per_token: options.max_connections_per_token.max(1),
        });
        Self {
            sessions: Arc::new(sessions),
            connections,
            options,
            loopback: Arc::new(AtomicBool::new(true)),
            grants: Arc::default(),
            refused: Arc::default(),
        }
    }

    /// The token index of a request to session `id`: a grant of that session, else as the
    /// token file says (`401`, `403 forbidden`); a grant of another session is `403`. Without
    /// tokens (`--no-auth`) every request passes, as token 0.
    pub(crate) fn check_token(
        &self,
        headers: &http::HeaderMap,
        id: &str,
    ) -> Result<usize, Refusal> {
        if self.options.tokens.is_some()
            && let Some(granted) = self.grants.check(headers, id)
        {
            return granted;
        }
        auth::check_token(headers, self.options.tokens.as_ref(), id)
    }

    /// A token that reaches session `id` only (over every route of its URL), until the
    /// returned [`SessionGrant`] is dropped. Without tokens (`--no-auth`) every request passes
    /// anyway and the grant limits nothing.
    ///
    /// # Errors
    /// [`ServeError::Unusable`] when the operating system gives no random bytes.
    pub fn grant_session(&self, id: &str) -> Result<SessionGrant, ServeError> {
        self.grants.grant(id)
    }

    /// Whether this server holds session `id` open now (opened by a request or adopted, not
    /// fenced). Looking does not count as a use: it does not keep the session from being
    /// released when idle.
    pub async fn holds(&self, id: &str) -> bool {
        self.sessions.holds(id).await
    }

    /// Session `id` as this server holds it, opened from the source (created if absent) when
    /// it holds it not; counted against no token's cap, and released when idle like any
    /// other.
    ///
    /// # Errors
    /// The [`Refusal`] a request would get: `409 session_owned` / `session_locked`, `503
    /// store_unavailable` or `stopping`, `500 session_unusable`.
    pub async fn session(&self, id: &str) -> Result<Arc<SessionHost>, Refusal> {
        self.sessions
            .get_untokened(id)
            .await
            .map(|live| live.host.clone())
    }

    /// Serves `host`, a session opened outside a request (the reminder scanner's), from now
    /// on; released when idle like any other. If this server already serves the session,
    /// `host` is shut down.
    pub async fn adopt(&self, host: Arc<SessionHost>) {
        self.sessions.adopt(host).await;
    }

    /// Releases every session idle for [`HttpOptions::idle`] (no request in flight, no job
    /// running, no terminal whose program runs; a fenced session at once) and returns how many. [`HttpServer::serve`] calls it
    /// every half idle period.
    pub async fn release_idle(&self) -> usize {
        self.sessions.release_idle(self.options.idle).await
    }

    /// How many sessions are open on this server.
    pub fn open_sessions(&self) -> usize {
        self.sessions.open()
    }

    /// How many connections are open on this server.
    pub fn open_connections(&self) -> usize {
        self.connections.open()
    }

    /// Serves on `listener` until [`HttpOptions::stop`] is cancelled, then shuts every session
    /// down (jobs stopped, logs flushed, leases released).
    ///
    /// # Errors
    /// [`ServeError::Unusable`] for a non-loopback address without tokens (`0.0.0.0:8080 is
    /// not a loopback address: serving it without a token is refused (drop --no-auth)`),
    /// [`ServeError::Transport`] when the listener fails.
    pub async fn serve(&self, listener: tokio::net::TcpListener) -> Result<(), ServeError> {
        let addr = listener
            .local_addr()
            .map_err(|e| ServeError::Transport(e.to_string()))?;
        self.options.check_bind(addr)?;
        self.loopback
            .store(addr.ip().is_loopback(), Ordering::SeqCst);
        let server = self.clone();
        // Owned by this call: aborted if it is dropped.
        let reaper = AbortOnDropHandle::new(tokio::spawn(reap(server.clone())));
        let stop = self.options.stop.clone();
        // Once stopped, the sessions are shut down while the connections drain: a session's
        // shutdown answers its calls in flight, then closes its connections (event streams
        // included), which lets every connection end.
        let released = CancellationToken::new();
        let releasing = {
            let server = server.clone();
            let stop = stop.clone();
            let released = released.clone();
            AbortOnDropHandle::new(tokio::spawn(async move {
                stop.cancelled().await;
                server.sessions.release_all().await;
                released.cancel();
            }))
        };
        let connections = TaskTracker::new();
        let close_all = CancellationToken::new();
        let handler = {
            let server = server.clone();
            move |conn, request| request::route(server.clone(), conn, request)
        };
        conn::accept(
            listener,
            self.connections.clone(),
            handler,
            connections.clone(),
            stop.clone(),
            close_all.clone(),
        )
        .await;
        connections.close();
        // Every session released (its calls answered, its connections closed), a connection
        // still open carries nothing owed (a client that stalls in the middle of a request):
        // it is not waited for past `DRAIN_BOUND`.
        let drained = async {
            released.cancelled().await;
            tokio::time::sleep(DRAIN_BOUND).await;
        };
        tokio::select! {
            () = connections.wait() => {}
            () = drained => {
                tracing::warn!(
                    "mcp http: connections still open {DRAIN_BOUND:?} after every session was \
                     released; no longer waiting for them"
                );
                close_all.cancel();
                connections.wait().await;
            }
        }
        let served = Ok(());
        // Stopped, the reaper ends after the release it may be making (joined, so that session
        // is shut down in full) and the releases are joined; after a failure both are aborted
        // and every session is released here.
        if self.options.stop.is_cancelled() {
            let _ = reaper.await;
            let _ = releasing.await;
        } else {
            drop(reaper);
            drop(releasing);
        }
        server.sessions.release_all().await;
        served
    }
}

/// How long a stopped server waits, once every session was released, for its last
/// connections to end.
const DRAIN_BOUND: Duration = Duration::from_secs(5);

/// Releases idle sessions every half idle period (at least every second) until stopped.
async fn reap(server: HttpServer) {
    let period = (server.options.idle / 2).max(Duration::from_secs(1));
    loop {
        tokio::select! {
            () = server.options.stop.cancelled() => return,
            () = tokio::time::sleep(period) => {}
        }
        server.release_idle().await;
    }
}
