//! [`ServeError`]: why a session could not be served.

use turnkit_core::{ConfigError, StoreError};

use crate::InboxLogError;

/// Why the server could not start or stopped with an error. The CLI prints it and exits
/// non-zero; nothing was served past the failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// A family refused its configuration, or the configuration file is not an object of
    /// family objects. The message is the family's own (`tool-todo: $.allowParallelInProgress
    /// missing required value`).
    #[error("{0}")]
    Config(String),
    /// The session store refused (an invalid id, a malformed file, I/O).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The session log holds `mcp/*` events that do not decode strictly.
    #[error(transparent)]
    Log(#[from] InboxLogError),
    /// The server was asked to run where it can never work: a `bash.cwd` that is not an
    /// existing folder, a session folder it cannot write. The message names the path.
    #[error("{0}")]
    Unusable(String),
    /// Called outside a tokio runtime.
    #[error("the MCP server runs on a tokio runtime: call it inside one")]
    NoRuntime,
    /// The connection failed before or during the `initialize` handshake, or while serving.
    #[error("transport: {0}")]
    Transport(String),
}

impl From<ConfigError> for ServeError {
    fn from(error: ConfigError) -> Self {
        Self::Config(error.to_string())
    }
}
