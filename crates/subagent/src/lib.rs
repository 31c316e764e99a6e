#![doc = include_str!("../README.md")]

mod child;
mod config;
mod install;
mod model;
mod scripted;
mod tool;

pub use child::{SUBAGENT_END, SUBAGENT_START, SpawnError, Spawned, Subagents};
pub use config::{
    DEFAULT_MAX_CONCURRENT_PER_AGENT, DEFAULT_MAX_DEPTH, DEFAULT_MAX_SPAWNS_PER_SESSION,
    PLUGIN_NAME, SubagentConfig,
};
pub use install::{ChildHost, Installed, install};
pub use model::{ChildContext, ChildModel, ChildStep};
pub use scripted::{ChildAction, ScriptedChild};
pub use tool::{AgentTool, TOOL_NAME};
