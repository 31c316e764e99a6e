//! Helpers shared by the suites: process options and `/proc` inspection.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use turnkit_bash::{BashConfig, BashProcess, ProcessEnd, ProcessOptions};
use turnkit_core::{AgentId, Harness, SessionHeader, SessionId, SystemClock, ToolOutput};
use turnkit_jobs::{JobId, JobSnapshot};
use turnkit_jobs_local::JobsConfig;
use turnkit_testkit::{HostRecord, MemoryAgent, MemoryHarness};
use turnkit_tool_jobs::ToolJobsConfig;

/// A generous real-time bound for anything a test awaits.
pub(crate) const LIMIT: Duration = Duration::from_secs(30);

/// Options for `command` with the system clock and a short grace.
pub(crate) fn options(command: &str) -> ProcessOptions {
    let mut options = ProcessOptions::new(command, Arc::new(SystemClock));
    options.kill_grace = Duration::from_millis(300);
    options
}

/// Waits (bounded by [`LIMIT`]) for the process to end.
pub(crate) async fn finish(process: &BashProcess) -> ProcessEnd {
    tokio::time::timeout(LIMIT, process.wait())
        .await
        .expect("the process ended within the limit")
}

/// Reads until `needle` has appeared in the output, returning everything read.
pub(crate) async fn read_until(process: &BashProcess, needle: &str) -> String {
    let mut seen = String::new();
    tokio::time::timeout(LIMIT, async {
        while !seen.contains(needle) {
            process.output_ready().await;
            seen.push_str(&process.read());
            if process.try_end().is_some() && !seen.contains(needle) {
                seen.push_str(&process.read());
                break;
            }
        }
    })
    .await
    .expect("the output appeared within the limit");
    assert!(seen.contains(needle), "{needle:?} not in {seen:?}");
    seen
}

/// The processes whose process group is `pgid` and that are not zombies (state `Z`): in this
/// sandbox PID 1 does not reap, so killed grandchildren linger as zombies until they are reaped.
pub(crate) fn live_group_members(pgid: u32) -> Vec<u32> {
    let mut members = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return members;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid pgrp …`; comm may contain spaces and parentheses.
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let mut fields = stat[close + 1..].split_whitespace();
        let state = fields.next().unwrap_or("");
        let _ppid = fields.next();
        let pgrp = fields.next().and_then(|s| s.parse::<u32>().ok());
        if pgrp == Some(pgid) && state != "Z" {
            members.push(pid);
        }
    }
    members
}

/// Polls `condition` (every 10 ms, bounded by [`LIMIT`]) until it holds: for states only
/// `/proc` can show, such as a shell having exited while its children run on.
pub(crate) async fn wait_until(mut condition: impl FnMut() -> bool) {
    tokio::time::timeout(LIMIT, async {
        while !condition() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the condition held within the limit");
}

/// Asserts that no process of group `pgid` is alive. A process that has closed its pipes
/// (so the job settled) may still be inside `exit` for a moment before it turns into a
/// zombie, so this polls for up to 5 s.
pub(crate) async fn assert_group_gone(pgid: u32) {
    let gone = tokio::time::timeout(Duration::from_secs(5), async {
        while !live_group_members(pgid).is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(
        gone.is_ok(),
        "group {pgid} still has live members: {:?}",
        live_group_members(pgid)
    );
}

/// The bash process whose command line contains `marker` (its pid is the group id).
pub(crate) fn find_shell(marker: &str) -> Option<u32> {
    let entries = std::fs::read_dir("/proc").ok()?;
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
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        if args.first() == Some(&&b"bash"[..])
            && args
                .iter()
                .any(|a| a.windows(marker.len()).any(|w| w == marker.as_bytes()))
        {
            return Some(pid);
        }
    }
    None
}

/// A unique marker for a test's command line.
pub(crate) fn marker(test: &str) -> String {
    format!("harness-bash-test-{test}-{}", std::process::id())
}

/// An in-memory host (real time) with the local job registry, tool-jobs and the bash tool.
pub(crate) struct Host {
    pub(crate) harness: Arc<MemoryHarness>,
    pub(crate) jobs: turnkit_jobs_local::Installed,
    pub(crate) bash: turnkit_bash::Installed,
    _tool_jobs: turnkit_tool_jobs::Installed,
    records: Arc<Mutex<Vec<HostRecord>>>,
    pub(crate) spill: tempfile::TempDir,
}

impl Host {
    /// A host with the default configurations except `bash` and `jobs` (JSON objects; the
    /// bash spill folder defaults to a temporary folder of the test).
    pub(crate) fn new(bash: &Value, jobs: Value) -> Self {
        let harness = MemoryHarness::new(Arc::new(SystemClock));
        let records = Arc::new(Mutex::new(Vec::new()));
        let sink = records.clone();
        harness.set_recorder(Arc::new(move |record| sink.lock().unwrap().push(record)));
        let host: Arc<dyn Harness> = harness.as_dyn();
        let jobs_config: JobsConfig = serde_json::from_value(jobs).unwrap();
        let jobs = turnkit_jobs_local::install(&host, jobs_config).unwrap();
        let tool_jobs = turnkit_tool_jobs::install(&host, ToolJobsConfig::default()).unwrap();
        let spill = tempfile::tempdir().unwrap();
        let mut bash_config = BashConfig::from_json(bash).unwrap();
        if bash_config.spill_dir.is_none() {
            bash_config.spill_dir = Some(spill.path().to_path_buf());
        }
        let bash = turnkit_bash::install(&host, bash_config).unwrap();
        Self {
            harness,
            jobs,
            bash,
            _tool_jobs: tool_jobs,
            records,
            spill,
        }
    }

    /// A host with every default (short kill grace).
    pub(crate) fn default_host() -> Self {
        Self::new(&json!({"killGraceMs": 300}), json!({}))
    }

    /// Creates session `id` with a live root agent.
    pub(crate) fn session(&self, id: &str) -> Arc<MemoryAgent> {
        self.harness.create_session(SessionHeader::new(id)).unwrap()
    }

    /// Runs a tool call as `session` (`None`: without an agent), bounded by [`LIMIT`].
    pub(crate) async fn call(&self, session: Option<&str>, tool: &str, args: Value) -> ToolOutput {
        let id = session.map(SessionId::from);
        tokio::time::timeout(LIMIT, self.harness.execute(tool, args, id.as_ref()))
            .await
            .expect("the call finished within the limit")
    }

    /// `job_output` with `wait: true` (as `session`), returning the text.
    pub(crate) async fn collect(&self, session: Option<&str>, id: &str) -> String {
        self.call(session, "job_output", json!({"job_id": id, "wait": true}))
            .await
            .text()
    }

    /// Waits (through the registry, as `session`) until job `id` is terminal.
    pub(crate) async fn settled(&self, session: Option<&str>, id: &str) -> JobSnapshot {
        let caller = session.map(AgentId::from);
        let registry = self.jobs.registry();
        let snapshot = tokio::time::timeout(
            LIMIT,
            registry.wait(
                &JobId::from(id),
                std::time::Duration::from_millis(25_000),
                caller.as_ref(),
                None,
            ),
        )
        .await
        .expect("the wait finished within the limit")
        .unwrap();
        assert!(snapshot.status.is_terminal(), "{snapshot:?}");
        snapshot
    }

    /// Notices the host saw (followups and injects), as `(session, text)`.
    pub(crate) fn notices(&self) -> Vec<(String, String)> {
        self.records
            .lock()
            .unwrap()
            .iter()
            .filter_map(|r| match r {
                HostRecord::Followup { session, text } | HostRecord::Inject { session, text } => {
                    Some((session.clone(), text.clone()))
                }
                HostRecord::Claimed { .. } | HostRecord::Turn { .. } => None,
            })
            .collect()
    }
}
