//! [`Lease`]: a host's write ownership of one session, renewed in the background.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::time::Instant;

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
/// * A renewal attempt that gets no answer within a sixth of the TTL (a silent connection, a
///   stalled server) counts as failed, and a failed one is retried after a twelfth. When no
///   renewal was confirmed for [`STOP_AFTER`] of the TTL (two thirds), the holder must stop its
///   work ([`Lease::must_stop`], [`Lease::stop_signal`]): the lease may lapse a third of the TTL
///   later, and whatever the session runs (its jobs) has to be gone before another host can
///   take the session. The signal stays set; the host disposes the session and drops its
///   handle.
/// * Dropping the lease stops the renewal and releases the session (the next host need not
///   wait for the TTL); [`Lease::release`] does it without blocking and waits for the release
///   to commit. A lease of a host that died expires after its TTL.
pub struct Lease {
    session: SessionId,
    host: String,
    epoch: i64,
    ttl: Duration,
    lost: watch::Receiver<bool>,
    lost_tx: Arc<watch::Sender<bool>>,
    lapsed: Arc<watch::Sender<bool>>,
    must_stop: watch::Receiver<bool>,
    /// Set once [`Lease::release`] ran: the drop has nothing left to do.
    released: AtomicBool,
    stop: CancellationToken,
    db: Db,
    bridge: Bridge,
}

/// The share of the TTL after the last confirmed renewal at which the holder must stop its
/// work (see [`Lease`]): 2/3, leaving a third of the TTL (10 s of the default 30 s) for the
/// stop before the lease can lapse.
pub const STOP_AFTER: (u32, u32) = (2, 3);

/// How long a release waits for the database before giving up (the lease then expires after
/// its TTL).
const RELEASE_BOUND: Duration = Duration::from_secs(5);

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
        let (must_stop_tx, must_stop) = watch::channel(false);
        let renewal = Renewal {
            session: session.as_str().to_owned(),
            host: host.clone(),
            epoch,
            ttl,
            db: db.clone(),
            lost: lost_tx.clone(),
            lapsed: lapsed.clone(),
            must_stop: must_stop_tx,
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
            must_stop,
            released: AtomicBool::new(false),
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

    /// Whether no renewal was confirmed for [`STOP_AFTER`] of the TTL: the holder must stop
    /// the session's work now, before the lease can lapse. Stays true.
    pub fn must_stop(&self) -> bool {
        *self.must_stop.borrow()
    }

    /// A receiver that turns `true` when [`Lease::must_stop`] does, for a host's select loop.
    pub fn stop_signal(&self) -> watch::Receiver<bool> {
        self.must_stop.clone()
    }

    /// How long after the last confirmed renewal [`Lease::must_stop`] turns true:
    /// [`STOP_AFTER`] of the TTL.
    pub fn stop_after(&self) -> Duration {
        stop_after(self.ttl)
    }

    /// Whether [`Lease::release`] ran (the handle writes nothing more).
    pub fn is_released(&self) -> bool {
        self.released.load(Ordering::SeqCst)
    }

    /// Stops the renewal and gives the session up, on the store's runtime, waiting (without
    /// blocking the caller's thread) up to 5 s for the release to commit; a release that does
    /// not commit in time leaves the lease to expire after its TTL. Idempotent; a lost lease
    /// has nothing to release. The handle writes nothing afterwards.
    pub async fn release(&self) {
        if self.released.swap(true, Ordering::SeqCst) {
            return;
        }
        self.stop.cancel();
        if self.is_lost() {
            return;
        }
        let release = self.release_work();
        let done = self.bridge.run(async move {
            release.await;
            Ok(())
        });
        if tokio::time::timeout(RELEASE_BOUND, done).await.is_err() {
            tracing::warn!(session = %self.session, "the lease's release did not commit in {RELEASE_BOUND:?}; it expires after its TTL");
        }
    }

    fn release_work(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let db = self.db.clone();
        let session = self.session.as_str().to_owned();
        let host = self.host.clone();
        let epoch = self.epoch;
        async move {
            if let Err(error) = db.release(&session, &host, epoch).await {
                tracing::warn!(%session, %error, "could not release the lease; it expires after its TTL");
            }
        }
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
    ///
    /// After [`Lease::release`] there is nothing left to do. A caller on an async runtime that
    /// cannot afford the wait awaits [`Lease::release`] first.
    fn drop(&mut self) {
        self.stop.cancel();
        if self.is_lost() || self.released.swap(true, Ordering::SeqCst) {
            return;
        }
        let release = self.release_work();
        self.bridge.run_and_wait(release, RELEASE_BOUND);
    }
}

fn stop_after(ttl: Duration) -> Duration {
    ttl * STOP_AFTER.0 / STOP_AFTER.1
}

struct Renewal {
    session: String,
    host: String,
    epoch: i64,
    ttl: Duration,
    db: Db,
    lost: Arc<watch::Sender<bool>>,
    lapsed: Arc<watch::Sender<bool>>,
    must_stop: watch::Sender<bool>,
    stop: CancellationToken,
}

impl Renewal {
    async fn run(self) {
        // When the last confirmed renewal was sent: the database extended the lease to at
        // least a TTL past it, whatever its clock says.
        let mut confirmed = Instant::now();
        let mut next = confirmed + self.ttl / 3;
        let attempt_bound = (self.ttl / 6).max(Duration::from_millis(50));
        let retry = (self.ttl / 12).max(Duration::from_millis(25));
        loop {
            let stop_at = confirmed + stop_after(self.ttl);
            let waiting = !*self.must_stop.borrow();
            tokio::select! {
                () = self.stop.cancelled() => return,
                () = tokio::time::sleep_until(stop_at), if waiting => {
                    self.stop_work(confirmed);
                    continue;
                }
                () = tokio::time::sleep_until(next) => {}
            }
            let sent = Instant::now();
            let attempt = tokio::time::timeout(
                attempt_bound,
                self.db
                    .renew(&self.session, &self.host, self.epoch, self.ttl),
            );
            tokio::pin!(attempt);
            // The stop is due on time even while an attempt waits for its answer.
            let outcome = loop {
                let waiting = !*self.must_stop.borrow();
                tokio::select! {
                    () = self.stop.cancelled() => return,
                    () = tokio::time::sleep_until(stop_at), if waiting => self.stop_work(confirmed),
                    outcome = &mut attempt => break outcome,
                }
            };
            match outcome {
                Ok(Ok(true)) => {
                    confirmed = sent;
                    next = sent + self.ttl / 3;
                    if self.lapsed.send_replace(false) {
                        tracing::info!(session = %self.session, "lapsed lease taken back");
                    }
                }
                Ok(Ok(false)) => {
                    if self.stop.is_cancelled() {
                        return;
                    }
                    self.taken().await;
                    break;
                }
                failed => {
                    match failed {
                        Ok(Err(error)) => {
                            tracing::warn!(session = %self.session, %error, "lease renewal failed");
                        }
                        _ => tracing::warn!(
                            session = %self.session,
                            "lease renewal unanswered after {attempt_bound:?}"
                        ),
                    }
                    next = Instant::now() + retry;
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

    /// No renewal confirmed for [`STOP_AFTER`] of the TTL: the holder must stop.
    fn stop_work(&self, confirmed: Instant) {
        tracing::warn!(
            session = %self.session,
            "no lease renewal confirmed for {:?}: the session's work must stop before the lease \
             can lapse ({:?} from now)",
            confirmed.elapsed(),
            (confirmed + self.ttl).saturating_duration_since(Instant::now()),
        );
        self.must_stop.send_replace(true);
    }

    /// A renewal found the row naming another owner or epoch: says who holds it now.
    async fn taken(&self) {
        let owner = tokio::time::timeout(
            (self.ttl / 6).max(Duration::from_millis(50)),
            self.db.owner(&self.session),
        )
        .await;
        match owner {
            Ok(Ok(Some((owner, epoch)))) if owner.as_deref() == Some(self.host.as_str()) => {
                tracing::warn!(
                    session = %self.session,
                    "lease epoch {} replaced by epoch {epoch} of this same host id {} (the \
                     session was opened again here, or another process runs with this host id)",
                    self.epoch,
                    self.host
                );
            }
            Ok(Ok(Some((Some(owner), epoch)))) => {
                tracing::warn!(session = %self.session, "lease taken by host {owner} (epoch {epoch})");
            }
            Ok(Ok(Some((None, _)))) => {
                tracing::warn!(session = %self.session, "lease released by another handle of the session");
            }
            Ok(Ok(None)) => {
                tracing::warn!(session = %self.session, "lease ended: the session is gone")
            }
            Ok(Err(_)) | Err(_) => {
                tracing::warn!(session = %self.session, "lease no longer this handle's (epoch {} is not the session's)", self.epoch);
            }
        }
    }
}
