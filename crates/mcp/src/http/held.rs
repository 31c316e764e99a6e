//! The owed messages a tool result over HTTP carries are committed once its response body has
//! been handed to the connection in full, and released (still owed) when the body is dropped
//! before that: what the stdio server does when it writes a response line.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use rmcp::RoleServer;
use rmcp::service::RequestContext;
use turnkit_core::lock;

use crate::session::SessionHost;

/// The reservations of one HTTP request's response, put into the request's extensions; the
/// server's tool call finds it there ([`held`]) and holds its reservation in it.
#[derive(Clone)]
pub(crate) struct Held {
    inner: Arc<HeldInner>,
}

struct HeldInner {
    host: Arc<SessionHost>,
    reservations: Mutex<Vec<u64>>,
}

impl Held {
    pub(crate) fn new(host: Arc<SessionHost>) -> Self {
        Self {
            inner: Arc::new(HeldInner {
                host,
                reservations: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Keeps `reservation` until the response is written (commit) or dropped (release).
    pub(crate) fn hold(&self, reservation: u64) {
        lock(&self.inner.reservations).push(reservation);
    }

    fn take(&self) -> Vec<u64> {
        std::mem::take(&mut *lock(&self.inner.reservations))
    }
}

impl Drop for HeldInner {
    /// A backstop: a reservation still held when the last handle goes (a request dropped
    /// before its response body was made, so no [`Committing`] ever took it) is released, so
    /// its messages stay owed to the next result instead of reserved until a restart.
    fn drop(&mut self) {
        for reservation in std::mem::take(&mut *lock(&self.reservations)) {
            self.host.release(reservation);
        }
    }
}

/// The [`Held`] of the HTTP request a tool call came in, if it came over HTTP.
pub(crate) fn held(context: &RequestContext<RoleServer>) -> Option<Held> {
    context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Held>())
        .cloned()
}

/// A response body that commits its request's reservations when its last frame was taken,
/// and releases them if it is dropped first. `on_drop` runs when it is dropped either way.
pub(crate) struct Committing<B> {
    inner: B,
    held: Option<Held>,
    on_drop: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl<B> Committing<B> {
    pub(crate) fn new(inner: B, held: Held, on_drop: Box<dyn FnOnce() + Send + Sync>) -> Self {
        Self {
            inner,
            held: Some(held),
            on_drop: Some(on_drop),
        }
    }
}

impl<B> Drop for Committing<B> {
    fn drop(&mut self) {
        if let Some(held) = self.held.take() {
            for reservation in held.take() {
                held.inner.host.release(reservation);
            }
        }
        if let Some(on_drop) = self.on_drop.take() {
            on_drop();
        }
    }
}

impl<B> Body for Committing<B>
where
    B: Body<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        // The last frame was taken: the end of the body, or a frame after which the inner body
        // says it is at its end (a body of known length, such as a JSON response, which the
        // connection may drop once its length was written, without another poll).
        let last = match &polled {
            Poll::Ready(None) => true,
            Poll::Ready(Some(Ok(_))) => self.inner.is_end_stream(),
            _ => false,
        };
        if last && let Some(held) = self.held.take() {
            let reservations = held.take();
            if !reservations.is_empty() {
                let host = held.inner.host.clone();
                // One of the session's own tasks: its shutdown waits for the claim.
                held.inner.host.spawn(async move {
                    for reservation in reservations {
                        host.commit(reservation).await;
                    }
                });
            }
        }
        polled
    }

    /// Not until the inner body said so by its last poll: the commit waits for that poll.
    fn is_end_stream(&self) -> bool {
        self.held.is_none() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
#[path = "held_tests.rs"]
mod tests;
