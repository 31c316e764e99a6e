//! A send to a terminal as a job of kind `pty-send` (todo-jobs §6, PTY send), and how its
//! response ends.

use std::sync::Arc;
use std::time::Duration;

use turnkit_core::Clock;
use turnkit_jobs::{CancellationToken, JobHooks, JobKind, JobOutcome, JobStart, StartGate};

use crate::terminal::Capture;
use crate::{Terminal, TerminalId};

/// The job kind of a terminal send.
pub const KIND: &str = "pty-send";

/// How a send's response ends: the first of these, checked in this order after every
/// change of the terminal.
///
/// 1. The call is cancelled (`job_kill`, an aborted foreground call) → `killed`.
/// 2. `wait_for` is set and the text has appeared in the response (escape sequences
///    removed, `\r\n` as `\n`) → `completed`, detail `wait_for matched`.
/// 3. The program has exited and nothing holds the terminal any more → `completed`, detail
///    `terminal exited (<how>)`, e.g. `terminal exited (exit code: 0)`.
/// 4. Without `wait_for`: nothing was printed for `settle` (measured on the host clock from
///    the write, restarted by every output) → `completed`, detail
///    `output quiet for <settle>ms`.
/// 5. `timeout` has passed since the send started → `completed`, detail
///    `timed out after <ms>ms`, plus ` before "<wait_for>" appeared` with `wait_for`.
///
/// Writing the input fails → `failed` with `Error: <message>` as detail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SendEnd {
    /// Text whose appearance ends the response.
    pub wait_for: Option<String>,
    /// The quiet window.
    pub settle: Duration,
    /// The longest wait.
    pub timeout: Duration,
}

/// One send: the bytes to type and how the response ends.
#[derive(Clone, Debug)]
pub struct Send {
    /// The bytes written to the terminal (text, then keys).
    pub input: Vec<u8>,
    /// The label's text part: the call's `text`, or `(input)` when it had none.
    pub label_text: String,
    /// See [`SendEnd`].
    pub end: SendEnd,
}

/// Why a send could not start. `Display` is the model-facing text.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// Another send of the same terminal is still collecting its response (exact:
    /// `terminal <id> is busy with another send; wait for it or job_kill it first`).
    #[error("terminal {0} is busy with another send; wait for it or job_kill it first")]
    Busy(TerminalId),
}

fn millis(duration: Duration) -> u128 {
    duration.as_millis()
}

/// The start request of a send (todo-jobs §6): kind `pty-send`, label
/// `<terminal id>: <text or (input)>`, `outputLimitBytes` = `limit` (the plugin's
/// `maxResultBytes`), no owner (the saved start, [`turnkit_jobs::start_saved`], sets it).
/// `run` makes this send the terminal's active one (refused with [`SendError::Busy`] while
/// another is active, and then nothing is registered) and starts collecting; nothing is
/// typed until `gate` opens (the job's start is saved), and when it closes instead the job
/// ends `killed` with nothing typed. The job is a stream job whose `read_output` is the
/// consuming delta of the response (see [`SendEnd`] for how it ends).
pub fn send_job_start(
    terminal: Terminal,
    id: &TerminalId,
    send: Send,
    limit: u64,
    clock: Arc<dyn Clock>,
    gate: StartGate,
) -> JobStart {
    let label = format!("{id}: {}", send.label_text);
    let id = id.clone();
    let keep = usize::try_from(limit.saturating_mul(2)).unwrap_or(usize::MAX);
    JobStart::new(JobKind::new(KIND), label, move || {
        let capture = Capture::new(keep, send.end.wait_for.clone());
        terminal
            .attach(&capture)
            .map_err(|()| SendError::Busy(id.clone()))?;
        let cancel = CancellationToken::new();
        let reader = capture.clone();
        let token = cancel.clone();
        let done = async move {
            let saved = tokio::select! {
                biased;
                () = token.cancelled() => false,
                opened = gate.opened() => opened,
            };
            if !saved {
                terminal.detach(&capture);
                return Ok(JobOutcome::killed());
            }
            let outcome = collect(&terminal, &capture, send, &token, clock.as_ref()).await;
            terminal.detach(&capture);
            Ok(outcome)
        };
        Ok(JobHooks::new(
            move |_reason| {
                cancel.cancel();
                Ok(())
            },
            done,
        )
        .with_read_output(move || Ok(reader.read())))
    })
    .with_output_limit_bytes(limit)
}

async fn collect(
    terminal: &Terminal,
    capture: &Capture,
    send: Send,
    cancel: &CancellationToken,
    clock: &dyn Clock,
) -> JobOutcome {
    let end = send.end;
    let mut activity = terminal.activity();
    let mut deadline = clock.sleep(end.timeout);
    let timed_out = || {
        let mut detail = format!("timed out after {}ms", millis(end.timeout));
        if let Some(pattern) = &end.wait_for {
            detail.push_str(&format!(
                " before {} appeared",
                serde_json::Value::from(pattern.as_str())
            ));
        }
        JobOutcome::completed().with_detail(detail)
    };
    if !send.input.is_empty() {
        tokio::select! {
            biased;
            () = cancel.cancelled() => return JobOutcome::killed(),
            written = terminal.write(&send.input) => {
                if let Err(error) = written {
                    return JobOutcome::failed().with_detail(format!("Error: {error}"));
                }
            }
            () = &mut deadline => return timed_out(),
        }
    }
    let mut quiet = clock.sleep(end.settle);
    loop {
        if cancel.is_cancelled() {
            return JobOutcome::killed();
        }
        if capture.matched() {
            return JobOutcome::completed().with_detail("wait_for matched");
        }
        if terminal.ended() {
            let how = terminal.exit().unwrap_or_default();
            return JobOutcome::completed().with_detail(format!("terminal exited ({how})"));
        }
        tokio::select! {
            biased;
            () = cancel.cancelled() => return JobOutcome::killed(),
            changed = activity.changed() => {
                if changed.is_err() {
                    // The terminal is gone: nothing more can arrive.
                    return JobOutcome::completed().with_detail("terminal exited");
                }
                quiet = clock.sleep(end.settle);
            }
            () = &mut quiet, if end.wait_for.is_none() => {
                return JobOutcome::completed()
                    .with_detail(format!("output quiet for {}ms", millis(end.settle)));
            }
            () = &mut deadline => return timed_out(),
        }
    }
}
