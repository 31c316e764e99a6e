//! [`MemoryStore`]: the embedded default; sessions live as long as the store.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::Value;

use super::error::StoreError;
use super::log::EventLog;
use super::seam::SessionStore;
use crate::{
    AppendError, Clock, JsonText, PersistenceError, RawEvent, Session, SessionEvent, SessionHeader,
    SessionId,
};

/// An in-memory store. `flush` always succeeds (memory is the persistence), and reopening a
/// session returns the same live log, so a simulated restart sees every appended event.
pub struct MemoryStore {
    clock: Arc<dyn Clock>,
    sessions: Mutex<BTreeMap<SessionId, Arc<MemorySession>>>,
}

impl MemoryStore {
    /// An empty store whose events are stamped by `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            clock,
            sessions: Mutex::new(BTreeMap::new()),
        }
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, BTreeMap<SessionId, Arc<MemorySession>>> {
        crate::lock(&self.sessions)
    }
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("sessions", &self.list())
            .finish()
    }
}

impl SessionStore for MemoryStore {
    fn create(&self, header: SessionHeader) -> Result<Arc<dyn Session>, StoreError> {
        self.create_with_events(header, Vec::new())
    }

    fn open(&self, id: &SessionId) -> Result<Arc<dyn Session>, StoreError> {
        self.sessions()
            .get(id)
            .cloned()
            .map(|s| s as Arc<dyn Session>)
            .ok_or_else(|| StoreError::NotFound(id.clone()))
    }

    fn list(&self) -> Vec<SessionId> {
        self.sessions().keys().cloned().collect()
    }

    fn create_with_events(
        &self,
        header: SessionHeader,
        events: Vec<RawEvent>,
    ) -> Result<Arc<dyn Session>, StoreError> {
        let mut sessions = self.sessions();
        if sessions.contains_key(&header.id) {
            return Err(StoreError::AlreadyExists(header.id));
        }
        let session = Arc::new(MemorySession {
            header: header.clone(),
            log: EventLog::new(events, self.clock.clone()),
        });
        sessions.insert(header.id, session.clone());
        Ok(session)
    }
}

struct MemorySession {
    header: SessionHeader,
    log: EventLog,
}

#[async_trait]
impl Session for MemorySession {
    fn id(&self) -> &SessionId {
        &self.header.id
    }

    fn header(&self) -> &SessionHeader {
        &self.header
    }

    fn len(&self) -> u64 {
        self.log.len()
    }

    fn raw_events_after(&self, after: u64) -> Vec<RawEvent> {
        self.log.raw_events_after(after)
    }

    fn append(&self, r#type: &str, data: Value) -> Result<SessionEvent, AppendError> {
        self.log
            .push(r#type, data, |_| Ok::<(), Infallible>(()))
            .map_err(|never| match never {})
    }

    /// Keeps `payload`'s text as it is (JSON by construction).
    fn append_raw(&self, r#type: &str, payload: JsonText) -> Result<RawEvent, AppendError> {
        self.log
            .push_raw(r#type, payload.into_string(), |_| Ok::<(), Infallible>(()))
            .map_err(|never| match never {})
    }

    async fn flush(&self) -> Result<(), PersistenceError> {
        Ok(())
    }
}
