//! The store conformance suite on the two core stores, and on wrappers that each break one
//! promise: every check is shown failing, and each broken store fails exactly the checks
//! asserted here (the table in docs/event-log.md, "Store conformance", names them).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use pretty_assertions::assert_eq;
use serde_json::Value;
use turnkit_core::{
    AppendError, JsonlStore, MemoryStore, PersistenceError, RawEvent, Session, SessionEvent,
    SessionHeader, SessionId, SessionStore, StoreError, SystemClock,
};
use turnkit_testkit::store_conformance::{self, CHECKS, Outcome, StoreFixture};

/// What a broken store does wrong. Every store here is wrapped, `Fault::None` included: the
/// wrapper is what injects the failed flushes of `failed_flush_changes_nothing_durable`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// Nothing: the store as it is, with flush failures injected on demand.
    None,
    /// `len()` is one less than the last seq.
    LenLagsByOne,
    /// `raw_events_after(k)` (and so `events_after(k)`) includes the event with seq `k`.
    SuffixIncludesK,
    /// `flush` acknowledges without writing anything.
    NoBarrier,
    /// A flush with an injected failure writes its events anyway, then reports the failure.
    FailedFlushWritesAnyway,
    /// A flush with an injected failure reports the session fenced (a host would stop a
    /// session that is still its own) instead of a retryable error.
    FailedFlushSaysFenced,
    /// A reopened session's header has lost its time zone.
    OpenLosesTimeZone,
    /// A fork's header has no seed length.
    ForkLosesSeedLength,
    /// `list` gives the sessions in reverse order.
    ListReversed,
    /// A reopened session's flushes acknowledge without writing.
    ReopenedNeverFlushes,
    /// The fixture claims the one shared memory store is a second host: nothing refuses the
    /// second writer and nothing fences the first.
    NoSecondWriterRefused,
}

/// The sessions whose flushes fail, shared by every store and session of one fixture.
type Failing = Arc<Mutex<BTreeSet<SessionId>>>;

struct Broken {
    inner: Arc<dyn SessionStore>,
    fault: Fault,
    failing: Failing,
}

impl Broken {
    fn wrap(&self, inner: Arc<dyn Session>, reopened: bool) -> Arc<dyn Session> {
        let mut header = inner.header().clone();
        if reopened && self.fault == Fault::OpenLosesTimeZone {
            header.time_zone = None;
        }
        Arc::new(BrokenSession {
            inner,
            header,
            fault: self.fault,
            never_flushes: self.fault == Fault::NoBarrier
                || (reopened && self.fault == Fault::ReopenedNeverFlushes),
            failing: self.failing.clone(),
        })
    }
}

impl SessionStore for Broken {
    fn create(&self, header: SessionHeader) -> Result<Arc<dyn Session>, StoreError> {
        Ok(self.wrap(self.inner.create(header)?, false))
    }
    fn open(&self, id: &SessionId) -> Result<Arc<dyn Session>, StoreError> {
        Ok(self.wrap(self.inner.open(id)?, true))
    }
    fn list(&self) -> Vec<SessionId> {
        let mut ids = self.inner.list();
        if self.fault == Fault::ListReversed {
            ids.reverse();
        }
        ids
    }
    fn create_with_events(
        &self,
        mut header: SessionHeader,
        events: Vec<RawEvent>,
    ) -> Result<Arc<dyn Session>, StoreError> {
        if self.fault == Fault::ForkLosesSeedLength {
            header.seed_length = None;
        }
        Ok(self.wrap(self.inner.create_with_events(header, events)?, false))
    }
}

struct BrokenSession {
    inner: Arc<dyn Session>,
    header: SessionHeader,
    fault: Fault,
    never_flushes: bool,
    failing: Failing,
}

#[async_trait]
impl Session for BrokenSession {
    fn id(&self) -> &SessionId {
        self.inner.id()
    }
    fn header(&self) -> &SessionHeader {
        &self.header
    }
    fn len(&self) -> u64 {
        match self.fault {
            Fault::LenLagsByOne => self.inner.len().saturating_sub(1),
            _ => self.inner.len(),
        }
    }
    fn raw_events_after(&self, after: u64) -> Vec<RawEvent> {
        match self.fault {
            Fault::SuffixIncludesK => self.inner.raw_events_after(after.saturating_sub(1)),
            _ => self.inner.raw_events_after(after),
        }
    }
    fn append(&self, r#type: &str, data: Value) -> Result<SessionEvent, AppendError> {
        self.inner.append(r#type, data)
    }
    async fn flush(&self) -> Result<(), PersistenceError> {
        let fails = turnkit_core::lock(&self.failing).contains(self.inner.id());
        if fails {
            if self.fault == Fault::FailedFlushWritesAnyway {
                self.inner.flush().await?;
            }
            if self.fault == Fault::FailedFlushSaysFenced {
                return Err(PersistenceError::Fenced(self.inner.id().clone()));
            }
            return Err(PersistenceError::Failed(
                "injected flush failure".to_owned(),
            ));
        }
        if self.never_flushes {
            return Ok(());
        }
        self.inner.flush().await
    }
}

enum Storage {
    Memory(Arc<MemoryStore>),
    Jsonl(tempfile::TempDir),
}

struct Fixture {
    storage: Storage,
    fault: Fault,
    failing: Failing,
}

impl Fixture {
    fn memory(fault: Fault) -> Self {
        Self {
            storage: Storage::Memory(Arc::new(MemoryStore::new(Arc::new(SystemClock)))),
            fault,
            failing: Failing::default(),
        }
    }

    fn jsonl(fault: Fault) -> Self {
        Self {
            storage: Storage::Jsonl(tempfile::tempdir().unwrap()),
            fault,
            failing: Failing::default(),
        }
    }

    /// The store as a (new) process sees it, wrapped.
    fn open_store(&self) -> Arc<dyn SessionStore> {
        let inner: Arc<dyn SessionStore> = match &self.storage {
            Storage::Memory(store) => store.clone(),
            Storage::Jsonl(dir) => {
                Arc::new(JsonlStore::new(dir.path(), Arc::new(SystemClock)).unwrap())
            }
        };
        Arc::new(Broken {
            inner,
            fault: self.fault,
            failing: self.failing.clone(),
        })
    }
}

#[async_trait]
impl StoreFixture for Fixture {
    fn name(&self) -> String {
        match self.storage {
            Storage::Memory(_) => "memory".to_owned(),
            Storage::Jsonl(_) => "jsonl".to_owned(),
        }
    }
    fn store(&self) -> Arc<dyn SessionStore> {
        self.open_store()
    }
    fn reopen(&self) -> Arc<dyn SessionStore> {
        self.open_store()
    }
    fn second_host(&self) -> Option<Arc<dyn SessionStore>> {
        match self.storage {
            Storage::Memory(_) => {
                (self.fault == Fault::NoSecondWriterRefused).then(|| self.open_store())
            }
            Storage::Jsonl(_) => Some(self.open_store()),
        }
    }
    async fn set_flush_fail(&self, session: &SessionId, fail: bool) -> bool {
        let mut failing = turnkit_core::lock(&self.failing);
        if fail {
            failing.insert(session.clone());
        } else {
            failing.remove(session);
        }
        true
    }
    fn drops_unflushed(&self) -> bool {
        matches!(self.storage, Storage::Jsonl(_))
    }
}

#[tokio::test]
async fn memory_store_passes_the_conformance_suite() {
    let report = store_conformance::run(&Fixture::memory(Fault::None)).await;
    report.assert_passed();
    let names: Vec<&str> = report.results.iter().map(|r| r.name).collect();
    assert_eq!(names, CHECKS);
    assert_eq!(
        report.outcome("failed_flush_changes_nothing_durable"),
        Some(&Outcome::Passed)
    );
    assert_eq!(
        report.outcome("one_writer_per_session"),
        Some(&Outcome::NotApplicable(
            "the store lives in one process and shares one live log".to_owned()
        ))
    );
}

#[tokio::test]
async fn jsonl_store_passes_the_conformance_suite() {
    let report = store_conformance::run(&Fixture::jsonl(Fault::None)).await;
    report.assert_passed();
    let passed: Vec<&str> = report
        .results
        .iter()
        .filter(|r| r.outcome == Outcome::Passed)
        .map(|r| r.name)
        .collect();
    assert_eq!(passed, CHECKS);
}

/// Runs the suite on `fixture` and returns each failed check with its message.
async fn failures(fixture: Fixture) -> Vec<(&'static str, String)> {
    let report = store_conformance::run(&fixture).await;
    report
        .results
        .into_iter()
        .filter_map(|r| match r.outcome {
            Outcome::Failed(why) => Some((r.name, why)),
            _ => None,
        })
        .collect()
}

fn owned(expected: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    expected
        .iter()
        .map(|(n, m)| (*n, (*m).to_owned()))
        .collect()
}

#[tokio::test]
async fn a_len_one_short_fails_the_checks_that_read_len() {
    assert_eq!(
        failures(Fixture::memory(Fault::LenLagsByOne)).await,
        owned(&[
            ("append_orders_by_seq", "len is 4 after 5 appends"),
            (
                "failed_flush_changes_nothing_durable",
                "the live log has 3 events after a failed flush"
            ),
            (
                "fork_copies_events_and_sets_seed_length",
                "the parent grew to 2 events"
            ),
            (
                "reopen_after_crash_continues_the_log",
                "after reopening at 4 the next seqs were 6 and 7"
            ),
        ])
    );
}

#[tokio::test]
async fn a_suffix_that_includes_its_start_fails_events_after_is_the_suffix() {
    let failed = failures(Fixture::memory(Fault::SuffixIncludesK)).await;
    assert_eq!(
        failed.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        ["events_after_is_the_suffix"]
    );
    assert_eq!(
        failed[0].1, "events_after(1): 6 events, expected 5",
        "{failed:?}"
    );
}

#[tokio::test]
async fn a_store_whose_flush_is_not_a_barrier_fails_the_durability_checks() {
    let failed = failures(Fixture::jsonl(Fault::NoBarrier)).await;
    assert_eq!(
        failed.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        [
            "events_after_is_the_suffix",
            "flush_is_the_barrier",
            "failed_flush_changes_nothing_durable",
            "fork_copies_events_and_sets_seed_length",
            "reopen_after_crash_continues_the_log",
            "one_writer_per_session",
        ]
    );
    assert_eq!(
        failed[1].1,
        "reopened log (unflushed events dropped): 0 events, expected 4"
    );
}

#[tokio::test]
async fn a_failed_flush_that_says_fenced_fails_failed_flush_changes_nothing_durable() {
    assert_eq!(
        failures(Fixture::memory(Fault::FailedFlushSaysFenced)).await,
        owned(&[(
            "failed_flush_changes_nothing_durable",
            "a flush with an injected failure returned Err(Fenced(SessionId(\"conf-failed-flush\"))), \
             not a retryable error"
        )])
    );
}

#[tokio::test]
async fn a_failed_flush_that_writes_anyway_fails_failed_flush_changes_nothing_durable() {
    assert_eq!(
        failures(Fixture::jsonl(Fault::FailedFlushWritesAnyway)).await,
        owned(&[(
            "failed_flush_changes_nothing_durable",
            "log after a failed flush and a drop: 5 events, expected 4"
        )])
    );
}

#[tokio::test]
async fn a_reopened_header_without_its_time_zone_fails_the_header_checks() {
    let failed = failures(Fixture::jsonl(Fault::OpenLosesTimeZone)).await;
    assert_eq!(
        failed.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        [
            "header_and_time_zone_round_trip",
            "fork_copies_events_and_sets_seed_length",
        ],
        "{failed:?}"
    );
}

#[tokio::test]
async fn a_fork_without_its_seed_length_fails_fork_copies_events() {
    let failed = failures(Fixture::jsonl(Fault::ForkLosesSeedLength)).await;
    assert_eq!(
        failed.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        ["fork_copies_events_and_sets_seed_length"],
        "{failed:?}"
    );
}

#[tokio::test]
async fn an_unsorted_list_fails_create_open_and_list() {
    assert_eq!(
        failures(Fixture::jsonl(Fault::ListReversed)).await,
        owned(&[(
            "create_open_and_list",
            "list gave [SessionId(\"conf-list-b\"), SessionId(\"conf-list-a\")]"
        )])
    );
}

#[tokio::test]
async fn reopened_sessions_that_never_write_fail_reopen_after_crash() {
    let failed = failures(Fixture::jsonl(Fault::ReopenedNeverFlushes)).await;
    assert_eq!(
        failed.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        ["reopen_after_crash_continues_the_log"],
        "{failed:?}"
    );
}

#[tokio::test]
async fn a_store_that_skips_the_ownership_check_fails_one_writer_per_session() {
    assert_eq!(
        failures(Fixture::memory(Fault::NoSecondWriterRefused)).await,
        owned(&[(
            "one_writer_per_session",
            "a second host opened the session while the first writer lived, and the first \
             writer's flush still succeeded"
        )])
    );
}

/// Every check fails for at least one broken store above.
#[test]
fn every_check_has_a_broken_store() {
    let page = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/event-log.md"
    ))
    .unwrap();
    let table = page
        .split_once("## Store conformance")
        .map(|(_, rest)| rest.split_once("\n## ").map_or(rest, |(t, _)| t))
        .unwrap_or_else(|| panic!("docs/event-log.md has no \"Store conformance\" section"));
    let named: Vec<&str> = table
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`').map(|(name, _)| name))
        .collect();
    assert_eq!(named, CHECKS);
}
