//! [`HookedSession`]: the one session decorator a host puts around a stored session, with
//! [`SessionHooks`] before and after its writes.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::{
    AppendError, JsonText, PersistenceError, RawEvent, Session, SessionEvent, SessionHeader,
    SessionId,
};

/// What a [`HookedSession`] asks before, and tells after, the wrapped session's writes. Every
/// method has a default that does nothing, so a host implements only the hooks it needs (the
/// MCP server: [`SessionHooks::appended`] to announce resource changes; the testkit: the
/// `before_*` hooks to inject faults).
///
/// Hooks describe what is already true: [`SessionHooks::appended`] runs after the event is in
/// the log. The decorator never folds events anywhere (projections pull the log themselves).
#[async_trait]
pub trait SessionHooks: Send + Sync + 'static {
    /// Called before an append of `type`; an error refuses it and the log is unchanged.
    ///
    /// # Errors
    /// The [`AppendError`] the caller receives.
    fn before_append(&self, r#type: &str) -> Result<(), AppendError> {
        let _ = r#type;
        Ok(())
    }

    /// Called after an event of `type` with `seq` was committed to the live log.
    fn appended(&self, seq: u64, r#type: &str) {
        let _ = (seq, r#type);
    }

    /// Called when a flush starts, before the wrapped session's; an error fails the flush
    /// without reaching the store. It may wait (a test holding flushes).
    ///
    /// # Errors
    /// The [`PersistenceError`] the caller receives.
    async fn before_flush(&self) -> Result<(), PersistenceError> {
        Ok(())
    }
}

/// Shared hooks (one set for every handle of a session, as the testkit's fault switches).
#[async_trait]
impl<H: SessionHooks + ?Sized> SessionHooks for Arc<H> {
    fn before_append(&self, r#type: &str) -> Result<(), AppendError> {
        (**self).before_append(r#type)
    }

    fn appended(&self, seq: u64, r#type: &str) {
        (**self).appended(seq, r#type);
    }

    async fn before_flush(&self) -> Result<(), PersistenceError> {
        (**self).before_flush().await
    }
}

/// A [`Session`] that forwards to `inner` and calls `H`'s [`SessionHooks`] around the writes;
/// reads go straight to `inner`.
pub struct HookedSession<H> {
    inner: Arc<dyn Session>,
    hooks: H,
}

impl<H: SessionHooks> HookedSession<H> {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn Session>, hooks: H) -> Self {
        Self { inner, hooks }
    }

    /// The wrapped session.
    pub fn inner(&self) -> &Arc<dyn Session> {
        &self.inner
    }

    /// The hooks.
    pub fn hooks(&self) -> &H {
        &self.hooks
    }
}

impl<H> std::fmt::Debug for HookedSession<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookedSession")
            .field("session", self.inner.id())
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl<H: SessionHooks> Session for HookedSession<H> {
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
        self.hooks.before_append(r#type)?;
        let event = self.inner.append(r#type, data)?;
        self.hooks.appended(event.seq, r#type);
        Ok(event)
    }

    fn append_raw(&self, r#type: &str, payload: JsonText) -> Result<RawEvent, AppendError> {
        self.hooks.before_append(r#type)?;
        let event = self.inner.append_raw(r#type, payload)?;
        self.hooks.appended(event.seq(), r#type);
        Ok(event)
    }

    async fn flush(&self) -> Result<(), PersistenceError> {
        self.hooks.before_flush().await?;
        self.inner.flush().await
    }

    async fn release(&self) {
        self.inner.release().await;
    }
}
