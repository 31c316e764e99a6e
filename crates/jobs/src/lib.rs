#![doc = include_str!("../README.md")]

mod error;
mod foreground;
mod invariant;
mod producer;
mod registry;
mod snapshot;
mod types;

pub use error::{JobError, format_js_number};
pub use foreground::{Foreground, OnTimeout, wait_foreground};
pub use invariant::{InvariantViolation, check_snapshot, install_invariant};
pub use producer::{
    BoxError, CancelHook, DoneFuture, JobHooks, JobProgress, JobStart, ProgressObserver,
    ReadOutputHook, RunHook,
};
pub use registry::{
    JobDoneListener, JobRegistry, JobsChangedListener, JobsLostListener, ListenerFuture,
};

/// The detail of a job that was still running when its host stopped (the job journal): a lost
/// job reads as `failed` with this detail, `[status: failed, the host stopped while it ran]`.
pub const LOST_DETAIL: &str = "the host stopped while it ran";
pub use snapshot::{JobRead, JobReadAt, JobSnapshot};
pub use types::{JobId, JobKind, JobLabel, JobOutcome, JobStatus, KillOutcome, TerminalStatus};

/// Re-exported so producers and controllers name one version of it.
pub use tokio_util::sync::CancellationToken;
