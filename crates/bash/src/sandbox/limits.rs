//! Memory, process and CPU limits of one job through cgroups: in the job's own cgroup v2
//! where its controllers are enabled, otherwise in a cgroup of its own in each cgroup v1
//! hierarchy of the controller (hybrid hosts), otherwise `RLIMIT_*` where one exists.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::Sandbox;

/// A controller of the limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Controller {
    Memory,
    Pids,
    Cpu,
}

impl Controller {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Controller::Memory => "memory",
            Controller::Pids => "pids",
            Controller::Cpu => "cpu",
        }
    }

    /// The v2 file that exists in a cgroup once the controller is enabled for it.
    fn v2_file(self) -> &'static str {
        match self {
            Controller::Memory => "memory.max",
            Controller::Pids => "pids.max",
            Controller::Cpu => "cpu.max",
        }
    }
}

/// How a limit is enforced on this host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Via {
    /// In the job's cgroup v2.
    CgroupV2,
    /// In a cgroup of the job in the controller's v1 hierarchy.
    CgroupV1,
    /// `RLIMIT_AS` / `RLIMIT_NPROC` per process.
    Rlimit,
}

impl Via {
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Via::CgroupV2 => "cgroup v2",
            Via::CgroupV1 => "cgroup v1",
            Via::Rlimit => "rlimit",
        }
    }
}

/// The folder of this process's cgroup in the v1 hierarchy of `controller`, if one is
/// mounted (`/proc/self/mountinfo`, `/proc/self/cgroup`).
fn v1_parent(controller: Controller) -> Option<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    parse_v1_parent(&mountinfo, &own, controller.name())
}

/// The folder of the cgroup `own` (as in `/proc/self/cgroup`) names for `controller` under
/// its v1 mount in `mountinfo`.
pub(crate) fn parse_v1_parent(mountinfo: &str, own: &str, controller: &str) -> Option<PathBuf> {
    let path = own.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, list, path) = (parts.next()?, parts.next()?, parts.next()?);
        list.split(',').any(|c| c == controller).then_some(path)
    })?;
    for line in mountinfo.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let mut right = right.split_whitespace();
        if right.next() != Some("cgroup") {
            continue;
        }
        let options = right.nth(1).unwrap_or("");
        if !options.split(',').any(|o| o == controller) {
            continue;
        }
        let fields: Vec<&str> = left.split_whitespace().collect();
        let (Some(root), Some(point)) = (fields.get(3), fields.get(4)) else {
            continue;
        };
        let relative = if *root == "/" {
            path
        } else {
            match path.strip_prefix(root) {
                Some(rest) if rest.is_empty() || rest.starts_with('/') => rest,
                _ => continue,
            }
        };
        let mut dir = PathBuf::from(point);
        dir.extend(relative.split('/').filter(|s| !s.is_empty()));
        return Some(dir);
    }
    None
}

/// Where `controller` can be enforced for a job whose cgroup v2 is `v2` (if any), best
/// first; `None` when nothing on this host can.
pub(crate) fn available(controller: Controller, v2: Option<&Path>) -> Option<Via> {
    if v2.is_some_and(|dir| dir.join(controller.v2_file()).exists()) {
        return Some(Via::CgroupV2);
    }
    if let Some(parent) = v1_parent(controller)
        && writable_dir(&parent)
    {
        return Some(Via::CgroupV1);
    }
    let root = rustix::process::geteuid().is_root();
    match controller {
        Controller::Memory => Some(Via::Rlimit),
        // Root is not bound by RLIMIT_NPROC.
        Controller::Pids if !root => Some(Via::Rlimit),
        Controller::Pids | Controller::Cpu => None,
    }
}

fn writable_dir(dir: &Path) -> bool {
    rustix::fs::access(dir, rustix::fs::Access::WRITE_OK).is_ok()
}

/// The cgroup v1 folders made for one job's limits, and the counters of what stopped it.
/// Dropping it removes the folders (once their members have exited; until then they are
/// retried at the next job's creation).
#[derive(Debug, Default)]
pub(crate) struct JobLimits {
    /// Folders to enter the job's first process into (v1 only; the v2 cgroup is the
    /// containment's).
    folders: Vec<PathBuf>,
    /// Where memory kills are counted (`memory.events` or `memory.oom_control`, key
    /// `oom_kill`).
    memory_events: Option<PathBuf>,
    /// Where refused forks are counted (`pids.events`, key `max`).
    pids_events: Option<PathBuf>,
    /// `RLIMIT_*` to set in the child (resource, value).
    pub(crate) rlimits: Vec<(rustix::process::Resource, u64)>,
}

/// v1 folders that could not be removed yet.
static STALE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// What the counters say once a job has ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LimitHits {
    /// The memory limit killed at least one process of the job.
    pub memory: bool,
    /// At least one fork was refused at the process limit.
    pub pids: bool,
}

impl JobLimits {
    /// Writes the limits of `sandbox` for a job whose cgroup v2 folder is `v2` and whose
    /// marker is `marker`. A limit this host cannot enforce is an error naming it, unless
    /// `bestEffort` (then it is left out).
    pub(crate) fn prepare(
        sandbox: &Sandbox,
        v2: Option<&Path>,
        marker: &str,
    ) -> Result<Self, String> {
        for dir in std::mem::take(&mut *turnkit_core::lock(&STALE)) {
            remove(dir);
        }
        let mut limits = Self::default();
        let wanted = [
            (
                Controller::Memory,
                sandbox.memory_max_bytes.map(Value::Bytes),
            ),
            (Controller::Pids, sandbox.pids_max.map(Value::Count)),
            (Controller::Cpu, sandbox.cpu_max.map(Value::Cpus)),
        ];
        for (controller, value) in wanted {
            let Some(value) = value else { continue };
            let result = match available(controller, v2) {
                Some(Via::CgroupV2) => match v2 {
                    Some(dir) => limits.write_v2(controller, dir, value),
                    None => Err("no cgroup".to_owned()),
                },
                Some(Via::CgroupV1) => limits.write_v1(controller, marker, value),
                Some(Via::Rlimit) => {
                    limits.rlimit(controller, value);
                    Ok(())
                }
                None => Err("no cgroup controller and no rlimit".to_owned()),
            };
            if let Err(error) = result {
                if sandbox.best_effort {
                    tracing::warn!(
                        "bash: sandbox: {} limit left out: {error}",
                        controller.name()
                    );
                } else {
                    return Err(format!(
                        "sandbox: the {} limit cannot be enforced here: {error}",
                        controller.name()
                    ));
                }
            }
        }
        Ok(limits)
    }

    fn write_v2(&mut self, controller: Controller, dir: &Path, value: Value) -> Result<(), String> {
        let write = |file: &str, text: String| {
            std::fs::write(dir.join(file), text).map_err(|e| format!("{file}: {e}"))
        };
        match (controller, value) {
            (Controller::Memory, Value::Bytes(bytes)) => {
                write("memory.max", bytes.to_string())?;
                // No swap: the limit is the memory the job may hold.
                let _ = write("memory.swap.max", "0".to_owned());
                self.memory_events = Some(dir.join("memory.events"));
            }
            (Controller::Pids, Value::Count(count)) => {
                write("pids.max", count.to_string())?;
                self.pids_events = Some(dir.join("pids.events"));
            }
            (Controller::Cpu, Value::Cpus(cpus)) => {
                write("cpu.max", format!("{} {PERIOD_US}", quota_us(cpus)))?;
            }
            _ => {}
        }
        Ok(())
    }

    fn write_v1(
        &mut self,
        controller: Controller,
        marker: &str,
        value: Value,
    ) -> Result<(), String> {
        let parent = v1_parent(controller).ok_or_else(|| "no v1 hierarchy".to_owned())?;
        let dir = parent.join(format!("harness-bash-{marker}"));
        std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        self.folders.push(dir.clone());
        let write = |file: &str, text: String| {
            std::fs::write(dir.join(file), text).map_err(|e| format!("{file}: {e}"))
        };
        match (controller, value) {
            (Controller::Memory, Value::Bytes(bytes)) => {
                write("memory.limit_in_bytes", bytes.to_string())?;
                // Present only with swap accounting.
                let _ = write("memory.memsw.limit_in_bytes", bytes.to_string());
                self.memory_events = Some(dir.join("memory.oom_control"));
            }
            (Controller::Pids, Value::Count(count)) => {
                write("pids.max", count.to_string())?;
                self.pids_events = Some(dir.join("pids.events"));
            }
            (Controller::Cpu, Value::Cpus(cpus)) => {
                write("cpu.cfs_period_us", PERIOD_US.to_string())?;
                write("cpu.cfs_quota_us", quota_us(cpus).to_string())?;
            }
            _ => {}
        }
        Ok(())
    }

    fn rlimit(&mut self, controller: Controller, value: Value) {
        use rustix::process::Resource;
        match (controller, value) {
            (Controller::Memory, Value::Bytes(bytes)) => self.rlimits.push((Resource::As, bytes)),
            (Controller::Pids, Value::Count(count)) => self.rlimits.push((Resource::Nproc, count)),
            _ => {}
        }
    }

    /// Whether the first process must be entered into folders before it runs anything.
    pub(crate) fn needs_entry(&self) -> bool {
        !self.folders.is_empty()
    }

    /// The job's own v1 folders (one per controller that needs one).
    pub(crate) fn folders(&self) -> &[PathBuf] {
        &self.folders
    }

    /// Moves `pid` (still waiting at the start gate) into every v1 folder.
    pub(crate) fn enter(&self, pid: i32) -> Result<(), String> {
        for dir in &self.folders {
            std::fs::write(dir.join("cgroup.procs"), pid.to_string())
                .map_err(|e| format!("entering {}: {e}", dir.display()))?;
        }
        Ok(())
    }

    /// What the counters say now.
    pub(crate) fn hits(&self) -> LimitHits {
        LimitHits {
            memory: self
                .memory_events
                .as_deref()
                .is_some_and(|file| counter(file, "oom_kill") > 0),
            pids: self
                .pids_events
                .as_deref()
                .is_some_and(|file| counter(file, "max") > 0),
        }
    }
}

impl Drop for JobLimits {
    fn drop(&mut self) {
        for dir in std::mem::take(&mut self.folders) {
            remove(dir);
        }
    }
}

fn remove(dir: PathBuf) {
    match std::fs::remove_dir(&dir) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(_) => turnkit_core::lock(&STALE).push(dir),
    }
}

/// The value of `key` in a flat-keyed cgroup file (`key value` lines); 0 if absent.
fn counter(file: &Path, key: &str) -> u64 {
    std::fs::read_to_string(file)
        .ok()
        .and_then(|text| {
            text.lines().find_map(|line| {
                let (name, value) = line.split_once(' ')?;
                (name == key).then(|| value.trim().parse().ok()).flatten()
            })
        })
        .unwrap_or(0)
}

#[derive(Clone, Copy)]
enum Value {
    Bytes(u64),
    Count(u64),
    Cpus(f64),
}

/// The CPU period: 100 ms.
const PERIOD_US: u64 = 100_000;

fn quota_us(cpus: f64) -> u64 {
    // At least 1 ms per period (the kernel's floor); cpus is validated finite and > 0.
    let quota = (cpus * PERIOD_US as f64).round();
    if quota < 1000.0 { 1000 } else { quota as u64 }
}
