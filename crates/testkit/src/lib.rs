#![doc = include_str!("../README.md")]

mod agent;
pub mod binary;
mod clock;
pub mod conformance;
mod fake_job;
mod faults;
mod host;
mod logs;
pub mod skip;
pub mod store_conformance;
pub mod strategies;

pub use agent::{HostRecord, MemoryAgent, Recorder};
pub use clock::{ManualClock, settle};
pub use fake_job::{FakeJob, FakeProducer, OnCancel};
pub use faults::{HostSession, SessionFaults};
pub use host::{HostError, MemoryHarness};
pub use logs::LogCapture;
