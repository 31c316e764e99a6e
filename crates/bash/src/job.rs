//! The [`JobHooks`] producer: a [`BashProcess`] as a background job of kind `bash`
//! (todo-jobs §6).

use turnkit_jobs::{JobHooks, JobKind, JobOutcome, JobStart, StartGate};

use crate::render::signal_name;
use crate::{BashProcess, EndStatus, LimitHits, ProcessEnd, ProcessOptions};

/// Maps how a process ended to its job outcome (todo-jobs §6):
///
/// - ended by a signal → `killed` with `signal: <NAME>` (e.g. `signal: SIGTERM`; a
///   self-signalled exit too);
/// - exited with a code after a cancel request → `killed` with `killed before exit` (the
///   job was stopped; no signal is known for the shell, e.g. it trapped SIGTERM or had
///   already exited while its children held the pipes);
/// - exited with a code otherwise → `completed` with `exit code: <n>` (non-zero included);
/// - status lost after a cancel → `killed before exit`; otherwise `failed` with the reason.
pub fn bash_outcome(end: &ProcessEnd) -> JobOutcome {
    match (&end.status, end.cancel_requested) {
        (EndStatus::Signaled(signal), _) => {
            JobOutcome::killed().with_detail(format!("signal: {}", signal_name(*signal)))
        }
        (EndStatus::Exited(_) | EndStatus::Lost(_), true) => {
            JobOutcome::killed().with_detail("killed before exit")
        }
        (EndStatus::Exited(code), false) => {
            JobOutcome::completed().with_detail(format!("exit code: {code}"))
        }
        (EndStatus::Lost(reason), false) => JobOutcome::failed().with_detail(reason.clone()),
    }
}

/// [`bash_outcome`] with what the job's sandbox limits stopped (see [`crate::Sandbox`]):
/// a shell killed by SIGKILL after the memory limit killed a process → `killed` with
/// `memory limit` (status line `[status: killed, memory limit]`); otherwise the detail of
/// [`bash_outcome`] followed by `, memory limit reached` (a process of the job was killed
/// at the memory limit) and `, pids limit reached` (a fork was refused at the process
/// limit), e.g. `[status: killed, signal: SIGTERM, pids limit reached]`.
pub fn bash_outcome_with(end: &ProcessEnd, hits: LimitHits) -> JobOutcome {
    if hits.memory && end.status == EndStatus::Signaled(9) {
        let mut detail = "memory limit".to_owned();
        if hits.pids {
            detail.push_str(", pids limit reached");
        }
        return JobOutcome::killed().with_detail(detail);
    }
    let mut outcome = bash_outcome(end);
    let mut suffix = String::new();
    if hits.memory {
        suffix.push_str(", memory limit reached");
    }
    if hits.pids {
        suffix.push_str(", pids limit reached");
    }
    if !suffix.is_empty() {
        let detail = outcome.detail.take().unwrap_or_default();
        outcome = outcome.with_detail(format!("{detail}{suffix}"));
    }
    outcome
}

/// `outcome` with the line of the proxy's refusals (see [`BashProcess::refusals`]) at the
/// end of its detail, after `; `: `exit code: 7; network: 1 connection refused
/// (127.0.0.1:8080)`. Unchanged when `refusals` is `None`.
pub fn with_refusals(outcome: JobOutcome, refusals: Option<&str>) -> JobOutcome {
    let Some(line) = refusals else {
        return outcome;
    };
    let mut outcome = outcome;
    let detail = match outcome.detail.take() {
        Some(detail) if !detail.is_empty() => format!("{detail}; {line}"),
        _ => line.to_owned(),
    };
    outcome.with_detail(detail)
}

/// The hooks of a running process: `cancel` stops the process group (SIGTERM, SIGKILL after
/// the grace; the reason is ignored), `done` resolves once the shell is reaped and both pipes
/// are closed, and `read_output` is the consuming delta of [`BashProcess::read`].
///
/// The trace is the process's marker (the job journal's `job/start` records it, and a
/// reopening after the host died stops what still carries it, todo-jobs §5.9).
///
/// The hooks keep the process handle: when the registry drops them (the record is removed),
/// the spill files are deleted, and a still-running process is cancelled.
pub(crate) fn bash_hooks(process: BashProcess) -> JobHooks {
    let done = process.wait();
    let reader = process.clone();
    let trace = process.marker().to_owned();
    let counters = process.clone();
    JobHooks::new(
        move |_reason| {
            process.cancel();
            Ok(())
        },
        async move {
            let outcome = bash_outcome_with(&done.await, counters.limit_hits());
            Ok(with_refusals(outcome, counters.refusals().as_deref()))
        },
    )
    .with_read_output(move || Ok(reader.read()))
    .with_trace(trace)
}

/// The start request of a bash job (todo-jobs §6): kind `bash`, the command as label, no
/// output limit unless `output_limit_bytes` is set (the scenario runner's `bash` step may set
/// one); `run` spawns the process (a spawn failure propagates from `start` as `failed to
/// start bash: …` and nothing is registered). The shell waits at its start gate
/// ([`ProcessOptions::hold_start`](crate::ProcessOptions::hold_start)) until `gate` opens:
/// once [`turnkit_jobs::start_saved`] saved the start the command runs; when the gate closes
/// instead (the start could not be saved) the held shell is stopped before it ran anything.
pub(crate) fn bash_job_start_gated(
    mut options: ProcessOptions,
    output_limit_bytes: Option<u64>,
    gate: StartGate,
) -> JobStart {
    options.hold_start = true;
    let label = options.command.clone();
    let mut start = JobStart::new(JobKind::bash(), label, move || {
        let process = BashProcess::spawn(options)?;
        let mut hooks = bash_hooks(process.clone());
        let done = hooks.done;
        hooks.done = Box::pin(async move {
            if gate.opened().await {
                process.release();
            } else {
                process.cancel();
            }
            done.await
        });
        Ok(hooks)
    });
    start.output_limit_bytes = output_limit_bytes;
    start
}

#[cfg(test)]
#[path = "job_tests.rs"]
mod tests;
