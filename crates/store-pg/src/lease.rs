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
///   (or a flush) finds the lease taken — the row names another owner or epoch — the lease is
///   lost: [`Lease::lost`] completes and [`Lease::is_lost`] turns true. The host must then
///   dispose the session's agent (which stops its jobs).
/// * When no renewal reached the database for a whole TTL (an outage, a partition), the lease
///   has *lapsed* ([`Lease::is_lapsed`]): another host may take the session meanwhile. The
///   renewals go on; the first that finds the row still naming this host at this epoch takes
///   the lease back (the lapse ends), and a flush in that state writes its batch. Only a row
///   naming another owner or epoch makes the lease lost.
/// * Dropping the lease stops the renewal and releases the session at once (the next host
///   need not wait for the TTL); a lease of a host that died expires after its TTL.
pub struct Lease {
    session: SessionId,
    host: String,
    epoch: i64,
    ttl: Duration,
    lost: watch::Receiver<bool>,
    lost_tx: Arc<watch::Sender<bool>>,
    lapsed: Arc<watch::Sender<bool>>,
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
            .field("lapsed", &self.is_lapsed())
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
        let lapsed = Arc::new(watch::channel(false).0);
        let renewal = Renewal {
            session: session.as_str().to_owned(),
            host: host.clone(),
            epoch,
            ttl,
            db: db.clone(),
            lost: lost_tx.clone(),
            lapsed: lapsed.clone(),
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
            lapsed,
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

    /// Whether no renewal has reached the database for a whole TTL, so another host may have
    /// taken the session (the lease is not known lost; the next renewal that reaches the
    /// database and finds the row unchanged takes it back).
    pub fn is_lapsed(&self) -> bool {
        *self.lapsed.borrow()
    }

    /// Completes when the lease is not lapsed (at once if it is current): when a renewal
    /// reached the database and took the lapsed lease back. A lease lost meanwhile stays
    /// lapsed, so a host waiting on this also watches [`Lease::lost`].
    pub async fn current(&self) {
        let mut lapsed = self.lapsed.subscribe();
        // Err only when the sender is gone, which the lease itself keeps alive.
        let _ = lapsed.wait_for(|l| !*l).await;
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
    lapsed: Arc<watch::Sender<bool>>,
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
                Ok(true) => {
                    confirmed = tokio::time::Instant::now();
                    if self.lapsed.send_replace(false) {
                        tracing::info!(session = %self.session, "lapsed lease taken back");
                    }
                }
                Ok(false) => {
                    tracing::warn!(session = %self.session, "lease taken by another host");
                    break;
                }
                Err(error) => {
                    tracing::warn!(session = %self.session, %error, "lease renewal failed");
                    // The row may still name this host: the renewals go on, and only a row
                    // naming another owner or epoch ends the lease.
                    if confirmed.elapsed() >= self.ttl && !self.lapsed.send_replace(true) {
                        tracing::warn!(session = %self.session, "lease lapsed: no renewal for a whole TTL");
                    }
                }
            }
        }
        if !self.stop.is_cancelled() {
            self.lost.send_replace(true);
        }
    }
}
