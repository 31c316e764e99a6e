//! The session-log summary behind `harness log`: header, event counts by type, every
//! projection's view and the families' whole-log checks.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use turnkit_core::{
    JsonlStore, Projection, ProjectionState, RawEvent, Session, SessionHeader, StoreError, TornTail,
};
use turnkit_schedule::domain::{ScheduleFold, ScheduleLogError};

use crate::catalog::{SetupError, projections};
use crate::config::FamiliesConfig;

/// The projections of the families at their defaults.
fn default_projections() -> Result<Vec<Arc<dyn Projection>>, SetupError> {
    projections(&FamiliesConfig::defaults())
}

/// Summarizes a session: its header, event counts by type, and the current view of every
/// projection the families register. Returns pretty JSON followed by a newline.
///
/// # Errors
/// [`SetupError`]: a family refused its default configuration (or no runtime could be
/// started).
pub fn summarize_log(session: &dyn Session) -> Result<String, SetupError> {
    let mut summary = LogSummary::new(default_projections()?, session.header());
    for event in session.raw_events_after(0) {
        summary.fold(&event);
    }
    summary.render(session.header()).map_err(SetupError)
}

/// What a log summary keeps while the events stream past: counts, folded projection states
/// and the families' invariant checks, never the events themselves.
struct LogSummary {
    events: u64,
    counts: BTreeMap<String, u64>,
    projections: Vec<(Arc<dyn Projection>, ProjectionState)>,
    todo_problems: Vec<String>,
    schedule: ScheduleFold,
    schedule_error: Option<String>,
}

impl LogSummary {
    fn new(projections: Vec<Arc<dyn Projection>>, header: &SessionHeader) -> Self {
        Self {
            events: 0,
            counts: BTreeMap::new(),
            projections: projections
                .into_iter()
                .map(|projection| {
                    let state = projection.init();
                    (projection, state)
                })
                .collect(),
            todo_problems: Vec::new(),
            schedule: ScheduleFold::with_seed(header.seed_length.unwrap_or(0)),
            schedule_error: None,
        }
    }

    fn fold(&mut self, event: &RawEvent) {
        self.events += 1;
        match self.counts.get_mut(event.r#type()) {
            Some(count) => *count += 1,
            None => {
                self.counts.insert(event.r#type().to_owned(), 1);
            }
        }
        for (projection, state) in &mut self.projections {
            if let Some(next) = projection.apply_raw(state, event) {
                *state = next;
            }
        }
        if let Err(violation) = turnkit_todo::check_raw_event(event) {
            self.todo_problems.push(violation.to_string());
        }
        if let Err(error) = self.schedule.apply_raw(event)
            && self.schedule_error.is_none()
        {
            self.schedule_error = Some(error.to_string());
        }
    }

    fn render(self, header: &SessionHeader) -> Result<String, String> {
        let mut problems = self.todo_problems;
        // The whole-log check of the schedule family: a seed beyond the log comes first.
        let seed = header.seed_length.unwrap_or(0);
        let schedule_error = if seed > self.events {
            Some(
                ScheduleLogError::new(format!(
                    "seedLength {seed} exceeds the log length {}",
                    self.events
                ))
                .to_string(),
            )
        } else {
            self.schedule_error
        };
        if let Some(error) = schedule_error {
            problems.push(format!("schedule/change: {error}"));
        }
        let mut views = serde_json::Map::new();
        for (projection, state) in &self.projections {
            views.insert(projection.key().to_owned(), projection.view(state));
        }
        let header = serde_json::to_value(header).map_err(|e| e.to_string())?;
        let summary = json!({
            "header": header,
            "events": self.events,
            "counts": self.counts,
            "projections": Value::Object(views),
            "problems": problems,
        });
        let mut text = serde_json::to_string_pretty(&summary).map_err(|e| e.to_string())?;
        text.push('\n');
        Ok(text)
    }
}

/// What [`summarize_log_file`] found: the summary text and a torn last line, if any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileSummary {
    /// The summary, as [`summarize_log`] renders it.
    pub text: String,
    /// A torn last line (not part of the summary) that opening the session would truncate.
    pub torn: Option<TornTail>,
}

/// Why [`summarize_log_file`] produced no summary.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogFileError {
    /// The file could not be read, or a line is not a valid header or event.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A family refused its default configuration.
    #[error("{0}")]
    Summary(String),
}

/// Summarizes a JSONL session file without changing it (`harness log`): the same summary as
/// [`summarize_log`], and the torn last line the file ends with, if any. The file is read once
/// and folded as it is read; only the summary's own state is kept (counts, folded
/// projections, problems), so memory is bounded by that state, not by the log.
///
/// # Errors
/// [`LogFileError::Store`] for an unreadable or malformed file; [`LogFileError::Summary`]
/// when a family refused its default configuration.
pub fn summarize_log_file(path: &Path) -> Result<FileSummary, LogFileError> {
    let projections = default_projections().map_err(|SetupError(e)| LogFileError::Summary(e))?;
    let mut summary: Option<LogSummary> = None;
    let (header, torn) = JsonlStore::inspect_each(path, |header, event| {
        summary
            .get_or_insert_with(|| LogSummary::new(projections.clone(), header))
            .fold(&event);
    })?;
    let summary = summary.unwrap_or_else(|| LogSummary::new(projections, &header));
    let text = summary.render(&header).map_err(LogFileError::Summary)?;
    Ok(FileSummary { text, torn })
}
