mod conformance;
mod follow;
mod group;
mod outage;
mod ownership;
mod processes;
mod replay;
mod scanner;
mod scanner_processes;
mod tasks;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use turnkit_core::SystemClock;
use turnkit_store_pg::{PgOptions, PgStore};

/// The test server's URL, or `None` (after a skip line every run shows) when it is not set
/// outside CI. With `CI=true` a missing server fails the test.
pub(crate) fn server_url() -> Option<String> {
    match std::env::var("HARNESS_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "HARNESS_TEST_POSTGRES_URL is not set and CI=true: the PostgreSQL tests need a \
                 server (.ci/postgres start)"
            );
            turnkit_testkit::skip::skipped(
                "HARNESS_TEST_POSTGRES_URL is not set; start a server with .ci/postgres and \
                 export its URL to run the PostgreSQL store tests",
            );
            None
        }
    }
}

/// A schema name no other test uses.
pub(crate) fn fresh_schema(tag: &str) -> String {
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "t_{tag}_{}_{}_{nanos:x}",
        std::process::id(),
        SERIAL.fetch_add(1, Ordering::SeqCst)
    )
}

/// A store on `schema` as host `host`.
pub(crate) fn store(url: &str, schema: &str, host: &str, ttl: Duration) -> PgStore {
    PgStore::connect(
        url,
        Arc::new(SystemClock),
        PgOptions {
            schema: schema.to_owned(),
            host: host.to_owned(),
            lease_ttl: ttl,
            pool_size: 4,
            index: Some(Arc::new(turnkit_schedule::ReminderIndex)),
            ..PgOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("connect to the test server: {e}"))
}

/// A `Malformed` error's place, line and message (any other error fails the test).
pub(crate) fn malformed(error: turnkit_core::StoreError) -> (String, usize, String) {
    match error {
        turnkit_core::StoreError::Malformed {
            file,
            line,
            message,
        } => (file, line, message),
        other => panic!("not Malformed: {other}"),
    }
}

/// A plain client for the test's own SQL.
pub(crate) async fn client(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("connect to the test server: {e}"));
    tokio::spawn(connection);
    client
}
