//! A real-time in-memory host with the job registry, tool-jobs and the terminal tools, and
//! `/proc` inspection.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use turnkit_core::{Harness, SessionHeader, SessionId, SystemClock, ToolOutput};
use turnkit_jobs_local::JobsConfig;
use turnkit_terminal::TerminalConfig;
use turnkit_testkit::{HostRecord, MemoryAgent, MemoryHarness};
use turnkit_tool_jobs::ToolJobsConfig;

/// A generous real-time bound for anything a test awaits.
pub(crate) const LIMIT: Duration = Duration::from_secs(30);

pub(crate) struct Host {
    pub(crate) harness: Arc<MemoryHarness>,
    pub(crate) jobs: turnkit_jobs_local::Installed,
    pub(crate) terminal: turnkit_terminal::Installed,
    _tool_jobs: turnkit_tool_jobs::Installed,
    _records: Arc<Mutex<Vec<HostRecord>>>,
}

impl Host {
    /// A host on the system clock with `terminal` as the plugin configuration.
    pub(crate) fn new(terminal: &Value) -> Self {
        Self::with_clock(terminal, Arc::new(SystemClock))
    }

    /// A host on `clock` with `terminal` as the plugin configuration.
    pub(crate) fn with_clock(terminal: &Value, clock: Arc<dyn turnkit_core::Clock>) -> Self {
        let harness = MemoryHarness::new(clock);
        let records = Arc::new(Mutex::new(Vec::new()));
        let sink = records.clone();
        harness.set_recorder(Arc::new(move |record| sink.lock().unwrap().push(record)));
        let host: Arc<dyn Harness> = harness.as_dyn();
        let jobs = turnkit_jobs_local::install(&host, JobsConfig::default()).unwrap();
        let tool_jobs = turnkit_tool_jobs::install(&host, ToolJobsConfig::default()).unwrap();
        let config = TerminalConfig::from_json(terminal).unwrap();
        let terminal = turnkit_terminal::install(&host, config).unwrap();
        Self {
            harness,
            jobs,
            terminal,
            _tool_jobs: tool_jobs,
            _records: records,
        }
    }

    pub(crate) fn session(&self, id: &str) -> Arc<MemoryAgent> {
        self.harness.create_session(SessionHeader::new(id)).unwrap()
    }

    /// Runs a tool call as `session`, bounded by [`LIMIT`].
    pub(crate) async fn call(&self, session: Option<&str>, tool: &str, args: Value) -> ToolOutput {
        let id = session.map(SessionId::from);
        tokio::time::timeout(LIMIT, self.harness.execute(tool, args, id.as_ref()))
            .await
            .expect("the call finished within the limit")
    }
}

/// A marker unique to this test and run.
pub(crate) fn unique(test: &str) -> String {
    format!("harness-terminal-{test}-{}", std::process::id())
}

/// Live (not zombie) processes whose `argv[0]` is `marker`.
pub(crate) fn survivors(marker: &str) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut count = 0;
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if cmdline.split(|b| *b == 0).next() != Some(marker.as_bytes()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let state = stat
            .rfind(')')
            .and_then(|close| stat[close + 1..].split_whitespace().next());
        if !matches!(state, Some("Z" | "X") | None) {
            count += 1;
        }
    }
    count
}

/// Polls `/proc` (every 5 ms, at most 5 s: process start and exit have no event to wait
/// on) until `marker` has `expected` live processes, and returns the last count.
pub(crate) async fn settle_count(marker: &str, expected: usize) -> usize {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let count = survivors(marker);
        if count == expected || std::time::Instant::now() >= deadline {
            return count;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
