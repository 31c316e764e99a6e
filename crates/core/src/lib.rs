//! harness-core: the session-event core and the host contract.
//!
//! Every crate of the workspace depends on this one. It holds:
//! - ids ([`SessionId`], [`AgentId`], [`ScopeKey`]) and the log records ([`SessionEvent`],
//!   [`SessionHeader`]);
//! - the [`Session`] seam with synchronous `append` and an async `flush` barrier, and two
//!   stores ([`MemoryStore`], [`JsonlStore`]) with `fork`;
//! - the host traits [`Harness`] and [`Agent`], tools ([`Tool`], [`ToolDefinition`]),
//!   projections ([`Projection`]), prompt sections and messages;
//! - the [`Clock`] seam with [`SystemClock`];
//! - building blocks a host composes: [`ToolRegistry`] (argument validation, the `Error:`
//!   envelope, dispatch), [`ProjectionSet`], [`PromptSections`], [`AgentDirectory`];
//! - shared helpers: [`js_trim`] (decision 3), [`as_safe_integer`] (decision 4).
//!
//! ```
//! use std::sync::Arc;
//! use harness_core::{MemoryStore, SessionHeader, SessionStore, SystemClock};
//! use serde_json::json;
//!
//! let store = MemoryStore::new(Arc::new(SystemClock));
//! let session = store.create(SessionHeader::new("s1")).unwrap();
//! let event = session.append("todo/write", json!({"todos": []})).unwrap();
//! assert_eq!(event.seq, 1);
//! assert_eq!(session.len(), 1);
//! ```

mod agent;
mod config;
mod event;
mod harness;
mod ids;
mod message;
mod projection;
mod prompt;
mod registration;
mod registry;
mod session;
mod store;
mod text;
mod time;
mod tool;
mod validate;

pub use agent::{
    Agent, AgentError, AgentEvent, AgentListener, AgentStatus, Busy, DisposeHook, HookId,
    MaintenanceGuard, same_agent,
};
pub use config::{ConfigError, decode_config};
pub use event::{RawEvent, SessionEvent, SessionHeader};
pub use harness::{AgentDirectory, Harness, LifecycleEvent, LifecycleListener};
pub use ids::{AgentId, ScopeKey, SessionId};
pub use message::{MessageSource, UserMessage};
pub use projection::{
    Projection, ProjectionSet, ProjectionState, ProjectionView, fold_events, fold_raw_events,
};
pub use prompt::{PromptSection, PromptSections};
pub use registration::Registration;
pub use registry::{ABORTED_MESSAGE, RegisterError, RegistrationScope, ToolRegistry};
pub use session::{AppendError, PersistenceError, Session};
pub use store::{JsonlStore, MemoryStore, SessionFile, SessionStore, StoreError, TornTail};
pub use text::{
    MAX_SAFE_INTEGER, as_safe_integer, is_js_whitespace, js_trim, summarize_chars, truncate_utf8,
};
pub use time::{
    Clock, ClockError, SystemClock, epoch_millis, format_instant, parse_canonical_millis,
    truncate_to_millis,
};
pub use tool::{ContentBlock, Tool, ToolCall, ToolDefinition, ToolError, ToolOutput, join_text};
pub use validate::validate_arguments;

/// Implementation details of exported macros; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use serde;
    pub use smol_str::SmolStr;
}

/// Re-exported so plugins and hosts name one version of these.
pub use async_trait::async_trait;
pub use tokio_util::sync::CancellationToken;
