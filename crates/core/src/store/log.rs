//! The in-memory part every store shares: the ordered event vector (in the shared
//! [`RawEvent`] form) and seq/time assignment.

use std::sync::{Arc, RwLock};

use serde_json::Value;
use smol_str::SmolStr;

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

    /// [`EventLog::push`] for a payload that is already one JSON value as text: the event is
    /// built in the log's own form, the text moved into it, and handed to `commit` while the
    /// log is locked.
    pub(crate) fn push_raw<E>(
        &self,
        r#type: &str,
        payload: String,
        commit: impl FnOnce(&RawEvent) -> Result<(), E>,
    ) -> Result<RawEvent, E> {
        let mut events = write_lock(&self.events);
        let event = RawEvent::owned(
            events.len() as u64 + 1,
            SmolStr::new(r#type),
            self.clock.now(),
            payload,
        );
        commit(&event)?;
        events.push(event.clone());
        Ok(event)
    }
}
