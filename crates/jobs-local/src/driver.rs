//! The settlement driver (todo-jobs §4.6): one tokio task per burst of jobs polls every job's
//! `done` future and settles it, instead of one spawned task per job.
//!
//! `start` pushes a [`Event::Fresh`] job into the [`Hub`] (spawning a driver when none is
//! running) after it has registered the record, so settlement still runs on the runtime and
//! never inside `start`. The driver works through one FIFO queue of events, `Fresh` jobs and
//! `Woken` ones (a pending `done` whose waker fired), in the order they happened: the order in
//! which per-job tasks would have run on a current-thread runtime. A fresh job is first polled
//! with a no-op waker; only a job still pending gets its own waker (one allocation). The
//! driver exits once it holds no pending job and its queue is empty; the next `start` spawns a
//! new one. The driver is spawned through the registry's task tracker ([`Settle::tasks`]), and
//! [`Hub::stop`] (called at the end of service disposal) makes it exit at once, dropping the
//! `done` futures it still holds (a job force-failed by a throwing cancel may hold one that
//! never completes), so disposal's wait for the tracker cannot hang.

use std::collections::VecDeque;
use std::future::Future;
use std::mem;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Wake, Waker};

use futures::task::AtomicWaker;
use turnkit_core::lock;
use turnkit_jobs::{BoxError, DoneFuture, JobId, JobOutcome};

use tokio::runtime::Handle;
use tokio_util::task::TaskTracker;

/// What the driver needs of the registry: somewhere to settle a job, and a runtime to spawn
/// itself on. The driver holds the registry weakly and never names its internals.
pub(crate) trait Settle: Send + Sync + 'static {
    /// Settles the job `ticket` names with `outcome` (first wins, todo-jobs §4.6).
    fn settle_ticket(&self, ticket: Ticket, outcome: JobOutcome);

    /// The runtime to spawn a driver on, if any.
    fn runtime(&self) -> Option<Handle>;

    /// The tracker the driver task is spawned through (awaited by the registry's disposal).
    fn tasks(&self) -> &TaskTracker;

    /// A weak handle to `self`, held by the driver task.
    fn weak(&self) -> Weak<Self>
    where
        Self: Sized;
}

/// Where a job's record sits in the registry, as the registry issued it: opaque to the
/// driver, which hands it back at settlement.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ticket {
    /// The record's slot (a freed slot may be reused).
    pub(crate) slot: usize,
    /// The record's registration number, telling a reused slot apart.
    pub(crate) seq: u64,
}

/// A job whose `done` the driver polls.
struct Settling {
    /// For warnings, which must name the job even once its record is gone.
    id: JobId,
    ticket: Ticket,
    done: DoneFuture,
}

/// What the driver's queue holds.
enum Event {
    /// A job just registered by `start`.
    Fresh(Settling),
    /// The waker of slot `slot` of driver `generation` fired.
    Woken { generation: u64, slot: usize },
}

/// A FIFO of events in fixed-size chunks: queueing never moves the events already queued (a
/// burst of starts may queue 100,000 of them), and a few emptied chunks are kept for reuse.
#[derive(Default)]
struct Queue {
    chunks: VecDeque<Vec<Event>>,
    spare: Vec<Vec<Event>>,
}

impl Queue {
    /// Events per chunk.
    const CHUNK: usize = 1024;
    /// Emptied chunks kept for reuse.
    const SPARE: usize = 8;

    /// Whether nothing is queued (a queued chunk is never empty).
    fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    fn push(&mut self, event: Event) {
        match self.chunks.back_mut() {
            Some(last) if last.len() < Self::CHUNK => last.push(event),
            _ => {
                let mut chunk = self
                    .spare
                    .pop()
                    .unwrap_or_else(|| Vec::with_capacity(Self::CHUNK));
                chunk.push(event);
                self.chunks.push_back(chunk);
            }
        }
    }

    /// Keeps an emptied chunk for reuse, up to [`Queue::SPARE`].
    fn recycle(&mut self, mut chunk: Vec<Event>) {
        if self.spare.len() < Self::SPARE && chunk.capacity() == Self::CHUNK {
            chunk.clear();
            self.spare.push(chunk);
        }
    }
}

#[derive(Default)]
struct HubState {
    queue: Queue,
    /// Whether a driver task exists (spawned and not finished or dropped).
    running: bool,
    /// The generation of the current driver: `Woken` events of older drivers are stale.
    generation: u64,
    /// Set by [`Hub::stop`]: the driver exits, and no new driver is spawned.
    stopped: bool,
}

/// The queue between `start` (and job wakers) and the driver task.
#[derive(Default)]
pub(crate) struct Hub {
    state: Mutex<HubState>,
    waker: AtomicWaker,
}

impl Hub {
    /// Queues job `id` (held as `ticket`) for settlement by `sink`, spawning a driver on
    /// [`Settle::runtime`] when none is running.
    pub(crate) fn submit<S: Settle>(
        self: &Arc<Self>,
        sink: &S,
        id: JobId,
        ticket: Ticket,
        done: DoneFuture,
    ) {
        let (wake, spawn) = {
            let mut state = lock(&self.state);
            if state.stopped {
                // The registry's disposal is over: nothing may run after it. Only a start
                // whose `run` straddled the whole disposal gets here; its `done` is dropped.
                drop(state);
                tracing::warn!("jobs: job {id} was started after disposal; it is not driven");
                return;
            }
            let was_empty = state.queue.is_empty();
            state
                .queue
                .push(Event::Fresh(Settling { id, ticket, done }));
            if state.running {
                (was_empty, None)
            } else {
                state.running = true;
                state.generation += 1;
                (false, Some(state.generation))
            }
        };
        if let Some(generation) = spawn {
            let Some(runtime) = sink.runtime() else {
                // `start` checked for a runtime; it can only have gone since.
                tracing::warn!("jobs: no tokio runtime is available to drive job settlement");
                lock(&self.state).running = false;
                return;
            };
            let driver = Driver {
                sink: sink.weak(),
                hub: self.clone(),
                generation,
                slots: Vec::new(),
                free: Vec::new(),
                pending: 0,
                batch: VecDeque::new(),
                spent: Vec::new(),
                finished: false,
            };
            // Unconstrained: each `done` is polled once per event, as its own task would
            // have been; tokio's per-task budget would otherwise make most of a large batch
            // look pending. The driver yields after each batch instead.
            drop(
                sink.tasks()
                    .spawn_on(tokio::task::coop::unconstrained(driver), &runtime),
            );
        } else if wake {
            self.waker.wake();
        }
    }

    /// Stops driving for good (the registry's disposal, after every settlement): the running
    /// driver, if any, exits at its next poll, dropping the `done` futures it still holds,
    /// and later submissions are dropped. Idempotent.
    pub(crate) fn stop(&self) {
        lock(&self.state).stopped = true;
        self.waker.wake();
    }

    fn woken(&self, generation: u64, slot: usize) {
        let was_empty = {
            let mut state = lock(&self.state);
            let was_empty = state.queue.is_empty();
            state.queue.push(Event::Woken { generation, slot });
            was_empty
        };
        if was_empty {
            self.waker.wake();
        }
    }
}

/// The waker of one pending job.
struct SlotWaker {
    hub: Weak<Hub>,
    generation: u64,
    slot: usize,
}

impl Wake for SlotWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if let Some(hub) = self.hub.upgrade() {
            hub.woken(self.generation, self.slot);
        }
    }
}

struct Slot {
    job: Settling,
    waker: Waker,
}

/// The driver task, settling through `S`.
struct Driver<S> {
    sink: Weak<S>,
    hub: Arc<Hub>,
    generation: u64,
    slots: Vec<Option<Slot>>,
    free: Vec<usize>,
    /// Occupied slots.
    pending: usize,
    /// The events taken from the hub and not processed yet (reused between polls).
    batch: VecDeque<Vec<Event>>,
    /// Chunks of the last batch, emptied, to hand back to the hub.
    spent: Vec<Vec<Event>>,
    finished: bool,
}

impl<S: Settle> Driver<S> {
    /// Polls `job` once with `waker`; settles it when ready (through `sink`, the registry
    /// if it still exists).
    fn poll_job(sink: Option<&S>, job: &mut Settling, waker: &Waker) -> Poll<()> {
        let mut cx = Context::from_waker(waker);
        let result = match catch_unwind(AssertUnwindSafe(|| job.done.as_mut().poll(&mut cx))) {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(result)) => Ok(result),
            Err(_) => Err(()),
        };
        let outcome = match result {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(error)) => rejected(&job.id, &error_text(&error)),
            Err(()) => rejected(&job.id, "Error: producer done future panicked"),
        };
        // A registry that is gone has nobody else to tell.
        let Some(sink) = sink else {
            return Poll::Ready(());
        };
        // Contained so one job cannot take the other jobs' driver down with it (listeners
        // are already contained inside `settle`).
        let settled = catch_unwind(AssertUnwindSafe(|| {
            sink.settle_ticket(job.ticket, outcome);
        }));
        if settled.is_err() {
            tracing::warn!("jobs: settlement of {} panicked", job.id);
        }
        Poll::Ready(())
    }

    fn park(&mut self, sink: Option<&S>, job: Settling) {
        let slot = self.free.pop().unwrap_or(self.slots.len());
        let waker = Waker::from(Arc::new(SlotWaker {
            hub: Arc::downgrade(&self.hub),
            generation: self.generation,
            slot,
        }));
        let mut entry = Slot { job, waker };
        // Polled again with its own waker: a wake-up between the no-op poll and now
        // would otherwise be lost.
        if Self::poll_job(sink, &mut entry.job, &entry.waker).is_ready() {
            self.free.push(slot);
            return;
        }
        if slot == self.slots.len() {
            self.slots.push(Some(entry));
        } else {
            self.slots[slot] = Some(entry);
        }
        self.pending += 1;
    }

    fn run_event(&mut self, sink: Option<&S>, event: Event) {
        match event {
            Event::Fresh(mut job) => {
                if Self::poll_job(sink, &mut job, Waker::noop()).is_pending() {
                    self.park(sink, job);
                }
            }
            Event::Woken { generation, slot } => {
                if generation != self.generation {
                    return;
                }
                let Some(mut entry) = self.slots.get_mut(slot).and_then(Option::take) else {
                    return;
                };
                if Self::poll_job(sink, &mut entry.job, &entry.waker).is_ready() {
                    self.pending -= 1;
                    self.free.push(slot);
                } else {
                    self.slots[slot] = Some(entry);
                }
            }
        }
    }
}

impl<S: Settle> Future for Driver<S> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        this.hub.waker.register(cx.waker());
        {
            let mut state = lock(&this.hub.state);
            for chunk in this.spent.drain(..) {
                state.queue.recycle(chunk);
            }
            if state.stopped {
                state.running = false;
                this.finished = true;
                let queued = mem::take(&mut state.queue.chunks);
                drop(state);
                // Pending and queued `done` futures go with the driver.
                drop(queued);
                this.slots.clear();
                this.pending = 0;
                return Poll::Ready(());
            }
            if state.queue.is_empty() {
                if this.pending == 0 {
                    state.running = false;
                    this.finished = true;
                    return Poll::Ready(());
                }
                return Poll::Pending;
            }
            mem::swap(&mut this.batch, &mut state.queue.chunks);
        }
        // Settlement calls listeners, which may start jobs (and submit): no hub lock here.
        let sink = this.sink.upgrade();
        while let Some(mut chunk) = this.batch.pop_front() {
            for event in chunk.drain(..) {
                this.run_event(sink.as_deref(), event);
            }
            this.spent.push(chunk);
        }
        drop(sink);
        // One batch per poll, then let other tasks run.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl<S> Drop for Driver<S> {
    fn drop(&mut self) {
        if !self.finished {
            // Dropped with its runtime: the next start spawns a new driver (a new
            // generation, so wakes meant for this one's jobs are ignored).
            lock(&self.hub.state).running = false;
        }
    }
}

fn rejected(id: &JobId, error: &str) -> JobOutcome {
    tracing::warn!(
        "jobs: job {id} producer done promise rejected (producer contract violation): {error}"
    );
    JobOutcome::failed().with_detail(error)
}

/// An error as the spec renders it: `Error: <Display>` (decision 10).
pub(crate) fn error_text(error: &BoxError) -> String {
    format!("Error: {error}")
}
