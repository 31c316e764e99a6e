//! A bash job of a host that died, found by its marker and stopped at its session's
//! reopening (the job journal, todo-jobs §5.9).

use std::path::Path;
use std::time::{Duration, Instant};

use rustix::process::Signal;

use super::{cgroup, proc_scan};

/// How long [`stop_job_leftovers`] waits for the processes it killed to exit.
const EXIT_WAIT: Duration = Duration::from_secs(2);

/// Stops what a bash job of a host that died left running, given its marker (the journal's
/// trace): every live process in its cgroup `<host cgroup>/harness-bash-<marker>` and every
/// one carrying `HARNESS_BASH_JOB=<marker>` gets SIGKILL (the host that would have stopped
/// them gracefully is gone); then waits, at most 2 s, for them to exit and removes the
/// folder. `true` when it found a live process. A marker that is not 32 hex digits finds
/// nothing. Blocking.
pub(crate) fn stop_job_leftovers(marker: &str) -> bool {
    if marker.len() != 32 || !marker.bytes().all(|b| b.is_ascii_hexdigit()) {
        return false;
    }
    let dir = cgroup::existing(marker);
    let found = |dir: Option<&Path>| {
        let mut members = proc_scan::members(marker, dir);
        if dir.is_some() {
            // Also what left the cgroup (or a job whose cgroup was given up).
            members.extend(proc_scan::members(marker, None));
        }
        members
    };
    let members = found(dir.as_deref());
    if members.is_empty() {
        if let Some(dir) = &dir {
            cgroup::remove(dir, None);
        }
        return false;
    }
    if let Some(dir) = &dir {
        cgroup::kill(dir);
    }
    for member in &members {
        member.signal(Signal::KILL);
    }
    let deadline = Instant::now() + EXIT_WAIT;
    loop {
        let left = found(dir.as_deref());
        if left.is_empty() || Instant::now() >= deadline {
            for member in &left {
                member.signal(Signal::KILL);
            }
            break;
        }
        // They were sent SIGKILL and exit within milliseconds; the host is reopening a
        // session, not serving calls, while it waits.
        std::thread::sleep(Duration::from_millis(5));
    }
    if let Some(dir) = &dir {
        cgroup::remove(dir, None);
    }
    true
}
