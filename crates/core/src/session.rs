//! The [`Session`] seam: one append-only event log with a durability barrier.

use async_trait::async_trait;
use serde_json::Value;

use crate::{JsonText, RawEvent, SessionEvent, SessionHeader, SessionId};

/// Why an append was refused. Nothing was added to the log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AppendError {
    /// The session was closed (its store or host let go of it).
    #[error("session {0} is closed")]
    Closed(SessionId),
    /// The host refused the event (an invariant veto, or an injected fault in tests).
    #[error("append rejected: {0}")]
    Rejected(String),
}

/// The refusal of an [`Session::append_raw`] payload that is not one JSON value.
pub(crate) fn payload_error(error: &serde_json::Error) -> AppendError {
    AppendError::Rejected(format!("payload is not one JSON value: {error}"))
}

/// Why a flush could not confirm durability. Appended events stay in the live log; a later
/// successful flush may still persist them (schedule §10: uncertainty, not loss).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PersistenceError {
    /// Writing or syncing the backing file failed. The durable log is as it was before the
    /// flush (the JSONL store cuts the file back to its durable length) and the events stay
    /// buffered, so a later flush writes them once. Retry the flush when the cause is gone.
    #[error("i/o error persisting session {session}: {message}")]
    Io {
        /// The session.
        session: SessionId,
        /// The operating system's message.
        message: String,
    },
    /// The session is no longer live in its store.
    #[error("session {0} is detached from its store")]
    Detached(SessionId),
    /// A host- or test-injected failure.
    #[error("flush failed: {0}")]
    Failed(String),
    /// The store gave this session's write ownership to another host (the PostgreSQL store:
    /// the handle's lease epoch is no longer the session's). Nothing was written and nothing
    /// ever will be through this handle: the host must stop the session's agents and jobs and
    /// let the new owner continue (docs/event-log.md, "Write ownership").
    #[error("session {0}: this host no longer owns the session; stop its agents and jobs")]
    Fenced(SessionId),
}

/// One session's append-only event log.
///
/// `append` is synchronous and commits to the live log at once (readers see it immediately);
/// `flush` is the durability barrier: when it returns `Ok`, everything appended before the call
/// is durable in the store. Implementations are shared as `Arc<dyn Session>`.
#[async_trait]
pub trait Session: Send + Sync {
    /// The session id.
    fn id(&self) -> &SessionId;

    /// The header written at creation.
    fn header(&self) -> &SessionHeader;

    /// The number of events in the log, which is also the seq of the last event (0 when
    /// empty).
    fn len(&self) -> u64;

    /// Whether the log has no events.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The events with `seq > after`, in order, shared with the log: each is an envelope and
    /// its raw JSON payload, and nothing is copied or decoded (a clone is a few reference
    /// counts). `raw_events_after(0)` is the whole log. This is the read every fold uses:
    /// incremental folds remember the last seq they applied and read only the suffix, and
    /// each decodes only the payloads it folds, straight into its own typed form.
    fn raw_events_after(&self, after: u64) -> Vec<RawEvent>;

    /// A decoded copy of the events with `seq > after`, in order: every payload is parsed
    /// into a `serde_json::Value`. For hosts, tools and tests that want owned values; folds
    /// use [`Session::raw_events_after`].
    fn events_after(&self, after: u64) -> Vec<SessionEvent> {
        self.raw_events_after(after)
            .iter()
            .map(RawEvent::to_event)
            .collect()
    }

    /// A decoded copy of the whole log (see [`Session::events_after`]).
    fn events(&self) -> Vec<SessionEvent> {
        self.events_after(0)
    }

    /// Appends one event of `type` with payload `data` and returns it with its seq and time.
    ///
    /// # Errors
    /// [`AppendError`] when the event was not added; the log is unchanged.
    fn append(&self, r#type: &str, data: Value) -> Result<SessionEvent, AppendError>;

    /// Appends one event of `type` whose payload is already JSON text, and returns it in the
    /// log's own form: the same event as [`Session::append`] of the parsed payload (same seq
    /// and time rules, same text in the log and on disk, since a [`JsonText`] is the compact
    /// form `serde_json` writes). A writer on a hot path (the job journal) serializes its
    /// payload straight to text ([`JsonText::serialize`] of a borrowed struct) and skips
    /// building a `serde_json::Value` tree; a store that keeps payloads as text (the in-memory store) keeps it as it is,
    /// without checking, parsing or writing it again.
    ///
    /// The default parses `payload` and calls [`Session::append`], so a store or wrapper that
    /// does not override it behaves exactly as with `append` (the JSONL and PostgreSQL stores
    /// write the same bytes either way).
    ///
    /// # Errors
    /// [`AppendError::Rejected`] (`payload is not one JSON value: …`) when the default cannot
    /// parse `payload` into a `Value` (a raw value holding a number beyond the `f64` range),
    /// else as [`Session::append`]. Either way the log is unchanged.
    fn append_raw(&self, r#type: &str, payload: JsonText) -> Result<RawEvent, AppendError> {
        let data: Value =
            serde_json::from_str(payload.as_str()).map_err(|error| payload_error(&error))?;
        self.append(r#type, data)
            .map(|event| RawEvent::from_event(&event))
    }

    /// Makes everything appended so far durable. Implementations never block the caller's
    /// executor thread on I/O, and a failed flush leaves the durable log as it was.
    ///
    /// # Errors
    /// [`PersistenceError`] when durability could not be confirmed.
    async fn flush(&self) -> Result<(), PersistenceError>;

    /// Gives up what the store holds for this handle (a PostgreSQL lease) without blocking
    /// the caller's executor thread: what dropping the handle does, for a host done with the
    /// session that cannot afford a blocking drop (an HTTP server's request thread). Later
    /// flushes of the handle fail. The default does nothing (the handle's drop gives up what
    /// it holds, without waiting on I/O).
    async fn release(&self) {}
}
