//! [`Lease`]: a host's write ownership of one session, renewed in the background.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use turnkit_core::SessionId;

use crate::db::Db;
use crate::shared::Bridge;

/// Write ownership of one session by one host (docs/event-log.md, "Write ownership").
///
/// * `epoch` grows by one on every change of owner; every flush checks it, so a host that lost
///   the lease (paused past its TTL, cut off) cannot write again: its flush returns
///   `PersistenceError::Fenced`.
/// * A task on the store's runtime renews the lease every third of its TTL. When a renewal
///   finds the lease taken, or no renewal succeeded for a whole TTL, the lease is lost:
///   [`Lease::lost`] completes and [`Lease::is_lost`] turns true. The host must then dispose
///   the session's agent (which stops its jobs).
/// * Dropping the lease stops the renewal and releases the session at once (the next host
///   need not wait for the TTL); a lease of a host that died expires after its TTL.
pub struct Lease {
    session: SessionId,
    host: String,
    epoch: i64,
    ttl: Duration,
    lost: watch::Receiver<bool>,
    lost_tx: Arc<watch::Sender<bool>>,
    stop: CancellationToken,
    db: Db,
    bridge: Bridge,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("session", &self.session)
            .field("host", &self.host)
            .field("epoch", &self.epoch)
            .field("lost", &self.is_lost())
            .finish()
    }
}

impl Lease {
    /// Starts renewing a lease just acquired.
    pub(crate) fn start(
        session: SessionId,
        host: String,
        epoch: i64,
        ttl: Duration,
        db: Db,
        bridge: Bridge,
    ) -> Self {
        let (lost_tx, lost) = watch::channel(false);
        let lost_tx = Arc::new(lost_tx);
        let stop = CancellationToken::new();
        let renewal = Renewal {
            session: session.as_str().to_owned(),
            host: host.clone(),
            epoch,
            ttl,
            db: db.clone(),
            lost: lost_tx.clone(),
            stop: stop.clone(),
        };
        bridge.spawn(renewal.run());
        Self {
            session,
            host,
            epoch,
            ttl,
            lost,
            lost_tx,
            stop,
            db,
            bridge,
        }
    }

    /// The session this lease owns.
    pub fn session(&self) -> &SessionId {
        &self.session
    }

    /// The owning host's id.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The ownership epoch: greater than every earlier owner's.
    pub fn epoch(&self) -> i64 {
        self.epoch
    }

    /// The lease's time to live (renewed every third of it).
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Whether the lease is known to be lost.
    pub fn is_lost(&self) -> bool {
        *self.lost.borrow()
    }

    /// Completes when the lease is lost (at once if it already is).
    pub async fn lost(&self) {
        let mut lost = self.lost.clone();
        // Err only when the sender is gone, which the lease itself keeps alive.
        let _ = lost.wait_for(|l| *l).await;
    }

    /// A receiver that turns `true` when the lease is lost, for a host's select loop.
    pub fn lost_signal(&self) -> watch::Receiver<bool> {
        self.lost.clone()
    }

    /// Marks the lease lost (a flush found the session fenced).
    pub(crate) fn mark_lost(&self) {
        self.lost_tx.send_replace(true);
        self.stop.cancel();
    }
}

impl Drop for Lease {
    /// Stops the renewal and releases the session, waiting (off the store's runtime) for the
    /// release to commit so the next owner can take it at once.
    fn drop(&mut self) {
        self.stop.cancel();
        if self.is_lost() {
            return;
        }
        let db = self.db.clone();
        let session = self.session.as_str().to_owned();
        let host = self.host.clone();
        let epoch = self.epoch;
        let release = async move {
            if let Err(error) = db.release(&session, &host, epoch).await {
                tracing::warn!(%session, %error, "could not release the lease; it expires after its TTL");
            }
        };
        self.bridge.run_and_wait(release, Duration::from_secs(5));
    }
}

struct Renewal {
    session: String,
    host: String,
    epoch: i64,
    ttl: Duration,
    db: Db,
    lost: Arc<watch::Sender<bool>>,
    stop: CancellationToken,
}

impl Renewal {
    async fn run(self) {
        let mut confirmed = tokio::time::Instant::now();
        loop {
            tokio::select! {
                () = self.stop.cancelled() => return,
                () = tokio::time::sleep(self.ttl / 3) => {}
            }
            match self
                .db
                .renew(&self.session, &self.host, self.epoch, self.ttl)
                .await
            {
                Ok(true) => confirmed = tokio::time::Instant::now(),
                Ok(false) => {
                    tracing::warn!(session = %self.session, "lease taken by another host");
                    break;
                }
                Err(error) => {
                    tracing::warn!(session = %self.session, %error, "lease renewal failed");
                    if confirmed.elapsed() >= self.ttl {
                        break;
                    }
                }
            }
        }
        if !self.stop.is_cancelled() {
            self.lost.send_replace(true);
        }
    }
}
