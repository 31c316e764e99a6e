//! The bound on a stopping server: once SIGTERM or SIGINT asked `harness mcp` to stop, it has
//! a grace period to stop its jobs, flush its sessions and release its leases; past it, the
//! process exits anyway.

use std::time::Duration;

/// How long a stopping server may take by default, in seconds (`--shutdown-grace`).
pub(crate) const DEFAULT_GRACE_SECS: u64 = 30;

/// Arms the bound when a signal arrived: after `grace`, a process still running prints why
/// to stderr and exits with status 1.
///
/// A thread of its own, not a task: it must fire while every task of the runtime waits on a
/// store that stopped answering (a PostgreSQL server that hangs: its queries neither finish
/// nor fail). Every tool call answered success was flushed before its answer, so exiting here
/// loses no acknowledged change; it leaves what a crash leaves, which the next start handles
/// (a job still running is found and stopped, a lease runs out).
pub(crate) fn arm(grace: Duration) {
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
