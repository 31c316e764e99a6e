//! [`serve`] and [`serve_stdio`]: run the MCP server of one session over a byte stream.

use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::service::{Peer, RoleServer};
use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use crate::lines::Lines;
use crate::server::{Reservations, Server};
use crate::session::{Change, SessionHost};
use crate::transport::Gate;
use crate::{ResultShape, ServeError};

/// How to serve.
#[derive(Clone, Debug, Default)]
pub struct ServeOptions {
    /// The shape of tool results (default: text only).
    pub shape: ResultShape,
    /// Cancelling this token ends the connection as if the client had closed it (the CLI
    /// cancels it on SIGTERM and SIGINT); the session is then shut down the same way.
    pub stop: CancellationToken,
}

/// Serves `host` over the standard streams until the client closes standard input, then
/// shuts the session down (jobs killed, log flushed).
///
/// # Errors
/// [`ServeError::Transport`] when the handshake or the connection fails.
pub async fn serve_stdio(host: Arc<SessionHost>, options: ServeOptions) -> Result<(), ServeError> {
    let (read, write) = rmcp::transport::stdio_pipes();
    serve(host, options, read, write).await
}

/// Serves `host` over one newline-delimited JSON-RPC stream (`read` from the client, `write`
/// to it) until the client closes it, then shuts the session down.
///
/// Run it on a current-thread runtime: a tool result's owed messages are committed when its
/// response is written, and a cancelled request's are released, and telling the two apart
/// relies on the serve loop not being preempted between retiring a request and writing its
/// response. On a multi-threaded runtime the guarantee weakens to at-least-once.
///
/// # Errors
/// [`ServeError::Transport`] when the handshake or the connection fails.
pub async fn serve<R, W>(
    host: Arc<SessionHost>,
    options: ServeOptions,
    read: R,
    write: W,
) -> Result<(), ServeError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let reservations = Reservations::default();
    let server = Server::new(host.clone(), options.shape).with_reservations(reservations.clone());
    let transport = Gate::new(Lines::new(read, write), Some(host.clone()), reservations);
    let changes = host.take_changes();
    let result = match server.clone().serve(transport).await {
        Ok(running) => {
            // Both tasks belong to this connection: they end with it (aborted when dropped,
            // and so if this future is dropped).
            let notifier = changes.map(|rx| {
                AbortOnDropHandle::new(tokio::spawn(notify(server, running.peer().clone(), rx)))
            });
            let stop = options.stop.clone();
            let service = running.cancellation_token();
            let stopper = AbortOnDropHandle::new(tokio::spawn(async move {
                stop.cancelled().await;
                service.cancel();
            }));
            let outcome = running.waiting().await;
            drop(stopper);
            drop(notifier);
            outcome
                .map(drop)
                .map_err(|e| ServeError::Transport(e.to_string()))
        }
        Err(error) => Err(ServeError::Transport(error.to_string())),
    };
    host.shutdown().await;
    result
}

/// Announces changes: a resource update to subscribers, and a logging notification (level
/// `info`, unless the client's `logging/setLevel` asked for more severe ones only) for every
/// queued notice or reminder.
#[expect(
    deprecated,
    reason = "logging is what clients of the initialize handshake show"
)]
async fn notify(
    server: Server,
    peer: Peer<RoleServer>,
    mut changes: mpsc::UnboundedReceiver<Change>,
) {
    while let Some(change) = changes.recv().await {
        match change {
            Change::Resource(uri) => {
                for uri in server.touched(uri) {
                    let param = rmcp::model::ResourceUpdatedNotificationParam::new(uri);
                    if peer.notify_resource_updated(param).await.is_err() {
                        return;
                    }
                }
            }
            Change::Queued(_) if !server.logs(rmcp::model::LoggingLevel::Info) => {}
            Change::Queued(message) => {
                let data = json!({
                    "source": message.source,
                    "text": message.joined_text(),
                });
                let param = rmcp::model::LoggingMessageNotificationParam::new(
                    rmcp::model::LoggingLevel::Info,
                    data,
                )
                .with_logger("harness");
                if peer.notify_logging_message(param).await.is_err() {
                    return;
                }
            }
        }
    }
}
