//! [`PgOptions`]: how a store connects and who it is.

use std::sync::Arc;
use std::time::Duration;

use turnkit_core::BatchIndex;

/// How a [`PgStore`](crate::PgStore) connects and who it is.
#[derive(Debug, Clone)]
pub struct PgOptions {
    /// The PostgreSQL schema holding the tables (created with them); default `harness`.
    /// Letters, digits and `_` only.
    pub schema: String,
    /// This host's id, written as the owner of the sessions it leases; unique per process
    /// (default: `<hostname>-<pid>-<start time>`).
    pub host: String,
    /// How long a lease lives without renewal; default 30 s. A host that dies holds its
    /// sessions this long.
    pub lease_ttl: Duration,
    /// Pooled connections; default 16.
    pub pool_size: usize,
    /// How many flush transactions run at once (each on a pooled connection); default 2,
    /// and 0 counts as 1. Flushes of different sessions that wait meanwhile are written
    /// together, one transaction for many sessions, so a few writers carry any number of
    /// sessions; more writers use more of the server's cores for large batches. A flush
    /// with index changes is its own transaction, outside this limit. Keep it
    /// below `pool_size`: writers waiting for locked rows hold their connections, and lease
    /// renewals need one.
    pub flush_writers: usize,
    /// The rules of the due index (`reminders` table) that the [`ReminderScanner`]
    /// reads to find sessions with something due while no host has them open: for each
    /// flushed batch, the rows it puts or removes, written in the batch's transaction. The
    /// store reads no event itself. Pass the schedule family's (`turnkit_schedule::ReminderIndex`)
    /// wherever a store is opened whose sessions' reminders are to be found by a scanner;
    /// `None` (the default) keeps no index.
    ///
    /// [`ReminderScanner`]: crate::ReminderScanner
    pub index: Option<Arc<dyn BatchIndex>>,
    /// The password to authenticate with when the URL carries none (from `PGPASSWORD`, a
    /// password file or [`PassFile`](crate::PassFile), chosen by the caller); a password in
    /// the URL wins. Default `None`.
    pub password: Option<crate::PgPassword>,
}

impl Default for PgOptions {
    fn default() -> Self {
        Self {
            schema: "harness".to_owned(),
            host: default_host_id(),
            lease_ttl: Duration::from_secs(30),
            pool_size: 16,
            flush_writers: 2,
            index: None,
            password: None,
        }
    }
}

fn default_host_id() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "host".to_owned());
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{name}-{}-{started:x}", std::process::id())
}
