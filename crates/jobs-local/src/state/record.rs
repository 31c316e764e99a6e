//! One job's record and what it refers to: its cancel hook, stream, waiters and owner.

use std::num::NonZeroU64;
use std::sync::{Arc, Mutex};

use futures::channel::oneshot;
use tokio_util::sync::CancellationToken;
use turnkit_core::{Agent, AgentId, AgentKey, HookId, ScopeKey, SessionId};
use turnkit_jobs::{
    BoxError, CancelHook, JobId, JobKind, JobLabel, JobProgress, JobSnapshot, JobStatus,
    ReadOutputHook,
};

use crate::history::History;

/// The producer's cancel hook, shareable so it can be called without the lock.
pub(crate) type CancelFn = dyn Fn(Option<&str>) -> Result<(), BoxError> + Send + Sync;

/// A record's cancel hook: kept as the producer's box until somebody needs to call it (most
/// jobs are never cancelled), then moved into an `Arc` so it can be called without the lock.
pub(crate) enum Cancel {
    Owned(CancelHook),
    Shared(Arc<CancelFn>),
}

/// The identity of an exact agent instance ([`AgentKey`]). It names its agent while any
/// handle to it is held, and the registry holds an `Arc` wherever a key is stored.
pub(crate) type OwnerKey = AgentKey;

pub(crate) fn owner_key(agent: &Arc<dyn Agent>) -> OwnerKey {
    AgentKey::of(agent)
}

/// A stream job's reader and history, locked on its own so `read_output` runs without the
/// registry lock.
pub(crate) struct Stream {
    pub(crate) read: ReadOutputHook,
    pub(crate) history: History,
}

/// A live `wait` on a record (§4.5).
pub(crate) struct Waiter {
    pub(crate) id: u64,
    pub(crate) cancel: Option<CancellationToken>,
    pub(crate) resolve: oneshot::Sender<JobSnapshot>,
}

/// One job (§4.2).
pub(crate) struct Record {
    /// Registration order.
    pub(crate) seq: u64,
    pub(crate) id: JobId,
    pub(crate) kind: JobKind,
    pub(crate) label: JobLabel,
    pub(crate) limit: Option<NonZeroU64>,
    /// The exact owner instance, with what routing needs of it.
    pub(crate) owner: Option<Arc<OwnerInfo>>,
    /// `None` once terminal: the producer's hooks are released.
    pub(crate) cancel: Option<Cancel>,
    pub(crate) stream: Option<Arc<Mutex<Stream>>>,
    pub(crate) progress: Option<JobProgress>,
    /// How the running job raises notices; closed at settlement.
    pub(crate) voice: Option<turnkit_jobs::JobVoice>,
    pub(crate) status: JobStatus,
    pub(crate) detail: Option<Arc<str>>,
    pub(crate) output: Option<Box<str>>,
    pub(crate) started_at: i64,
    /// Epoch milliseconds at settlement; meaningful once the status is terminal.
    pub(crate) finished_at: i64,
    pub(crate) reported: bool,
    /// Live waits.
    #[expect(
        clippy::box_collection,
        reason = "one word in every record instead of three; most jobs are never waited on"
    )]
    pub(crate) waiters: Option<Box<Vec<Waiter>>>,
    /// The job's `harness.job` span while it runs (`None` when no subscriber wanted it):
    /// boxed, so a record without one pays one word.
    pub(crate) span: Option<Box<tracing::Span>>,
    /// Which teardown (owner or service disposal) asked the job to stop, if one did; the
    /// journal's `job/settle` keeps its reason.
    pub(crate) teardown: Option<Teardown>,
    /// A record of an earlier run, read back from the job journal (terminal from the start).
    pub(crate) earlier: bool,
    /// With the journal on: its `job/start` could not be appended, so its settlement is not
    /// journaled either (the log never holds a `job/settle` without its `job/start`).
    pub(crate) unjournaled: bool,
}

impl Record {
    /// The cancel hook in a form callable without the lock (`None` once terminal).
    pub(crate) fn shared_cancel(&mut self) -> Option<Arc<CancelFn>> {
        let shared: Arc<CancelFn> = match self.cancel.take()? {
            Cancel::Owned(hook) => Arc::from(hook),
            Cancel::Shared(hook) => hook,
        };
        self.cancel = Some(Cancel::Shared(shared.clone()));
        Some(shared)
    }

    pub(crate) fn snapshot(&self) -> JobSnapshot {
        let detail = if self.status.is_terminal() {
            self.detail.clone()
        } else {
            self.progress.as_ref().and_then(JobProgress::current)
        };
        JobSnapshot {
            id: self.id.clone(),
            kind: self.kind.clone(),
            label: self.label.clone(),
            output_limit_bytes: self.limit.map(NonZeroU64::get),
            owner_session: self.owner.as_ref().map(|o| SessionId::from(&o.id)),
            status: self.status,
            detail,
            started_at: self.started_at,
            finished_at: self.status.is_terminal().then_some(self.finished_at),
            reported: self.reported,
        }
    }

    /// The owner (with its scope chain), for routing notifications.
    pub(crate) fn route_target(&self) -> Target {
        Target {
            owner: self.owner.clone(),
        }
    }
}

/// A teardown that asks jobs to stop (§4.8, §4.9), by the reason it gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Teardown {
    /// The owner's disposal: [`crate::OWNER_DISPOSED_REASON`].
    Owner,
    /// The registry's disposal: [`crate::SERVICE_DISPOSED_REASON`].
    Service,
}

impl Teardown {
    /// The reason handed to the producer's cancel hook.
    pub(crate) fn reason(self) -> &'static str {
        match self {
            Teardown::Owner => crate::OWNER_DISPOSED_REASON,
            Teardown::Service => crate::SERVICE_DISPOSED_REASON,
        }
    }
}

/// An exact owner instance as the registry keeps it: read from the host once, when its
/// first job starts, and shared by all its records.
pub(crate) struct OwnerInfo {
    pub(crate) agent: Arc<dyn Agent>,
    /// `agent.id()`, read once.
    pub(crate) id: AgentId,
    /// The owner's scope chain, read once (an agent's chain does not change).
    pub(crate) chain: Arc<[ScopeKey]>,
}

impl OwnerInfo {
    /// `id` is `agent.id()`, read by the caller (never under the registry's lock).
    pub(crate) fn new(agent: Arc<dyn Agent>, id: AgentId, chain: Arc<[ScopeKey]>) -> Self {
        Self { agent, id, chain }
    }

    pub(crate) fn key(&self) -> OwnerKey {
        owner_key(&self.agent)
    }
}

/// Who a notification is about: an exact owner (with its scope chain) or none.
#[derive(Clone, Default)]
pub(crate) struct Target {
    pub(crate) owner: Option<Arc<OwnerInfo>>,
}

impl Target {
    /// The owner's scope chain (`None`: unowned, global registrations only).
    pub(crate) fn chain(&self) -> Option<&[ScopeKey]> {
        self.owner.as_deref().map(|o| &*o.chain)
    }

    /// The owning agent, as listeners receive it.
    pub(crate) fn agent(&self) -> Option<&Arc<dyn Agent>> {
        self.owner.as_ref().map(|o| &o.agent)
    }
}

/// An owner that has (had) a job: its cleanup hook and its admission bucket.
pub(crate) struct OwnerEntry {
    pub(crate) info: Arc<OwnerInfo>,
    /// The agent registry's generation at this owner's last successful liveness check
    /// (`None`: never checked at a known generation).
    pub(crate) verified: Option<u64>,
    pub(crate) hook: HookId,
    /// Live (`running` / `stopping`) jobs plus admission reservations.
    pub(crate) live: u64,
}
