#![doc = include_str!("../README.md")]

mod error;
mod foreground;
mod invariant;
mod notes;
mod producer;
mod registry;
mod saved;
mod snapshot;
mod types;
mod voice;

pub use error::{JobError, format_js_number};
pub use foreground::{Foreground, OnTimeout, live_detail, wait_foreground};
pub use invariant::{InvariantViolation, check_snapshot, install_invariant};
pub use notes::KindNotes;
pub use producer::{
    BoxError, CancelHook, DoneFuture, JobHooks, JobProgress, JobStart, ProgressObserver,
    ReadOutputHook, RunHook,
};
pub use registry::{
    JobDoneListener, JobNoticeListener, JobRegistry, JobsChangedListener, JobsLostListener,
    LeftoverStopper, ListenerFuture,
};

/// The detail of a job that was still running when its host stopped (the job journal): a lost
/// job reads as `failed` with this detail, `[status: failed, the host stopped while it ran]`.
pub const LOST_DETAIL: &str = "the host stopped while it ran";

/// The marker that ends a job output cut to its bound, keeping its tail (todo-jobs §5.5
/// rule A; the job journal's recorded output is cut the same way).
pub const OUTPUT_TRUNCATED_MARKER: &str = "\n[output truncated]";

/// The detail of a job its host stopped as it shut down cleanly (the job journal, todo-jobs
/// §5.9): such a job reads as `killed` with this detail,
/// `[status: killed, stopped by the host's shutdown]`, and keeps its final output.
pub const SHUTDOWN_DETAIL: &str = "stopped by the host's shutdown";

/// The detail of a job whose host died while it ran and whose processes were still running
/// at the reopening, which stopped them before reporting it (the job journal, todo-jobs
/// §5.9): such a job reads as `killed` with this detail, `[status: killed, stopped at the
/// restart]`.
pub const LEFTOVERS_STOPPED_DETAIL: &str = "stopped at the restart";
pub use saved::{StartGate, UNSAVED_REASON, start_saved};
pub use snapshot::{JobRead, JobReadAt, JobSnapshot};
pub use types::{JobId, JobKind, JobLabel, JobOutcome, JobStatus, KillOutcome, TerminalStatus};
pub use voice::{JobNotice, JobVoice, NoticeSink};

/// Re-exported so producers and controllers name one version of it.
pub use tokio_util::sync::CancellationToken;
