//! [`JsonlStore`]: the folder of session files, with atomic create and listing.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::fault::{io_error, not_found_or_io};
use super::lock::lock;
use super::open::open_file;
use super::parse::{SessionFile, TornTail, parse_bytes, parse_bytes_each};
use super::session::{JsonlSession, write_line};
use crate::store::error::StoreError;
use crate::store::seam::SessionStore;
use crate::{Clock, RawEvent, Session, SessionHeader, SessionId};

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
pub(super) static TEMP_SERIAL: AtomicU64 = AtomicU64::new(0);

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
