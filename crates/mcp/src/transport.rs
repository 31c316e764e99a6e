//! [`Gate`]: the transport wrapper that answers unknown methods sent before the lifecycle is
//! chosen with JSON-RPC -32601 (-32602 for a method this server serves whose params do not
//! decode), and commits the owed messages a response carries once the response has been
//! written.
//!
//! The lifecycle is chosen by `initialize` (2025-11-25 and earlier) or by the first request
//! other than `server/discover` and `ping` whose `_meta` names a protocol version this server
//! speaks with every key 2026-07-28 requires (the stateless era); until then the SDK answers
//! only requests, so anything else is kept from it.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, GetMeta, JsonRpcMessage, ProtocolVersion,
    ServerJsonRpcMessage,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

use crate::server::{Reservations, custom_request_error, id_key};
use crate::session::SessionHost;

/// Wraps the byte transport of one connection.
pub(crate) struct Gate<T> {
    inner: T,
    initialized: bool,
    /// The session whose owed messages responses carry; `None` for a server that serves no
    /// session (it never reserves any).
    host: Option<Arc<SessionHost>>,
    reservations: Reservations,
}

impl<T> Gate<T> {
    pub(crate) fn new(
        inner: T,
        host: Option<Arc<SessionHost>>,
        reservations: Reservations,
    ) -> Self {
        Self {
            inner,
            initialized: false,
            host,
            reservations,
        }
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for Gate<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // Taken before the write starts: the serve loop hands a response over right after it
        // retires the request, so a reservation still present later was never sent.
        let reservation = match &item {
            JsonRpcMessage::Response(response) => self.reservations.take(&id_key(&response.id)),
            // Only a tool result carries owed messages; an error never does.
            JsonRpcMessage::Error(error) => {
                if let Some(reservation) = error
                    .id
                    .as_ref()
                    .and_then(|id| self.reservations.take(&id_key(id)))
                    && let Some(host) = &self.host
                {
                    host.release(reservation);
                }
                None
            }
            JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => None,
        };
        let send = self.inner.send(item);
        let host = self.host.clone();
        async move {
            let sent = send.await;
            if let (Some(reservation), Some(host)) = (reservation, host) {
                match &sent {
                    Ok(()) => host.commit(reservation).await,
                    Err(_) => host.release(reservation),
                }
            }
            sent
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let message = self.inner.receive().await?;
            if self.initialized {
                return Some(message);
            }
            match &message {
                ClientJsonRpcMessage::Request(request) => match &request.request {
                    ClientRequest::InitializeRequest(_) => {
                        self.initialized = true;
                        return Some(message);
                    }
                    ClientRequest::CustomRequest(custom) => {
                        let error = ServerJsonRpcMessage::error(
                            custom_request_error(custom),
                            Some(request.id.clone()),
                        );
                        if self.inner.send(error).await.is_err() {
                            return None;
                        }
                    }
                    ClientRequest::DiscoverRequest(_) | ClientRequest::PingRequest(_) => {
                        return Some(message);
                    }
                    known => {
                        self.initialized = opens_stateless_session(known);
                        return Some(message);
                    }
                },
                // Nothing but a request means anything before the handshake; the SDK would
                // end the connection over a stray notification or response.
                ClientJsonRpcMessage::Notification(_)
                | ClientJsonRpcMessage::Response(_)
                | ClientJsonRpcMessage::Error(_) => {
                    tracing::debug!(
                        "mcp: ignoring a message that is not a request before initialize"
                    );
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}

/// Whether the SDK serves `request`, sent before any lifecycle was chosen, as the opener of a
/// stateless (2026-07-28) session: its `_meta` names a version this server speaks and has
/// every key 2026-07-28 requires (what the SDK checks).
fn opens_stateless_session(request: &ClientRequest) -> bool {
    let meta = request.get_meta();
    meta.protocol_version().is_some_and(|version| {
        ProtocolVersion::KNOWN_VERSIONS.contains(&version)
            && meta
                .missing_required_keys(&ProtocolVersion::V_2026_07_28)
                .is_empty()
    })
}
