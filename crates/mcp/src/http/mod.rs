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
//! server has tokens), the session id's shape, the token's prefixes and the body's length;
//! each refusal is a status and a stable JSON body ([`Refusal`]).

mod auth;
mod generated;
mod held;
mod sessions;

use std::future::IntoFuture;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use rmcp::transport::StreamableHttpServerConfig;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

pub use auth::{MAX_SESSION_ID, MIN_TOKEN, Refusal, Tokens};
pub use generated::{GENERATED_TOKEN_BYTES, GeneratedToken};
pub(crate) use held::held;

use crate::session::SessionHost;
use crate::{ResultShape, ServeError};
use held::{Committing, Held};
use sessions::Sessions;

/// The largest request body accepted by default, in bytes (1 MiB).
pub const DEFAULT_MAX_BODY: usize = 1024 * 1024;

/// How long a session with no request in flight and no job running stays open by default
/// before its lease is released (5 minutes).
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
    /// How long a session with no request in flight and no job running stays open before it
    /// is released (connections ended, log flushed, lease freed), so another instance can
    /// take it; default [`DEFAULT_IDLE`].
    pub idle: Duration,
    /// The largest request body, in bytes; default [`DEFAULT_MAX_BODY`].
    pub max_body: usize,
    /// Cancelling it stops the server: no new requests, every session shut down.
    pub stop: CancellationToken,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            shape: ResultShape::default(),
            tokens: None,
            allowed_origins: Vec::new(),
            idle: DEFAULT_IDLE,
            max_body: DEFAULT_MAX_BODY,
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
    options: HttpOptions,
    /// Whether the listener is on a loopback address: then a request's `Host` must be a
    /// loopback name too.
    loopback: Arc<AtomicBool>,
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
        let sessions = Sessions::new(source, options.shape, config, options.stop.clone());
        Self {
            sessions: Arc::new(sessions),
            options,
            loopback: Arc::new(AtomicBool::new(true)),
        }
    }

    /// Serves `host`, a session opened outside a request (the reminder scanner's), from now
    /// on; released when idle like any other. If this server already serves the session,
    /// `host` is shut down.
    pub async fn adopt(&self, host: Arc<SessionHost>) {
        self.sessions.adopt(host).await;
    }

    /// Releases every session idle for [`HttpOptions::idle`] (no request in flight, no job
    /// running; a fenced session at once) and returns how many. [`HttpServer::serve`] calls it
    /// every half idle period.
    pub async fn release_idle(&self) -> usize {
        self.sessions.release_idle(self.options.idle).await
    }

    /// How many sessions are open on this server.
    pub fn open_sessions(&self) -> usize {
        self.sessions.open()
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
        let app = axum::Router::new()
            .fallback(route)
            .with_state(server.clone());
        let stop = self.options.stop.clone();
        // Answers are small writes: no Nagle delay waiting for the client's acknowledgement.
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            if let Err(error) = tcp.set_nodelay(true) {
                tracing::debug!("mcp http: TCP_NODELAY: {error}");
            }
        });
        // Once stopped, the sessions are shut down while the connections drain: a session's
        // shutdown answers its calls in flight, then closes its connections (event streams
        // included), which lets the graceful shutdown below finish.
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
        let graceful = axum::serve(listener, app)
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .into_future();
        // Every session released (its calls answered, its connections closed), a connection
        // still open carries nothing owed (a client that stalls in the middle of a request):
        // it is not waited for past `DRAIN_BOUND`.
        let drained = async {
            released.cancelled().await;
            tokio::time::sleep(DRAIN_BOUND).await;
        };
        let served = tokio::select! {
            served = graceful => served.map_err(|e| ServeError::Transport(e.to_string())),
            () = drained => {
                tracing::warn!(
                    "mcp http: connections still open {DRAIN_BOUND:?} after every session was \
                     released; no longer waiting for them"
                );
                Ok(())
            }
        };
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

/// The path's session id: `/sessions/{id}/mcp`.
fn session_of(path: &str) -> Option<&str> {
    path.strip_prefix("/sessions/")?.strip_suffix("/mcp")
}

async fn route(State(server): State<HttpServer>, request: Request) -> Response {
    match serve_request(&server, request).await {
        Ok(response) => response,
        Err(refusal) => refusal.into_response(),
    }
}

async fn serve_request(server: &HttpServer, mut request: Request) -> Result<Response, Refusal> {
    let options = &server.options;
    if server.loopback.load(Ordering::SeqCst) {
        auth::check_loopback_host(request.headers())?;
    }
    auth::check_origin(request.headers(), &options.allowed_origins)?;
    let path = request.uri().path().to_owned();
    if path == "/healthz" {
        return Ok((StatusCode::OK, "ok\n").into_response());
    }
    let Some(id) = session_of(&path) else {
        return Err(Refusal::new(
            StatusCode::NOT_FOUND,
            "not_found",
            "sessions are served at /sessions/{id}/mcp",
        ));
    };
    auth::check_token(request.headers(), options.tokens.as_ref(), id)?;
    auth::check_session_id(id)?;
    auth::check_length(request.headers(), options.max_body)?;
    let live = server.sessions.get(id).await?;
    let held = Held::new(live.host.clone());
    request.extensions_mut().insert(held.clone());
    // Counted until the response body is dropped, or until this future is dropped first (a
    // client that hangs up while a 2026-07-28 call runs: the transport answers that call
    // inside `handle`).
    let counted = sessions::InFlight::new(live.clone(), request.method() == http::Method::POST);
    let on_drop = Box::new(move || drop(counted));
    let response = live.service.handle(request).await;
    let (parts, body) = response.into_parts();
    let body = Committing::new(body, held, on_drop);
    Ok(Response::from_parts(parts, Body::new(body)))
}
