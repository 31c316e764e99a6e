//! [`JsonlStore`]: one JSON Lines file per session — a header line, then one event per line.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::Value;

use super::log::EventLog;
use super::{SessionStore, StoreError};
use crate::{
    AppendError, Clock, PersistenceError, RawEvent, Session, SessionEvent, SessionHeader, SessionId,
};

/// A folder of `<session id>.jsonl` files.
///
/// * `append` commits to the live log and buffers the line; `flush` writes the buffered lines
///   and calls `sync_data`. A failed flush keeps the lines buffered for the next flush.
/// * `open` replays the file. A torn last line (no trailing newline, or not complete JSON) is
///   truncated away and reported with `tracing::warn!`; any other malformed line is
///   [`StoreError::Malformed`] naming the file and 1-based line.
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

    /// Parses a session file without changing it (no truncation of a torn tail): for
    /// inspection tools such as `harness log`.
    ///
    /// # Errors
    /// [`StoreError::NotFound`], [`StoreError::Malformed`], or an I/O error.
    pub fn inspect(path: &Path) -> Result<SessionFile, StoreError> {
        collect_file(path)
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
        parse_file(path, &mut visit)
    }

    /// Opens a session file directly by path for appending (truncates a torn tail).
    ///
    /// # Errors
    /// As [`SessionStore::open`].
    pub fn open_path(path: &Path, clock: Arc<dyn Clock>) -> Result<Arc<dyn Session>, StoreError> {
        let (header, events) = read_file(path)?;
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|source| io_error(path, source))?;
        Ok(Arc::new(JsonlSession::new(
            header, events, clock, path, file,
        )))
    }
}

fn io_error(path: &Path, source: std::io::Error) -> StoreError {
    StoreError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn malformed(path: &Path, line: usize, message: impl Into<String>) -> StoreError {
    StoreError::Malformed {
        file: path.display().to_string(),
        line,
        message: message.into(),
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

/// Parses a session file without changing it.
///
/// Only the last line can be torn, and only by an interrupted write: it lacks its newline,
/// or it is not syntactically complete JSON. A complete line that is valid JSON but not a
/// valid header or event (a missing field, a wrong type, a gap in `seq`) is
/// [`StoreError::Malformed`] wherever it stands.
///
/// Events are handed to `visit` (with the header) as they are read, so a caller that folds
/// them keeps only what it folds; [`collect_file`] keeps them all.
fn parse_file(
    path: &Path,
    visit: &mut dyn FnMut(&SessionHeader, RawEvent),
) -> Result<(SessionHeader, Option<TornTail>), StoreError> {
    let bytes = std::fs::read(path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => StoreError::NotFound(SessionId::new(
            path.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
        )),
        _ => io_error(path, source),
    })?;
    let mut header: Option<SessionHeader> = None;
    let mut count = 0u64;
    let mut offset = 0usize;
    let mut number = 0usize;
    let mut torn = None;
    while offset < bytes.len() {
        number += 1;
        let rest = &bytes[offset..];
        let (line, complete) = match find_newline(rest) {
            Some(end) => (&rest[..end], true),
            None => (rest, false),
        };
        let is_last = offset + line.len() + usize::from(complete) >= bytes.len();
        if !complete {
            torn = Some(TornTail {
                offset: offset as u64,
                line: number,
                reason: "missing trailing newline".to_owned(),
            });
            break;
        }
        match parse_line(line, header.is_none(), count + 1) {
            Ok(Line::Header(h)) => header = Some(h),
            Ok(Line::Event(e)) => {
                count += 1;
                if let Some(header) = &header {
                    visit(header, e);
                }
            }
            Err(LineError::Incomplete(message)) if is_last => {
                torn = Some(TornTail {
                    offset: offset as u64,
                    line: number,
                    reason: message,
                });
                break;
            }
            Err(LineError::Incomplete(message) | LineError::Invalid(message)) => {
                return Err(malformed(path, number, message));
            }
        }
        offset += line.len() + 1;
    }
    let header = header.ok_or_else(|| malformed(path, 1, "missing session header"))?;
    Ok((header, torn))
}

/// [`parse_file`], keeping every event.
fn collect_file(path: &Path) -> Result<SessionFile, StoreError> {
    let mut events = Vec::new();
    let (header, torn) = parse_file(path, &mut |_, event| events.push(event))?;
    Ok(SessionFile {
        header,
        events,
        torn,
    })
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

/// Reads and validates a session file, truncating a torn last line.
fn read_file(path: &Path) -> Result<(SessionHeader, Vec<RawEvent>), StoreError> {
    let file = collect_file(path)?;
    if let Some(torn) = &file.torn {
        tracing::warn!(
            file = %path.display(),
            line = torn.line,
            "truncating torn last line of session file: {}",
            torn.reason
        );
        let handle = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|source| io_error(path, source))?;
        handle
            .set_len(torn.offset)
            .and_then(|()| handle.sync_data())
            .map_err(|source| io_error(path, source))?;
    }
    Ok((file.header, file.events))
}

enum Line {
    Header(SessionHeader),
    Event(RawEvent),
}

enum LineError {
    /// Not syntactically complete JSON: what an interrupted write leaves.
    Incomplete(String),
    /// Complete JSON that is not a valid header or event.
    Invalid(String),
}

fn classify(error: &serde_json::Error, what: &str) -> LineError {
    let message = format!("invalid {what}: {error}");
    match error.classify() {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
            LineError::Incomplete(message)
        }
        serde_json::error::Category::Data | serde_json::error::Category::Io => {
            LineError::Invalid(message)
        }
    }
}

fn parse_line(line: &[u8], want_header: bool, expected_seq: u64) -> Result<Line, LineError> {
    if want_header {
        return serde_json::from_slice::<SessionHeader>(line)
            .map(Line::Header)
            .map_err(|e| classify(&e, "session header"));
    }
    let event = RawEvent::from_line(line).map_err(|e| classify(&e, "event"))?;
    if event.seq() != expected_seq {
        return Err(LineError::Invalid(format!(
            "event seq {} where {expected_seq} was expected",
            event.seq()
        )));
    }
    Ok(Line::Event(event))
}

impl SessionStore for JsonlStore {
    fn create(&self, header: SessionHeader) -> Result<Arc<dyn Session>, StoreError> {
        self.create_with_events(header, Vec::new())
    }

    fn open(&self, id: &SessionId) -> Result<Arc<dyn Session>, StoreError> {
        let path = self.path_of(id)?;
        if !path.exists() {
            return Err(StoreError::NotFound(id.clone()));
        }
        Self::open_path(&path, self.clock.clone())
    }

    fn list(&self) -> Vec<SessionId> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut ids: Vec<SessionId> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
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
        let mut file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&path)
            .map_err(|source| match source.kind() {
                std::io::ErrorKind::AlreadyExists => StoreError::AlreadyExists(header.id.clone()),
                _ => io_error(&path, source),
            })?;
        let mut bytes = Vec::new();
        write_line(&mut bytes, &header);
        for event in &events {
            event.write_line(&mut bytes);
        }
        file.write_all(&bytes)
            .and_then(|()| file.sync_all())
            .map_err(|source| io_error(&path, source))?;
        if let Ok(dir) = File::open(&self.dir) {
            // Makes the new name durable; failure here only weakens crash safety.
            let _ = dir.sync_all();
        }
        Ok(Arc::new(JsonlSession::new(
            header,
            events,
            self.clock.clone(),
            &path,
            file,
        )))
    }
}

fn write_line(out: &mut Vec<u8>, value: &impl serde::Serialize) {
    // Serializing our own plain structs into a Vec cannot fail.
    if serde_json::to_writer(&mut *out, value).is_ok() {
        out.push(b'\n');
    }
}

struct JsonlSession {
    header: SessionHeader,
    log: EventLog,
    path: PathBuf,
    file: Mutex<FileState>,
}

struct FileState {
    file: File,
    pending: Vec<u8>,
}

impl JsonlSession {
    fn new(
        header: SessionHeader,
        events: Vec<RawEvent>,
        clock: Arc<dyn Clock>,
        path: &Path,
        file: File,
    ) -> Self {
        Self {
            header,
            log: EventLog::new(events, clock),
            path: path.to_path_buf(),
            file: Mutex::new(FileState {
                file,
                pending: Vec::new(),
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, FileState> {
        self.file
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }
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
            let mut state = self.state();
            write_line(&mut state.pending, event);
            Ok(())
        })
    }

    async fn flush(&self) -> Result<(), PersistenceError> {
        let mut state = self.state();
        if state.pending.is_empty() {
            return Ok(());
        }
        let FileState { file, pending } = &mut *state;
        let result = file.write_all(pending).and_then(|()| file.sync_data());
        match result {
            Ok(()) => {
                pending.clear();
                Ok(())
            }
            Err(error) => Err(PersistenceError::Io {
                session: self.header.id.clone(),
                message: format!("{}: {error}", self.path.display()),
            }),
        }
    }
}
