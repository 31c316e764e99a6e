//! The store conformance suite: one named check per promise of the
//! [`SessionStore`]/[`Session`] seam (docs/event-log.md, "What the JSONL store promises" and
//! "Write ownership"). Every store runs the same list through a [`StoreFixture`]:
//!
//! ```
//! use std::sync::Arc;
//! use turnkit_core::{MemoryStore, SessionId, SessionStore, SystemClock};
//! use turnkit_testkit::store_conformance::{self, StoreFixture};
//!
//! struct Memory(Arc<MemoryStore>);
//!
//! #[async_trait::async_trait]
//! impl StoreFixture for Memory {
//!     fn name(&self) -> String { "memory".to_owned() }
//!     fn store(&self) -> Arc<dyn SessionStore> { self.0.clone() }
//!     fn reopen(&self) -> Arc<dyn SessionStore> { self.0.clone() }
//!     fn second_host(&self) -> Option<Arc<dyn SessionStore>> { None }
//!     async fn set_flush_fail(&self, _: &SessionId, _: bool) -> bool { false }
//!     fn drops_unflushed(&self) -> bool { false }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let report = store_conformance::run(&Memory(Arc::new(MemoryStore::new(Arc::new(SystemClock))))).await;
//! report.assert_passed();
//! # }
//! ```

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;
use turnkit_core::{
    PersistenceError, Session, SessionEvent, SessionHeader, SessionId, SessionStore, StoreError,
};

/// A store under test, as the suite drives it. Each [`run`] needs a fixture over empty
/// storage (a fresh folder, a fresh database schema).
#[async_trait]
pub trait StoreFixture: Send + Sync {
    /// A name for reports (`"jsonl"`, `"postgres"`).
    fn name(&self) -> String;

    /// The store as the first host sees it.
    fn store(&self) -> Arc<dyn SessionStore>;

    /// The same durable storage as a new process sees it after the previous one died: the
    /// suite drops every session handle it held before calling this. A store that lives in one
    /// process (`MemoryStore`) returns itself.
    fn reopen(&self) -> Arc<dyn SessionStore>;

    /// A second host (another process) on the same storage, for the write-ownership check;
    /// `None` for a store that lives in one process and hands every caller the same live log.
    fn second_host(&self) -> Option<Arc<dyn SessionStore>>;

    /// Makes every flush of `session` fail (`true`) or work again (`false`), leaving durable
    /// storage as it is. Returns `false` when the store cannot inject such a failure (the
    /// failed-flush check is then not applicable).
    async fn set_flush_fail(&self, session: &SessionId, fail: bool) -> bool;

    /// Whether a session handle dropped without a flush discards its unflushed events in
    /// durable storage (JSONL, PostgreSQL: yes; `MemoryStore`: memory is the persistence).
    fn drops_unflushed(&self) -> bool;
}

/// The result of one check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The store keeps the promise.
    Passed,
    /// The promise does not apply to this store; the reason says why.
    NotApplicable(String),
    /// The store broke the promise; the message says how.
    Failed(String),
}

/// One named check and its outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckResult {
    /// The check's name, one of [`CHECKS`].
    pub name: &'static str,
    /// What happened.
    pub outcome: Outcome,
}

/// Every check's outcome for one store, in [`CHECKS`] order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The fixture's name.
    pub store: String,
    /// One entry per check.
    pub results: Vec<CheckResult>,
}

impl Report {
    /// The outcome of the check called `name`, if it ran.
    pub fn outcome(&self, name: &str) -> Option<&Outcome> {
        self.results
            .iter()
            .find(|r| r.name == name)
            .map(|r| &r.outcome)
    }

    /// The names of the checks that failed.
    pub fn failed(&self) -> Vec<&'static str> {
        self.results
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Failed(_)))
            .map(|r| r.name)
            .collect()
    }

    /// Panics with the whole report unless no check failed.
    pub fn assert_passed(&self) {
        assert!(
            self.failed().is_empty(),
            "store conformance failed:\n{self}"
        );
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for result in &self.results {
            match &result.outcome {
                Outcome::Passed => writeln!(f, "{} {}: passed", self.store, result.name)?,
                Outcome::NotApplicable(why) => {
                    writeln!(f, "{} {}: not applicable ({why})", self.store, result.name)?;
                }
                Outcome::Failed(why) => {
                    writeln!(f, "{} {}: FAILED: {why}", self.store, result.name)?;
                }
            }
        }
        Ok(())
    }
}

/// The checks, in the order [`run`] runs them:
///
/// * `append_orders_by_seq`: seqs start at 1 and grow by one; `len` is the last seq.
/// * `events_after_is_the_suffix`: `events_after(k)` is exactly the events with `seq > k`.
/// * `flush_is_the_barrier`: what a flush acknowledged is in the reopened log, unchanged.
/// * `failed_flush_changes_nothing_durable`: after a failed flush the durable log is as it was,
///   and a later flush writes the kept events once.
/// * `header_and_time_zone_round_trip`: the header (time zone included) survives reopening.
/// * `fork_copies_events_and_sets_seed_length`: a fork keeps the parent's seqs and times.
/// * `create_open_and_list`: duplicate create, missing open, sorted list.
/// * `reopen_after_crash_continues_the_log`: a reopened session appends after its last
///   durable seq, with no gap and no repeat.
/// * `one_writer_per_session`: a second host is refused while the first writer lives, or the
///   first writer is fenced; released ownership passes on.
pub const CHECKS: [&str; 9] = [
    "append_orders_by_seq",
    "events_after_is_the_suffix",
    "flush_is_the_barrier",
    "failed_flush_changes_nothing_durable",
    "header_and_time_zone_round_trip",
    "fork_copies_events_and_sets_seed_length",
    "create_open_and_list",
    "reopen_after_crash_continues_the_log",
    "one_writer_per_session",
];

type CheckOutput = Result<Outcome, String>;

/// Runs every check of [`CHECKS`] against `fixture`, each on its own session ids.
pub async fn run(fixture: &dyn StoreFixture) -> Report {
    let mut results = Vec::new();
    for name in CHECKS {
        let outcome = match run_one(name, fixture).await {
            Ok(outcome) => outcome,
            Err(message) => Outcome::Failed(message),
        };
        results.push(CheckResult { name, outcome });
    }
    Report {
        store: fixture.name(),
        results,
    }
}

async fn run_one(name: &str, f: &dyn StoreFixture) -> CheckOutput {
    match name {
        "append_orders_by_seq" => append_orders_by_seq(f).await,
        "events_after_is_the_suffix" => events_after_is_the_suffix(f).await,
        "flush_is_the_barrier" => flush_is_the_barrier(f).await,
        "failed_flush_changes_nothing_durable" => failed_flush_changes_nothing_durable(f).await,
        "header_and_time_zone_round_trip" => header_and_time_zone_round_trip(f).await,
        "fork_copies_events_and_sets_seed_length" => fork_copies_events(f).await,
        "create_open_and_list" => create_open_and_list(f).await,
        "reopen_after_crash_continues_the_log" => reopen_after_crash(f).await,
        "one_writer_per_session" => one_writer_per_session(f).await,
        other => Err(format!("unknown check {other}")),
    }
}

macro_rules! ensure {
    ($cond:expr, $($message:tt)+) => {
        if !$cond {
            return Err(format!($($message)+));
        }
    };
}

fn id(name: &str) -> SessionId {
    SessionId::from(name)
}

fn create(store: &dyn SessionStore, header: SessionHeader) -> Result<Arc<dyn Session>, String> {
    let name = header.id.clone();
    store
        .create(header)
        .map_err(|e| format!("create {name}: {e}"))
}

fn open(store: &dyn SessionStore, name: &SessionId) -> Result<Arc<dyn Session>, String> {
    store.open(name).map_err(|e| format!("open {name}: {e}"))
}

fn append_n(session: &dyn Session, from: u64, count: u64) -> Result<Vec<SessionEvent>, String> {
    (from..from + count)
        .map(|n| {
            session
                .append(
                    "test/event",
                    json!({ "n": n, "text": format!("event {n}"), "z": 1, "a": [n] }),
                )
                .map_err(|e| format!("append {n}: {e}"))
        })
        .collect()
}

async fn flush(session: &dyn Session) -> Result<(), String> {
    session
        .flush()
        .await
        .map_err(|e| format!("flush of {}: {e}", session.id()))
}

/// Compares two logs event by event (seq, type, time, and the payload's text, key order
/// included).
fn same_log(what: &str, got: &[SessionEvent], want: &[SessionEvent]) -> Result<(), String> {
    ensure!(
        got.len() == want.len(),
        "{what}: {} events, expected {}",
        got.len(),
        want.len()
    );
    for (g, w) in got.iter().zip(want) {
        ensure!(
            g == w && serde_json::to_string(&g.data).ok() == serde_json::to_string(&w.data).ok(),
            "{what}: event {g:?} differs from {w:?}"
        );
    }
    Ok(())
}

async fn append_orders_by_seq(f: &dyn StoreFixture) -> CheckOutput {
    let store = f.store();
    let session = create(&*store, SessionHeader::new("conf-order"))?;
    ensure!(session.is_empty(), "a new session is not empty");
    let appended = append_n(&*session, 1, 5)?;
    let seqs: Vec<u64> = appended.iter().map(|e| e.seq).collect();
    ensure!(seqs == [1, 2, 3, 4, 5], "append returned seqs {seqs:?}");
    ensure!(
        session.len() == 5,
        "len is {} after 5 appends",
        session.len()
    );
    same_log("live log", &session.events(), &appended)?;
    flush(&*session).await?;
    let more = append_n(&*session, 6, 2)?;
    ensure!(
        more[0].seq == 6 && more[1].seq == 7,
        "seqs after a flush: {}, {}",
        more[0].seq,
        more[1].seq
    );
    let raw: Vec<u64> = session
        .raw_events_after(0)
        .iter()
        .map(|e| e.seq())
        .collect();
    ensure!(raw == [1, 2, 3, 4, 5, 6, 7], "raw log seqs {raw:?}");
    Ok(Outcome::Passed)
}

async fn events_after_is_the_suffix(f: &dyn StoreFixture) -> CheckOutput {
    let store = f.store();
    let session = create(&*store, SessionHeader::new("conf-after"))?;
    let appended = append_n(&*session, 1, 6)?;
    flush(&*session).await?;
    for after in 0..=8u64 {
        let want: Vec<SessionEvent> = appended.iter().filter(|e| e.seq > after).cloned().collect();
        same_log(
            &format!("events_after({after})"),
            &session.events_after(after),
            &want,
        )?;
        let raw: Vec<SessionEvent> = session
            .raw_events_after(after)
            .iter()
            .map(|e| e.to_event())
            .collect();
        same_log(&format!("raw_events_after({after})"), &raw, &want)?;
    }
    drop(session);
    let reopened = open(&*f.reopen(), &id("conf-after"))?;
    same_log(
        "events_after(3) after reopening",
        &reopened.events_after(3),
        &appended[3..],
    )?;
    Ok(Outcome::Passed)
}

async fn flush_is_the_barrier(f: &dyn StoreFixture) -> CheckOutput {
    let store = f.store();
    let session = create(&*store, SessionHeader::new("conf-barrier"))?;
    let flushed = append_n(&*session, 1, 4)?;
    flush(&*session).await?;
    // A flush with nothing new is a no-op that still succeeds.
    flush(&*session).await?;
    let unflushed = append_n(&*session, 5, 3)?;
    drop(session);
    drop(store);
    let reopened = open(&*f.reopen(), &id("conf-barrier"))?;
    let events = reopened.events();
    if f.drops_unflushed() {
        same_log("reopened log (unflushed events dropped)", &events, &flushed)?;
    } else {
        let all: Vec<SessionEvent> = flushed.iter().chain(&unflushed).cloned().collect();
        ensure!(
            events.len() >= flushed.len(),
            "reopened log lost acknowledged events"
        );
        same_log("reopened log", &events, &all[..events.len()])?;
    }
    Ok(Outcome::Passed)
}

async fn failed_flush_changes_nothing_durable(f: &dyn StoreFixture) -> CheckOutput {
    let name = id("conf-failed-flush");
    let store = f.store();
    let session = create(&*store, SessionHeader::new(name.clone()))?;
    let first = append_n(&*session, 1, 2)?;
    flush(&*session).await?;
    if !f.set_flush_fail(&name, true).await {
        return Ok(Outcome::NotApplicable(
            "the store cannot make a flush fail on demand".to_owned(),
        ));
    }
    let kept = append_n(&*session, 3, 2)?;
    let failed = session.flush().await;
    // A retryable failure: not `Fenced` or `Detached`, which would tell the host the session
    // is gone (the message is the fixture's own).
    ensure!(
        retryable(&failed),
        "a flush with an injected failure returned {failed:?}, not a retryable error"
    );
    ensure!(
        session.len() == 4,
        "the live log has {} events after a failed flush",
        session.len()
    );
    // A retry after the cause is gone writes the kept events exactly once.
    f.set_flush_fail(&name, false).await;
    flush(&*session).await?;
    drop(session);
    let reopened = open(&*f.reopen(), &name)?;
    let all: Vec<SessionEvent> = first.iter().chain(&kept).cloned().collect();
    same_log(
        "log after a failed flush and a retry",
        &reopened.events(),
        &all,
    )?;
    // A failed flush whose handle is then dropped leaves the durable log as it was.
    let more = append_n(&*reopened, 5, 1)?;
    f.set_flush_fail(&name, true).await;
    let failed = reopened.flush().await;
    ensure!(
        retryable(&failed),
        "the second injected failure returned {failed:?}, not a retryable error"
    );
    f.set_flush_fail(&name, false).await;
    drop(reopened);
    let last = open(&*f.reopen(), &name)?;
    let want: Vec<SessionEvent> = if f.drops_unflushed() {
        all
    } else {
        all.into_iter().chain(more).collect()
    };
    same_log("log after a failed flush and a drop", &last.events(), &want)?;
    Ok(Outcome::Passed)
}

async fn header_and_time_zone_round_trip(f: &dyn StoreFixture) -> CheckOutput {
    let store = f.store();
    let zoned = SessionHeader::new("conf-header-zone").with_time_zone("Europe/Paris");
    let plain = SessionHeader::new("conf-header-plain");
    let a = create(&*store, zoned.clone())?;
    let b = create(&*store, plain.clone())?;
    ensure!(
        a.header() == &zoned && b.header() == &plain,
        "create returned another header"
    );
    ensure!(a.id() == &zoned.id, "id() is {}", a.id());
    append_n(&*a, 1, 1)?;
    flush(&*a).await?;
    drop((a, b));
    drop(store);
    let again = f.reopen();
    let a = open(&*again, &zoned.id)?;
    let b = open(&*again, &plain.id)?;
    ensure!(
        a.header() == &zoned,
        "reopened header {:?}, expected {zoned:?}",
        a.header()
    );
    ensure!(
        b.header() == &plain,
        "reopened header {:?}, expected {plain:?}",
        b.header()
    );
    Ok(Outcome::Passed)
}

async fn fork_copies_events(f: &dyn StoreFixture) -> CheckOutput {
    let store = f.store();
    let parent = create(
        &*store,
        SessionHeader::new("conf-fork-parent").with_time_zone("Asia/Tokyo"),
    )?;
    let copied = append_n(&*parent, 1, 3)?;
    flush(&*parent).await?;
    let child = store
        .fork(&*parent, id("conf-fork-child"))
        .map_err(|e| format!("fork: {e}"))?;
    let want_header = SessionHeader {
        id: id("conf-fork-child"),
        seed_length: Some(3),
        time_zone: Some("Asia/Tokyo".to_owned()),
    };
    ensure!(
        child.header() == &want_header,
        "fork header {:?}",
        child.header()
    );
    same_log("fork's copied events", &child.events(), &copied)?;
    let own = append_n(&*child, 4, 1)?;
    ensure!(
        own[0].seq == 4,
        "the fork's first own event has seq {}",
        own[0].seq
    );
    flush(&*child).await?;
    ensure!(
        parent.len() == 3,
        "the parent grew to {} events",
        parent.len()
    );
    ensure!(
        matches!(
            store.fork(&*parent, id("conf-fork-child")),
            Err(StoreError::AlreadyExists(_))
        ),
        "a fork onto an existing id was not AlreadyExists"
    );
    drop((parent, child));
    drop(store);
    let reopened = open(&*f.reopen(), &id("conf-fork-child"))?;
    ensure!(
        reopened.header() == &want_header,
        "reopened fork header {:?}",
        reopened.header()
    );
    let all: Vec<SessionEvent> = copied.iter().chain(&own).cloned().collect();
    same_log("reopened fork", &reopened.events(), &all)?;
    Ok(Outcome::Passed)
}

async fn create_open_and_list(f: &dyn StoreFixture) -> CheckOutput {
    let store = f.store();
    let b = create(&*store, SessionHeader::new("conf-list-b"))?;
    let a = create(&*store, SessionHeader::new("conf-list-a"))?;
    ensure!(
        matches!(store.create(SessionHeader::new("conf-list-a")), Err(StoreError::AlreadyExists(ref got)) if got == &id("conf-list-a")),
        "a second create of conf-list-a was not AlreadyExists"
    );
    ensure!(
        matches!(store.open(&id("conf-list-missing")), Err(StoreError::NotFound(ref got)) if got == &id("conf-list-missing")),
        "opening a missing session was not NotFound"
    );
    flush(&*a).await?;
    flush(&*b).await?;
    let listed: Vec<SessionId> = store
        .list()
        .into_iter()
        .filter(|s| s.as_str().starts_with("conf-list-"))
        .collect();
    ensure!(
        listed == [id("conf-list-a"), id("conf-list-b")],
        "list gave {listed:?}"
    );
    Ok(Outcome::Passed)
}

async fn reopen_after_crash(f: &dyn StoreFixture) -> CheckOutput {
    let name = id("conf-crash");
    let store = f.store();
    let session = create(&*store, SessionHeader::new(name.clone()))?;
    let durable = append_n(&*session, 1, 3)?;
    flush(&*session).await?;
    append_n(&*session, 4, 2)?;
    drop(session);
    drop(store);
    let reopened = open(&*f.reopen(), &name)?;
    let len = reopened.len();
    ensure!(
        len >= 3,
        "the reopened log has {len} events, 3 were acknowledged"
    );
    same_log(
        "acknowledged prefix",
        &reopened.events_after(0)[..3],
        &durable,
    )?;
    let next = append_n(&*reopened, len + 1, 2)?;
    ensure!(
        next[0].seq == len + 1 && next[1].seq == len + 2,
        "after reopening at {len} the next seqs were {} and {}",
        next[0].seq,
        next[1].seq
    );
    flush(&*reopened).await?;
    let whole = reopened.events();
    drop(reopened);
    let again = open(&*f.reopen(), &name)?;
    same_log("log reopened a second time", &again.events(), &whole)?;
    Ok(Outcome::Passed)
}

async fn one_writer_per_session(f: &dyn StoreFixture) -> CheckOutput {
    let name = id("conf-owner");
    let Some(other) = f.second_host() else {
        return Ok(Outcome::NotApplicable(
            "the store lives in one process and shares one live log".to_owned(),
        ));
    };
    let store = f.store();
    let first = create(&*store, SessionHeader::new(name.clone()))?;
    let before = append_n(&*first, 1, 2)?;
    flush(&*first).await?;
    match other.open(&name) {
        Err(StoreError::Locked { .. } | StoreError::Owned { .. }) => {
            // Refused: the first writer goes on, and ownership passes when it is dropped.
            let more = append_n(&*first, 3, 1)?;
            flush(&*first).await?;
            drop(first);
            let second = open(&*other, &name)?;
            let want: Vec<SessionEvent> = before.iter().chain(&more).cloned().collect();
            same_log("log seen by the next owner", &second.events(), &want)?;
            Ok(Outcome::Passed)
        }
        Err(error) => Err(format!(
            "a second host was refused with an undocumented error: {error}"
        )),
        Ok(second) => {
            // Not refused: then the first writer must be fenced.
            let stale = append_n(&*first, 3, 1)?;
            match first.flush().await {
                Err(PersistenceError::Fenced(ref got)) if got == &name => {}
                Err(error) => {
                    return Err(format!(
                        "the fenced writer's flush failed with {error}, not Fenced"
                    ));
                }
                Ok(()) => {
                    return Err(
                        "a second host opened the session while the first writer lived, and \
                         the first writer's flush still succeeded"
                            .to_owned(),
                    );
                }
            }
            let theirs = append_n(&*second, 30, 1)?;
            flush(&*second).await?;
            drop((first, second));
            let reopened = open(&*f.reopen(), &name)?;
            let want: Vec<SessionEvent> = before.iter().chain(&theirs).cloned().collect();
            same_log("log after fencing", &reopened.events(), &want)?;
            ensure!(
                !reopened
                    .events()
                    .iter()
                    .any(|e| e.data == stale[0].data && e.time == stale[0].time),
                "the fenced writer's event is in the log"
            );
            Ok(Outcome::Passed)
        }
    }
}

/// Whether a flush failed with an error a later flush may overcome (`Io` or `Failed`).
fn retryable(flushed: &Result<(), PersistenceError>) -> bool {
    matches!(
        flushed,
        Err(PersistenceError::Io { .. } | PersistenceError::Failed(_))
    )
}
