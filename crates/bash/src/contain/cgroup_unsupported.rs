//! No cgroups outside Linux: nothing is created, every job is contained by its process group.

use std::path::{Path, PathBuf};

use rustix::process::Pid;

pub(super) fn parent() -> Option<&'static Path> {
    None
}

pub(super) fn create(_marker: &str) -> Option<PathBuf> {
    None
}
pub(super) fn existing(_marker: &str) -> Option<PathBuf> {
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
pub(super) fn remove(_dir: &Path, _tasks: Option<&crate::TaskSet>) {}
