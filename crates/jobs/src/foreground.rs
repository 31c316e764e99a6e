//! [`wait_foreground`]: the body every foreground job tool shares (bash, the terminal's
//! send, the subagent's `agent`): start a job owned by the caller, wait for it through the
//! registry (so its settlement counts as awaited and no completion notice is sent), then read
//! it (todo-jobs §6).

use std::time::Duration;

use turnkit_core::{AgentId, ToolCall, ToolError};

use crate::{JobError, JobId, JobRead, JobRegistry};

/// What a foreground wait does when its timeout passes with the job still live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnTimeout {
    /// Kills the job with reason `timed out`, then waits up to `settle` for it to settle.
    Kill {
        /// The longest wait for the killed job's settlement.
        settle: Duration,
    },
    /// Waits again, as long as the job lives (a subagent's answer has no deadline).
    WaitAgain,
}

/// The job's output after a foreground wait ([`wait_foreground`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Foreground {
    /// The consuming read after the job settled ([`JobRegistry::read`]).
    pub read: JobRead,
    /// Whether the timeout passed and the job was killed ([`OnTimeout::Kill`]).
    pub timed_out: bool,
}

/// Waits for job `id` on behalf of the foreground tool call `call` (its caller owns the job),
/// up to `timeout` at a time, then reads it.
///
/// While it waits, the call's progress ([`turnkit_core::ToolCall::progress`]) hears a report
/// each interval, with the job's live progress line ([`live_detail`]) as its message.
///
/// # Errors
/// [`ToolError::Aborted`] when `call` is aborted during the wait: the job is killed first
/// with reason `aborted` (a failed kill is logged as a warning). Every other registry error
/// becomes [`ToolError::msg`] with the error's text.
pub async fn wait_foreground(
    jobs: &dyn JobRegistry,
    id: &JobId,
    call: &ToolCall,
    timeout: Duration,
    on_timeout: OnTimeout,
) -> Result<Foreground, ToolError> {
    let caller: Option<AgentId> = call.caller.as_ref().map(|a| a.id().clone());
    let caller = caller.as_ref();
    let message = |error: JobError| ToolError::msg(error.to_string());
    let settled = async {
        loop {
            match jobs
                .wait(id, timeout, caller, Some(call.cancel.clone()))
                .await
            {
                Ok(snapshot) if snapshot.status.is_terminal() => return Ok(false),
                Ok(_) => match on_timeout {
                    OnTimeout::Kill { settle } => {
                        jobs.kill(id, caller, Some("timed out")).map_err(message)?;
                        jobs.wait(id, settle, caller, None).await.map_err(message)?;
                        return Ok(true);
                    }
                    OnTimeout::WaitAgain => {}
                },
                Err(JobError::WaitAborted) => {
                    if let Err(error) = jobs.kill(id, caller, Some("aborted")) {
                        tracing::warn!("jobs: killing aborted foreground job {id} failed: {error}");
                    }
                    return Err(ToolError::Aborted);
                }
                Err(error) => return Err(message(error)),
            }
        }
    };
    let timed_out = call
        .progress
        .tick_while(settled, || live_detail(jobs, id, caller))
        .await?;
    let read = jobs.read(id, caller).map_err(message)?;
    Ok(Foreground { read, timed_out })
}

/// The live progress line of job `id` as `caller` sees it: its `detail` while it is not
/// terminal; `None` once it settled, when it has none, or when `caller` may not see it.
pub fn live_detail(jobs: &dyn JobRegistry, id: &JobId, caller: Option<&AgentId>) -> Option<String> {
    let snapshot = jobs.get(id, caller).ok()?;
    if snapshot.status.is_terminal() {
        return None;
    }
    snapshot.detail.as_deref().map(str::to_owned)
}
