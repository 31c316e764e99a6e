//! Containment of a job's process tree (decision 13): which processes belong to a job, and
//! how they are all signalled, whatever session or process group they moved to.
//!
//! Three layers, strongest first:
//!
//! 1. **A cgroup v2 per job** (Linux, where the host may create one under its own cgroup):
//!    the shell waits at a start gate ([`GATE`]) until it has been moved into the cgroup,
//!    so every descendant is born in it, and `cgroup.kill` stops all members at once. The
//!    members are the cgroup's processes (no scan of the process table). Leaving it takes a
//!    write to another cgroup's `cgroup.procs`, which session and group changes never do.
//!    The folder is removed once its last member has exited.
//! 2. **An unpredictable marker in the environment** (`HARNESS_BASH_JOB=<32 hex digits>`),
//!    inherited by every descendant that does not clear its environment, found by scanning
//!    `/proc/<pid>/environ`; plus the descendants of every member found through the parent
//!    links in `/proc/<pid>/stat`. Used when there is no cgroup. A process that clears its
//!    environment and leaves its parent before the stop is not found.
//! 3. **The process group** (every Unix): the shell leads its own group, signalled as a whole
//!    while the shell has not been reaped.
//!
//! Signals to single processes go through a pidfd opened before the membership is checked
//! again, so a recycled pid is never signalled by mistake.
//!
//! Not used: `PR_SET_CHILD_SUBREAPER`. It is an attribute of the whole host process: every
//! orphan of every child the host starts (not only our jobs) would be re-parented to the host
//! and stay a zombie unless the host reaps with `waitpid(-1)`, which would in turn steal the
//! exit statuses of child handles the host or its other libraries own.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
#[cfg(target_os = "linux")]
use std::sync::{Mutex, OnceLock};

use rustix::process::{Pid, Signal};

/// The variable that carries a job's marker to every process it starts (its value is
/// [`JobTree::marker`]).
pub const MARKER_VAR: &str = "HARNESS_BASH_JOB";

/// The gate a shell waits at until it is inside its cgroup, run as
/// `bash --posix -c GATE bash -c COMMAND` with stdin a pipe from the host: it waits for
/// the pipe to close, then replaces itself (same pid, group and environment) with
/// `bash -c COMMAND` reading `/dev/null`, so nothing the command runs ever starts outside
/// the cgroup. POSIX mode reads no startup file (`BASH_ENV` runs once, in the real shell),
/// and `exec` hands on the shell level unchanged (bash lowers `SHLVL` before it replaces
/// itself), so the command sees what it would without the gate.
pub(crate) const GATE: &str = "read -r _ || :; exec bash \"$@\" </dev/null";

/// The start gate for a process whose terminal is its controlling terminal (a PTY), run as
/// `bash --posix -c TTY_GATE bash PROGRAM ARGS…` with stdin a pipe from the host and stdout
/// and stderr the terminal: it waits for the pipe to close (the host closes it after
/// [`JobTree::adopt`]), then replaces itself (same pid, session, group and environment)
/// with `PROGRAM ARGS…` reading the controlling terminal (`/dev/tty`). Use it exactly when
/// [`JobTree::gated`] says so; see `docs/process-containment.md`.
pub const TTY_GATE: &str = "read -r _ || :; exec \"$@\" </dev/tty";

/// How a job's processes are contained (configuration key `containment`: `"auto"` or
/// `"processTree"`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum Containment {
    /// A cgroup v2 per job where one can be created (Linux), otherwise [`ProcessTree`]
    /// (the default).
    ///
    /// [`ProcessTree`]: Containment::ProcessTree
    #[default]
    Auto,
    /// No cgroup: the environment marker and the parent links in `/proc` (Linux), plus the
    /// process group.
    ProcessTree,
}

/// The mechanism in force for one process (see [`crate::BashProcess::mechanism`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mechanism {
    /// A cgroup v2 of its own (its members are the job), plus the process group.
    Cgroup,
    /// The environment marker and parent links in `/proc`, plus the process group.
    ProcessTree,
    /// The process group only (no `/proc`: Unixes other than Linux).
    ProcessGroup,
}

/// Whether a signal also goes to the job's process group ([`JobTree::signal`]). Only while
/// the leader is not reaped: afterwards the group id may name somebody else's group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// Also signal the process group (the leader has not been reaped).
    Include,
    /// Only the members found by the cgroup or the marker (the leader has been reaped).
    Skip,
}

/// Rounds of "find members, signal the new ones" per signal: each round catches the
/// children forked while the previous one ran.
const ROUNDS: usize = 8;

/// The processes of one job.
#[derive(Debug)]
pub(crate) struct Tree {
    marker: String,
    pgid: Option<Pid>,
    cgroup: Option<PathBuf>,
}

impl Tree {
    /// A fresh marker and, under [`Containment::Auto`] where possible, an empty cgroup.
    pub(crate) fn prepare(mode: Containment) -> Self {
        let marker = random_hex();
        let cgroup = match mode {
            Containment::Auto => cgroup::create(&marker),
            Containment::ProcessTree => None,
        };
        Self {
            marker,
            pgid: None,
            cgroup,
        }
    }

    /// The marker value (the variable is [`MARKER_VAR`]).
    pub(crate) fn marker(&self) -> &str {
        &self.marker
    }

    /// Whether a cgroup is prepared: the shell must then be started behind the gate
    /// ([`GATE`]) and released only after [`Tree::adopt`].
    pub(crate) fn gated(&self) -> bool {
        self.cgroup.is_some()
    }

    /// Records the started shell (its pid is its group id) and moves it into the cgroup.
    /// The shell is still waiting at the gate, so it has forked nothing yet. If the move
    /// fails the cgroup is given up (the process tree still contains the job).
    pub(crate) fn adopt(&mut self, pid: Pid) {
        self.pgid = Some(pid);
        if let Some(dir) = &self.cgroup
            && let Err(error) = cgroup::enter(dir, pid)
        {
            tracing::warn!(
                "bash: cannot move process {pid:?} into {}: {error}; containing by process tree",
                dir.display()
            );
            cgroup::remove(dir);
            cgroup::refuse();
            self.cgroup = None;
        }
    }

    /// The mechanism in force.
    pub(crate) fn mechanism(&self) -> Mechanism {
        if self.cgroup.is_some() {
            Mechanism::Cgroup
        } else if proc_scan::available() {
            Mechanism::ProcessTree
        } else {
            Mechanism::ProcessGroup
        }
    }

    /// Signals every process of the job (and the group, if `group` says so).
    pub(crate) fn signal(&self, signal: Signal, group: Group) {
        if group == Group::Include
            && let Some(pgid) = self.pgid
            // kill(-1) would signal every process we may signal: never.
            && pgid.as_raw_pid() > 1
            && let Err(error) = rustix::process::kill_process_group(pgid, signal)
            && error != rustix::io::Errno::SRCH
        {
            tracing::warn!("bash: signalling process group {pgid:?} failed: {error}");
        }
        if signal == Signal::KILL
            && let Some(dir) = &self.cgroup
        {
            cgroup::kill(dir);
        }
        let mut signalled = BTreeSet::new();
        for _ in 0..ROUNDS {
            let fresh: Vec<proc_scan::Member> = proc_scan::members(&self.marker, self.cgroup())
                .into_iter()
                .filter(|m| signalled.insert(m.pid.as_raw_pid()))
                .collect();
            if fresh.is_empty() {
                break;
            }
            for member in fresh {
                member.signal(signal);
            }
        }
    }

    /// Whether any process of the job is still alive (zombies do not count). Always false
    /// without `/proc`.
    pub(crate) fn has_members(&self) -> bool {
        !proc_scan::members(&self.marker, self.cgroup()).is_empty()
    }

    fn cgroup(&self) -> Option<&Path> {
        self.cgroup.as_deref()
    }
}

/// The processes of one job, for producers that start their own process instead of a
/// [`crate::BashProcess`] (a terminal in a PTY, for example): the same containment rules
/// (decision 13, `docs/process-containment.md`), reused rather than copied.
///
/// Use: [`JobTree::prepare`] before the spawn; put [`MARKER_VAR`]`=`[`JobTree::marker`] in
/// the process's environment and make it the leader of its own process group (or session);
/// if [`JobTree::gated`], start it behind a gate ([`TTY_GATE`] for a PTY) and close the gate
/// only after [`JobTree::adopt`]; then stop it with [`JobTree::signal`] (SIGTERM, SIGKILL
/// after a grace) and check [`JobTree::has_members`]. Dropping the value removes the job's
/// cgroup once its members have exited; it signals nothing.
#[derive(Debug)]
pub struct JobTree {
    tree: Tree,
}

impl JobTree {
    /// A fresh unpredictable marker and, under [`Containment::Auto`] where the host may
    /// create one (Linux, cgroup v2), an empty cgroup of its own.
    pub fn prepare(mode: Containment) -> Self {
        Self {
            tree: Tree::prepare(mode),
        }
    }

    /// The marker (32 hex digits) to put in the process's environment as [`MARKER_VAR`].
    pub fn marker(&self) -> &str {
        self.tree.marker()
    }

    /// Whether a cgroup is prepared: the process must then wait at a gate until
    /// [`JobTree::adopt`] has moved it into the cgroup.
    pub fn gated(&self) -> bool {
        self.tree.gated()
    }

    /// Records the started leader (`pid` is also its process group id) and moves it into
    /// the cgroup, if any. A failed move gives the cgroup up (logged); the marker and the
    /// process group still contain the job.
    pub fn adopt(&mut self, pid: u32) {
        if let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
            self.tree.adopt(pid);
        }
    }

    /// The strongest mechanism in force.
    pub fn mechanism(&self) -> Mechanism {
        self.tree.mechanism()
    }

    /// Sends `signal` to every live process of the job, and to its process group if `group`
    /// is [`Group::Include`]. Never signals this process or PID 1; errors are logged.
    pub fn signal(&self, signal: Signal, group: Group) {
        self.tree.signal(signal, group);
    }

    /// Whether any process of the job is alive (zombies do not count). Always `false`
    /// without `/proc` (Unixes other than Linux).
    pub fn has_members(&self) -> bool {
        self.tree.has_members()
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        if let Some(dir) = self.cgroup.take() {
            cgroup::remove(&dir);
        }
    }
}

/// 32 lowercase hex digits from the operating system's random source (the job marker, spill
/// file names).
pub(crate) fn random_hex() -> String {
    let mut bytes = [0u8; 16];
    if let Err(error) = getrandom::fill(&mut bytes) {
        // Without randomness the value is still unique in this host (pid, counter, time),
        // only guessable.
        tracing::warn!("bash: no random bytes: {error}");
        bytes = fallback_entropy();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn fallback_entropy() -> [u8; 16] {
    use std::hash::{BuildHasher as _, Hasher as _};
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut out = [0u8; 16];
    for half in out.chunks_mut(8) {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        hasher.write_u64(COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        hasher.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        half.copy_from_slice(&hasher.finish().to_le_bytes());
    }
    out
}

#[cfg(target_os = "linux")]
mod cgroup {
    use super::{Mutex, OnceLock, Path, PathBuf, Pid};

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

    /// The folder name of a job's cgroup: this prefix, then its marker.
    pub(super) const PREFIX: &str = "harness-bash-";

    pub(super) fn create(marker: &str) -> Option<PathBuf> {
        let parent = parent()?;
        static SWEPT: std::sync::Once = std::sync::Once::new();
        SWEPT.call_once(|| sweep(parent));
        let stale: Vec<PathBuf> = std::mem::take(&mut *turnkit_core::lock(&STALE));
        for dir in stale {
            remove(&dir);
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
    /// dead host's job that its journal's reopening stops). Run once, at this host's first
    /// job cgroup.
    pub(super) fn sweep(parent: &Path) {
        let Ok(entries) = std::fs::read_dir(parent) else {
            return;
        };
        for entry in entries.flatten() {
            let is_job = entry.file_name().to_str().is_some_and(|name| {
                name.strip_prefix(PREFIX).is_some_and(|marker| {
                    marker.len() == 32 && marker.bytes().all(|b| b.is_ascii_hexdigit())
                })
            });
            if is_job && entry.file_type().is_ok_and(|t| t.is_dir()) {
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
            remove_after_exit(&dir);
            return;
        };
        let fds: Vec<rustix::fd::OwnedFd> = member_fds(&dir);
        let mut folder = RemoveOnDrop { dir, waited: false };
        runtime.spawn(async move {
            for fd in fds {
                if let Ok(fd) = watch_pidfd(fd) {
                    let _ = fd.readable().await;
                }
            }
            folder.waited = true;
            drop(folder);
        });
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
}

#[cfg(not(target_os = "linux"))]
mod cgroup {
    use super::{Path, PathBuf, Pid};

    pub(super) fn create(_marker: &str) -> Option<PathBuf> {
        None
    }
    pub(super) fn refuse() {}
    pub(super) fn enter(_dir: &Path, _pid: Pid) -> std::io::Result<()> {
        Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
    }
    pub(super) fn kill(_dir: &Path) {}
    pub(super) fn pids(_dir: &Path) -> Vec<i32> {
        Vec::new()
    }
    pub(super) fn contains(_dir: &Path, _pid: i32) -> bool {
        false
    }
    pub(super) fn remove(_dir: &Path) {}
}

mod proc_scan {
    use super::{BTreeMap, BTreeSet, Path, Pid, Signal, cgroup};

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
}

#[cfg(test)]
#[path = "contain_tests.rs"]
mod tests;
