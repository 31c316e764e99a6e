#![doc = include_str!("../README.md")]

mod grammar;
mod plugins;
mod runner;

pub use grammar::{
    CancelMode, ClockKind, ClockSpec, Config, FaultMode, Phase, SettleStatus, Step, StoreKind,
};
pub use runner::{Transcript, run_scenario, run_scenario_in_runtime};
