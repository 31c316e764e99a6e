//! A PostgreSQL outage longer than the lease: the host whose row still names it at its epoch
//! takes the lease back and writes what it buffered; it is fenced only when another host took
//! the session. Each test runs its own cluster (`.ci/postgres`) so it can stop the server.

use std::path::PathBuf;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_core::{PersistenceError, Session, SessionHeader, SessionId, SessionStore};

/// Renewals every 100 ms; the outage lasts several TTLs.
const TTL: Duration = Duration::from_millis(300);

/// A cluster of the test's own, removed on drop.
struct Cluster {
    dir: String,
}

impl Cluster {
    fn script() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.ci/postgres")
    }

    async fn run(args: &[&str]) -> String {
        let out = tokio::process::Command::new(Self::script())
            .args(args)
            .output()
            .await
            .unwrap_or_else(|e| panic!(".ci/postgres {args:?}: {e}"));
        assert!(
            out.status.success(),
            ".ci/postgres {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    async fn start() -> Self {
        Self {
            dir: Self::run(&["start"]).await,
        }
    }

    fn url(&self) -> String {
        std::fs::read_to_string(format!("{}/url", self.dir))
            .unwrap_or_else(|e| panic!("the cluster's url: {e}"))
            .trim()
            .to_owned()
    }

    async fn halt(&self) {
        Self::run(&["halt", &self.dir]).await;
    }

    async fn resume(&self) {
        Self::run(&["resume", &self.dir]).await;
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = std::process::Command::new(Self::script())
            .args(["stop", &self.dir])
            .status();
    }
}

/// The server's `lease_expires` of session `s`, as seconds since the epoch.
async fn lease_expires(sql: &tokio_postgres::Client, schema: &str) -> f64 {
    sql.query_one(
        &format!(
            "SELECT extract(epoch FROM lease_expires)::float8 FROM \"{schema}\".sessions \
             WHERE id = 's'"
        ),
        &[],
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"))
    .get(0)
}

/// Returns when the wall clock is a TTL past `expires` (the lease read before the outage), so
/// an outage lasting until then outlasts the lease; the renewals keep failing meanwhile.
async fn outlast(expires: f64) {
    // The outage is the scenario: it lasts until the wall clock (the server's, on this
    // machine) is a whole TTL past the lease's end.
    let until = expires + TTL.as_secs_f64();
    loop {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        if now > until {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn payloads(session: &dyn Session) -> Vec<String> {
    session
        .events()
        .iter()
        .map(|e| e.data.to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_whose_lease_ran_out_in_an_outage_takes_it_back_and_writes_its_batch() {
    if super::server_url().is_none() {
        return;
    }
    let cluster = Cluster::start().await;
    let url = cluster.url();
    let schema = super::fresh_schema("outage");
    let a = super::store(&url, &schema, "host-a", TTL);
    let session = a.create_session(SessionHeader::new("s")).await.unwrap();
    session.append("test/n", json!({"n": 1})).unwrap();
    session.flush().await.unwrap();
    let expires = lease_expires(&super::client(&url).await, &schema).await;

    session.append("test/n", json!({"n": 2})).unwrap();
    cluster.halt().await;
    let unreachable = session.flush().await.unwrap_err();
    assert!(
        matches!(unreachable, PersistenceError::Io { .. }),
        "{unreachable}"
    );
    session.append("test/n", json!({"n": 3})).unwrap();
    outlast(expires).await;
    assert!(session.lease().is_lapsed());
    cluster.resume().await;
    let sql = super::client(&url).await;
    // The server's clock is past the lease read before the outage.
    let passed: bool = sql
        .query_one("SELECT extract(epoch FROM now()) > $1::float8", &[&expires])
        .await
        .unwrap()
        .get(0);
    assert!(passed);

    // The row still names host-a at epoch 1: the flush writes the buffered batch.
    session.flush().await.unwrap();
    assert!(!session.lease().is_lost());
    assert_eq!(session.durable_len(), 3);
    let row = sql
        .query_one(
            &format!("SELECT owner, epoch, last_seq FROM \"{schema}\".sessions WHERE id = 's'"),
            &[],
        )
        .await
        .unwrap();
    assert_eq!(
        (
            row.get::<_, String>(0),
            row.get::<_, i64>(1),
            row.get::<_, i64>(2)
        ),
        ("host-a".to_owned(), 1, 3)
    );
    // The renewals take the lease back: another host is refused.
    let b = super::store(&url, &schema, "host-b", TTL);
    let taken_back = tokio::time::timeout(Duration::from_secs(20), session.lease().current()).await;
    assert!(taken_back.is_ok(), "the lease was not taken back");
    let refused = b.open_session(&SessionId::from("s")).await.unwrap_err();
    assert_eq!(
        refused.to_string(),
        "session s is owned by host host-a; retry after its lease expires"
    );
    drop(session);
    let reopened = b.open(&SessionId::from("s")).unwrap();
    assert_eq!(
        payloads(&*reopened),
        [r#"{"n":1}"#, r#"{"n":2}"#, r#"{"n":3}"#]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_whose_session_was_taken_in_an_outage_is_fenced_and_writes_nothing() {
    if super::server_url().is_none() {
        return;
    }
    let cluster = Cluster::start().await;
    let url = cluster.url();
    let schema = super::fresh_schema("outtaken");
    let a = super::store(&url, &schema, "host-a", TTL);
    let session = a.create_session(SessionHeader::new("s")).await.unwrap();
    session.append("test/n", json!({"n": 1})).unwrap();
    session.flush().await.unwrap();
    let sql = super::client(&url).await;
    let expires = lease_expires(&sql, &schema).await;
    session.append("test/n", json!({"n": 2})).unwrap();
    cluster.halt().await;
    outlast(expires).await;
    cluster.resume().await;
    // Another host took the expired lease (the epoch moved) before host-a reached the server.
    let sql = super::client(&url).await;
    sql.execute(
        &format!("UPDATE \"{schema}\".sessions SET owner = 'host-b', epoch = epoch + 1"),
        &[],
    )
    .await
    .unwrap();
    assert_eq!(
        session.flush().await.unwrap_err(),
        PersistenceError::Fenced(SessionId::from("s"))
    );
    tokio::time::timeout(Duration::from_secs(20), session.lease().lost())
        .await
        .unwrap();
    let count: i64 = sql
        .query_one(&format!("SELECT count(*) FROM \"{schema}\".events"), &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 1);
}
