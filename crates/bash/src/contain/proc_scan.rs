//! Membership through `/proc`: the environment marker and the parent links, each member
//! confirmed through a pidfd.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rustix::process::{Pid, Signal};

use super::cgroup;

/// A live member of a job, with a pidfd opened before its membership was confirmed
/// (Linux 5.3+; `None` where pidfds are unavailable).
pub(super) struct Member {
    pub(super) pid: Pid,
    #[cfg(target_os = "linux")]
    fd: Option<rustix::fd::OwnedFd>,
}

impl Member {
    pub(super) fn signal(&self, signal: Signal) {
        #[cfg(target_os = "linux")]
        let sent = match &self.fd {
            Some(fd) => rustix::process::pidfd_send_signal(fd, signal),
            None => rustix::process::kill_process(self.pid, signal),
        };
        #[cfg(not(target_os = "linux"))]
        let sent = rustix::process::kill_process(self.pid, signal);
        if let Err(error) = sent
            && error != rustix::io::Errno::SRCH
        {
            tracing::debug!("bash: signalling process {:?} failed: {error}", self.pid);
        }
    }
}

pub(super) fn available() -> bool {
    cfg!(target_os = "linux") && Path::new("/proc/self/stat").exists()
}

/// One process as `/proc` shows it.
struct Entry {
    ppid: i32,
    zombie: bool,
    marked: bool,
}

fn read_entry(pid: i32, needle: &[u8]) -> Option<Entry> {
    let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
    let close = stat.iter().rposition(|b| *b == b')')?;
    let rest = std::str::from_utf8(&stat[close + 1..]).ok()?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    let zombie = state == "Z" || state == "X";
    let marked = !zombie
        && std::fs::read(format!("/proc/{pid}/environ"))
            .is_ok_and(|env| env.split(|b| *b == 0).any(|entry| entry == needle));
    Some(Entry {
        ppid,
        zombie,
        marked,
    })
}

/// The live processes of a job: those carrying `marker`, those in `cgroup`, and every
/// descendant of one of them. Never this process or PID 1.
pub(super) fn members(marker: &str, cgroup_dir: Option<&Path>) -> Vec<Member> {
    if !available() {
        return Vec::new();
    }
    if let Some(dir) = cgroup_dir {
        // Every descendant is born in the cgroup (and `adopt` moved what was forked
        // before the shell entered it): no scan of the whole process table.
        return cgroup::pids(dir)
            .into_iter()
            .filter_map(|pid| confirm_in_cgroup(pid, dir))
            .collect();
    }
    let needle = format!("{}={marker}", super::MARKER_VAR).into_bytes();
    let me = i32::try_from(std::process::id()).unwrap_or(0);
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut entries = BTreeMap::new();
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        if pid <= 1 || pid == me {
            continue;
        }
        if let Some(found) = read_entry(pid, &needle) {
            entries.insert(pid, found);
        }
    }
    let roots: BTreeSet<i32> = entries
        .iter()
        .filter(|(_, e)| e.marked)
        .map(|(pid, _)| *pid)
        .collect();
    // Descendants through the parent links (a child that cleared its environment).
    let mut children: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
    for (pid, entry) in &entries {
        children.entry(entry.ppid).or_default().push(*pid);
    }
    let mut all = BTreeSet::new();
    let mut stack: Vec<i32> = roots.into_iter().collect();
    while let Some(pid) = stack.pop() {
        if all.insert(pid)
            && let Some(kids) = children.get(&pid)
        {
            stack.extend(kids);
        }
    }
    all.into_iter()
        .filter(|pid| entries.get(pid).is_some_and(|e| !e.zombie))
        .filter_map(|pid| confirm(pid, &needle, &entries))
        .collect()
}

fn confirm_in_cgroup(raw: i32, dir: &Path) -> Option<Member> {
    let me = i32::try_from(std::process::id()).unwrap_or(0);
    if raw <= 1 || raw == me {
        return None;
    }
    let pid = Pid::from_raw(raw)?;
    #[cfg(target_os = "linux")]
    {
        let fd = match rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()) {
            Ok(fd) => Some(fd),
            Err(rustix::io::Errno::SRCH) => return None,
            Err(_) => None,
        };
        cgroup::contains(dir, raw).then_some(Member { pid, fd })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dir;
        Some(Member { pid })
    }
}

/// Opens a pidfd, then checks again that the process it names is still a member (the
/// pid may have been recycled since the scan).
fn confirm(raw: i32, needle: &[u8], entries: &BTreeMap<i32, Entry>) -> Option<Member> {
    let pid = Pid::from_raw(raw)?;
    #[cfg(target_os = "linux")]
    {
        let fd = match rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()) {
            Ok(fd) => Some(fd),
            Err(rustix::io::Errno::SRCH) => return None,
            Err(_) => None,
        };
        let now = read_entry(raw, needle)?;
        let before = entries.get(&raw)?;
        let same = now.marked || now.ppid == before.ppid;
        (same && !now.zombie).then_some(Member { pid, fd })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (needle, entries);
        Some(Member { pid })
    }
}
