//! The in-memory part every store shares: the ordered event vector (in the shared
//! [`RawEvent`] form) and seq/time assignment.

use std::sync::{Arc, RwLock};

use serde_json::Value;

use crate::{Clock, RawEvent, SessionEvent, read_lock, write_lock};

/// The live log of one session.
pub(crate) struct EventLog {
    events: RwLock<Vec<RawEvent>>,
    clock: Arc<dyn Clock>,
}

impl EventLog {
    pub(crate) fn new(events: Vec<RawEvent>, clock: Arc<dyn Clock>) -> Self {
        Self {
            events: RwLock::new(events),
            clock,
        }
    }

    pub(crate) fn len(&self) -> u64 {
        read_lock(&self.events).len() as u64
    }

    /// The events with `seq > after`, shared (no payload is copied).
    pub(crate) fn raw_events_after(&self, after: u64) -> Vec<RawEvent> {
        let events = read_lock(&self.events);
        let start = usize::try_from(after)
            .unwrap_or(usize::MAX)
            .min(events.len());
        events[start..].to_vec()
    }

    /// Builds the next event and hands it to `commit` while the log is locked, so whatever
    /// `commit` records (a pending file line) is in seq order. The event is added only when
    /// `commit` returns `Ok`.
    pub(crate) fn push<E>(
        &self,
        r#type: &str,
        data: Value,
        commit: impl FnOnce(&SessionEvent) -> Result<(), E>,
    ) -> Result<SessionEvent, E> {
        let mut events = write_lock(&self.events);
        let event = SessionEvent {
            seq: events.len() as u64 + 1,
            r#type: r#type.to_owned(),
            time: self.clock.now(),
            data,
        };
        commit(&event)?;
        events.push(RawEvent::from_event(&event));
        Ok(event)
    }
}
