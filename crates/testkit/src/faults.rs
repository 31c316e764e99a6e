//! Persistence fault injection: [`SessionFaults`], the hooks of the [`HostSession`] decorator.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tokio::sync::watch;
use turnkit_core::{AppendError, HookedSession, PersistenceError, SessionHooks};

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

/// The host's view of a stored session: turnkit-core's [`HookedSession`] with the session's
/// [`SessionFaults`] as its hooks. Projections are not fed from here: the host kit pulls the
/// log when a view is read.
pub type HostSession = HookedSession<Arc<SessionFaults>>;

#[async_trait]
impl SessionHooks for SessionFaults {
    fn before_append(&self, _type: &str) -> Result<(), AppendError> {
        if self.append_fails() {
            return Err(AppendError::Rejected("injected append failure".to_owned()));
        }
        Ok(())
    }

    async fn before_flush(&self) -> Result<(), PersistenceError> {
        if !self.flush_outcome().await {
            return Err(PersistenceError::Failed(
                "injected flush failure".to_owned(),
            ));
        }
        Ok(())
    }
}

impl SessionFaults {
    /// The host's own flush of `session` when an agent shuts down gracefully: it obeys the
    /// [`SessionFaults::set_flush_fail`] switch (so a test can make the shutdown lose the
    /// unflushed suffix, like a crash) but neither counts as a plugin barrier nor consumes
    /// scripted outcomes.
    ///
    /// # Errors
    /// The injected failure, or the store's [`PersistenceError`].
    pub async fn flush_store(&self, session: &HostSession) -> Result<(), PersistenceError> {
        if self.flush_fail.load(Ordering::SeqCst) {
            return Err(PersistenceError::Failed(
                "injected flush failure".to_owned(),
            ));
        }
        session.inner().flush().await
    }
}
