//! The runner: executes the steps of a scenario against the in-memory host and collects the
//! transcript.
//!
//! One topic per file: [`state`] holds the runner and the host it set up (the `config` step),
//! [`steps`] dispatches each step, [`calls`] runs tool calls, [`jobs`] starts fake jobs, bash
//! jobs and terminals, [`waiting`] drives pending work on the manual clock (real jobs and real
//! terminals run in real time), [`lifecycle`] restarts and tears the host down, [`lines`]
//! renders transcript lines and [`clock`] is the real-time clock of `{"mode":"system"}`.

use std::sync::{Arc, Mutex};

use serde_json::Value;
use turnkit_families::{RunFailure, block_on_fresh};
use turnkit_testkit::settle;

use crate::grammar::Step;

mod calls;
mod clock;
mod jobs;
mod lifecycle;
mod lines;
mod state;
mod steps;
mod waiting;

use lines::{error_line, push, take_lines};
use state::Runner;

/// The outcome of a scenario run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Transcript {
    /// One compact JSON object per line, in the order things happened.
    pub lines: Vec<String>,
    /// Whether the run stopped on a scenario error (the last line is then the `error`
    /// line; the CLI exits with status 2).
    pub failed: bool,
}

impl Transcript {
    /// The lines joined with `\n`, with a trailing newline when non-empty.
    pub fn to_text(&self) -> String {
        let mut out = self.lines.join("\n");
        if !out.is_empty() {
            out.push('\n');
        }
        out
    }
}

/// Runs a scenario on a fresh current-thread tokio runtime whose clock is paused (so "let
/// all work that can proceed finish" is exact: a 1 ms tokio sleep completes only once every
/// other task is blocked, and no library timer lives in tokio's clock). Works from synchronous code and from inside any tokio runtime (the
/// scenario then runs on a thread of its own). A panic inside the run keeps the transcript
/// printed so far and ends it with an `internal error` line.
pub fn run_scenario(source: &str) -> Transcript {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    // Paused: "let all work that can proceed finish" is exact on the manual clock.
    let paused = |builder: &mut tokio::runtime::Builder| {
        builder.start_paused(true);
    };
    let outcome = block_on_fresh(paused, async move || run_into(source, sink).await);
    let mut printed = take_lines(&lines);
    match outcome {
        Ok(failed) => Transcript {
            lines: printed,
            failed,
        },
        Err(RunFailure::Runtime(error)) => Transcript {
            lines: vec![error_line(0, &format!("cannot start a runtime: {error}"))],
            failed: true,
        },
        Err(RunFailure::Panic(message)) => {
            // A bug, not a scenario error: keep what was printed and say where it stopped.
            printed.push(error_line(0, &format!("internal error: {message}")));
            Transcript {
                lines: printed,
                failed: true,
            }
        }
    }
}

/// Runs a scenario on the current tokio runtime, which must be a current-thread runtime
/// with a paused clock for the transcript to be deterministic.
pub async fn run_scenario_in_runtime(source: &str) -> Transcript {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let failed = run_into(source, lines.clone()).await;
    Transcript {
        lines: take_lines(&lines),
        failed,
    }
}

/// Runs the steps, appending transcript lines to `lines`; returns whether a scenario
/// error stopped the run.
async fn run_into(source: &str, lines: Arc<Mutex<Vec<String>>>) -> bool {
    let mut runner = Runner::new(lines.clone());
    let mut failed = false;
    for (index, text) in source.lines().enumerate() {
        let line = index + 1;
        let trimmed = text.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let result = match serde_json::from_str::<Value>(trimmed) {
            Ok(value) => match Step::from_value(value) {
                Ok(step) => runner.step(line, step).await,
                Err(message) => Err(message),
            },
            Err(error) => Err(format!("invalid JSON: {error}")),
        };
        if let Err(message) = result {
            push(&lines, error_line(line, &message));
            failed = true;
            break;
        }
        settle().await;
    }
    if let Err(message) = runner.finish().await
        && !failed
    {
        // Not a step's error: line 0, like the runner's own failures.
        push(&lines, error_line(0, &message));
        failed = true;
    }
    failed
}
