//! Helpers shared by the suites: process options and `/proc` inspection.

use std::sync::Arc;
use std::time::Duration;

use harness_bash::{BashProcess, ProcessEnd, ProcessOptions};
use harness_core::SystemClock;

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
/// sandbox PID 1 does not reap, so killed grandchildren linger as zombies (ECOSYSTEM.md §2).
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
