//! [`ManualClock`]: a wall clock and a monotonic clock that move only when told to.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering, fence};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use futures::future::BoxFuture;
use tokio::sync::oneshot;
use turnkit_core::{Clock, ClockError, truncate_to_millis};

struct Inner {
    /// Monotonic time since the clock was made.
    mono: Duration,
    /// Wall time = `wall_base + mono`; `set` moves `wall_base`.
    wall_base: DateTime<Utc>,
    next_id: u64,
    /// Pending sleeps by (monotonic deadline, creation order).
    sleeps: BTreeMap<(Duration, u64), oneshot::Sender<()>>,
    fail_next: Option<String>,
}

impl Inner {
    fn now(&self) -> DateTime<Utc> {
        let mono = TimeDelta::from_std(self.mono).unwrap_or(TimeDelta::MAX);
        // Saturates at chrono's range instead of overflowing.
        self.wall_base
            .checked_add_signed(mono)
            .unwrap_or(DateTime::<Utc>::MAX_UTC)
    }
}

/// The current reading, published after every change (under the `Inner` lock) so `now()`
/// never takes the lock: a sequence lock whose version is odd while a change is written.
#[derive(Default)]
struct Reading {
    version: AtomicU64,
    secs: AtomicI64,
    nanos: AtomicU32,
}

impl Reading {
    /// Called with the `Inner` lock held (one writer at a time).
    fn publish(&self, now: DateTime<Utc>) {
        let version = self.version.load(Ordering::Relaxed);
        self.version
            .store(version.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        self.secs.store(now.timestamp(), Ordering::Relaxed);
        self.nanos
            .store(now.timestamp_subsec_nanos(), Ordering::Relaxed);
        self.version
            .store(version.wrapping_add(2), Ordering::Release);
    }

    fn read(&self) -> DateTime<Utc> {
        let (secs, nanos) = self.parts();
        DateTime::from_timestamp(secs, nanos).unwrap_or(DateTime::<Utc>::MAX_UTC)
    }

    /// The published (seconds, nanoseconds) since the epoch.
    fn parts(&self) -> (i64, u32) {
        loop {
            let before = self.version.load(Ordering::Acquire);
            let secs = self.secs.load(Ordering::Relaxed);
            let nanos = self.nanos.load(Ordering::Relaxed);
            fence(Ordering::Acquire);
            let after = self.version.load(Ordering::Relaxed);
            if before == after && before.is_multiple_of(2) {
                return (secs, nanos);
            }
            std::hint::spin_loop();
        }
    }
}

/// A deterministic [`Clock`] for tests and scenarios: time moves only when a test says so.
///
/// * [`ManualClock::advance`] moves wall and monotonic time forward together and fires the
///   pending sleeps that fall due, in deadline order; each sees `now()` equal to its deadline,
///   and the work it wakes runs (see [`settle`]) before the next one fires.
/// * [`ManualClock::set`] jumps the wall clock only and fires nothing.
/// * [`ManualClock::fail_next`] makes the next [`Clock::try_now`] fail once.
///
/// `advance` lets woken tasks run with [`settle`], which needs a tokio runtime whose clock is
/// paused (`#[tokio::test(start_paused = true)]`, or the scenario runner's runtime).
#[derive(Clone)]
pub struct ManualClock {
    inner: Arc<Mutex<Inner>>,
    reading: Arc<Reading>,
}

impl std::fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManualClock")
            .field("now", &self.now())
            .finish()
    }
}

/// Lets every task that can proceed without time passing run to its next wait.
///
/// With tokio's clock paused, a 1 ms tokio sleep completes exactly when every other task is
/// blocked (tokio auto-advances only when idle); library timers never live in tokio's clock
/// under test, so nothing else is fired by it.
pub async fn settle() {
    tokio::time::sleep(Duration::from_millis(1)).await;
}

impl ManualClock {
    /// A clock reading `start`.
    pub fn new(start: DateTime<Utc>) -> Self {
        let inner = Inner {
            mono: Duration::ZERO,
            wall_base: truncate_to_millis(start),
            next_id: 0,
            sleeps: BTreeMap::new(),
            fail_next: None,
        };
        let reading = Reading::default();
        reading.publish(inner.now());
        Self {
            inner: Arc::new(Mutex::new(inner)),
            reading: Arc::new(reading),
        }
    }

    /// A clock reading the scenario default, `2026-08-05T12:00:00.000Z`.
    pub fn at_default() -> Self {
        Self::new(
            DateTime::parse_from_rfc3339("2026-08-05T12:00:00.000Z")
                .map(|t| t.with_timezone(&Utc))
                .unwrap_or_default(),
        )
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        turnkit_core::lock(&self.inner)
    }

    /// Moves both clocks forward by `by`, firing due sleeps in order and settling after each.
    pub async fn advance(&self, by: Duration) {
        let target = self.lock().mono.saturating_add(by);
        loop {
            let due = {
                let mut inner = self.lock();
                let first = inner.sleeps.keys().next().copied();
                match first {
                    Some(key) if key.0 <= target => {
                        inner.mono = inner.mono.max(key.0);
                        self.reading.publish(inner.now());
                        inner.sleeps.remove(&key)
                    }
                    _ => None,
                }
            };
            let Some(sender) = due else { break };
            let _ = sender.send(());
            settle().await;
        }
        {
            let mut inner = self.lock();
            inner.mono = target;
            self.reading.publish(inner.now());
        }
        settle().await;
    }

    /// Jumps the wall clock to `at` (forward or back). Monotonic time and pending sleeps are
    /// unaffected; nothing fires.
    pub fn set(&self, at: DateTime<Utc>) {
        let mut inner = self.lock();
        let mono = TimeDelta::from_std(inner.mono).unwrap_or(TimeDelta::MAX);
        inner.wall_base = truncate_to_millis(at)
            .checked_sub_signed(mono)
            .unwrap_or(DateTime::<Utc>::MIN_UTC);
        self.reading.publish(inner.now());
    }

    /// Whether moving forward by `by` keeps the wall clock within chrono's range
    /// (the scenario runner refuses an `advance` that would not).
    pub fn can_advance(&self, by: Duration) -> bool {
        TimeDelta::from_std(by)
            .ok()
            .and_then(|delta| self.now().checked_add_signed(delta))
            .is_some()
    }

    /// Makes the next [`Clock::try_now`] return an error.
    pub fn fail_next(&self, message: impl Into<String>) {
        self.lock().fail_next = Some(message.into());
    }

    /// The number of sleeps waiting to fire.
    pub fn pending_sleeps(&self) -> usize {
        let mut inner = self.lock();
        inner.sleeps.retain(|_, s| !s.is_closed());
        inner.sleeps.len()
    }

    /// Monotonic time elapsed since creation.
    pub fn elapsed(&self) -> Duration {
        self.lock().mono
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        self.reading.read()
    }

    fn now_millis(&self) -> i64 {
        let (secs, nanos) = self.reading.parts();
        secs.saturating_mul(1000)
            .saturating_add(i64::from(nanos / 1_000_000))
    }

    fn try_now(&self) -> Result<DateTime<Utc>, ClockError> {
        if let Some(message) = self.lock().fail_next.take() {
            return Err(ClockError(message));
        }
        Ok(self.now())
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        let (sender, receiver) = oneshot::channel();
        {
            let mut inner = self.lock();
            let deadline = inner.mono + duration;
            inner.next_id += 1;
            let id = inner.next_id;
            if duration.is_zero() {
                let _ = sender.send(());
            } else {
                inner.sleeps.insert((deadline, id), sender);
            }
        }
        Box::pin(async move {
            // A dropped clock never fires; the sleep then waits forever, like a timer that
            // never comes due.
            if receiver.await.is_err() {
                futures::future::pending::<()>().await;
            }
        })
    }
}
