//! A cgroup v2 per job (Linux): creation under the host's own cgroup, entry, `cgroup.kill`,
//! membership, and removal once the last member has exited.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use rustix::process::Pid;

/// Cgroups that could not be removed yet (members still exiting); retried on the next
/// creation.
static STALE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The host's own cgroup v2 folder, if the hierarchy is mounted; found once.
fn parent() -> Option<&'static Path> {
    static PARENT: OnceLock<Option<PathBuf>> = OnceLock::new();
    PARENT.get_or_init(find_parent).as_deref()
}

fn find_parent() -> Option<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let own = own.lines().find_map(|l| l.strip_prefix("0::"))?.trim();
    parse_parent(&mountinfo, own)
}

/// The folder of cgroup `own` (as in `/proc/self/cgroup`'s `0::` line) under the first
/// cgroup2 mount of `mountinfo` whose root contains it.
pub(super) fn parse_parent(mountinfo: &str, own: &str) -> Option<PathBuf> {
    for line in mountinfo.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        if right.split_whitespace().next() != Some("cgroup2") {
            continue;
        }
        let fields: Vec<&str> = left.split_whitespace().collect();
        let (Some(root), Some(point)) = (fields.get(3), fields.get(4)) else {
            continue;
        };
        let root = unescape(root);
        let relative = if root == "/" {
            own
        } else {
            match own.strip_prefix(root.as_str()) {
                Some(rest) if rest.is_empty() || rest.starts_with('/') => rest,
                _ => continue,
            }
        };
        let mut path = PathBuf::from(unescape(point));
        path.extend(relative.split('/').filter(|s| !s.is_empty()));
        return Some(path);
    }
    None
}

/// Mountinfo escapes space, tab, newline and backslash as `\\ooo`.
pub(super) fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && let Some(code) = bytes
                .get(i + 1..i + 4)
                .and_then(|digits| std::str::from_utf8(digits).ok())
                .and_then(|digits| u8::from_str_radix(digits, 8).ok())
        {
            out.push(code);
            i += 4;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Creates `<host cgroup>/harness-bash-<marker>`; `None` where that is not possible
/// (no cgroup2, no permission, read-only), logged once.
/// Set once a cgroup could not be created or entered: later jobs do not try again (and
/// do not log again).
static REFUSED: OnceLock<()> = OnceLock::new();

pub(super) fn refuse() {
    let _ = REFUSED.set(());
}

pub(super) fn create(marker: &str) -> Option<PathBuf> {
    let parent = parent()?;
    let stale: Vec<PathBuf> = std::mem::take(&mut *turnkit_core::lock(&STALE));
    for dir in stale {
        remove(&dir);
    }
    if REFUSED.get().is_some() {
        return None;
    }
    let dir = parent.join(format!("harness-bash-{marker}"));
    match std::fs::create_dir(&dir) {
        Ok(()) => Some(dir),
        Err(error) => {
            if REFUSED.set(()).is_ok() {
                tracing::info!(
                    "bash: no cgroup per job under {} ({error}); containing by process tree",
                    parent.display()
                );
            }
            None
        }
    }
}

pub(super) fn enter(dir: &Path, pid: Pid) -> std::io::Result<()> {
    std::fs::write(dir.join("cgroup.procs"), pid.as_raw_pid().to_string())
}

/// SIGKILL to every member at once (`cgroup.kill`, Linux 5.14+); older kernels rely
/// on the per-process rounds.
pub(super) fn kill(dir: &Path) {
    let file = dir.join("cgroup.kill");
    if file.exists()
        && let Err(error) = std::fs::write(&file, "1")
    {
        tracing::warn!("bash: writing {} failed: {error}", file.display());
    }
}

/// The pids in the cgroup and in every cgroup nested under it (a command that is a host
/// itself makes its own there, and may move processes into them).
pub(super) fn pids(dir: &Path) -> Vec<i32> {
    let mut pids: Vec<i32> = std::fs::read_to_string(dir.join("cgroup.procs"))
        .map(|text| text.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default();
    for nested in nested(dir) {
        pids.extend(self::pids(&nested));
    }
    pids
}

/// The cgroups directly under `dir`.
fn nested(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// Removes `dir` and the cgroups nested under it, deepest first (a cgroup folder goes
/// with `rmdir` once it has no members and no nested cgroup).
fn remove_tree(dir: &Path) -> std::io::Result<()> {
    for nested in nested(dir) {
        let _ = remove_tree(&nested);
    }
    std::fs::remove_dir(dir)
}

/// Whether process `pid` is in cgroup `dir`.
pub(super) fn contains(dir: &Path, pid: i32) -> bool {
    let Some(parent) = parent() else { return false };
    let Ok(relative) = dir.strip_prefix(parent) else {
        return false;
    };
    let Ok(own) = std::fs::read_to_string(format!("/proc/{pid}/cgroup")) else {
        return false;
    };
    // In `dir` itself or in a cgroup nested under it.
    own.lines()
        .filter_map(|l| l.strip_prefix("0::"))
        .any(|path| {
            Path::new(path.trim())
                .ancestors()
                .any(|cgroup| cgroup.ends_with(relative))
        })
}

/// Removes the cgroup; while members are still exiting, once they have.
pub(super) fn remove(dir: &Path) {
    match remove_tree(dir) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(_) => remove_when_empty(dir.to_path_buf()),
    }
}

/// Waits for every member to exit (a pidfd turns readable when its process ends; an
/// exited process has left the cgroup), then removes the folder. Outside a runtime, or
/// if it still fails, the folder is remembered and retried on the next creation.
fn remove_when_empty(dir: PathBuf) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        stale(dir);
        return;
    };
    let fds: Vec<rustix::fd::OwnedFd> = pids(&dir)
        .into_iter()
        .filter_map(Pid::from_raw)
        .filter_map(|pid| {
            rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok()
        })
        .collect();
    let folder = RemoveOnDrop(dir);
    runtime.spawn(async move {
        for fd in fds {
            if let Ok(fd) = watch_pidfd(fd) {
                let _ = fd.readable().await;
            }
        }
        drop(folder);
    });
}

/// Removes the folder when dropped: after the wait, or at once if the runtime drops the
/// task unfinished.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        if remove_tree(&self.0).is_err() {
            stale(std::mem::take(&mut self.0));
        }
    }
}

#[expect(
    deprecated,
    reason = "the safe constructor is deprecated for descriptors the value does not own; an \
              OwnedFd owns its descriptor for the AsyncFd's whole life, which is the safety \
              condition of its unsafe replacement (and unsafe code is forbidden here); move \
              off it when tokio offers a safe constructor for owned descriptors"
)]
fn watch_pidfd(
    fd: rustix::fd::OwnedFd,
) -> std::io::Result<tokio::io::unix::AsyncFd<rustix::fd::OwnedFd>> {
    tokio::io::unix::AsyncFd::with_interest(fd, tokio::io::Interest::READABLE)
}

fn stale(dir: PathBuf) {
    turnkit_core::lock(&STALE).push(dir);
}
