//! The tool catalog and the session-log summary behind `harness tools` and `harness log`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use turnkit_core::{
    Agent, JsonlStore, Projection, ProjectionState, RawEvent, Session, SessionHeader, StoreError,
    ToolDefinition, TornTail,
};
use turnkit_schedule::domain::{ScheduleFold, ScheduleLogError};

use turnkit_testkit::{ManualClock, MemoryHarness};

use crate::plugins::{self, FamilyConfigs};
use crate::runtime::{RunFailure, block_on_paused};

/// Runs `body` against a host with every family installed at its defaults, on a fresh
/// paused runtime (from synchronous code or inside any tokio runtime).
fn with_default_host<T: Send>(
    body: impl AsyncFnOnce(&Arc<MemoryHarness>) -> Result<T, String> + Send,
) -> Result<T, String> {
    let outcome = block_on_paused(async move || {
        let host = MemoryHarness::new(Arc::new(ManualClock::at_default()));
        let installed = plugins::install(&host, &FamilyConfigs::default())?;
        let result = body(&host).await;
        host.dispose_all().await;
        installed.dispose().await;
        result
    });
    match outcome {
        Ok(result) => result,
        Err(RunFailure::Runtime(error)) => Err(format!("cannot start a runtime: {error}")),
        Err(RunFailure::Panic(message)) => Err(format!("internal error: {message}")),
    }
}

/// Every tool definition the families register with default configuration, as a root agent
/// sees them (global tools first, then per-agent tools), in registration order: the tools
/// `harness mcp` serves. The tools that need the host's own model step (turnkit-subagent's
/// `agent`) are left out; [`host_tool_catalog`] includes them.
///
/// # Errors
/// [`SetupError`]: a family refused its default configuration, or no runtime could be
/// started.
pub fn tool_catalog() -> Result<Vec<ToolDefinition>, SetupError> {
    Ok(host_tool_catalog()?
        .into_iter()
        .filter(|d| d.name != turnkit_subagent::TOOL_NAME)
        .collect())
}

/// [`tool_catalog`] plus the tools a host with a model step adds (turnkit-subagent's
/// `agent`, after `bash`), as a root agent of such a host sees them: the catalog of
/// `docs/tool-catalog.md` ([`crate::catalog_markdown`] renders it).
///
/// # Errors
/// As [`tool_catalog`].
pub fn host_tool_catalog() -> Result<Vec<ToolDefinition>, SetupError> {
    with_default_host(async |host| {
        let agent = host
            .create_session(SessionHeader::new("catalog"))
            .map_err(|e| e.to_string())?;
        turnkit_testkit::settle().await;
        Ok(host.tools().definitions(Some(&agent.scope_chain())))
    })
    .map_err(SetupError)
}

/// The default host behind [`tool_catalog`] and the log summaries could not be set up; the
/// text says why (a family's configuration message, `cannot start a runtime: …`, or
/// `internal error: …`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SetupError(pub String);

/// Summarizes a session: its header, event counts by type, and the current view of every
/// projection the families register. Returns pretty JSON followed by a newline.
///
/// # Errors
/// [`SetupError`]: a family refused its default configuration.
pub fn summarize_log(session: &dyn Session) -> Result<String, SetupError> {
    let mut summary = LogSummary::new(default_projections()?, session.header());
    for event in session.raw_events_after(0) {
        summary.fold(&event);
    }
    summary.render(session.header()).map_err(SetupError)
}

/// The projections the families register with default configuration.
fn default_projections() -> Result<Vec<Arc<dyn Projection>>, SetupError> {
    with_default_host(async |host| Ok(host.projections().projections())).map_err(SetupError)
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
