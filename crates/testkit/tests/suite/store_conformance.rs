//! The store conformance suite on the two core stores, and on wrappers that break a promise.

use std::sync::Arc;

use async_trait::async_trait;
use pretty_assertions::assert_eq;
use serde_json::Value;
use turnkit_core::{
    AppendError, JsonlStore, MemoryStore, PersistenceError, RawEvent, Session, SessionEvent,
    SessionHeader, SessionId, SessionStore, StoreError, SystemClock,
};
use turnkit_testkit::store_conformance::{self, CHECKS, Outcome, StoreFixture};

struct Memory {
    store: Arc<MemoryStore>,
    /// A broken fixture: claims the shared store is a second host.
    pretend_second_host: bool,
}

#[async_trait]
impl StoreFixture for Memory {
    fn name(&self) -> String {
        "memory".to_owned()
    }
    fn store(&self) -> Arc<dyn SessionStore> {
        self.store.clone()
    }
    fn reopen(&self) -> Arc<dyn SessionStore> {
        self.store.clone()
    }
    fn second_host(&self) -> Option<Arc<dyn SessionStore>> {
        self.pretend_second_host
            .then(|| self.store.clone() as Arc<dyn SessionStore>)
    }
    async fn set_flush_fail(&self, _: &SessionId, _: bool) -> bool {
        false
    }
    fn drops_unflushed(&self) -> bool {
        false
    }
}

struct Jsonl {
    dir: tempfile::TempDir,
    /// A broken fixture: sessions whose flush does nothing.
    no_barrier: bool,
}

impl Jsonl {
    fn open_store(&self) -> Arc<dyn SessionStore> {
        let store = JsonlStore::new(self.dir.path(), Arc::new(SystemClock)).unwrap();
        if self.no_barrier {
            Arc::new(NoBarrier(store))
        } else {
            Arc::new(store)
        }
    }
}

#[async_trait]
impl StoreFixture for Jsonl {
    fn name(&self) -> String {
        "jsonl".to_owned()
    }
    fn store(&self) -> Arc<dyn SessionStore> {
        self.open_store()
    }
    fn reopen(&self) -> Arc<dyn SessionStore> {
        self.open_store()
    }
    fn second_host(&self) -> Option<Arc<dyn SessionStore>> {
        Some(self.open_store())
    }
    async fn set_flush_fail(&self, _: &SessionId, _: bool) -> bool {
        false
    }
    fn drops_unflushed(&self) -> bool {
        true
    }
}

/// A store whose sessions acknowledge a flush without writing anything.
struct NoBarrier(JsonlStore);

struct NoBarrierSession(Arc<dyn Session>);

impl SessionStore for NoBarrier {
    fn create(&self, header: SessionHeader) -> Result<Arc<dyn Session>, StoreError> {
        Ok(Arc::new(NoBarrierSession(self.0.create(header)?)))
    }
    fn open(&self, id: &SessionId) -> Result<Arc<dyn Session>, StoreError> {
        Ok(Arc::new(NoBarrierSession(self.0.open(id)?)))
    }
    fn list(&self) -> Vec<SessionId> {
        self.0.list()
    }
    fn create_with_events(
        &self,
        header: SessionHeader,
        events: Vec<RawEvent>,
    ) -> Result<Arc<dyn Session>, StoreError> {
        Ok(Arc::new(NoBarrierSession(
            self.0.create_with_events(header, events)?,
        )))
    }
}

#[async_trait]
impl Session for NoBarrierSession {
    fn id(&self) -> &SessionId {
        self.0.id()
    }
    fn header(&self) -> &SessionHeader {
        self.0.header()
    }
    fn len(&self) -> u64 {
        self.0.len()
    }
    fn raw_events_after(&self, after: u64) -> Vec<RawEvent> {
        self.0.raw_events_after(after)
    }
    fn append(&self, r#type: &str, data: Value) -> Result<SessionEvent, AppendError> {
        self.0.append(r#type, data)
    }
    async fn flush(&self) -> Result<(), PersistenceError> {
        Ok(())
    }
}

fn memory(pretend_second_host: bool) -> Memory {
    Memory {
        store: Arc::new(MemoryStore::new(Arc::new(SystemClock))),
        pretend_second_host,
    }
}

fn jsonl(no_barrier: bool) -> Jsonl {
    Jsonl {
        dir: tempfile::tempdir().unwrap(),
        no_barrier,
    }
}

#[tokio::test]
async fn memory_store_passes_the_conformance_suite() {
    let report = store_conformance::run(&memory(false)).await;
    report.assert_passed();
    let names: Vec<&str> = report.results.iter().map(|r| r.name).collect();
    assert_eq!(names, CHECKS);
    assert_eq!(
        report.outcome("one_writer_per_session"),
        Some(&Outcome::NotApplicable(
            "the store lives in one process and shares one live log".to_owned()
        ))
    );
}

#[tokio::test]
async fn jsonl_store_passes_the_conformance_suite() {
    let report = store_conformance::run(&jsonl(false)).await;
    report.assert_passed();
    assert_eq!(
        report.outcome("one_writer_per_session"),
        Some(&Outcome::Passed)
    );
    assert_eq!(
        report.outcome("flush_is_the_barrier"),
        Some(&Outcome::Passed)
    );
}

#[tokio::test]
async fn a_store_that_skips_the_ownership_check_fails_one_writer_per_session() {
    let report = store_conformance::run(&memory(true)).await;
    assert_eq!(report.failed(), ["one_writer_per_session"]);
    assert_eq!(
        report.outcome("one_writer_per_session"),
        Some(&Outcome::Failed(
            "a second host opened the session while the first writer lived, and the first \
             writer's flush still succeeded"
                .to_owned()
        ))
    );
}

#[tokio::test]
async fn a_store_whose_flush_is_not_a_barrier_fails_the_durability_checks() {
    let report = store_conformance::run(&jsonl(true)).await;
    assert_eq!(
        report.failed(),
        [
            "events_after_is_the_suffix",
            "flush_is_the_barrier",
            "fork_copies_events_and_sets_seed_length",
            "reopen_after_crash_continues_the_log",
            "one_writer_per_session",
        ]
    );
    assert_eq!(
        report.outcome("flush_is_the_barrier"),
        Some(&Outcome::Failed(
            "reopened log (unflushed events dropped): 0 events, expected 4".to_owned()
        ))
    );
}
