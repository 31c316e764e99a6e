//! What a process reports: start failures ([`BashError`]), how it ended ([`EndStatus`],
//! [`ProcessEnd`]) and byte counts ([`StreamStats`]).

/// Failures of the bash producer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BashError {
    /// `bash` could not be started (missing binary, bad working directory, …). Returned
    /// from [`BashProcess::spawn`](crate::BashProcess::spawn); the job is then never registered.
    #[error("failed to start bash: {0}")]
    Spawn(#[source] std::io::Error),
    /// The sandbox could not be prepared or entered (the message names what is missing).
    #[error("failed to start bash: {0}")]
    Sandbox(String),
    /// [`BashProcess::spawn`](crate::BashProcess::spawn) was called outside a tokio runtime.
    #[error("failed to start bash: no tokio runtime")]
    NoRuntime,
}

/// How the shell ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EndStatus {
    /// It exited with this code.
    Exited(i32),
    /// A signal ended it (this number).
    Signaled(i32),
    /// Its status could not be collected (the message says why).
    Lost(String),
}

/// The end of a process: its status and whether a cancel was requested before it ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessEnd {
    /// How the shell ended.
    pub status: EndStatus,
    /// [`BashProcess::cancel`](crate::BashProcess::cancel) was called before the process ended.
    pub cancel_requested: bool,
}

/// Byte counts of one stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamStats {
    /// Bytes the command wrote.
    pub written: u64,
    /// Unread bytes dropped from memory.
    pub dropped: u64,
}
