//! Protected paths inside the writable roots: the files through which a job could have code
//! run later outside its confinement (git hooks and configuration, shell start files, MCP
//! and editor configurations) stay read-only for the job, by a read-only bind mount of each
//! over itself in the job's mount namespace.

use std::path::{Component, Path, PathBuf};

use super::Sandbox;

/// The default `protectedPaths`, relative to each writable root.
pub const DEFAULT_PROTECTED: [&str; 12] = [
    ".git/hooks",
    ".git/config",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".mcp.json",
    ".vscode/tasks.json",
    ".vscode/settings.json",
];

/// Whether `entry` is a relative path without `..` (a `protectedPaths` entry).
pub(super) fn is_relative_entry(entry: &str) -> bool {
    let path = Path::new(entry);
    !entry.is_empty()
        && path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// The paths made read-only for a job now: each `protectedPaths` entry under each writable
/// root, then each `denyWrite` path, that exists (links followed: a link leading out of
/// the roots needs no protection, writes there are refused anyway), deduplicated.
pub(super) fn resolve(sandbox: &Sandbox) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for root in &sandbox.writable_roots {
        let Ok(root) = std::fs::canonicalize(root) else {
            continue;
        };
        for entry in sandbox.protected() {
            if let Ok(real) = std::fs::canonicalize(root.join(entry))
                && real.starts_with(&root)
            {
                found.push(real);
            }
        }
    }
    found.extend(
        sandbox
            .deny_write
            .iter()
            .filter_map(|p| std::fs::canonicalize(p).ok()),
    );
    found.sort();
    found.dedup();
    found
}
