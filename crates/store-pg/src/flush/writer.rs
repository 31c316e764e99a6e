//! [`Writer`]: the entry of every flush, and the writers that take waiting flushes from the
//! queue in groups.

use std::sync::Arc;

use tokio::sync::oneshot;
use tokio_util::task::TaskTracker;
use turnkit_core::{IndexChange, RawEvent};

use super::queue::{Combiner, FlushOutcome, Request, Running};
use crate::db::{Db, describe};

/// Whether the server refused a statement (an `ERROR`) and the connection lives on.
fn refused_statement(error: &tokio_postgres::Error) -> bool {
    error
        .as_db_error()
        .is_some_and(|db| db.parsed_severity() == Some(tokio_postgres::error::Severity::Error))
}

/// The store's flushes: its connections and the queue of flushes waiting for a writer.
#[derive(Clone)]
pub(crate) struct Writer {
    db: Db,
    combiner: Arc<Combiner>,
    /// The store's tracker: each group writer runs in it until the queue is empty.
    tasks: TaskTracker,
}

impl Writer {
    /// A writer of `db` running at most `writers` group transactions at once (at least one),
    /// its group writers tracked by `tasks` (the store's).
    pub(crate) fn new(db: Db, writers: usize, tasks: TaskTracker) -> Self {
        Self {
            db,
            combiner: Arc::new(Combiner::new(writers)),
            tasks,
        }
    }

    /// How many flushes are waiting for a writer.
    pub(crate) fn waiting(&self) -> usize {
        self.combiner.waiting()
    }

    /// A receiver of [`Writer::waiting`], updated on every change.
    pub(crate) fn waiting_changes(&self) -> tokio::sync::watch::Receiver<usize> {
        self.combiner.waiting_changes()
    }

    /// Writes a session's pending batch: checks owner, epoch and the durable last seq under
    /// the session row's lock, inserts the batch, moves `last_seq`, and writes the `index`
    /// changes the batch implies (from the store's [`turnkit_core::BatchIndex`]).
    ///
    /// A batch without index changes joins the flushes of other sessions waiting at the same
    /// time in one transaction; one with them is its own transaction, outside the writers'
    /// limit.
    pub(crate) async fn flush(
        &self,
        id: &str,
        host: &str,
        epoch: i64,
        durable: u64,
        batch: Vec<RawEvent>,
        index: Vec<IndexChange>,
    ) -> Result<FlushOutcome, String> {
        if !index.is_empty() {
            let mut client = self.client().await?;
            return self
                .db
                .flush_on(&mut client, id, host, epoch, durable, &batch, &index)
                .await
                .map_err(|e| describe(&e));
        }
        let (reply, answer) = oneshot::channel();
        let start_writer = self.combiner.enqueue(Request {
            id: id.to_owned(),
            host: host.to_owned(),
            epoch,
            durable,
            batch,
            reply,
        });
        if start_writer {
            let db = self.clone();
            self.tasks.spawn(async move { db.write_waiting().await });
        }
        answer
            .await
            .unwrap_or_else(|_| Err("the flush writer stopped before it answered".to_owned()))
    }

    async fn client(&self) -> Result<deadpool_postgres::Client, String> {
        self.db.pool.get().await.map_err(|e| match e {
            deadpool_postgres::PoolError::Backend(e) => describe(&e),
            other => other.to_string(),
        })
    }

    /// A writer: writes groups of waiting flushes until none is left.
    async fn write_waiting(self) {
        let mut running = Running::new(&self.combiner);
        while let Some(group) = running.next_group() {
            let events = group.iter().map(|r| r.batch.len()).sum::<usize>();
            self.write_group(group).await;
            running.written(events);
        }
    }

    /// Writes one group and answers each of its flushes.
    async fn write_group(&self, group: Vec<Request>) {
        let mut client = match self.client().await {
            Ok(client) => client,
            Err(message) => {
                for request in group {
                    let _ = request.reply.send(Err(message.clone()));
                }
                return;
            }
        };
        if group.len() > 1 {
            match self.db.flush_group(&mut client, &group).await {
                Ok(written) => {
                    for request in group {
                        let outcome = if written.contains(request.id.as_str()) {
                            Ok(FlushOutcome::Written)
                        } else {
                            self.db
                                .refused(&client, &request.id, &request.host, request.epoch)
                                .await
                                .map_err(|e| describe(&e))
                        };
                        let _ = request.reply.send(outcome);
                    }
                    return;
                }
                // The server refused the statement, which wrote nothing: each flush is
                // written alone, so one session's refusal is not another's. (An error that
                // ends the connection, FATAL or PANIC, is every flush's answer: a retry there
                // would only meet the connection closed.)
                Err(error) if refused_statement(&error) => {}
                Err(error) => {
                    let message = describe(&error);
                    for request in group {
                        let _ = request.reply.send(Err(message.clone()));
                    }
                    return;
                }
            }
        }
        for request in group {
            let outcome = self
                .db
                .flush_on(
                    &mut client,
                    &request.id,
                    &request.host,
                    request.epoch,
                    request.durable,
                    &request.batch,
                    &[],
                )
                .await
                .map_err(|e| describe(&e));
            let _ = request.reply.send(outcome);
        }
    }
}
