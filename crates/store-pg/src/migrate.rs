//! The schema as an ordered list of migrations, each applied once and recorded in
//! `<schema>.harness_migrations` (docs/event-log.md, "The PostgreSQL store").

use tokio_postgres::Client;

/// One schema change: its version (applied in increasing order), a name for the record, and
/// the SQL, where `{schema}` stands for the quoted schema name.
pub(crate) struct Migration {
    pub(crate) version: i32,
    pub(crate) name: &'static str,
    pub(crate) sql: &'static str,
}

/// Every migration, in order. Never edit one that has shipped: append a new one.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "sessions and events",
        sql: "
CREATE TABLE {schema}.sessions (
    id            text PRIMARY KEY,
    seed_length   bigint,
    time_zone     text,
    last_seq      bigint NOT NULL DEFAULT 0,
    owner         text,
    epoch         bigint NOT NULL DEFAULT 0,
    lease_expires timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE {schema}.events (
    session_id text NOT NULL REFERENCES {schema}.sessions (id),
    seq        bigint NOT NULL,
    type       text NOT NULL,
    time       timestamptz NOT NULL,
    data       json NOT NULL,
    PRIMARY KEY (session_id, seq)
);",
    },
    Migration {
        version: 2,
        name: "due reminders",
        sql: "
CREATE TABLE {schema}.reminders (
    session_id  text NOT NULL REFERENCES {schema}.sessions (id),
    schedule_id text NOT NULL,
    due         timestamptz NOT NULL,
    every_seconds bigint,
    PRIMARY KEY (session_id, schedule_id)
);
CREATE INDEX reminders_due ON {schema}.reminders (due);",
    },
    // The foreign key from `events` to `sessions` roughly doubled the cost of each inserted
    // row (a lookup of the session row per event). Integrity holds without it: the flush
    // inserts events only for the session row its checked `UPDATE` returned, in the same
    // statement, and no code deletes sessions.
    Migration {
        version: 3,
        name: "events without foreign key",
        sql: "
ALTER TABLE {schema}.events DROP CONSTRAINT IF EXISTS events_session_id_fkey;",
    },
];

/// Applies the migrations `schema` lacks, in one transaction under an advisory lock, so hosts
/// starting together migrate once. Returns the versions applied now.
pub(crate) async fn migrate(
    client: &mut Client,
    schema: &str,
) -> Result<Vec<i32>, tokio_postgres::Error> {
    let quoted = format!("\"{schema}\"");
    let tx = client.transaction().await?;
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtext($1))",
        &[&format!("harness-migrate:{schema}")],
    )
    .await?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {quoted};
         CREATE TABLE IF NOT EXISTS {quoted}.harness_migrations (
             version    integer PRIMARY KEY,
             name       text NOT NULL,
             applied_at timestamptz NOT NULL DEFAULT now()
         );"
    ))
    .await?;
    let applied: Vec<i32> = tx
        .query(
            &format!("SELECT version FROM {quoted}.harness_migrations"),
            &[],
        )
        .await?
        .iter()
        .map(|row| row.get(0))
        .collect();
    let mut now = Vec::new();
    for migration in MIGRATIONS {
        if applied.contains(&migration.version) {
            continue;
        }
        tx.batch_execute(&migration.sql.replace("{schema}", &quoted))
            .await?;
        tx.execute(
            &format!("INSERT INTO {quoted}.harness_migrations (version, name) VALUES ($1, $2)"),
            &[&migration.version, &migration.name],
        )
        .await?;
        now.push(migration.version);
    }
    tx.commit().await?;
    Ok(now)
}
