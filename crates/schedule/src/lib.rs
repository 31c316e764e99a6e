//! harness-schedule: durable reminders (schedule.md).
//!
//! Reminders live only in the session event log as `schedule/change` events. The crate is
//! split into:
//! - [`domain`]: pure event encoding, strict decoding, the incremental fold, ids, time
//!   arithmetic and `at` parsing;
//! - [`tools`]: `schedule_create`, `schedule_list`, `schedule_delete` (one FIFO per agent,
//!   persistence barriers, cancellation);
//! - the delivery runtime: one task per live root agent that arms a timer to the earliest
//!   target, claims the idle phase and queues the reminder as a follow-up turn;
//! - [`install`]: the plugin entry point that wires the two into a host.
//!
//! ```
//! use std::sync::Arc;
//! use harness_core::{Harness, SessionHeader};
//! use harness_schedule::{ScheduleConfig, install};
//! use harness_testkit::{ManualClock, MemoryHarness};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let host = MemoryHarness::new(Arc::new(ManualClock::at_default()));
//! let installed = install(&host.as_dyn(), ScheduleConfig::default()).unwrap();
//! let agent = host.create_session(SessionHeader::new("s1")).unwrap();
//! let out = host
//!     .execute("schedule_create", json!({"prompt": "stretch", "after_seconds": 60}), Some(&"s1".into()))
//!     .await;
//! assert_eq!(out.value["id"], "schedule-1");
//! installed.dispose().await;
//! # drop(agent);
//! # }
//! ```

pub mod domain;
mod ledger;
mod plugin;
mod runtime;
pub mod tools;

pub use plugin::{Installed, PLUGIN_NAME, ScheduleConfig, install};
pub use tools::{Notify, ScheduleTools};
