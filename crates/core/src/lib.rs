#![doc = include_str!("../README.md")]

mod agent;
mod config;
mod event;
pub mod formats;
mod harness;
mod hooked;
mod ids;
mod json;
mod message;
mod progress;
mod projection;
mod prompt;
mod registration;
mod registry;
mod services;
mod session;
mod store;
mod sync;
mod text;
mod time;
mod tool;
mod validate;

pub use agent::{
    Agent, AgentError, AgentEvent, AgentHandle, AgentKey, AgentListener, AgentStatus, Busy,
    DisposeHook, HookId, MaintenanceGuard, same_agent,
};
pub use config::{ConfigError, PluginConfig, decode_config};
pub use event::{RawEvent, SessionEvent, SessionHeader};
pub use formats::null_as_absent;
pub use harness::{AgentDirectory, Harness, HostKey, LifecycleEvent, LifecycleListener};
pub use hooked::{HookedSession, SessionHooks};
pub use ids::{AgentId, ScopeKey, SessionId};
pub use json::JsonText;
pub use message::{ContentBlock, MessageSource, Subject, UserMessage, join_text};
pub use progress::{PROGRESS_INTERVAL, Progress, ProgressUpdate};
pub use projection::{
    Projection, ProjectionSet, ProjectionState, ProjectionView, fold_events, fold_raw_events,
};
pub use prompt::{PromptSection, PromptSections};
pub use registration::Registration;
pub use registry::{
    ABORTED_MESSAGE, RegisterError, RegistrationScope, ToolRegistry, current_tool_call_id,
};
pub use services::Services;
pub use session::{AppendError, PersistenceError, Session};
pub use store::{
    BackendError, BackendKind, BatchIndex, IndexChange, IndexUpdate, JsonlStore, MemoryStore,
    SessionFile, SessionIndex, SessionStore, StoreError, TornTail,
};
pub use sync::{Registered, lock, read_lock, write_lock};
pub use text::{
    MAX_SAFE_INTEGER, as_safe_integer, is_js_whitespace, js_trim, summarize_chars, tail_utf8,
    truncate_utf8,
};
pub use time::{
    Clock, ClockError, SystemClock, epoch_millis, format_instant, parse_canonical_millis,
    truncate_to_millis,
};
pub use tool::{
    Tool, ToolAnnotations, ToolCall, ToolDefinition, ToolError, ToolOutput, acknowledge,
    unsaved_message,
};
pub use validate::{InvalidArguments, decode_arguments, validate_arguments};

/// Implementation details of exported macros; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use serde;
    pub use smol_str::SmolStr;
}

/// Re-exported so plugins and hosts name one version of these.
pub use async_trait::async_trait;
pub use tokio_util::sync::CancellationToken;
