//! A cgroup v2 per job (Linux): creation under the host's own cgroup, entry, `cgroup.kill`,
//! membership, and removal once the last member has exited.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use rustix::process::Pid;

use crate::TaskSet;

/// Cgroups that could not be removed yet (members still exiting); retried on the next
/// creation.
static STALE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The host's own cgroup v2 folder, if the hierarchy is mounted; found once.
pub(super) fn parent() -> Option<&'static Path> {
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

/// The folder name of a job's cgroup: this prefix, then its marker.
pub(super) const PREFIX: &str = "harness-bash-";

/// The folder of the job cgroup named by `marker` under this host's cgroup, if it exists.
pub(super) fn existing(marker: &str) -> Option<PathBuf> {
    let dir = parent()?.join(format!("{PREFIX}{marker}"));
    dir.is_dir().then_some(dir)
}

pub(super) fn create(marker: &str) -> Option<PathBuf> {
    let parent = parent()?;
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(|| sweep(parent));
    let stale: Vec<PathBuf> = std::mem::take(&mut *turnkit_core::lock(&STALE));
    for dir in stale {
        remove(&dir, None);
    }
    if REFUSED.get().is_some() {
        return None;
    }
    let dir = parent.join(format!("{PREFIX}{marker}"));
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

/// Moves `pid` into `dir`. A folder another host's start sweep removed (it was empty
/// between its creation and this move) is created again, once.
pub(super) fn enter(dir: &Path, pid: Pid) -> std::io::Result<()> {
    let procs = dir.join("cgroup.procs");
    let pid = pid.as_raw_pid().to_string();
    match std::fs::write(&procs, &pid) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir(dir)?;
            std::fs::write(&procs, &pid)
        }
        result => result,
    }
}

/// Removes every empty job cgroup under `parent` (`harness-bash-*` without members):
/// the folders of hosts that died before removing theirs (after a `kill -9` they pile
/// up). A folder with members is left alone (a live host's job, or the leftovers of a
/// dead host's job that its journal's reopening stops), and so is one made in the last
/// minute: another live host makes a job's folder empty and fills it a moment later (after
/// its child's namespaces are set up), and a folder removed in between would leave that job
/// outside its cgroup. Run once, at this host's first job cgroup.
pub(super) fn sweep(parent: &Path) {
    const FRESH: std::time::Duration = std::time::Duration::from_secs(60);
    let fresh = |entry: &std::fs::DirEntry| {
        entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|made| made.elapsed().ok())
            .is_none_or(|age| age < FRESH)
    };
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let is_job = entry.file_name().to_str().is_some_and(|name| {
            name.strip_prefix(PREFIX).is_some_and(|marker| {
                marker.len() == 32 && marker.bytes().all(|b| b.is_ascii_hexdigit())
            })
        });
        if is_job && entry.file_type().is_ok_and(|t| t.is_dir()) && !fresh(&entry) {
            let dir = entry.path();
            if !populated(&dir) {
                // Fails harmlessly if a member entered meanwhile.
                let _ = remove_tree(&dir);
            }
        }
    }
}

/// Whether `dir` or a cgroup under it has a live member (`populated 1` in
/// `cgroup.events`; an unreadable file counts as populated).
fn populated(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("cgroup.events")).map_or(true, |events| {
        events.lines().any(|line| line.trim() == "populated 1")
    })
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

/// Removes the cgroup; while members are still exiting, once they have (waiting in `tasks`
/// when given).
pub(super) fn remove(dir: &Path, tasks: Option<&TaskSet>) {
    match remove_tree(dir) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(_) => remove_when_empty(dir.to_path_buf(), tasks),
    }
}

/// Waits for every member to exit (a pidfd turns readable when its process ends; an
/// exited process has left the cgroup), then removes the folder. Outside a runtime, or
/// if it still fails, the folder is remembered and retried on the next creation. The wait
/// runs in `tasks` when given; their shutdown ends it, the folder then removed after the
/// bounded wait of [`remove_after_exit`].
fn remove_when_empty(dir: PathBuf, tasks: Option<&TaskSet>) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        remove_after_exit(&dir);
        return;
    };
    let fds: Vec<rustix::fd::OwnedFd> = member_fds(&dir);
    let mut folder = RemoveOnDrop { dir, waited: false };
    let exited = async move {
        for fd in fds {
            if let Ok(fd) = watch_pidfd(fd) {
                let _ = fd.readable().await;
            }
        }
    };
    match tasks {
        Some(tasks) => {
            let stopped = tasks.stopped();
            tasks.spawn_on(
                async move {
                    tokio::select! {
                        () = exited => folder.waited = true,
                        () = stopped => {}
                    }
                    drop(folder);
                },
                &runtime,
            );
        }
        None => drop(runtime.spawn(async move {
            exited.await;
            folder.waited = true;
            drop(folder);
        })),
    }
}

/// A pidfd per member of `dir` (readable once that member has exited).
fn member_fds(dir: &Path) -> Vec<rustix::fd::OwnedFd> {
    pids(dir)
        .into_iter()
        .filter_map(Pid::from_raw)
        .filter_map(|pid| {
            rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok()
        })
        .collect()
}

/// How long a host that is going away (no runtime, or a runtime shutting down) waits
/// for the members of a job cgroup it stopped to exit before it removes the folder.
const EXIT_WAIT_MS: u16 = 2000;

/// Without a runtime to wait on (the host is exiting): waits, blocking and bounded by
/// [`EXIT_WAIT_MS`], for the members to exit (they were sent SIGKILL, or have ended),
/// then removes the folder; if that still fails it is retried at the next creation.
fn remove_after_exit(dir: &Path) {
    if remove_tree(dir).is_ok() {
        return;
    }
    let deadline =
        std::time::Instant::now() + std::time::Duration::from_millis(u64::from(EXIT_WAIT_MS));
    for fd in member_fds(dir) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let Ok(left) = rustix::event::Timespec::try_from(left) else {
            break;
        };
        let mut polled = [rustix::event::PollFd::new(
            &fd,
            rustix::event::PollFlags::IN,
        )];
        let _ = rustix::event::poll(&mut polled, Some(&left));
    }
    if remove_tree(dir).is_err() {
        stale(dir.to_path_buf());
    }
}

/// Removes the folder when dropped: after the wait, or, if the runtime drops the task
/// unfinished (it is shutting down with the host), after a bounded blocking wait.
struct RemoveOnDrop {
    dir: PathBuf,
    waited: bool,
}

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        if self.waited {
            if remove_tree(&self.dir).is_err() {
                stale(std::mem::take(&mut self.dir));
            }
        } else {
            remove_after_exit(&self.dir);
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
