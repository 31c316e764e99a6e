//! The bound on a stopping server: once SIGTERM or SIGINT asked `harness mcp` to stop, it has
//! a grace period to stop its jobs, flush its sessions and release its leases; past it, the
//! process exits anyway.

use std::time::Duration;

use anyhow::Context as _;
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How long a stopping server may take by default, in seconds (`--shutdown-grace`).
pub(crate) const DEFAULT_GRACE_SECS: u64 = 30;

/// Listens for SIGTERM and SIGINT in a task of `tasks`: the first one arms the bound
/// ([`arm`]) and cancels `stop`; the task ends without doing anything once `ended` is
/// cancelled (the server stopped on its own).
///
/// # Errors
/// When a signal cannot be listened for.
pub(crate) fn on_signal(
    tasks: &TaskTracker,
    stop: CancellationToken,
    ended: CancellationToken,
    grace: Duration,
) -> anyhow::Result<()> {
    let mut terminate = signal(SignalKind::terminate()).context("listening for SIGTERM")?;
    let mut interrupt = signal(SignalKind::interrupt()).context("listening for SIGINT")?;
    tasks.spawn(async move {
        tokio::select! {
            () = ended.cancelled() => return,
            _ = terminate.recv() => {}
            _ = interrupt.recv() => {}
        }
        arm(grace);
        stop.cancel();
    });
    Ok(())
}

/// Arms the bound when a signal arrived: after `grace`, a process still running prints why
/// to stderr and exits with status 1.
///
/// A thread of its own, not a task: it must fire while every task of the runtime waits on a
/// store that stopped answering (a PostgreSQL server that hangs: its queries neither finish
/// nor fail). Every tool call answered success was flushed before its answer, so exiting here
/// loses no acknowledged change; it leaves what a crash leaves, which the next start handles
/// (a job still running is found and stopped, a lease runs out).
fn arm(grace: Duration) {
    let spawned = std::thread::Builder::new()
        .name("shutdown-bound".to_owned())
        .spawn(move || {
            std::thread::sleep(grace);
            eprintln!(
                "harness mcp: still stopping {}s after the signal (a store that does not \
                 answer?); exiting without a clean shutdown",
                grace.as_secs()
            );
            std::process::exit(1);
        });
    if let Err(error) = spawned {
        eprintln!("harness mcp: cannot bound the shutdown: {error}");
    }
}
