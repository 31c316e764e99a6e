//! The proxy of the network by name: it runs in the server (on its runtime, one accept task
//! per job, no process or thread of its own) and serves HTTP (`CONNECT` and absolute
//! `http://` requests) and SOCKS5 (`CONNECT`) on one listener that lives in the job's
//! network namespace (see the sandbox's child `bridge`). It reads the name and port the job
//! asked for, checks them against the job's [`NetworkPolicy`] before resolving anything,
//! resolves allowed names itself on the host, connects from the host's network, and then
//! only copies bytes both ways: TLS is never terminated.

use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};
use tokio_util::task::AbortOnDropHandle;

use super::{NetworkPolicy, Refusals, Verdict};

/// The port of the proxy on the job's own `127.0.0.1` (HTTP and SOCKS5 on the same port:
/// a SOCKS5 greeting starts with the byte 5, an HTTP request with a letter).
pub(crate) const PROXY_PORT: u16 = 3128;

/// The largest HTTP request head read (bytes); a longer one is answered `431`.
const MAX_HEAD: usize = 64 * 1024;

/// The variables that send a job's clients through the proxy: curl, git, pip (and Python's
/// `urllib`), Go, Node's `undici` with a proxy agent, cargo. Lower-case forms too (curl reads
/// only `http_proxy` in lower case); `NO_PROXY` and `no_proxy` are emptied, so no name
/// bypasses the proxy (a bypass would only reach the job's own loopback).
pub(crate) fn proxy_env() -> Vec<(&'static str, String)> {
    let http = format!("http://127.0.0.1:{PROXY_PORT}");
    let socks = format!("socks5h://127.0.0.1:{PROXY_PORT}");
    vec![
        ("HTTP_PROXY", http.clone()),
        ("HTTPS_PROXY", http.clone()),
        ("http_proxy", http.clone()),
        ("https_proxy", http),
        ("ALL_PROXY", socks.clone()),
        ("all_proxy", socks),
        ("NO_PROXY", String::new()),
        ("no_proxy", String::new()),
    ]
}

/// What one job's connections are checked against, and where its refusals are counted.
#[derive(Debug)]
pub(crate) struct Gate {
    pub(crate) policy: NetworkPolicy,
    pub(crate) refusals: Arc<Refusals>,
}

impl Gate {
    /// Checks a connection to `host` (as the job gave it) on `port`; a refusal is counted.
    pub(super) fn admit(&self, host: &str, port: u16) -> Verdict {
        let verdict = self.policy.check(host, port);
        if verdict != Verdict::Allowed {
            tracing::info!(host, port, ?verdict, "sandbox proxy: connection refused");
            self.refusals.refuse(host, port);
        }
        verdict
    }
}

/// Serves the job's connections arriving on `listener` (a listener of the job's namespace)
/// until the returned handle is dropped, which also ends every open connection.
///
/// # Errors
/// The I/O error registering the listener with the runtime (must be called inside one).
pub(crate) fn serve(
    listener: std::net::TcpListener,
    gate: Arc<Gate>,
) -> std::io::Result<AbortOnDropHandle<()>> {
    listener.set_nonblocking(true)?;
    let listener = TcpListener::from_std(listener)?;
    Ok(AbortOnDropHandle::new(tokio::spawn(accept(listener, gate))))
}

async fn accept(listener: TcpListener, gate: Arc<Gate>) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(handle(stream, gate.clone()));
                }
                Err(error) => {
                    // Out of descriptors, most likely: wait for a connection to end.
                    tracing::warn!(%error, "sandbox proxy: accept failed");
                    if connections.join_next().await.is_none() {
                        tokio::task::yield_now().await;
                    }
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn handle(client: TcpStream, gate: Arc<Gate>) {
    let _ = client.set_nodelay(true);
    let mut first = [0u8; 1];
    if !matches!(client.peek(&mut first).await, Ok(1)) {
        return;
    }
    let result = if first[0] == 5 {
        super::socks::serve(client, &gate).await
    } else {
        super::http::serve(client, &gate, MAX_HEAD).await
    };
    if let Err(error) = result {
        tracing::debug!(%error, "sandbox proxy: connection ended");
    }
}

/// Resolves `host` on the host's side and connects to it on `port` (an IPv6 address with or
/// without brackets).
pub(super) async fn connect(host: &str, port: u16) -> std::io::Result<TcpStream> {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let stream = TcpStream::connect((bare, port)).await?;
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

/// Copies both ways until both sides are done (inside the kernel, see `relay`).
pub(super) async fn splice(client: TcpStream, upstream: TcpStream) -> std::io::Result<()> {
    super::relay::relay(&client, &upstream).await
}

/// Why the policy refused, for the proxy's answer (`… is not allowed: …`).
pub(super) fn reason(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Denied => "the name is in sandbox.network.deny",
        Verdict::PortNotAllowed => "the port is not in sandbox.network.ports",
        Verdict::NotAllowed | Verdict::Allowed => "the name is not in sandbox.network.allow",
    }
}
