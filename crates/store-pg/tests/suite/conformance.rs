//! The testkit's store conformance suite on PostgreSQL.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use pretty_assertions::assert_eq;
use turnkit_core::{SessionId, SessionStore};
use turnkit_store_pg::PgStore;
use turnkit_testkit::store_conformance::{self, Outcome, StoreFixture};

struct Pg {
    url: String,
    schema: String,
    hosts: AtomicU64,
    first: PgStore,
}

impl Pg {
    fn new(url: String) -> Self {
        let schema = super::fresh_schema("conf");
        let first = super::store(&url, &schema, "host-a", Duration::from_secs(30));
        Self {
            url,
            schema,
            hosts: AtomicU64::new(0),
            first,
        }
    }

    fn another_host(&self) -> PgStore {
        let n = self.hosts.fetch_add(1, Ordering::SeqCst);
        super::store(
            &self.url,
            &self.schema,
            &format!("host-{n}"),
            Duration::from_secs(30),
        )
    }
}

#[async_trait]
impl StoreFixture for Pg {
    fn name(&self) -> String {
        "postgres".to_owned()
    }
    fn store(&self) -> Arc<dyn SessionStore> {
        Arc::new(self.first.clone())
    }
    fn reopen(&self) -> Arc<dyn SessionStore> {
        Arc::new(self.another_host())
    }
    fn second_host(&self) -> Option<Arc<dyn SessionStore>> {
        Some(Arc::new(self.another_host()))
    }
    /// A trigger that raises on every insert of the session's events: the flush transaction
    /// fails and rolls back.
    async fn set_flush_fail(&self, session: &SessionId, fail: bool) -> bool {
        let client = super::client(&self.url).await;
        let s = &self.schema;
        let sql = if fail {
            format!(
                "CREATE OR REPLACE FUNCTION \"{s}\".injected_failure() RETURNS trigger LANGUAGE plpgsql \
                 AS $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$; \
                 CREATE TRIGGER injected_failure BEFORE INSERT ON \"{s}\".events FOR EACH ROW \
                 WHEN (NEW.session_id = '{}') EXECUTE FUNCTION \"{s}\".injected_failure();",
                session.as_str().replace('\'', "''")
            )
        } else {
            format!("DROP TRIGGER IF EXISTS injected_failure ON \"{s}\".events;")
        };
        client
            .batch_execute(&sql)
            .await
            .unwrap_or_else(|e| panic!("fault injection SQL failed: {e}"));
        true
    }
    fn drops_unflushed(&self) -> bool {
        true
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_store_passes_the_conformance_suite() {
    let Some(url) = super::server_url() else {
        return;
    };
    let report = store_conformance::run(&Pg::new(url)).await;
    report.assert_passed();
    // Every check applies to this store.
    let outcomes: Vec<(&str, Outcome)> = report
        .results
        .iter()
        .map(|r| (r.name, r.outcome.clone()))
        .collect();
    let passed: Vec<(&str, Outcome)> = store_conformance::CHECKS
        .iter()
        .map(|name| (*name, Outcome::Passed))
        .collect();
    assert_eq!(outcomes, passed);
}
