//! The delivery runtime (schedule.md §12–§13): one task per adopted root agent.
//!
//! The task sleeps until something asks it to drive (start, a timer, an idle-wait, a tool's
//! notify, an idle status transition of a session that holds schedule events), then runs one
//! *pass* inside the agent's FIFO: preflight barrier, incremental fold, a wall-clock sample,
//! the due decision, and either a timer to the earliest target (re-deciding after every wake, so
//! a wall-clock rollback never fires early and a forward jump delivers once) or a delivery:
//! claim the idle phase, queue the follow-up, append the dispatch(es), release, and the
//! dispatch barrier. Faults (a corrupt log, a failed dispatch append) make the runtime inert
//! until it is disposed; transient failures wait for the next trigger (no private retries).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use turnkit_core::{
    Agent, Clock, Harness, MessageSource, Session, Subject, UserMessage, epoch_millis, same_agent,
};

use crate::PLUGIN_NAME;
use crate::domain::{Decision, SCHEDULE_CHANGE, Timestamp};
use crate::ledger::{FoldCache, Ledger};

/// The longest single timer segment (§12.4: the 2^31−1 ms cap is kept; every wake re-decides).
const MAX_TIMER: Duration = Duration::from_millis(2_147_483_647);

/// Whether the runtime's agent is still live: registered under its id as this exact agent,
/// a root, and not disposing (§12.2 step 1).
pub(crate) struct Liveness {
    harness: Weak<dyn Harness>,
}

impl Liveness {
    /// Liveness as the host's agent registry reports it.
    pub(crate) fn new(harness: Weak<dyn Harness>) -> Self {
        Self { harness }
    }

    fn is_live(&self, agent: &Arc<dyn Agent>) -> bool {
        if agent.is_disposed() || !agent.is_root() {
            return false;
        }
        let Some(harness) = self.harness.upgrade() else {
            return false;
        };
        harness
            .agent(agent.id())
            .is_some_and(|registered| same_agent(&registered, agent))
    }
}

/// How a pass ended: what the task should wait for next.
enum PassEnd {
    /// Nothing to arm; wait for the next trigger.
    Quiet,
    /// Arm a timer for this long.
    Arm(Duration),
    /// A turn owns the agent: wait for it to become idle.
    WaitIdle,
    /// A delivery completed: drive again for the next due item.
    Redrive,
    /// The runtime is faulted (sticky).
    Fault,
}

/// How the maintenance body (§12.2 step 7 a–f) ended.
enum Delivery {
    Delivered,
    NotDelivered,
    Arm(Duration),
    Fault,
}

struct Shared {
    ledger: Arc<Ledger>,
    agent: Arc<dyn Agent>,
    clock: Arc<dyn Clock>,
    liveness: Liveness,
    wake: Notify,
    requested: AtomicBool,
    idle_requested: AtomicBool,
    stopping: AtomicBool,
    faulted: AtomicBool,
    stop: CancellationToken,
}

/// One agent's delivery runtime (§12). Created by the plugin for each adopted agent; tools
/// poke it through [`DeliveryRuntime::request_drive`].
pub(crate) struct DeliveryRuntime {
    shared: Arc<Shared>,
    handle: tokio::runtime::Handle,
    /// The plugin's task set, which tracks the delivery task.
    tasks: TaskTracker,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl DeliveryRuntime {
    /// A stopped runtime for `agent`; [`DeliveryRuntime::start`] spawns its task on `handle`,
    /// tracked by `tasks`.
    pub(crate) fn new(
        ledger: Arc<Ledger>,
        agent: Arc<dyn Agent>,
        clock: Arc<dyn Clock>,
        liveness: Liveness,
        handle: &tokio::runtime::Handle,
        tasks: &TaskTracker,
    ) -> Arc<Self> {
        Arc::new(Self {
            shared: Arc::new(Shared {
                ledger,
                agent,
                clock,
                liveness,
                wake: Notify::new(),
                requested: AtomicBool::new(false),
                idle_requested: AtomicBool::new(false),
                stopping: AtomicBool::new(false),
                faulted: AtomicBool::new(false),
                stop: CancellationToken::new(),
            }),
            handle: handle.clone(),
            tasks: tasks.clone(),
            task: Mutex::new(None),
        })
    }

    /// Spawns the task and requests the first pass (a start always preflights, §12.1).
    pub(crate) fn start(&self) {
        let mut task = turnkit_core::lock(&self.task);
        if task.is_some() || self.shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        self.shared.requested.store(true, Ordering::SeqCst);
        *task = Some(self.tasks.spawn_on(run(self.shared.clone()), &self.handle));
    }

    /// Asks for a pass (tool notify, §12.1). Coalesces with pending requests; ignored once
    /// stopping or faulted.
    pub(crate) fn request_drive(&self) {
        self.shared.request(&self.shared.requested);
    }

    /// Asks for a pass if the log holds any `schedule/change` event (the idle-transition
    /// trigger of §12.1); the check runs in the task.
    pub(crate) fn request_idle_check(&self) {
        self.shared.request(&self.shared.idle_requested);
    }

    /// Whether a corrupt log or a failed dispatch append made the runtime inert.
    pub(crate) fn is_faulted(&self) -> bool {
        self.shared.faulted.load(Ordering::SeqCst)
    }

    /// Stops the runtime without waiting: no new pass starts, the timer and idle-wait are
    /// dropped. A pass in flight finishes its current step but does not re-drive.
    pub(crate) fn stop(&self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        self.shared.stop.cancel();
        self.shared.wake.notify_one();
    }

    /// Stops the runtime and awaits its task (including a pass in flight, e.g. one waiting on
    /// a barrier). Idempotent.
    pub(crate) async fn dispose(&self) {
        self.stop();
        let task = turnkit_core::lock(&self.task).take();
        if let Some(task) = task {
            // A panicked or cancelled task has nothing left to clean up.
            let _ = task.await;
        }
    }
}

impl Drop for DeliveryRuntime {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn maybe(future: &mut Option<BoxFuture<'static, ()>>) {
    match future {
        Some(future) => future.await,
        None => std::future::pending().await,
    }
}

async fn run(shared: Arc<Shared>) {
    let mut timer: Option<BoxFuture<'static, ()>> = None;
    let mut idle_wait: Option<BoxFuture<'static, ()>> = None;
    loop {
        if shared.stopping() {
            break;
        }
        if shared.take_request() {
            timer = None;
            match shared.pass().await {
                PassEnd::Quiet => {}
                PassEnd::Arm(delay) => timer = Some(shared.clock.sleep(delay)),
                PassEnd::WaitIdle => {
                    if idle_wait.is_none() {
                        let agent = shared.agent.clone();
                        idle_wait = Some(async move { agent.when_idle().await }.boxed());
                    }
                }
                PassEnd::Redrive => shared.requested.store(true, Ordering::SeqCst),
                PassEnd::Fault => {
                    shared.faulted.store(true, Ordering::SeqCst);
                    timer = None;
                    idle_wait = None;
                }
            }
            continue;
        }
        tokio::select! {
            biased;
            () = shared.stop.cancelled() => break,
            () = shared.wake.notified() => {}
            () = maybe(&mut timer) => {
                timer = None;
                shared.requested.store(true, Ordering::SeqCst);
            }
            () = maybe(&mut idle_wait) => {
                idle_wait = None;
                shared.requested.store(true, Ordering::SeqCst);
            }
        }
    }
}

impl Shared {
    fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    fn faulted(&self) -> bool {
        self.faulted.load(Ordering::SeqCst)
    }

    fn request(&self, flag: &AtomicBool) {
        if self.stopping() || self.faulted() {
            return;
        }
        flag.store(true, Ordering::SeqCst);
        self.wake.notify_one();
    }

    /// Consumes pending requests; true if a pass should run now.
    fn take_request(&self) -> bool {
        let requested = self.requested.swap(false, Ordering::SeqCst);
        let idle = self.idle_requested.swap(false, Ordering::SeqCst);
        if self.faulted() {
            return false;
        }
        requested || (idle && self.ledger.has_schedule_events())
    }

    fn is_live(&self) -> bool {
        self.liveness.is_live(&self.agent)
    }

    fn runnable(&self) -> bool {
        !self.stopping() && !self.faulted() && self.is_live()
    }

    fn session(&self) -> &dyn Session {
        self.ledger.session().as_ref()
    }

    /// The delay until `target`, capped (§12.4); `None` if it is not in the future.
    fn delay_until(target: Timestamp, now_ms: i64) -> Option<Duration> {
        let remaining = target.millis().checked_sub(now_ms)?;
        let remaining = u64::try_from(remaining).ok().filter(|ms| *ms > 0)?;
        Some(Duration::from_millis(remaining).min(MAX_TIMER))
    }

    /// One pass (§12.2), inside the agent's FIFO.
    async fn pass(&self) -> PassEnd {
        if !self.runnable() {
            return PassEnd::Quiet;
        }
        let mut cache = self.ledger.enter().await;
        if !self.runnable() {
            return PassEnd::Quiet;
        }
        if let Err(error) = self.ledger.barrier().await {
            if self.is_live() {
                tracing::warn!(agent = %self.agent.id(), "schedule: preflight barrier failed: {error}");
            }
            return PassEnd::Quiet;
        }
        if !self.runnable() {
            return PassEnd::Quiet;
        }
        let decision = match self.decide(&mut cache) {
            Ok(decision) => decision,
            Err(end) => return end,
        };
        let now_ms = decision.1;
        match decision.0 {
            Decision::Wait { next_target } => {
                return next_target
                    .and_then(|target| Self::delay_until(target, now_ms))
                    .map_or(PassEnd::Quiet, PassEnd::Arm);
            }
            Decision::OneShot(_) | Decision::EveryBatch(_) => {}
        }
        let delivery = match self.agent.try_begin_maintenance() {
            Ok(guard) => {
                let delivery = self.deliver(&mut cache);
                drop(guard);
                delivery
            }
            Err(_busy) => {
                return if self.is_live() {
                    PassEnd::WaitIdle
                } else {
                    PassEnd::Quiet
                };
            }
        };
        match delivery {
            Delivery::Delivered => {}
            Delivery::NotDelivered => return PassEnd::Quiet,
            Delivery::Arm(delay) => return PassEnd::Arm(delay),
            Delivery::Fault => return PassEnd::Fault,
        }
        if let Err(error) = self.ledger.barrier().await {
            if self.is_live() {
                tracing::warn!(agent = %self.agent.id(), "schedule: dispatch barrier failed: {error}");
            }
            return PassEnd::Quiet;
        }
        if self.runnable() {
            PassEnd::Redrive
        } else {
            PassEnd::Quiet
        }
    }

    /// Refolds and decides at a fresh clock sample. Errors are already the pass outcome: a
    /// log error faults; a clock or arithmetic failure ends the pass quietly.
    fn decide(&self, cache: &mut FoldCache) -> Result<(Decision, i64), PassEnd> {
        let fold = match cache.refresh(self.session()) {
            Ok(fold) => fold,
            Err(error) => {
                tracing::warn!(agent = %self.agent.id(), "schedule: {error}; delivery stopped");
                return Err(PassEnd::Fault);
            }
        };
        let now_ms = match self.clock.try_now() {
            Ok(now) => epoch_millis(now),
            Err(error) => {
                tracing::warn!(agent = %self.agent.id(), "schedule: {error}");
                return Err(PassEnd::Quiet);
            }
        };
        match fold.decide(now_ms) {
            Ok(decision) => Ok((decision, now_ms)),
            Err(error) => {
                tracing::warn!(agent = %self.agent.id(), "schedule: cannot decide at {now_ms}: {error}");
                Err(PassEnd::Quiet)
            }
        }
    }

    /// The maintenance body (§12.2 step 7 a–f), run synchronously while the idle phase is held.
    fn deliver(&self, cache: &mut FoldCache) -> Delivery {
        if !self.runnable() {
            return Delivery::NotDelivered;
        }
        let (decision, now_ms) = match self.decide(cache) {
            Ok(decided) => decided,
            Err(PassEnd::Fault) => return Delivery::Fault,
            Err(_) => return Delivery::NotDelivered,
        };
        let Some(text) = decision.framing_text() else {
            // Clock rolled back or the record went away between wake and claim.
            return match decision {
                Decision::Wait {
                    next_target: Some(target),
                } => {
                    Self::delay_until(target, now_ms).map_or(Delivery::NotDelivered, Delivery::Arm)
                }
                _ => Delivery::NotDelivered,
            };
        };
        let subjects = delivered(&decision)
            .into_iter()
            .map(|(id, occurrence)| Subject::reminder(id, occurrence.millis()))
            .collect();
        let message = UserMessage::text(
            text,
            MessageSource::Plugin {
                plugin: PLUGIN_NAME.to_owned(),
                form: None,
                summary: None,
            },
        )
        .about(subjects);
        if let Err(error) = self.agent.followup(message) {
            if self.is_live() {
                tracing::warn!(agent = %self.agent.id(), "schedule: follow-up refused: {error}");
            }
            return Delivery::NotDelivered;
        }
        for change in decision.dispatch_changes() {
            if let Err(error) = self.session().append(SCHEDULE_CHANGE, change.to_value()) {
                tracing::warn!(agent = %self.agent.id(), "schedule: dispatch append failed: {error}; delivery stopped");
                return Delivery::Fault;
            }
        }
        self.trace_delivery(&decision);
        Delivery::Delivered
    }

    /// One `harness.reminder` span per delivered reminder, with the stable fields of
    /// docs/observability.md: `reminder.id`, `reminder.occurrence` (the canonical instant of
    /// the occurrence delivered) and `session`.
    fn trace_delivery(&self, decision: &Decision) {
        for (id, occurrence) in delivered(decision) {
            let span = tracing::info_span!(
                "harness.reminder",
                reminder.id = id,
                reminder.occurrence = %occurrence,
                session = self.agent.id().as_str(),
            );
            let _entered = span.enter();
            tracing::info!("reminder delivered");
        }
    }
}

/// The reminder occurrences `decision` delivers, in its order: each schedule id with the
/// instant its occurrence was due (the message's subjects, the spans' fields).
fn delivered(decision: &Decision) -> Vec<(&str, Timestamp)> {
    match decision {
        Decision::OneShot(record) => vec![(record.id(), record.scheduled_at())],
        Decision::EveryBatch(batch) => batch
            .items
            .iter()
            .map(|item| (item.record.id(), item.occurrence_at))
            .collect(),
        Decision::Wait { .. } => Vec::new(),
    }
}
