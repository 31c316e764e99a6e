#![doc = include_str!("../README.md")]

mod agent;
mod kit;

pub use agent::{
    InputSink, LoopAgent, LoopAgentBuilder, TURN_END, TURN_START, Turn, TurnObserver, TurnSource,
};
pub use kit::HostKit;
