//! [`StoreError`]: why a store could not create, open or fork a session, and
//! [`BackendError`], a database-backed store's failure with its kind and cause.

use std::error::Error;
use std::fmt;

use crate::SessionId;

/// Why a store could not create, open or fork a session.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A session with this id already exists.
    #[error("session {0} already exists")]
    AlreadyExists(SessionId),
    /// No session with this id exists.
    #[error("session {0} not found")]
    NotFound(SessionId),
    /// The id cannot name a session in this store (JSONL: empty, `.`/`..`, or containing `/`,
    /// `\` or a NUL byte).
    #[error("invalid session id {0:?}")]
    InvalidId(String),
    /// A newline-terminated line of a session file is not a valid header or event (including
    /// a blank line, invalid UTF-8, a gap in `seq`, and a header naming another session than
    /// the file's), wherever it stands; nothing in the file was changed. `line` is 1-based.
    /// Corruption: a person must look at the file.
    #[error("{file}:{line}: {message}")]
    Malformed {
        /// The file path.
        file: String,
        /// The 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// Another live handle — in this process or another — holds this session's file open for
    /// writing (JSONL: its exclusive advisory lock). Nothing was read or changed. The lock goes
    /// when that handle is dropped or its process dies; use the live handle, or retry after.
    /// A held lock is waited for up to 100 ms first: a process being started from this one
    /// shares the lock between `fork` and `exec`, for a moment after the last handle is gone.
    #[error("session file {path} is locked by another open handle")]
    Locked {
        /// The session file.
        path: String,
    },
    /// Another host owns the session (the PostgreSQL store: a live lease held by `owner`).
    /// Nothing was read or changed. Leave the session to its owner, or retry after the lease
    /// expires (docs/event-log.md, "Write ownership").
    #[error("session {session} is owned by host {owner}; retry after its lease expires")]
    Owned {
        /// The session.
        session: SessionId,
        /// The host id holding the lease.
        owner: String,
    },
    /// A database-backed store could not run its statement (connection refused, query failed);
    /// nothing was changed. The [`BackendError`] says which kind of failure it was, carries the
    /// server's SQLSTATE when the server refused a statement, and keeps the client's error as
    /// its [`source`](std::error::Error::source). Retry when the cause is gone.
    #[error("store backend error: {0}")]
    Backend(#[source] BackendError),
    /// The session file has no complete header line (zero bytes, or a header without its
    /// newline): what a create interrupted in a build without atomic create leaves. No event
    /// was ever acknowledged in such a file, so nothing is lost by removing it; the file was
    /// not changed. Recovery: delete the file and create the session again.
    #[error(
        "{file}: no complete session header (left by an interrupted create); \
         nothing in it was acknowledged: delete the file and create the session again"
    )]
    InterruptedCreate {
        /// The session file.
        file: String,
    },
    /// An operating-system error.
    #[error("i/o error on {path}: {source}")]
    Io {
        /// The path involved.
        path: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

impl StoreError {
    /// The backend failure, when this is [`StoreError::Backend`].
    pub fn as_backend(&self) -> Option<&BackendError> {
        match self {
            StoreError::Backend(error) => Some(error),
            _ => None,
        }
    }
}

impl From<BackendError> for StoreError {
    fn from(error: BackendError) -> Self {
        StoreError::Backend(error)
    }
}

/// Which kind of failure a [`BackendError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BackendKind {
    /// No connection could be had, or it broke mid-statement (refused, closed, timed out,
    /// no free pooled connection). Retry when the database is reachable.
    Connection,
    /// The server refused a statement; [`BackendError::code`] is its SQLSTATE (e.g. `23505`
    /// for a unique violation, `57P01` for an administrator's shutdown).
    Refused,
    /// What the server sent could not be read as the store expects (a column's type, the
    /// `COPY` data).
    Data,
    /// The store could not run the work at all: an invalid configuration (connection string,
    /// schema name) or its own runtime or task stopped.
    Store,
}

/// A database-backed store's failure: its [`kind`](BackendError::kind), the message the store
/// reports ([`Display`](fmt::Display)), the server's SQLSTATE for a refused statement
/// ([`code`](BackendError::code)) and the client's error as its
/// [`source`](std::error::Error::source). Boxed: one pointer wide.
pub struct BackendError(Box<BackendInner>);

struct BackendInner {
    kind: BackendKind,
    message: String,
    code: Option<String>,
    cause: Option<Box<dyn Error + Send + Sync>>,
}

impl BackendError {
    /// A failure of `kind` reported as `message`, without a cause.
    pub fn new(kind: BackendKind, message: impl Into<String>) -> Self {
        Self(Box::new(BackendInner {
            kind,
            message: message.into(),
            code: None,
            cause: None,
        }))
    }

    /// The same failure with `cause` as its source (the client's error).
    #[must_use]
    pub fn with_cause(mut self, cause: impl Into<Box<dyn Error + Send + Sync>>) -> Self {
        self.0.cause = Some(cause.into());
        self
    }

    /// The same failure with the server's SQLSTATE (five characters).
    #[must_use]
    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.0.code = Some(code.into());
        self
    }

    /// Which kind of failure this is.
    pub fn kind(&self) -> BackendKind {
        self.0.kind
    }

    /// The server's SQLSTATE, when the server refused a statement.
    pub fn code(&self) -> Option<&str> {
        self.0.code.as_deref()
    }

    /// The message the store reports (also the [`Display`](fmt::Display) text).
    pub fn message(&self) -> &str {
        &self.0.message
    }
}

impl fmt::Debug for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BackendError")
            .field("kind", &self.0.kind)
            .field("message", &self.0.message)
            .field("code", &self.0.code)
            .field("cause", &self.0.cause)
            .finish()
    }
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.message)
    }
}

impl Error for BackendError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.0
            .cause
            .as_deref()
            .map(|cause| cause as &(dyn Error + 'static))
    }
}
