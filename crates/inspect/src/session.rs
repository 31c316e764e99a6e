//! One session file followed from the outside: read without a lock, only the bytes added since
//! the last read, each complete line folded with the families' own folds.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use turnkit_core::{Projection, ProjectionState, RawEvent, SessionHeader};
use turnkit_jobs_local::JournalFold;
use turnkit_schedule::domain::ScheduleFold;
use turnkit_todo::{TodoItem, TodoStatus, TodosProjection, TodosState};

/// The event that clears the `todos` projection.
const TURN_START: &str = "turn/start";
/// A subagent child's first event; its `parent` key names the parent session.
const SUBAGENT_START: &str = turnkit_subagent::SUBAGENT_START;

/// What the families' folds hold for one session log.
pub(crate) struct Folds {
    /// turnkit-todo's `todos` projection state.
    todos: ProjectionState,
    /// The same projection fed only the `todo/write` events: the last plan written, which
    /// stays visible after a `turn/start` cleared the projection.
    last_plan: ProjectionState,
    /// The `seq` of the last `todo/write`.
    pub(crate) last_plan_seq: Option<u64>,
    /// The `seq` of the `turn/start` that cleared the projection, if it is clear.
    pub(crate) cleared_at: Option<u64>,
    /// turnkit-schedule's fold.
    pub(crate) schedule: ScheduleFold,
    /// The first error the schedule fold reported (the log is then `corrupt_schedule_log`).
    pub(crate) schedule_error: Option<String>,
    /// turnkit-jobs-local's journal fold.
    pub(crate) jobs: JournalFold,
    /// The journal events the fold refused, with their error.
    pub(crate) journal_errors: Vec<String>,
    /// The number of `turn/start` events.
    pub(crate) turns: u64,
    /// The parent named by a `subagent/start`.
    pub(crate) parent: Option<String>,
}

impl Folds {
    fn new(seed_length: u64) -> Self {
        Self {
            todos: TodosProjection.init(),
            last_plan: TodosProjection.init(),
            last_plan_seq: None,
            cleared_at: None,
            schedule: ScheduleFold::with_seed(seed_length),
            schedule_error: None,
            jobs: JournalFold::with_seed(seed_length),
            journal_errors: Vec::new(),
            turns: 0,
            parent: None,
        }
    }

    fn apply(&mut self, event: &RawEvent) {
        if let Some(next) = TodosProjection.apply_raw(&self.todos, event) {
            self.todos = next;
            self.cleared_at = (event.r#type() == TURN_START).then(|| event.seq());
        }
        if event.r#type() == turnkit_todo::TODO_WRITE_EVENT {
            if let Some(next) = TodosProjection.apply_raw(&self.last_plan, event) {
                self.last_plan = next;
            }
            self.last_plan_seq = Some(event.seq());
        }
        if let Err(error) = self.schedule.apply_raw(event)
            && self.schedule_error.is_none()
        {
            self.schedule_error = Some(error.to_string());
        }
        if let Err(error) = self.jobs.apply_raw(event) {
            self.journal_errors.push(error.to_string());
        }
        match event.r#type() {
            TURN_START => self.turns += 1,
            SUBAGENT_START if self.parent.is_none() => {
                self.parent = event
                    .data()
                    .get("parent")
                    .and_then(|parent| parent.as_str())
                    .map(str::to_owned);
            }
            _ => {}
        }
    }

    /// The `todos` projection as it stands: `None` before any write and after `turn/start`.
    pub(crate) fn todos(&self) -> TodosState {
        TodosProjection::state(&self.todos)
    }

    /// The last plan written, even when a `turn/start` has cleared the projection since.
    pub(crate) fn last_plan(&self) -> TodosState {
        TodosProjection::state(&self.last_plan)
    }

    /// Items of the current plan that are not completed.
    pub(crate) fn open_todos(&self) -> usize {
        self.todos().map_or(0, |items| open_count(&items))
    }

    /// Jobs the log says are running (started here, not settled, not reported lost).
    pub(crate) fn running_jobs(&self) -> usize {
        self.jobs
            .jobs()
            .iter()
            .filter(|job| !job.inherited && job.running())
            .count()
    }

    /// Reminders still active.
    pub(crate) fn active_reminders(&self) -> usize {
        if self.schedule_error.is_some() {
            0
        } else {
            self.schedule.active_len()
        }
    }
}

pub(crate) fn open_count(items: &[TodoItem]) -> usize {
    items
        .iter()
        .filter(|item| item.status != TodoStatus::Completed)
        .count()
}

/// One session file as last read.
pub(crate) struct SessionLog {
    pub(crate) path: PathBuf,
    /// The id the file name gives (`<id>.jsonl`).
    pub(crate) id: String,
    /// Bytes folded so far: the start of the first line not read yet.
    offset: u64,
    /// The file's inode when it was first read; another inode is another file.
    inode: Option<u64>,
    /// Complete lines read (the header included).
    lines: usize,
    pub(crate) header: Option<SessionHeader>,
    pub(crate) folds: Folds,
    /// Every event folded, in `seq` order.
    pub(crate) events: Vec<RawEvent>,
    /// The length of an unterminated last line (a flush in progress or a torn tail), not read.
    pub(crate) torn: Option<u64>,
    /// Why the log cannot be read past a line (the store's message, with its line number).
    pub(crate) error: Option<String>,
    /// The file's last modification time.
    pub(crate) modified: Option<DateTime<Utc>>,
    /// Where the log is, for the page: the file, or the store's table.
    pub(crate) place: String,
    /// The host holding a live lease on the session and when that lease expires (the
    /// PostgreSQL store); `None` for a file or an unowned session.
    pub(crate) owner: Option<(String, DateTime<Utc>)>,
}

impl SessionLog {
    pub(crate) fn new(path: PathBuf, id: String) -> Self {
        Self {
            place: path.display().to_string(),
            owner: None,
            path,
            id,
            offset: 0,
            inode: None,
            lines: 0,
            header: None,
            folds: Folds::new(0),
            events: Vec::new(),
            torn: None,
            error: None,
            modified: None,
        }
    }

    /// A log read from a store in one piece (`place` names where, for the page); a read that
    /// failed shows as the session's error.
    pub(crate) fn from_store(
        id: String,
        place: String,
        read: Result<(SessionHeader, Vec<RawEvent>), turnkit_core::StoreError>,
    ) -> Self {
        let mut log = Self::new(PathBuf::new(), id);
        log.place = place;
        match read {
            Ok((header, events)) => {
                log.folds = Folds::new(header.seed_length.unwrap_or(0));
                log.header = Some(header);
                log.extend(events);
            }
            Err(error) => log.error = Some(error.to_string()),
        }
        log
    }

    /// The seq of the last event folded (0: none).
    pub(crate) fn last_seq(&self) -> u64 {
        self.events.last().map_or(0, RawEvent::seq)
    }

    /// Folds the events of a store's log past the last one folded (earlier ones, delivered
    /// twice, are skipped); a gap marks the log malformed. Returns whether any was folded.
    pub(crate) fn extend(&mut self, events: impl IntoIterator<Item = RawEvent>) -> bool {
        let mut changed = false;
        for event in events {
            if self.error.is_some() {
                break;
            }
            let expected = self.last_seq() + 1;
            if event.seq() < expected {
                continue;
            }
            if event.seq() != expected {
                self.error = Some(format!(
                    "{}: seq {} where {expected} was expected",
                    self.place,
                    event.seq()
                ));
                return true;
            }
            self.folds.apply(&event);
            self.events.push(event);
            changed = true;
        }
        changed
    }

    /// Reads and folds what was appended since the last call (the whole file the first time,
    /// or when it was replaced or shrank). Opens the file read-only and takes no lock.
    /// Returns whether anything visible changed.
    pub(crate) fn catch_up(&mut self) -> bool {
        let mut file = match File::open(&self.path) {
            Ok(file) => file,
            Err(error) => {
                return self.fail(format!("cannot read {}: {error}", self.path.display()));
            }
        };
        let meta = match file.metadata() {
            Ok(meta) => meta,
            Err(error) => {
                return self.fail(format!("cannot read {}: {error}", self.path.display()));
            }
        };
        if self.inode.is_some_and(|inode| inode != meta.ino()) || meta.len() < self.offset {
            *self = Self::new(self.path.clone(), self.id.clone());
        }
        self.inode = Some(meta.ino());
        self.modified = meta.modified().ok().map(DateTime::<Utc>::from);
        if self.error.is_some() {
            return false;
        }
        let pending = meta.len() - self.offset;
        if pending == 0 || self.torn == Some(pending) {
            return false;
        }
        let mut bytes = Vec::new();
        let read = file
            .seek(SeekFrom::Start(self.offset))
            .and_then(|_| file.take(pending).read_to_end(&mut bytes));
        if let Err(error) = read {
            return self.fail(format!("cannot read {}: {error}", self.path.display()));
        }
        self.fold_bytes(&bytes);
        true
    }

    /// Folds the complete lines of `bytes` (which start at `offset`); an unterminated last
    /// line is left for the next read.
    fn fold_bytes(&mut self, bytes: &[u8]) {
        let mut start = 0;
        while let Some(end) = bytes[start..].iter().position(|&b| b == b'\n') {
            let line = &bytes[start..start + end];
            self.lines += 1;
            if let Err(message) = self.fold_line(line) {
                self.error = Some(format!("{}:{}: {message}", self.path.display(), self.lines));
                return;
            }
            start += end + 1;
            self.offset += end as u64 + 1;
        }
        let rest = (bytes.len() - start) as u64;
        self.torn = (rest > 0).then_some(rest);
    }

    fn fold_line(&mut self, line: &[u8]) -> Result<(), String> {
        if self.header.is_none() {
            let header: SessionHeader =
                serde_json::from_slice(line).map_err(|error| format!("bad header: {error}"))?;
            if header.id.as_str() != self.id {
                return Err(format!(
                    "the header names session {:?}, not {:?}",
                    header.id.as_str(),
                    self.id
                ));
            }
            self.folds = Folds::new(header.seed_length.unwrap_or(0));
            self.header = Some(header);
            return Ok(());
        }
        let event = RawEvent::from_line(line).map_err(|error| format!("bad event: {error}"))?;
        let expected = self.events.last().map_or(1, |last| last.seq() + 1);
        if event.seq() != expected {
            return Err(format!("seq {} where {expected} was expected", event.seq()));
        }
        self.folds.apply(&event);
        self.events.push(event);
        Ok(())
    }

    fn fail(&mut self, message: String) -> bool {
        let changed = self.error.as_ref() != Some(&message);
        self.error = Some(message);
        changed
    }

    /// The time of the first event, if any.
    pub(crate) fn created(&self) -> Option<DateTime<Utc>> {
        self.events.first().map(RawEvent::time)
    }

    /// The time of the last event, else the file's modification time.
    pub(crate) fn last_activity(&self) -> Option<DateTime<Utc>> {
        self.events.last().map(RawEvent::time).or(self.modified)
    }
}

/// The session id a file name gives: `<id>.jsonl`, not a dot-file (temporary creates).
pub(crate) fn session_id_of(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    if name.starts_with('.') {
        return None;
    }
    name.strip_suffix(".jsonl")
        .filter(|id| !id.is_empty())
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_with(bytes: &[u8]) -> SessionLog {
        let mut log = SessionLog::new(PathBuf::from("/x/s1.jsonl"), "s1".to_owned());
        log.fold_bytes(bytes);
        log
    }

    #[test]
    fn a_torn_tail_waits_and_a_gap_is_an_error() {
        let head = b"{\"id\":\"s1\"}\n{\"seq\":1,\"type\":\"turn/start\",\"time\":\"2026-08-05T12:00:00.000Z\",\"data\":{\"turn\":1}}\n{\"seq\":2,";
        let log = log_with(head);
        assert_eq!(log.events.len(), 1);
        assert_eq!(log.torn, Some(9));
        assert_eq!(log.error, None);
        let gap = log_with(b"{\"id\":\"s1\"}\n{\"seq\":2,\"type\":\"turn/start\",\"time\":\"2026-08-05T12:00:00.000Z\",\"data\":{\"turn\":1}}\n");
        assert_eq!(
            gap.error.as_deref(),
            Some("/x/s1.jsonl:2: seq 2 where 1 was expected")
        );
        let other = log_with(b"{\"id\":\"s2\"}\n");
        assert_eq!(
            other.error.as_deref(),
            Some("/x/s1.jsonl:1: the header names session \"s2\", not \"s1\"")
        );
    }

    #[test]
    fn dot_files_are_not_sessions() {
        assert_eq!(session_id_of(Path::new("/d/.create-1-2.tmp")), None);
        assert_eq!(session_id_of(Path::new("/d/.a.jsonl")), None);
        assert_eq!(
            session_id_of(Path::new("/d/a.b.jsonl")).as_deref(),
            Some("a.b")
        );
    }
}
