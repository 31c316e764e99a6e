//! Running one launch: the command is found and started (retried with backoff while it cannot
//! be started), its output's tail kept, and its whole process tree killed at the timeout, by
//! turnkit-bash's containment (the same as a background job's).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use turnkit_bash::{BashProcess, EndStatus, ProcessOptions, signal_name};
use turnkit_core::Clock;

use super::config::{LaunchConfig, command_line};

/// How a launch ended, as recorded in `mcp/launchEnded` (with the launch's id beside it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LaunchOutcome {
    /// The agent's pid (its process group leader); `None` when it never started.
    pub pid: Option<u32>,
    /// When it started (canonical instant); `None` when it never started.
    pub started_at: Option<String>,
    /// How long it ran, in milliseconds (0 when it never started).
    pub duration_ms: u64,
    /// `exit code: N`, `signal: NAME`, `timed out after N ms (process tree killed)`,
    /// `lost: …`, or `not started: …` after the last failed try.
    pub status: String,
    /// The end of its output (stdout, then a `[stderr]` section, as a job's), at most the
    /// configured number of bytes.
    pub output_tail: String,
    /// Why each failed try could not start the command, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_starts: Vec<String>,
}

/// Runs `argv` (already expanded) under `config`'s bounds, with `env` set on top of the
/// inherited environment. Never fails: every way it can
/// end is an outcome. The clock measures the backoff, the timeout and the duration.
pub async fn run_launch(
    config: &LaunchConfig,
    argv: &[String],
    env: &BTreeMap<String, String>,
    clock: &Arc<dyn Clock>,
) -> LaunchOutcome {
    let mut failed_starts = Vec::new();
    let mut backoff = Duration::from_millis(config.retry_backoff_ms);
    for attempt in 0..=config.start_retries {
        if attempt > 0 {
            clock.sleep(backoff).await;
            backoff = backoff.saturating_mul(2);
        }
        let process = match start(argv, env, clock) {
            Ok(process) => process,
            Err(error) => {
                failed_starts.push(error);
                continue;
            }
        };
        let mut outcome = supervise(config, &process, clock).await;
        outcome.failed_starts = failed_starts;
        return outcome;
    }
    LaunchOutcome {
        pid: None,
        started_at: None,
        duration_ms: 0,
        status: format!(
            "not started: {}",
            failed_starts.last().map_or("", String::as_str)
        ),
        output_tail: String::new(),
        failed_starts,
    }
}

/// Finds the command (on `PATH` unless it names a path) and starts it.
fn start(
    argv: &[String],
    env: &BTreeMap<String, String>,
    clock: &Arc<dyn Clock>,
) -> Result<BashProcess, String> {
    let command = argv.first().map_or("", String::as_str);
    if !findable(command) {
        return Err(format!("{command}: command not found"));
    }
    let mut options = ProcessOptions::new(command_line(argv), clock.clone());
    options
        .env
        .extend(env.iter().map(|(k, v)| (k.clone(), v.clone())));
    BashProcess::spawn(options).map_err(|error| error.to_string())
}

/// Whether `command` names an executable file, itself or in a `PATH` folder.
fn findable(command: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable = |path: &Path| {
        path.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if command.is_empty() {
        return false;
    }
    if command.contains('/') {
        return executable(Path::new(command));
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| executable(&dir.join(command))))
}

/// Waits for the started process (killing its tree at the timeout), keeping its output's tail.
async fn supervise(
    config: &LaunchConfig,
    process: &BashProcess,
    clock: &Arc<dyn Clock>,
) -> LaunchOutcome {
    let started = clock.now();
    let mut tail = String::new();
    let mut timed_out = false;
    let timeout = clock.sleep(config.timeout());
    tokio::pin!(timeout);
    let end = process.wait();
    tokio::pin!(end);
    let end = loop {
        tokio::select! {
            end = &mut end => break end,
            () = process.output_ready() => {
                keep_tail(&mut tail, &process.read(), config.output_tail_bytes);
                // `output_ready` returns at once once the process ended: let `end` win.
                tokio::task::yield_now().await;
            }
            () = &mut timeout, if !timed_out => {
                timed_out = true;
                process.cancel();
            }
        }
    };
    keep_tail(&mut tail, &process.read(), config.output_tail_bytes);
    let duration_ms = (clock.now() - started)
        .num_milliseconds()
        .try_into()
        .unwrap_or(0);
    let status = if timed_out {
        format!(
            "timed out after {} ms (process tree killed)",
            config.timeout_ms
        )
    } else {
        match end.status {
            EndStatus::Exited(code) => format!("exit code: {code}"),
            EndStatus::Signaled(signal) => format!("signal: {}", signal_name(signal)),
            EndStatus::Lost(reason) => format!("lost: {reason}"),
        }
    };
    LaunchOutcome {
        pid: Some(process.pid()),
        started_at: Some(turnkit_core::format_instant(started)),
        duration_ms,
        status,
        output_tail: tail,
        failed_starts: Vec::new(),
    }
}

/// Appends `more` to `tail` and keeps its last `max` bytes (cut at a character boundary).
fn keep_tail(tail: &mut String, more: &str, max: usize) {
    tail.push_str(more);
    if tail.len() > max {
        let cut = tail.ceil_char_boundary(tail.len() - max);
        tail.drain(..cut);
    }
}

#[cfg(test)]
mod tests {
    use super::keep_tail;

    #[test]
    fn the_tail_keeps_the_last_bytes_on_a_character_boundary() {
        let mut tail = String::new();
        keep_tail(&mut tail, "abcdé", 3);
        assert_eq!(tail, "dé");
        keep_tail(&mut tail, "xyz", 3);
        assert_eq!(tail, "xyz");
    }
}
