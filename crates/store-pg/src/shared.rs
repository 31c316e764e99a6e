//! The state every handle of one store shares: its connections and the runtime they run on.

use std::cell::Cell;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::{Handle, Runtime};
use tokio_util::task::TaskTracker;
use turnkit_core::{BackendError, BackendKind, Clock, StoreError};

use crate::db::Db;
use crate::flush::Writer;
use crate::options::PgOptions;

thread_local! {
    pub(crate) static ON_STORE_RUNTIME: Cell<bool> = const { Cell::new(false) };
}

/// Runs the store's database work on its own runtime, from async callers (awaiting) and sync
/// callers (blocking the calling thread, as a file store's `open` does).
///
/// Every task it starts is in `tasks`, the store's tracker (shared by every clone), which
/// `PgStore::close` waits on.
#[derive(Clone)]
pub(crate) struct Bridge {
    pub(crate) handle: Handle,
    pub(crate) tasks: TaskTracker,
}

impl Bridge {
    /// Starts `work` on the store's runtime, tracked by the store (its owner ends it: a
    /// lease's renewal with the lease, a follower's loop with the follower).
    pub(crate) fn spawn(&self, work: impl Future<Output = ()> + Send + 'static) {
        drop(self.tasks.spawn_on(work, &self.handle));
    }

    /// Awaits `work` run on the store's runtime.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        work: impl Future<Output = Result<T, StoreError>> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.tasks.spawn_on(work, &self.handle).await.map_err(|e| {
            StoreError::Backend(
                BackendError::new(BackendKind::Store, format!("store task failed: {e}"))
                    .with_cause(e),
            )
        })?
    }

    /// Blocks the calling thread until `work` is done on the store's runtime.
    ///
    /// Called on a thread of the store's own runtime, it refuses (that could deadlock).
    pub(crate) fn block<T: Send + 'static>(
        &self,
        work: impl Future<Output = Result<T, StoreError>> + Send + 'static,
    ) -> Result<T, StoreError> {
        if ON_STORE_RUNTIME.with(Cell::get) {
            return Err(StoreError::Backend(BackendError::new(
                BackendKind::Store,
                "a blocking store call was made on the store's own runtime",
            )));
        }
        let (reply, answer) = std::sync::mpsc::channel();
        self.spawn(async move {
            let _ = reply.send(work.await);
        });
        answer.recv().unwrap_or_else(|_| {
            Err(StoreError::Backend(BackendError::new(
                BackendKind::Store,
                "the store's runtime stopped",
            )))
        })
    }

    /// Runs `work` and waits up to `patience` for it, except on the store's own runtime,
    /// where it only starts it.
    pub(crate) fn run_and_wait(
        &self,
        work: impl Future<Output = ()> + Send + 'static,
        patience: Duration,
    ) {
        if ON_STORE_RUNTIME.with(Cell::get) {
            self.spawn(work);
            return;
        }
        let (reply, answer) = std::sync::mpsc::channel();
        self.spawn(async move {
            work.await;
            let _ = reply.send(());
        });
        let _ = answer.recv_timeout(patience);
    }
}

pub(crate) struct Inner {
    pub(crate) db: Db,
    /// The flushes of every session of the store (on `db`'s pool).
    pub(crate) writer: Writer,
    /// The parsed connection string, for connections outside the pool (a follower's `LISTEN`).
    pub(crate) config: tokio_postgres::Config,
    pub(crate) bridge: Bridge,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) options: PgOptions,
    pub(crate) runtime: Option<Runtime>,
}

impl Drop for Inner {
    /// The last handle is gone: the runtime stops in the background (a drop cannot wait), and
    /// with it whatever task `PgStore::close` was not awaited for.
    fn drop(&mut self) {
        self.bridge.tasks.close();
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
