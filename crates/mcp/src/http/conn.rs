//! The accept loop and each connection's bounds: how long a client may take to send a request's
//! head and to stay idle between requests, how many connections are open in total and per
//! token. A connection that never carried an authenticated request is the first to go when the
//! server is full, so connections held open by someone without a token cannot keep a client
//! with one out.

use std::collections::{BTreeMap, HashMap};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use turnkit_core::lock;

/// The bounds of connections (set from [`super::HttpOptions`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) header_timeout: Duration,
    pub(crate) keep_alive: Duration,
    pub(crate) max_connections: usize,
    pub(crate) max_connections_per_token: usize,
}

/// Where a connection is between requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Waiting for the first byte of a request, since this instant.
    Idle(Instant),
    /// Reading a request's head, whose first byte came at this instant (or, for a new
    /// connection, since it was accepted).
    Head(Instant),
    /// A request is being served (its body read by the handler, under its own bound, then
    /// its response written, an event stream for as long as it is open).
    Serving,
}

/// One open connection.
pub(crate) struct Conn {
    id: u64,
    phase: Mutex<Phase>,
    /// Woken on every change of phase: the connection's watchdog looks at its deadline again.
    changed: Notify,
    /// The token of its first authenticated request, counted against that token's cap.
    token: OnceLock<usize>,
    /// Closes the connection at once (evicted, or the server stopped waiting for it).
    close: CancellationToken,
    connections: Arc<Connections>,
}

/// A connection's request was refused because its token already has this many connections.
pub(crate) struct TooManyConnections(pub(crate) usize);

impl Conn {
    fn set(&self, phase: Phase) {
        *lock(&self.phase) = phase;
        self.changed.notify_one();
    }

    /// The first bytes of a request arrived on an idle connection.
    fn read_some(&self) {
        let mut phase = lock(&self.phase);
        if matches!(*phase, Phase::Idle(_)) {
            *phase = Phase::Head(Instant::now());
            drop(phase);
            self.changed.notify_one();
        }
    }

    /// A request's head was read: it is served from now on.
    pub(crate) fn serving(&self) {
        self.set(Phase::Serving);
    }

    /// The response was written (or dropped): idle until the next request.
    pub(crate) fn served(&self) {
        self.set(Phase::Idle(Instant::now()));
    }

    /// When the connection is closed unless something changes: a head not read within the
    /// header timeout, an idle connection past the keep-alive timeout; `None` while serving.
    fn deadline(&self, limits: &Limits) -> Option<Instant> {
        match *lock(&self.phase) {
            Phase::Idle(since) => Some(since + limits.keep_alive),
            Phase::Head(since) => Some(since + limits.header_timeout),
            Phase::Serving => None,
        }
    }

    /// Counts this connection against `token`'s cap on its first authenticated request (later
    /// requests on it are counted already); trusted from then on, it is never evicted.
    ///
    /// # Errors
    /// [`TooManyConnections`] with the cap when `token` holds as many connections already.
    pub(crate) fn claim(&self, token: usize) -> Result<(), TooManyConnections> {
        if self.token.get().is_some() {
            return Ok(());
        }
        let connections = &self.connections;
        let max = connections.limits.max_connections_per_token;
        let mut per_token = lock(&connections.per_token);
        let count = per_token.entry(token).or_default();
        if *count >= max {
            return Err(TooManyConnections(max));
        }
        if self.token.set(token).is_ok() {
            *count += 1;
            if let Some(entry) = lock(&connections.open).get(&self.id) {
                entry.trusted.store(true, Ordering::SeqCst);
            }
        }
        Ok(())
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        lock(&self.connections.open).remove(&self.id);
        if let Some(token) = self.token.get() {
            let mut per_token = lock(&self.connections.per_token);
            if let Some(count) = per_token.get_mut(token) {
                *count = count.saturating_sub(1);
                if *count == 0 {
                    per_token.remove(token);
                }
            }
        }
    }
}

/// What the table keeps of an open connection.
struct Entry {
    trusted: AtomicBool,
    close: CancellationToken,
}

/// Every open connection of a server, oldest first (ids grow).
pub(crate) struct Connections {
    limits: Limits,
    next: AtomicU64,
    open: Mutex<BTreeMap<u64, Entry>>,
    per_token: Mutex<HashMap<usize, usize>>,
}

impl Connections {
    pub(crate) fn new(limits: Limits) -> Arc<Self> {
        Arc::new(Self {
            limits,
            next: AtomicU64::new(0),
            open: Mutex::new(BTreeMap::new()),
            per_token: Mutex::new(HashMap::new()),
        })
    }

    /// How many connections are open.
    pub(crate) fn open(&self) -> usize {
        lock(&self.open).len()
    }

    /// Admits a new connection, closing the oldest one that never carried an authenticated
    /// request if the server is full; `None` (the new one is closed at once) when every open
    /// connection is trusted.
    fn admit(self: &Arc<Self>, stop: &CancellationToken) -> Option<Arc<Conn>> {
        let mut open = lock(&self.open);
        if open.len() >= self.limits.max_connections {
            let oldest = open
                .iter()
                .find(|(_, entry)| !entry.trusted.load(Ordering::SeqCst))
                .map(|(id, _)| *id)?;
            if let Some(evicted) = open.remove(&oldest) {
                evicted.close.cancel();
            }
        }
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let close = stop.child_token();
        open.insert(
            id,
            Entry {
                trusted: AtomicBool::new(false),
                close: close.clone(),
            },
        );
        drop(open);
        Some(Arc::new(Conn {
            id,
            // A new connection has the header timeout for its first request, first byte
            // included: one that sends nothing is closed as soon as one that sends half a line.
            phase: Mutex::new(Phase::Head(Instant::now())),
            changed: Notify::new(),
            token: OnceLock::new(),
            close,
            connections: self.clone(),
        }))
    }

    /// Closes the oldest connection that never carried an authenticated request (the process
    /// ran out of file descriptors); whether there was one.
    fn evict_one(&self) -> bool {
        let mut open = lock(&self.open);
        let oldest = open
            .iter()
            .find(|(_, entry)| !entry.trusted.load(Ordering::SeqCst))
            .map(|(id, _)| *id);
        oldest
            .and_then(|id| open.remove(&id))
            .map(|entry| entry.close.cancel())
            .is_some()
    }
}

/// A connection's socket, noting the first bytes of each request.
struct Watched {
    tcp: TcpStream,
    conn: Arc<Conn>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.tcp).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.conn.read_some();
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }
}

/// A response body that marks its connection idle when it is dropped (written in full, or
/// abandoned).
struct Served<B> {
    inner: B,
    conn: Arc<Conn>,
}

impl<B> Served<B> {
    fn new(inner: B, conn: Arc<Conn>) -> Self {
        Self { inner, conn }
    }
}

impl<B> Drop for Served<B> {
    fn drop(&mut self) {
        self.conn.served();
    }
}

impl<B> Body for Served<B>
where
    B: Body<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The largest request head (request line and headers), in bytes: what a connection may
/// buffer before its request is served (past it the connection is closed), 64 KiB.
pub(crate) const MAX_HEAD: usize = 64 * 1024;

/// How long the accept loop pauses after an accept error it cannot clear (no file descriptor
/// and no connection to give up), so it does not spin.
const ACCEPT_PAUSE: Duration = Duration::from_millis(20);

/// Accepts connections on `listener` until `stop` is cancelled, serving each with `handle`
/// (called once per request with its connection) in a task of `tasks`. Once stopped, every
/// connection is shut down gracefully (an idle one closes at once, one serving finishes its
/// response); `close_all` closes the rest at once.
pub(crate) async fn accept<H, F>(
    listener: tokio::net::TcpListener,
    connections: Arc<Connections>,
    handle: H,
    tasks: TaskTracker,
    stop: CancellationToken,
    close_all: CancellationToken,
) where
    H: Fn(Arc<Conn>, http::Request<hyper::body::Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = http::Response<axum::body::Body>> + Send + 'static,
{
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let tcp = match accepted {
            Ok((tcp, _)) => tcp,
            Err(error) => {
                // Out of file descriptors (EMFILE, ENFILE) and the like: give up the oldest
                // connection that nobody authenticated on, or wait a moment.
                tracing::debug!("mcp http: accept: {error}");
                if !connections.evict_one() {
                    tokio::time::sleep(ACCEPT_PAUSE).await;
                }
                continue;
            }
        };
        let Some(conn) = connections.admit(&close_all) else {
            // Full of connections that carried a token: this one is closed at once.
            drop(tcp);
            continue;
        };
        // Answers are small writes: no Nagle delay waiting for the client's acknowledgement.
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::debug!("mcp http: TCP_NODELAY: {error}");
        }
        let limits = connections.limits;
        tasks.spawn(serve_connection(
            tcp,
            conn,
            limits,
            handle.clone(),
            stop.clone(),
        ));
    }
}

async fn serve_connection<H, F>(
    tcp: TcpStream,
    conn: Arc<Conn>,
    limits: Limits,
    handle: H,
    stop: CancellationToken,
) where
    H: Fn(Arc<Conn>, http::Request<hyper::body::Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = http::Response<axum::body::Body>> + Send + 'static,
{
    let io = TokioIo::new(Watched {
        tcp,
        conn: conn.clone(),
    });
    let service_conn = conn.clone();
    let service = hyper::service::service_fn(move |request| {
        // Marked before the handler's future is first polled: its head is in.
        service_conn.serving();
        let conn = service_conn.clone();
        let response = handle(conn.clone(), request);
        async move {
            let response = response.await.map(|body| Served::new(body, conn));
            Ok::<_, std::convert::Infallible>(response)
        }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .keep_alive(true)
        .max_header_size(MAX_HEAD)
        .serve_connection(io, service);
    tokio::pin!(connection);
    let mut stopping = false;
    loop {
        let deadline = conn.deadline(&limits);
        let expired = async {
            match deadline {
                Some(deadline) => tokio::time::sleep_until(deadline).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            served = connection.as_mut() => {
                if let Err(error) = served {
                    tracing::debug!("mcp http: connection: {error}");
                }
                return;
            }
            () = conn.close.cancelled() => return,
            () = stop.cancelled(), if !stopping => {
                stopping = true;
                connection.as_mut().graceful_shutdown();
            }
            () = conn.changed.notified() => {}
            () = expired => {
                if conn.deadline(&limits).is_some_and(|d| d <= Instant::now()) {
                    return;
                }
            }
        }
    }
}
