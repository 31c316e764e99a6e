//! The queue of flushes waiting for a writer: [`Combiner`], the groups a writer takes from
//! it ([`take_group`]) and the writers' count ([`Running`]).

use std::collections::{HashSet, VecDeque};

use tokio::sync::oneshot;
use turnkit_core::{RawEvent, lock};

/// What a flush transaction found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FlushOutcome {
    /// The batch is committed.
    Written,
    /// The session's owner or epoch is not the caller's.
    Fenced,
    /// The epoch is the caller's but the durable last seq is not the expected one.
    SeqMismatch { found: i64 },
}

/// A group takes its share of the waiting events (split over the writers), but at least
/// this many...
const GROUP_EVENTS_MIN: usize = 1_000;
/// ...and at most this many, or this many payload bytes, or this many sessions. A single
/// flush larger than these is written alone.
const GROUP_EVENTS_MAX: usize = 10_000;
const GROUP_BYTES: usize = 8 << 20;
const GROUP_SESSIONS: usize = 1_000;

/// Flushes waiting for a writer, and the writers running (at most `writers`).
pub(crate) struct Combiner {
    state: std::sync::Mutex<Waiting>,
    writers: usize,
    /// The queue's length, sent on every change (under the state's lock).
    depth: tokio::sync::watch::Sender<usize>,
}

#[derive(Default)]
pub(super) struct Waiting {
    queue: VecDeque<Request>,
    running: usize,
    /// Events of the groups being written.
    writing: usize,
}

/// One session's flush, waiting to be written.
pub(super) struct Request {
    pub(super) id: String,
    pub(super) host: String,
    pub(super) epoch: i64,
    pub(super) durable: u64,
    pub(super) batch: Vec<RawEvent>,
    pub(super) reply: oneshot::Sender<Result<FlushOutcome, String>>,
}

impl Combiner {
    /// A combiner running at most `writers` group transactions at once (at least one).
    pub(crate) fn new(writers: usize) -> Self {
        Self {
            state: std::sync::Mutex::new(Waiting::default()),
            writers: writers.max(1),
            depth: tokio::sync::watch::channel(0).0,
        }
    }

    /// Queues a flush; true when the caller is to start a writer (counted as running).
    pub(super) fn enqueue(&self, request: Request) -> bool {
        let mut waiting = lock(&self.state);
        waiting.queue.push_back(request);
        self.depth.send_replace(waiting.queue.len());
        let start = waiting.running < self.writers;
        if start {
            waiting.running += 1;
        }
        start
    }

    /// How many flushes are waiting for a writer.
    pub(crate) fn waiting(&self) -> usize {
        lock(&self.state).queue.len()
    }

    /// A receiver of [`Combiner::waiting`], updated on every change.
    pub(crate) fn waiting_changes(&self) -> tokio::sync::watch::Receiver<usize> {
        self.depth.subscribe()
    }
}

/// Takes the next group from the front of the queue: flushes of distinct sessions, a
/// writer's share of the events waiting or being written, within the group limits (the
/// first flush whatever its size). Counts its events as being written.
pub(super) fn take_group(waiting: &mut Waiting, writers: usize) -> Vec<Request> {
    let queued: usize = waiting.queue.iter().map(|r| r.batch.len()).sum();
    let share = (queued + waiting.writing)
        .div_ceil(writers.max(1))
        .clamp(GROUP_EVENTS_MIN, GROUP_EVENTS_MAX);
    let queue = &mut waiting.queue;
    let mut group: Vec<Request> = Vec::new();
    let mut ids = HashSet::new();
    let (mut events, mut bytes) = (0, 0);
    let mut at = 0;
    while at < queue.len() && group.len() < GROUP_SESSIONS && events < share && bytes < GROUP_BYTES
    {
        if ids.contains(queue[at].id.as_str()) {
            // Two flushes of one session never share a group: the later one waits.
            at += 1;
            continue;
        }
        let Some(request) = queue.remove(at) else {
            break;
        };
        events += request.batch.len();
        bytes += request
            .batch
            .iter()
            .map(|e| e.payload().len())
            .sum::<usize>();
        ids.insert(request.id.clone());
        group.push(request);
    }
    waiting.writing += events;
    group
}

/// A writer, counted in `running` until it stops; a writer that panicked takes the waiting
/// flushes with it (their callers get an error instead of waiting for ever).
pub(super) struct Running<'a> {
    combiner: &'a Combiner,
    /// Counted out already (it found no flush waiting).
    stopped: bool,
}

impl<'a> Running<'a> {
    pub(super) fn new(combiner: &'a Combiner) -> Self {
        Self {
            combiner,
            stopped: false,
        }
    }

    /// The next group to write, or `None` when no flush waits: then the writer is counted
    /// out under the same lock, so a flush queued after it finds a writer to start.
    pub(super) fn next_group(&mut self) -> Option<Vec<Request>> {
        let mut waiting = lock(&self.combiner.state);
        let group = take_group(&mut waiting, self.combiner.writers);
        if !group.is_empty() {
            self.combiner.depth.send_replace(waiting.queue.len());
        }
        if group.is_empty() && !self.stopped {
            self.stopped = true;
            waiting.running -= 1;
            if waiting.running == 0 {
                waiting.writing = 0;
            }
        }
        (!group.is_empty()).then_some(group)
    }

    /// Counts a group's events out of those being written.
    pub(super) fn written(&mut self, events: usize) {
        lock(&self.combiner.state).writing -= events;
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if self.stopped {
            return;
        }
        let mut waiting = lock(&self.combiner.state);
        waiting.running -= 1;
        if waiting.running == 0 {
            // No group is being written (a panicking writer left its count behind).
            waiting.writing = 0;
            if std::thread::panicking() {
                waiting.queue.clear();
                self.combiner.depth.send_replace(0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(id: &str, events: usize) -> Request {
        let batch = (1..=events as u64)
            .map(|seq| RawEvent::new(seq, "test/n", chrono::DateTime::UNIX_EPOCH, "{}").unwrap())
            .collect();
        Request {
            id: id.to_owned(),
            host: "h".to_owned(),
            epoch: 1,
            durable: 0,
            batch,
            reply: oneshot::channel().0,
        }
    }

    fn waiting(requests: impl IntoIterator<Item = Request>, writing: usize) -> Waiting {
        Waiting {
            queue: requests.into_iter().collect(),
            running: 1,
            writing,
        }
    }

    fn ids(group: &[Request]) -> Vec<&str> {
        group.iter().map(|r| r.id.as_str()).collect()
    }

    #[test]
    fn two_writers_take_equal_shares_of_what_waits_and_is_being_written() {
        let mut w = waiting((0..98).map(|i| request(&format!("s{i}"), 100)), 100);
        let first = take_group(&mut w, 2);
        assert_eq!((first.len(), w.writing), (50, 5_100));
        let second = take_group(&mut w, 2);
        assert_eq!((second.len(), w.writing, w.queue.len()), (48, 9_900, 0));
        assert!(take_group(&mut w, 2).is_empty());
    }

    #[test]
    fn a_group_holds_at_least_a_thousand_events_and_at_most_ten_thousand() {
        let mut small = waiting((0..10).map(|i| request(&format!("s{i}"), 10)), 0);
        assert_eq!(take_group(&mut small, 2).len(), 10);
        let mut large = waiting((0..200).map(|i| request(&format!("s{i}"), 100)), 0);
        assert_eq!(take_group(&mut large, 1).len(), 100);
        // A thousand sessions at most, whatever their size.
        let mut many = waiting((0..1_500).map(|i| request(&format!("s{i}"), 1)), 0);
        assert_eq!(take_group(&mut many, 1).len(), 1_000);
        // A flush larger than a group is written alone.
        let mut huge = waiting([request("big", 20_000), request("next", 1)], 0);
        assert_eq!(ids(&take_group(&mut huge, 1)), ["big"]);
        assert_eq!(ids(&take_group(&mut huge, 1)), ["next"]);
    }

    #[test]
    fn a_flush_queued_as_the_last_writer_stops_gets_a_writer() {
        let combiner = Combiner::new(1);
        assert!(combiner.enqueue(request("a", 1)));
        let mut writer = Running::new(&combiner);
        let group = writer.next_group().map(|g| ids(&g).join(","));
        assert_eq!(group.as_deref(), Some("a"));
        writer.written(1);
        assert!(writer.next_group().is_none());
        // Another thread queues a flush before the writer is counted out.
        let started = combiner.enqueue(request("b", 1));
        drop(writer);
        let state = lock(&combiner.state);
        assert_eq!((state.queue.len(), started || state.running > 0), (1, true));
    }

    #[test]
    fn two_flushes_of_one_session_never_share_a_group() {
        let mut w = waiting([request("a", 1), request("a", 2), request("b", 1)], 0);
        assert_eq!(ids(&take_group(&mut w, 1)), ["a", "b"]);
        assert_eq!(w.queue.len(), 1);
        assert_eq!(w.queue[0].batch.len(), 2);
    }
}
