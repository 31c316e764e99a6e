//! [`JsonlStore`]: one JSON Lines file per session — a header line, then one event per line.
//!
//! This file provides the store (atomic create, open under an exclusive file lock, listing), the
//! session handle (appends buffer a line; a flush writes and syncs off the executor and puts the
//! file back at its durable length when it fails), and the parser that tells a torn last line
//! from corruption.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::oneshot;

use super::log::EventLog;
use super::{SessionStore, StoreError};
use crate::{
    AppendError, Clock, PersistenceError, RawEvent, Session, SessionEvent, SessionHeader, SessionId,
};

/// A folder of `<session id>.jsonl` files.
///
/// * **One writer per file.** A session handle holds an exclusive OS advisory lock
///   (`flock`-style, through [`File::try_lock`]) on its file for as long as it lives, from the
///   instant `create` makes the file visible; opening a session whose file another handle
///   holds — in this process or another — fails with [`StoreError::Locked`]. The lock is
///   released when the handle is dropped or the process dies.
/// * **Append never waits for the disk.** `append` commits to the live log and buffers the line
///   in memory. `flush` writes the buffer at the file's durable length and calls `sync_data` on
///   tokio's blocking pool (on a new thread when not called inside a tokio runtime); the async
///   caller only awaits the answer, so no executor thread blocks on I/O. Flushes of one
///   session run one at a time; a flush that finds its lines already synced returns at once.
/// * **A failed flush changes nothing durable.** When the write or sync fails, the writer cuts
///   the file back to its last durable length and keeps the lines for the next flush, which
///   writes them from that length again: no byte is written twice and none is dropped.
/// * **Create is atomic.** The header (and a fork's events) go to a temporary file in the same
///   folder (`.create-<pid>-<n>.tmp`), which is synced, linked to `<id>.jsonl` (failing if
///   that exists), and the folder is synced. A crash at any instant leaves either no session or
///   a complete one (at worst a stray temporary file, which the store ignores). The folder must
///   be on a file system with hard links.
/// * **Only an unterminated last line is torn.** `open` cuts a last line without its newline
///   away (it was never acknowledged) and reports it with `tracing::warn!`. Every
///   newline-terminated line must be a valid header or event; one that is not is
///   [`StoreError::Malformed`] naming the file and 1-based line, and nothing is cut.
#[derive(Clone)]
pub struct JsonlStore {
    dir: PathBuf,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for JsonlStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonlStore")
            .field("dir", &self.dir)
            .finish()
    }
}

impl JsonlStore {
    /// A store in `dir` (created if missing).
    ///
    /// # Errors
    /// [`StoreError::Io`] if the folder cannot be created.
    pub fn new(dir: impl Into<PathBuf>, clock: Arc<dyn Clock>) -> Result<Self, StoreError> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir).map_err(|source| io_error(&dir, source))?;
        Ok(Self { dir, clock })
    }

    /// The folder holding the session files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file that holds session `id`.
    ///
    /// # Errors
    /// [`StoreError::InvalidId`] when the id cannot be a file name.
    pub fn path_of(&self, id: &SessionId) -> Result<PathBuf, StoreError> {
        let name = id.as_str();
        let bad = name.is_empty()
            || name == "."
            || name == ".."
            || name.contains(['/', '\\', '\0'])
            || name.starts_with('.');
        if bad {
            return Err(StoreError::InvalidId(name.to_owned()));
        }
        Ok(self.dir.join(format!("{name}.jsonl")))
    }

    /// Parses a session file without changing it (no truncation of a torn tail, no lock): for
    /// inspection tools such as `harness log`.
    ///
    /// # Errors
    /// [`StoreError::NotFound`], [`StoreError::Malformed`], [`StoreError::InterruptedCreate`],
    /// or an I/O error.
    pub fn inspect(path: &Path) -> Result<SessionFile, StoreError> {
        let bytes = std::fs::read(path).map_err(|source| not_found_or_io(path, source))?;
        parse_bytes(path, bytes)
    }

    /// Like [`JsonlStore::inspect`], but hands each event to `visit` (with the header) as it
    /// is read instead of keeping them: a caller that folds the log holds only its folded
    /// state. Returns the header and the torn last line, if any. When the file turns out to be
    /// malformed, the events before the bad line have been visited and the error is returned.
    ///
    /// # Errors
    /// As [`JsonlStore::inspect`].
    pub fn inspect_each(
        path: &Path,
        mut visit: impl FnMut(&SessionHeader, RawEvent),
    ) -> Result<(SessionHeader, Option<TornTail>), StoreError> {
        let bytes = std::fs::read(path).map_err(|source| not_found_or_io(path, source))?;
        parse_bytes_each(path, bytes, &mut visit)
    }

    /// Opens a session file directly by path for appending: takes the file's lock, then
    /// truncates a torn tail. The session's id is the one in the header; for a file named
    /// `<id>.jsonl` the header must name that `<id>`, as for [`SessionStore::open`] (else the
    /// file `b.jsonl` of a header naming `a` would be a second writer of session `a` beside
    /// `a.jsonl`).
    ///
    /// # Errors
    /// [`StoreError::NotFound`], [`StoreError::Locked`], [`StoreError::Malformed`] (also when
    /// the header names another session than the file name), [`StoreError::InterruptedCreate`],
    /// or an I/O error.
    pub fn open_path(path: &Path, clock: Arc<dyn Clock>) -> Result<Arc<dyn Session>, StoreError> {
        let named = path
            .file_name()
            .and_then(|name| name.to_str())
            .and_then(|name| name.strip_suffix(".jsonl"))
            .map(SessionId::from);
        let session = open_file(path, named.as_ref(), clock, |file| Box::new(file))?;
        Ok(Arc::new(session))
    }
}

fn io_error(path: &Path, source: std::io::Error) -> StoreError {
    StoreError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn not_found_or_io(path: &Path, source: std::io::Error) -> StoreError {
    match source.kind() {
        std::io::ErrorKind::NotFound => StoreError::NotFound(SessionId::new(
            path.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
        )),
        _ => io_error(path, source),
    }
}

fn malformed(path: &Path, line: usize, message: impl Into<String>) -> StoreError {
    StoreError::Malformed {
        file: path.display().to_string(),
        line,
        message: message.into(),
    }
}

/// How long [`lock`] waits for a lock that is held, in total.
const LOCK_PATIENCE: Duration = Duration::from_millis(100);

/// Takes the exclusive advisory lock of a session file, waiting at most [`LOCK_PATIENCE`].
///
/// The wait is for one case: a lock whose last holder was just dropped can stay held for a
/// moment by a process this one is starting (between `fork` and `exec` a child shares every
/// open descriptor, and with it the lock), which any thread spawning a command — a bash job —
/// can cause at any time. A handle that really holds the lock, in this process or another,
/// still gets [`StoreError::Locked`], after the wait.
fn lock(file: &File, path: &Path) -> Result<(), StoreError> {
    let started = std::time::Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(()),
            Err(TryLockError::WouldBlock) if started.elapsed() < LOCK_PATIENCE => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(20));
            }
            Err(TryLockError::WouldBlock) => {
                return Err(StoreError::Locked {
                    path: path.display().to_string(),
                });
            }
            Err(TryLockError::Error(source)) => return Err(io_error(path, source)),
        }
    }
}

/// What [`JsonlStore::inspect`] found at the end of a file: a torn last line that `open`
/// would truncate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TornTail {
    /// Byte offset where the torn line starts (the length the file would be cut to).
    pub offset: u64,
    /// Its 1-based line number.
    pub line: usize,
    /// Why it is torn.
    pub reason: String,
}

/// A session file's parsed content.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionFile {
    /// The header line.
    pub header: SessionHeader,
    /// The complete, valid events in order, in the log's shared form (payloads as raw JSON).
    pub events: Vec<RawEvent>,
    /// A torn last line, if any (not part of `events`).
    pub torn: Option<TornTail>,
}

/// Where the torn tail of a file starts, if it has one.
///
/// This is the one place that tells a torn line from a corrupt one. A flush writes whole lines
/// and is acknowledged only after they are synced, so an interrupted append can leave only an
/// unterminated last line; that line was never acknowledged and may be cut. Every
/// newline-terminated line is complete, and one that does not parse (a bit flip, invalid UTF-8,
/// a blank line) is corruption wherever it stands.
fn torn_tail_start(bytes: &[u8]) -> Option<usize> {
    match bytes.iter().rposition(|&b| b == b'\n') {
        Some(end) if end + 1 == bytes.len() => None,
        Some(end) => Some(end + 1),
        None if bytes.is_empty() => None,
        None => Some(0),
    }
}

/// Parses the bytes of a session file at `path` without changing anything, keeping every
/// event.
fn parse_bytes(path: &Path, bytes: Vec<u8>) -> Result<SessionFile, StoreError> {
    let mut events = Vec::new();
    let (header, torn) = parse_bytes_each(path, bytes, &mut |_, event| events.push(event))?;
    Ok(SessionFile {
        header,
        events,
        torn,
    })
}

/// Parses the bytes of a session file at `path` without changing anything, handing each
/// event to `visit` (with the header) as it is read.
///
/// The events of a file whose complete lines are all UTF-8 (every file the stores write)
/// share one copy of its text; any other file is read line by line, with the same result.
fn parse_bytes_each(
    path: &Path,
    mut bytes: Vec<u8>,
    visit: &mut dyn FnMut(&SessionHeader, RawEvent),
) -> Result<(SessionHeader, Option<TornTail>), StoreError> {
    let torn_start = torn_tail_start(&bytes);
    // The torn tail is never parsed (only its position is reported).
    bytes.truncate(torn_start.unwrap_or(bytes.len()));
    let text = match String::from_utf8(bytes) {
        Ok(text) => Ok(Arc::new(text)),
        Err(error) => Err(error.into_bytes()),
    };
    let body = match &text {
        Ok(text) => text.as_bytes(),
        Err(bytes) => bytes.as_slice(),
    };
    if body.is_empty() {
        // No complete header line: what a create interrupted in an older, non-atomic build
        // leaves (zero bytes, or a header without its newline).
        return Err(StoreError::InterruptedCreate {
            file: path.display().to_string(),
        });
    }
    let mut header: Option<SessionHeader> = None;
    let mut count = 0u64;
    let mut number = 0usize;
    let mut offset = 0usize;
    // `body` ends with a newline, so every line found here is complete.
    while let Some(end) = find_newline(&body[offset..]) {
        let (start, stop) = (offset, offset + end);
        offset += end + 1;
        number += 1;
        let parsed = match &text {
            Ok(text) if header.is_some() => parse_event_in(text, start, stop, count + 1),
            _ => parse_line(&body[start..stop], header.is_none(), count + 1),
        };
        match parsed {
            Ok(Line::Header(h)) => header = Some(h),
            Ok(Line::Event(e)) => {
                count += 1;
                if let Some(header) = &header {
                    visit(header, e);
                }
            }
            Err(message) => return Err(malformed(path, number, message)),
        }
    }
    let header = header.ok_or_else(|| malformed(path, 1, "missing session header"))?;
    let torn = torn_start.map(|start| TornTail {
        offset: start as u64,
        line: number + 1,
        reason: "missing trailing newline".to_owned(),
    });
    Ok((header, torn))
}

/// The index of the first `\n` in `bytes`, eight bytes at a time (a session file is mostly
/// long lines, and this scan runs over every byte of it on open).
fn find_newline(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    const NEWLINES: u64 = ONES * b'\n' as u64;
    let mut chunks = bytes.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let word = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8])) ^ NEWLINES;
        // A zero byte in `word` is a newline in `chunk` (the classic has-zero-byte test).
        if (word.wrapping_sub(ONES) & !word & HIGHS) != 0 {
            break;
        }
        offset += 8;
    }
    bytes[offset..]
        .iter()
        .position(|&b| b == b'\n')
        .map(|index| offset + index)
}

enum Line {
    Header(SessionHeader),
    Event(RawEvent),
}

fn parse_line(line: &[u8], want_header: bool, expected_seq: u64) -> Result<Line, String> {
    if want_header {
        return serde_json::from_slice::<SessionHeader>(line)
            .map(Line::Header)
            .map_err(|e| format!("invalid session header: {e}"));
    }
    let event = RawEvent::from_line(line).map_err(|e| format!("invalid event: {e}"))?;
    check_seq(event, expected_seq)
}

/// [`parse_line`] for an event line `text[start..end]` of a file's shared text.
fn parse_event_in(
    text: &Arc<String>,
    start: usize,
    end: usize,
    expected_seq: u64,
) -> Result<Line, String> {
    let event =
        RawEvent::from_line_in(text, start, end).map_err(|e| format!("invalid event: {e}"))?;
    check_seq(event, expected_seq)
}

fn check_seq(event: RawEvent, expected_seq: u64) -> Result<Line, String> {
    if event.seq() != expected_seq {
        return Err(format!(
            "event seq {} where {expected_seq} was expected",
            event.seq()
        ));
    }
    Ok(Line::Event(event))
}

/// Opens, locks, validates and (for a torn tail) truncates a session file, then starts its
/// session handle. `expect` is the id the caller asked for; the header must name it.
/// `wrap` turns the locked file into the flush's [`LogFile`] (the real file, or a test seam).
fn open_file(
    path: &Path,
    expect: Option<&SessionId>,
    clock: Arc<dyn Clock>,
    wrap: impl FnOnce(File) -> Box<dyn LogFile>,
) -> Result<JsonlSession, StoreError> {
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|source| not_found_or_io(path, source))?;
    lock(&file, path)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|source| io_error(path, source))?;
    let file_len = bytes.len() as u64;
    let parsed = parse_bytes(path, bytes)?;
    if let Some(id) = expect
        && parsed.header.id != *id
    {
        return Err(malformed(
            path,
            1,
            format!(
                "the header names session {:?}, but this is the file of session {:?}",
                parsed.header.id.as_str(),
                id.as_str()
            ),
        ));
    }
    let mut durable_len = file_len;
    if let Some(torn) = &parsed.torn {
        tracing::warn!(
            file = %path.display(),
            line = torn.line,
            "truncating torn last line of session file: {}",
            torn.reason
        );
        file.set_len(torn.offset)
            .and_then(|()| file.sync_data())
            .map_err(|source| io_error(path, source))?;
        durable_len = torn.offset;
    }
    Ok(JsonlSession::start(
        parsed.header,
        parsed.events,
        clock,
        path,
        wrap(file),
        durable_len,
    ))
}

impl SessionStore for JsonlStore {
    fn create(&self, header: SessionHeader) -> Result<Arc<dyn Session>, StoreError> {
        self.create_with_events(header, Vec::new())
    }

    fn open(&self, id: &SessionId) -> Result<Arc<dyn Session>, StoreError> {
        let path = self.path_of(id)?;
        let session = open_file(&path, Some(id), self.clock.clone(), |file| Box::new(file))?;
        Ok(Arc::new(session))
    }

    fn list(&self) -> Vec<SessionId> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut ids: Vec<SessionId> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with('.') {
                    return None;
                }
                name.strip_suffix(".jsonl").map(SessionId::from)
            })
            .collect();
        ids.sort();
        ids
    }

    fn create_with_events(
        &self,
        header: SessionHeader,
        events: Vec<RawEvent>,
    ) -> Result<Arc<dyn Session>, StoreError> {
        let path = self.path_of(&header.id)?;
        let mut bytes = Vec::new();
        write_line(&mut bytes, &header);
        for event in &events {
            event.write_line(&mut bytes);
        }
        let file = self.create_atomically(&header.id, &path, &bytes)?;
        Ok(Arc::new(JsonlSession::start(
            header,
            events,
            self.clock.clone(),
            &path,
            Box::new(file),
            bytes.len() as u64,
        )))
    }
}

/// The serial number in the next temporary file name of a create (per process).
static TEMP_SERIAL: AtomicU64 = AtomicU64::new(0);

/// How many taken temporary names a create skips before it gives up.
const MAX_TAKEN_TEMP_NAMES: usize = 1000;

impl JsonlStore {
    /// Writes `bytes` to a synced temporary file, locks it, and links it to `path` (failing
    /// with [`StoreError::AlreadyExists`] if `path` exists), then syncs the folder. Returns the
    /// locked handle, positioned anywhere (the writer seeks before every write).
    fn create_atomically(
        &self,
        id: &SessionId,
        path: &Path,
        bytes: &[u8],
    ) -> Result<File, StoreError> {
        // A name taken by a stray temporary file (left by a crashed process that had the same
        // pid, as a container's first process always has) is skipped, never removed.
        let mut skipped = 0;
        let (temp, mut file) = loop {
            // Not named after the id: a long id whose `<id>.jsonl` fits the file-name limit
            // must not fail on a longer temporary name.
            let temp = self.dir.join(format!(
                ".create-{}-{}.tmp",
                std::process::id(),
                TEMP_SERIAL.fetch_add(1, Ordering::Relaxed)
            ));
            match OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&temp)
            {
                Ok(file) => break (temp, file),
                Err(source)
                    if source.kind() == std::io::ErrorKind::AlreadyExists
                        && skipped < MAX_TAKEN_TEMP_NAMES =>
                {
                    skipped += 1;
                }
                Err(source) => return Err(io_error(&temp, source)),
            }
        };
        let written = file
            .write_all(bytes)
            .and_then(|()| file.sync_all())
            .map(|()| file);
        let file = match written {
            Ok(file) => file,
            Err(source) => {
                let _ = std::fs::remove_file(&temp);
                return Err(io_error(&temp, source));
            }
        };
        // Lock before the name exists, so no other handle can open the new session first.
        let linked = lock(&file, &temp).and_then(|()| {
            std::fs::hard_link(&temp, path).map_err(|source| match source.kind() {
                std::io::ErrorKind::AlreadyExists => StoreError::AlreadyExists(id.clone()),
                _ => io_error(path, source),
            })
        });
        // The temporary name goes in every case; a crash before this leaves only a stray
        // dot-file, which `list` skips.
        let _ = std::fs::remove_file(&temp);
        linked?;
        match File::open(&self.dir).and_then(|dir| dir.sync_all()) {
            Ok(()) => {}
            // Some platforms cannot sync a folder; the file itself is durable.
            Err(error) => tracing::warn!(
                dir = %self.dir.display(),
                "could not sync the session folder after create: {error}"
            ),
        }
        Ok(file)
    }
}

fn write_line(out: &mut Vec<u8>, value: &impl serde::Serialize) {
    // Serializing our own plain structs into a Vec cannot fail.
    if serde_json::to_writer(&mut *out, value).is_ok() {
        out.push(b'\n');
    }
}

/// A flush's view of a session file: positioned writes, sync and truncation. The
/// real implementation is [`File`]; unit tests wrap a real file to fail or stall on cue.
trait LogFile: Send {
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

struct JsonlSession {
    header: SessionHeader,
    log: EventLog,
    path: PathBuf,
    shared: Arc<Shared>,
}

impl JsonlSession {
    /// A session over `file`, whose first `durable_len` bytes are durable.
    fn start(
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

#[cfg(test)]
#[path = "jsonl_tests.rs"]
mod tests;
