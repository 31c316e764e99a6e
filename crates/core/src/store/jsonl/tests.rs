//! Flush tests through the [`LogFile`] seam: a real file that fails after a byte
//! budget, fails one sync, or stalls inside a write until the test lets it go.

use std::fs::File;
use std::io::ErrorKind;
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use futures::future::BoxFuture;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::{JsonlSession, JsonlStore, LogFile, open_file};
use crate::{Clock, PersistenceError, Session, SessionHeader, SessionId, SessionStore};

struct Frozen;

impl Clock for Frozen {
    fn now(&self) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 8, 5, 12, 0, 0).unwrap()
    }

    fn sleep(&self, _: Duration) -> BoxFuture<'static, ()> {
        Box::pin(std::future::pending())
    }
}

const HEADER: &str = "{\"id\":\"s1\"}\n";

fn line(seq: u64, n: u64) -> String {
    format!(
        "{{\"seq\":{seq},\"type\":\"e\",\"time\":\"2026-08-05T12:00:00.000Z\",\"data\":{{\"n\":{n}}}}}\n"
    )
}

/// A store with an empty session `s1`, and the path of its file.
fn fixture(dir: &tempfile::TempDir) -> (JsonlStore, std::path::PathBuf) {
    let store = JsonlStore::new(dir.path(), Arc::new(Frozen)).unwrap();
    drop(store.create(SessionHeader::new("s1")).unwrap());
    let path = dir.path().join("s1.jsonl");
    (store, path)
}

fn reopen_with(
    path: &std::path::Path,
    wrap: impl FnOnce(File) -> Box<dyn LogFile>,
) -> JsonlSession {
    open_file(path, Some(&SessionId::from("s1")), Arc::new(Frozen), wrap).unwrap()
}

/// Writes at most `budget` more bytes (`None`: unlimited), then fails like a full disk:
/// the bytes before the limit really reach the file.
struct FailAfter {
    file: File,
    budget: Arc<Mutex<Option<usize>>>,
}

impl LogFile for FailAfter {
    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> std::io::Result<()> {
        let mut budget = self.budget.lock().unwrap();
        let Some(left) = *budget else {
            return self.file.write_at(offset, bytes);
        };
        let n = left.min(bytes.len());
        self.file.write_at(offset, &bytes[..n])?;
        *budget = Some(left - n);
        if n < bytes.len() {
            return Err(std::io::Error::new(
                ErrorKind::StorageFull,
                "disk full (test)",
            ));
        }
        Ok(())
    }

    fn sync(&mut self) -> std::io::Result<()> {
        self.file.sync()
    }

    fn truncate(&mut self, len: u64) -> std::io::Result<()> {
        self.file.truncate(len)
    }
}

#[tokio::test]
async fn a_write_failing_half_way_leaves_the_durable_length_and_the_retry_writes_each_byte_once() {
    let dir = tempfile::tempdir().unwrap();
    let (store, path) = fixture(&dir);
    let budget = Arc::new(Mutex::new(None));
    let session = reopen_with(&path, |file| {
        Box::new(FailAfter {
            file,
            budget: budget.clone(),
        })
    });
    session.append("e", json!({"n": 1})).unwrap();
    session.flush().await.unwrap();
    let durable = format!("{HEADER}{}", line(1, 1));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), durable);

    // 10 bytes of the next line reach the file, then the disk is full.
    *budget.lock().unwrap() = Some(10);
    session.append("e", json!({"n": 2})).unwrap();
    let expected_error = PersistenceError::Io {
        session: SessionId::from("s1"),
        message: format!("{}: disk full (test)", path.display()),
    };
    assert_eq!(session.flush().await, Err(expected_error.clone()));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), durable);
    // Still full: the retry fails at once and the file is still as it was.
    assert_eq!(session.flush().await, Err(expected_error));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), durable);

    *budget.lock().unwrap() = None;
    session.append("e", json!({"n": 3})).unwrap();
    session.flush().await.unwrap();
    let all = format!("{HEADER}{}{}{}", line(1, 1), line(2, 2), line(3, 3));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), all);
    let live = session.events();
    drop(session);
    assert_eq!(store.open(&SessionId::from("s1")).unwrap().events(), live);
}

/// Writes fully, but the first `failures` syncs fail like an EIO from the disk.
struct FailSync {
    file: File,
    failures: usize,
}

impl LogFile for FailSync {
    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> std::io::Result<()> {
        self.file.write_at(offset, bytes)
    }

    fn sync(&mut self) -> std::io::Result<()> {
        if self.failures > 0 {
            self.failures -= 1;
            return Err(std::io::Error::other("sync failed (test)"));
        }
        self.file.sync()
    }

    fn truncate(&mut self, len: u64) -> std::io::Result<()> {
        self.file.truncate(len)
    }
}

#[tokio::test]
async fn a_failed_sync_cuts_the_written_lines_and_the_retry_rewrites_them_once() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, path) = fixture(&dir);
    // The first sync fails; so does the one after the cut, which the writer must survive.
    let session = reopen_with(&path, |file| Box::new(FailSync { file, failures: 2 }));
    session.append("e", json!({"n": 1})).unwrap();
    assert_eq!(
        session.flush().await,
        Err(PersistenceError::Io {
            session: SessionId::from("s1"),
            message: format!("{}: sync failed (test)", path.display()),
        })
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), HEADER);
    session.append("e", json!({"n": 2})).unwrap();
    session.flush().await.unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        format!("{HEADER}{}{}", line(1, 1), line(2, 2))
    );
}

/// Reports each write on `entered`, then waits inside it until the test sends on `release`
/// (failing after a watchdog bound, so a broken implementation fails instead of hanging).
struct Gated {
    file: File,
    entered: std_mpsc::Sender<()>,
    release: std_mpsc::Receiver<()>,
}

impl LogFile for Gated {
    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> std::io::Result<()> {
        let _ = self.entered.send(());
        self.release
            .recv_timeout(Duration::from_secs(10))
            .map_err(|_| std::io::Error::other("the gate was never opened"))?;
        self.file.write_at(offset, bytes)
    }

    fn sync(&mut self) -> std::io::Result<()> {
        self.file.sync()
    }

    fn truncate(&mut self, len: u64) -> std::io::Result<()> {
        self.file.truncate(len)
    }
}

/// Session `s1` reopened over a [`Gated`] file, with the receiver that reports each write's
/// start and the sender that lets it go on.
fn gated(path: &std::path::Path) -> (JsonlSession, std_mpsc::Receiver<()>, std_mpsc::Sender<()>) {
    let (entered_tx, entered) = std_mpsc::channel();
    let (release, release_rx) = std_mpsc::channel();
    let session = reopen_with(path, |file| {
        Box::new(Gated {
            file,
            entered: entered_tx,
            release: release_rx,
        })
    });
    (session, entered, release)
}

#[tokio::test(flavor = "current_thread")]
async fn flush_waits_off_the_executor_and_append_does_not_wait_for_the_disk() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, path) = fixture(&dir);
    let (session, entered, release) = gated(&path);
    session.append("e", json!({"n": 1})).unwrap();
    let mut flush = session.flush();
    // The only executor thread polls the flush: it must hand the write off and return.
    assert!(futures::poll!(&mut flush).is_pending());
    entered.recv_timeout(Duration::from_secs(10)).unwrap();
    // The writer is now inside the write; append still commits at once.
    assert_eq!(session.append("e", json!({"n": 2})).unwrap().seq, 2);
    assert!(futures::poll!(&mut flush).is_pending());
    release.send(()).unwrap();
    flush.await.unwrap();
    // The flush covered what was appended before it, not the line appended during it.
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        format!("{HEADER}{}", line(1, 1))
    );
    release.send(()).unwrap();
    session.flush().await.unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        format!("{HEADER}{}{}", line(1, 1), line(2, 2))
    );
}

#[tokio::test]
async fn a_flush_waits_for_a_write_another_flush_started() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, path) = fixture(&dir);
    let (session, entered, release) = gated(&path);
    session.append("e", json!({"n": 1})).unwrap();
    let mut first = session.flush();
    assert!(futures::poll!(&mut first).is_pending());
    entered.recv_timeout(Duration::from_secs(10)).unwrap();
    // Nothing is left in the buffer, but line 1 is not durable yet: this flush must wait.
    let mut second = session.flush();
    assert!(futures::poll!(&mut second).is_pending());
    release.send(()).unwrap();
    first.await.unwrap();
    second.await.unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        format!("{HEADER}{}", line(1, 1))
    );
}

/// Polls `future` to completion on this thread, with no tokio runtime anywhere: the executor
/// of a host that does not use tokio.
fn block_on_without_tokio<F: std::future::Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut context = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let std::task::Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
        std::thread::park();
    }
}

#[test]
fn flush_works_outside_a_tokio_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let (store, path) = fixture(&dir);
    let session = store.open(&SessionId::from("s1")).unwrap();
    session.append("e", json!({"n": 1})).unwrap();
    assert_eq!(block_on_without_tokio(session.flush()), Ok(()));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        format!("{HEADER}{}", line(1, 1))
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_paused_test_clock_does_not_advance_while_a_flush_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, path) = fixture(&dir);
    let (session, entered, release) = gated(&path);
    let session = Arc::new(session);
    // Opens the gate as soon as the write starts, in real time, outside the runtime.
    let gatekeeper = std::thread::spawn(move || {
        entered.recv().unwrap();
        release.send(()).unwrap();
    });
    session.append("e", json!({"n": 1})).unwrap();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flush = tokio::spawn({
        let (session, done) = (session.clone(), done.clone());
        async move {
            session.flush().await.unwrap();
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    });
    // This sleep completes only when the runtime is idle: a running flush keeps it busy.
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert!(done.load(std::sync::atomic::Ordering::SeqCst));
    flush.await.unwrap();
    gatekeeper.join().unwrap();
}

/// A stray temporary file left by a crashed process that had this pid (a container's first
/// process always has the same one) does not make a create fail, and is not removed: before,
/// the create failed with `File exists` on the temporary name and deleted the stray file.
#[test]
fn create_skips_temporary_names_left_by_a_crashed_process_with_the_same_pid() {
    let dir = tempfile::tempdir().unwrap();
    let store = JsonlStore::new(dir.path(), Arc::new(Frozen)).unwrap();
    let next = super::TEMP_SERIAL.load(std::sync::atomic::Ordering::Relaxed);
    let stray = |n: u64| {
        dir.path()
            .join(format!(".create-{}-{n}.tmp", std::process::id()))
    };
    // Other tests in this process create sessions concurrently: cover the serials they may
    // take meanwhile.
    for n in next..next + 200 {
        std::fs::write(stray(n), "{\"id\":\"s1\"}\n").unwrap();
    }
    let session = store.create(SessionHeader::new("s1")).unwrap();
    assert_eq!(session.id().as_str(), "s1");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("s1.jsonl")).unwrap(),
        HEADER
    );
    assert!(stray(next).exists());
    assert_eq!(store.list(), [SessionId::from("s1")]);
}

/// An id whose `<id>.jsonl` fits the file-name limit (255 bytes) can be created, though a
/// temporary name built from it would not fit (before: `File name too long` on the
/// temporary file for ids of about 236 to 249 bytes).
#[test]
fn an_id_whose_file_name_fits_can_be_created() {
    let dir = tempfile::tempdir().unwrap();
    let store = JsonlStore::new(dir.path(), Arc::new(Frozen)).unwrap();
    let id = "i".repeat(255 - ".jsonl".len());
    let session = store.create(SessionHeader::new(id.as_str())).unwrap();
    assert_eq!(session.id().as_str(), id);
    drop(session);
    assert_eq!(store.list(), [SessionId::from(id.as_str())]);
    assert_eq!(store.open(&SessionId::from(id.as_str())).unwrap().len(), 0);
}
