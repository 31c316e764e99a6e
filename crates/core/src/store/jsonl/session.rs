//! The session handle: appends buffer a line; a flush writes and syncs off the executor and
//! puts the file back at its durable length when it fails.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::store::log::EventLog;
use crate::{
    AppendError, Clock, PersistenceError, RawEvent, Session, SessionEvent, SessionHeader, SessionId,
};

pub(super) fn write_line(out: &mut Vec<u8>, value: &impl serde::Serialize) {
    // Serializing our own plain structs into a Vec cannot fail.
    if serde_json::to_writer(&mut *out, value).is_ok() {
        out.push(b'\n');
    }
}

/// A flush's view of a session file: positioned writes, sync and truncation. The
/// real implementation is [`File`]; unit tests wrap a real file to fail or stall on cue.
pub(super) trait LogFile: Send {
    /// Writes all of `bytes` at byte `offset`.
    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> std::io::Result<()>;
    /// Makes written data durable (`fdatasync`).
    fn sync(&mut self) -> std::io::Result<()>;
    /// Cuts the file to `len` bytes.
    fn truncate(&mut self, len: u64) -> std::io::Result<()>;
}

impl LogFile for File {
    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> std::io::Result<()> {
        self.seek(SeekFrom::Start(offset))?;
        self.write_all(bytes)
    }

    fn sync(&mut self) -> std::io::Result<()> {
        self.sync_data()
    }

    fn truncate(&mut self, len: u64) -> std::io::Result<()> {
        self.set_len(len)
    }
}

/// What `append`, `flush` and the flush's blocking task share.
struct Shared {
    /// Lines appended and not yet taken by a flush. Held only to add or take lines, never
    /// during I/O.
    pending: Mutex<Pending>,
    /// Of the bytes ever appended through this handle, how many are durable (the running
    /// total reached by the last successful sync).
    synced: AtomicU64,
    /// The file and its durable state. Held by one flush at a time, for its write and sync.
    writer: Mutex<Writer>,
}

struct Pending {
    bytes: Vec<u8>,
    /// Bytes ever appended through this handle (a running total).
    appended: u64,
}

impl Shared {
    fn pending(&self) -> std::sync::MutexGuard<'_, Pending> {
        crate::lock(&self.pending)
    }

    fn writer(&self) -> std::sync::MutexGuard<'_, Writer> {
        crate::lock(&self.writer)
    }

    /// Writes and syncs everything appended so far (blocking: runs off the executor).
    fn flush(&self) -> std::io::Result<()> {
        self.writer().flush(self)
    }
}

pub(super) struct JsonlSession {
    header: SessionHeader,
    log: EventLog,
    path: PathBuf,
    shared: Arc<Shared>,
}

impl JsonlSession {
    /// A session over `file`, whose first `durable_len` bytes are durable.
    pub(super) fn start(
        header: SessionHeader,
        events: Vec<RawEvent>,
        clock: Arc<dyn Clock>,
        path: &Path,
        file: Box<dyn LogFile>,
        durable_len: u64,
    ) -> Self {
        let shared = Arc::new(Shared {
            pending: Mutex::new(Pending {
                bytes: Vec::new(),
                appended: 0,
            }),
            synced: AtomicU64::new(0),
            writer: Mutex::new(Writer {
                file: Some(file),
                durable_len,
                unwritten: Vec::new(),
                tail_dirty: false,
            }),
        });
        Self {
            header,
            log: EventLog::new(events, clock),
            path: path.to_path_buf(),
            shared,
        }
    }

    fn persistence_error(&self, message: impl std::fmt::Display) -> PersistenceError {
        PersistenceError::Io {
            session: self.header.id.clone(),
            message: format!("{}: {message}", self.path.display()),
        }
    }
}

impl Drop for JsonlSession {
    /// Closes the file, and with it the lock, before the handle is gone. Lines appended and
    /// not flushed are discarded. If a flush whose caller stopped waiting is still writing,
    /// this waits for that one write and sync.
    fn drop(&mut self) {
        drop(self.shared.writer().file.take());
    }
}

/// The file of one open session and what is known to be durable in it.
struct Writer {
    /// `None` once the session handle is dropped.
    file: Option<Box<dyn LogFile>>,
    /// The file's durable length: every byte before it is synced and acknowledged.
    durable_len: u64,
    /// Lines taken from `append` and not yet durable (kept across failed flushes).
    unwritten: Vec<u8>,
    /// A failed flush could not cut the file back, so bytes past `durable_len` may remain.
    tail_dirty: bool,
}

impl Writer {
    /// Writes everything appended so far at the durable length and syncs it. On failure, cuts
    /// the file back to the durable length and keeps the lines for the next try.
    fn flush(&mut self, shared: &Shared) -> std::io::Result<()> {
        let appended = {
            let mut pending = shared.pending();
            if self.unwritten.is_empty() {
                std::mem::swap(&mut self.unwritten, &mut pending.bytes);
            } else {
                self.unwritten.extend_from_slice(&pending.bytes);
                pending.bytes.clear();
            }
            pending.appended
        };
        if self.unwritten.is_empty() {
            return Ok(());
        }
        let Some(file) = self.file.as_mut() else {
            return Err(std::io::Error::other("the session handle is closed"));
        };
        let end = self.durable_len + self.unwritten.len() as u64;
        let result = file
            .write_at(self.durable_len, &self.unwritten)
            .and_then(|()| {
                if self.tail_dirty {
                    file.truncate(end)?;
                }
                file.sync()
            });
        match result {
            Ok(()) => {
                self.durable_len = end;
                self.tail_dirty = false;
                self.unwritten.clear();
                shared.synced.store(appended, Ordering::Release);
                Ok(())
            }
            Err(error) => {
                // Put the file back as it was durably; if even that fails, the next write
                // starts at the same offset and overwrites what is there.
                let restored = file.truncate(self.durable_len).and_then(|()| file.sync());
                self.tail_dirty = restored.is_err();
                Err(error)
            }
        }
    }
}

/// Runs `work` off the caller's executor and awaits its result: on tokio's blocking pool
/// inside a tokio runtime (which also keeps a paused test clock from advancing while it
/// runs), else on a new thread. `None` if the work could not be started or panicked.
async fn off_executor<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        return runtime.spawn_blocking(work).await.ok();
    }
    let (reply, answer) = oneshot::channel();
    std::thread::Builder::new()
        .name("harness-jsonl-flush".to_owned())
        .spawn(move || {
            let _ = reply.send(work());
        })
        .ok()?;
    answer.await.ok()
}

#[async_trait]
impl Session for JsonlSession {
    fn id(&self) -> &SessionId {
        &self.header.id
    }

    fn header(&self) -> &SessionHeader {
        &self.header
    }

    fn len(&self) -> u64 {
        self.log.len()
    }

    fn raw_events_after(&self, after: u64) -> Vec<RawEvent> {
        self.log.raw_events_after(after)
    }

    fn append(&self, r#type: &str, data: Value) -> Result<SessionEvent, AppendError> {
        self.log.push(r#type, data, |event| {
            let mut pending = self.shared.pending();
            let before = pending.bytes.len();
            write_line(&mut pending.bytes, event);
            pending.appended += (pending.bytes.len() - before) as u64;
            Ok(())
        })
    }

    /// Writes and syncs on tokio's blocking pool (or a new thread outside tokio); the future
    /// only waits. Dropping it does not stop a write already started: the lines are then
    /// durable or, on failure, kept for the next flush.
    async fn flush(&self) -> Result<(), PersistenceError> {
        let appended = self.shared.pending().appended;
        if self.shared.synced.load(Ordering::Acquire) >= appended {
            return Ok(());
        }
        let shared = self.shared.clone();
        match off_executor(move || shared.flush()).await {
            Some(Ok(())) => Ok(()),
            Some(Err(error)) => Err(self.persistence_error(error)),
            None => Err(self.persistence_error("the flush could not run")),
        }
    }
}
