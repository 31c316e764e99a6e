//! harness-testkit: a complete in-memory host for tests, examples and the scenario runner.
//!
//! - [`MemoryHarness`] implements [`harness_core::Harness`]; [`MemoryAgent`] implements
//!   [`harness_core::Agent`] with a real turn loop (turn events, followup queue, next-step
//!   inbox, maintenance claims, disposal hooks).
//! - [`ManualClock`] moves only when told to; [`settle`] lets woken work run.
//! - [`SessionFaults`] makes a session's appends or flushes fail on demand.
//! - [`FakeProducer`] / [`FakeJob`] play a controllable job producer.
//! - [`scenario`] runs the JSON Lines scenario format of `spec/scenarios.md`.
//!
//! ```
//! use std::sync::Arc;
//! use harness_core::{Agent, SessionHeader, SessionId};
//! use harness_testkit::{ManualClock, MemoryHarness};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let clock = ManualClock::at_default();
//! let host = MemoryHarness::new(Arc::new(clock));
//! let agent = host.create_session(SessionHeader::new("s1")).unwrap();
//! agent.send_user("hello", None).unwrap();
//! harness_testkit::settle().await;
//! assert_eq!(agent.turns(), 1);
//! # }
//! ```

mod agent;
mod clock;
mod fake_job;
mod faults;
mod host;
pub mod scenario;
pub mod strategies;

pub use agent::{HostRecord, MemoryAgent};
pub use clock::{ManualClock, settle};
pub use fake_job::{FakeJob, FakeProducer, OnCancel};
pub use faults::{HostSession, SessionFaults};
pub use host::{HostError, MemoryHarness, Recorder};
