//! Persistence fault injection: [`SessionFaults`] and the [`HostSession`] wrapper.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::watch;
use turnkit_core::{
    AppendError, JsonText, PersistenceError, ProjectionSet, RawEvent, Session, SessionEvent,
    SessionHeader, SessionId,
};

/// Switches that make one session's appends or flushes fail, and counters of what happened.
/// Shared by every [`HostSession`] of that session id, so they survive resume and restart.
#[derive(Debug)]
pub struct SessionFaults {
    append_fail: AtomicBool,
    flush_fail: AtomicBool,
    scripted: Mutex<VecDeque<bool>>,
    held: watch::Sender<bool>,
    flushes: AtomicU64,
}

impl Default for SessionFaults {
    fn default() -> Self {
        Self {
            append_fail: AtomicBool::new(false),
            flush_fail: AtomicBool::new(false),
            scripted: Mutex::new(VecDeque::new()),
            held: watch::channel(false).0,
            flushes: AtomicU64::new(0),
        }
    }
}

impl SessionFaults {
    /// Makes every append fail (`true`) or succeed (`false`), the host's `turn/*` events
    /// included.
    pub fn set_append_fail(&self, fail: bool) {
        self.append_fail.store(fail, Ordering::SeqCst);
    }

    /// Makes every flush fail (`true`) or succeed (`false`) until changed.
    pub fn set_flush_fail(&self, fail: bool) {
        self.flush_fail.store(fail, Ordering::SeqCst);
    }

    /// Queues outcomes for the next flushes (`true` = succeed), used before the
    /// [`SessionFaults::set_flush_fail`] switch.
    pub fn script_flushes(&self, outcomes: impl IntoIterator<Item = bool>) {
        turnkit_core::lock(&self.scripted).extend(outcomes);
    }

    /// Makes flushes wait (`true`) until released with `false`.
    pub fn hold_flushes(&self, hold: bool) {
        self.held.send_replace(hold);
    }

    /// How many flushes were requested for this session so far (including failed ones).
    pub fn flush_count(&self) -> u64 {
        self.flushes.load(Ordering::SeqCst)
    }

    fn append_fails(&self) -> bool {
        self.append_fail.load(Ordering::SeqCst)
    }

    async fn flush_outcome(&self) -> bool {
        self.flushes.fetch_add(1, Ordering::SeqCst);
        let mut held = self.held.subscribe();
        // Err only if the sender is gone, which cannot happen while `self` lives.
        let _ = held.wait_for(|h| !*h).await;
        let scripted = turnkit_core::lock(&self.scripted).pop_front();
        scripted.unwrap_or_else(|| !self.flush_fail.load(Ordering::SeqCst))
    }
}

/// The host's view of a stored session: applies [`SessionFaults`] and folds every committed
/// event into the host's projections.
pub struct HostSession {
    inner: Arc<dyn Session>,
    faults: Arc<SessionFaults>,
    projections: ProjectionSet,
}

impl HostSession {
    /// Wraps `inner`; the caller must `track` it in `projections` once.
    pub fn new(
        inner: Arc<dyn Session>,
        faults: Arc<SessionFaults>,
        projections: ProjectionSet,
    ) -> Self {
        Self {
            inner,
            faults,
            projections,
        }
    }

    /// Stops folding this session into the host's projections and lets go of the
    /// projections' reference to it (for a durable store, the last reference to the session
    /// handle may then close its file).
    pub fn untrack(&self) {
        self.projections.untrack(self.inner.id());
    }

    /// The fault switches of this session.
    pub fn faults(&self) -> &Arc<SessionFaults> {
        &self.faults
    }

    /// The host's own flush when an agent shuts down gracefully: it obeys the
    /// [`SessionFaults::set_flush_fail`] switch (so a test can make the shutdown lose the
    /// unflushed suffix, like a crash) but neither counts as a plugin barrier nor consumes
    /// scripted outcomes.
    ///
    /// # Errors
    /// The injected failure, or the store's [`PersistenceError`].
    pub async fn flush_store(&self) -> Result<(), PersistenceError> {
        if self.faults.flush_fail.load(Ordering::SeqCst) {
            return Err(PersistenceError::Failed(
                "injected flush failure".to_owned(),
            ));
        }
        self.inner.flush().await
    }
}

#[async_trait]
impl Session for HostSession {
    fn id(&self) -> &SessionId {
        self.inner.id()
    }

    fn header(&self) -> &SessionHeader {
        self.inner.header()
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn raw_events_after(&self, after: u64) -> Vec<RawEvent> {
        self.inner.raw_events_after(after)
    }

    fn append(&self, r#type: &str, data: Value) -> Result<SessionEvent, AppendError> {
        if self.faults.append_fails() {
            return Err(AppendError::Rejected("injected append failure".to_owned()));
        }
        let event = self.inner.append(r#type, data)?;
        self.projections.apply(self.inner.id(), &event);
        Ok(event)
    }

    fn append_raw(&self, r#type: &str, payload: JsonText) -> Result<RawEvent, AppendError> {
        if self.faults.append_fails() {
            return Err(AppendError::Rejected("injected append failure".to_owned()));
        }
        let event = self.inner.append_raw(r#type, payload)?;
        self.projections.apply_raw(self.inner.id(), &event);
        Ok(event)
    }

    async fn flush(&self) -> Result<(), PersistenceError> {
        if !self.faults.flush_outcome().await {
            return Err(PersistenceError::Failed(
                "injected flush failure".to_owned(),
            ));
        }
        self.inner.flush().await
    }
}
