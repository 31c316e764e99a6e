//! [`Snapshot`]: what a path watch knows of the files it watches (size, modification time,
//! content hash), how it is read from the file system, and how two of them differ.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// A file larger than this many bytes is compared by size and modification time only (its
/// content is not hashed).
pub(crate) const HASH_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// What is known of one file: `[size in bytes, modification time in ms since the epoch,
/// SHA-256 of the content in lowercase hex or null when not hashed]` (its JSON shape).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Entry(pub(crate) u64, pub(crate) i64, pub(crate) Option<String>);

impl Entry {
    /// Whether `self` → `now` is a modification: the content differs (size or hash), or,
    /// for a file too large to hash, the modification time moved.
    fn modified_to(&self, now: &Entry) -> bool {
        match (&self.2, &now.2) {
            (Some(a), Some(b)) => self.0 != now.0 || a != b,
            _ => self.0 != now.0 || self.1 != now.1,
        }
    }
}

/// The kinds of change a path watch reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ChangeKind {
    /// A file appeared.
    Created,
    /// A file's content changed.
    Modified,
    /// A file went away.
    Removed,
}

impl ChangeKind {
    /// The kind's name in calls and texts.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Modified => "modified",
            Self::Removed => "removed",
        }
    }

    /// Decodes a name of a call's `changes`.
    pub(crate) fn parse(name: &str) -> Option<Self> {
        match name {
            "created" => Some(Self::Created),
            "modified" => Some(Self::Modified),
            "removed" => Some(Self::Removed),
            _ => None,
        }
    }
}

/// One change between two snapshots.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Change {
    pub(crate) kind: ChangeKind,
    /// The file's key in the snapshot (relative to the watched folder; `""` for a file watch).
    pub(crate) key: String,
    /// The entry after the change (`None` for a removal).
    pub(crate) now: Option<Entry>,
    /// The size before the change (a modification's).
    pub(crate) was_size: Option<u64>,
}

/// What a path watch watches: one file (which may not exist yet), or a folder's files
/// (directly in it, or at any depth).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Scope {
    /// The watched path, absolute.
    pub(crate) root: PathBuf,
    /// Whether `root` is a folder.
    pub(crate) folder: bool,
    /// For a folder: whether files at any depth count.
    pub(crate) recursive: bool,
    /// The most files a snapshot keeps; later ones (in path order) are not watched.
    pub(crate) max_files: usize,
}

impl Scope {
    /// The snapshot key of `path` when the watch covers it: its path relative to the
    /// folder (`/`-separated), or `""` for the watched file itself.
    pub(crate) fn key_of(&self, path: &Path) -> Option<String> {
        if !self.folder {
            return (path == self.root).then(String::new);
        }
        let rel = path.strip_prefix(&self.root).ok()?;
        let parts: Vec<&str> = rel
            .components()
            .map(|c| c.as_os_str().to_str())
            .collect::<Option<_>>()?;
        if parts.is_empty() || (!self.recursive && parts.len() > 1) {
            return None;
        }
        Some(parts.join("/"))
    }

    /// How `key` is shown: the watched file's full path, or the path inside the folder.
    pub(crate) fn show(&self, key: &str) -> String {
        if key.is_empty() {
            self.root.display().to_string()
        } else {
            key.to_owned()
        }
    }
}

/// The files of a scope, by key.
pub(crate) type Snapshot = BTreeMap<String, Entry>;

/// Reads `path`'s entry: `None` when it is missing or not a regular file.
pub(crate) fn entry_of(path: &Path) -> Option<Entry> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let hash = (meta.len() <= HASH_MAX_BYTES)
        .then(|| hash_file(path))
        .flatten();
    Some(Entry(meta.len(), mtime, hash))
}

fn hash_file(path: &Path) -> Option<String> {
    let mut file = std::fs::File::open(path).ok()?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    let digest = hasher.finalize();
    let mut hex = String::with_capacity(64);
    for byte in digest.iter() {
        hex.push_str(&format!("{byte:02x}"));
    }
    Some(hex)
}

/// Reads the whole scope from the file system (a folder's files in path order, at most
/// `max_files`; a missing file or folder gives an empty snapshot).
pub(crate) fn scan(scope: &Scope) -> Snapshot {
    let mut snapshot = Snapshot::new();
    if !scope.folder {
        if let Some(entry) = entry_of(&scope.root) {
            snapshot.insert(String::new(), entry);
        }
        return snapshot;
    }
    let mut files: Vec<PathBuf> = Vec::new();
    let mut dirs = vec![scope.root.clone()];
    while let Some(dir) = dirs.pop() {
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        for item in read.flatten() {
            let Ok(kind) = item.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if scope.recursive {
                    dirs.push(item.path());
                }
            } else if kind.is_file() {
                files.push(item.path());
            }
        }
    }
    files.sort();
    for path in files {
        if snapshot.len() >= scope.max_files {
            break;
        }
        if let (Some(key), Some(entry)) = (scope.key_of(&path), entry_of(&path)) {
            snapshot.insert(key, entry);
        }
    }
    snapshot
}

/// Brings `snapshot` up to date for the reported `paths` (each a file, a folder or a path
/// that is gone) and returns the changes, in key order. A reported folder is read again
/// (its files at any depth, for a recursive watch), and the files under a folder that is
/// gone are removed.
pub(crate) fn refresh(scope: &Scope, snapshot: &mut Snapshot, paths: &[PathBuf]) -> Vec<Change> {
    let mut fresh = Snapshot::new();
    let mut checked: Vec<String> = Vec::new();
    for path in paths {
        if !scope.folder {
            if path == &scope.root {
                checked.push(String::new());
                if let Some(entry) = entry_of(path) {
                    fresh.insert(String::new(), entry);
                }
            }
            continue;
        }
        if path == &scope.root || (scope.recursive && path.is_dir()) || !path.exists() {
            // A folder (or a path that is gone, which may have been one): every key under
            // it is checked again.
            let sub = Scope {
                root: path.clone(),
                ..scope.clone()
            };
            let prefix = scope.key_of(path).unwrap_or_default();
            for key in snapshot.keys() {
                if prefix.is_empty() || key == &prefix || key.starts_with(&format!("{prefix}/")) {
                    checked.push(key.clone());
                }
            }
            if path.is_dir() && (path == &scope.root || scope.recursive) {
                for (key, entry) in scan(&sub) {
                    let full = if prefix.is_empty() {
                        key
                    } else {
                        format!("{prefix}/{key}")
                    };
                    checked.push(full.clone());
                    fresh.insert(full, entry);
                }
            }
            continue;
        }
        if let Some(key) = scope.key_of(path) {
            checked.push(key.clone());
            if let Some(entry) = entry_of(path) {
                fresh.insert(key, entry);
            }
        }
    }
    checked.sort();
    checked.dedup();
    let mut changes = Vec::new();
    for key in checked {
        let was = snapshot.get(&key).cloned();
        let now = fresh.remove(&key);
        match (was, now) {
            (None, Some(now)) => {
                if snapshot.len() >= scope.max_files {
                    continue;
                }
                snapshot.insert(key.clone(), now.clone());
                changes.push(Change {
                    kind: ChangeKind::Created,
                    key,
                    now: Some(now),
                    was_size: None,
                });
            }
            (Some(was), None) => {
                snapshot.remove(&key);
                changes.push(Change {
                    kind: ChangeKind::Removed,
                    key,
                    now: None,
                    was_size: Some(was.0),
                });
            }
            (Some(was), Some(now)) => {
                let modified = was.modified_to(&now);
                snapshot.insert(key.clone(), now.clone());
                if modified {
                    changes.push(Change {
                        kind: ChangeKind::Modified,
                        key,
                        now: Some(now),
                        was_size: Some(was.0),
                    });
                }
            }
            (None, None) => {}
        }
    }
    changes
}

/// The changes from `before` to `after` (a restart's comparison), in key order.
pub(crate) fn diff(before: &Snapshot, after: &Snapshot) -> Vec<Change> {
    let mut keys: Vec<&String> = before.keys().chain(after.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut changes = Vec::new();
    for key in keys {
        match (before.get(key), after.get(key)) {
            (None, Some(now)) => changes.push(Change {
                kind: ChangeKind::Created,
                key: key.clone(),
                now: Some(now.clone()),
                was_size: None,
            }),
            (Some(was), None) => changes.push(Change {
                kind: ChangeKind::Removed,
                key: key.clone(),
                now: None,
                was_size: Some(was.0),
            }),
            (Some(was), Some(now)) if was.modified_to(now) => changes.push(Change {
                kind: ChangeKind::Modified,
                key: key.clone(),
                now: Some(now.clone()),
                was_size: Some(was.0),
            }),
            _ => {}
        }
    }
    changes
}

/// One change as a line of a wake: `created <path> (<n> bytes)`, `modified <path> (<a> →
/// <b> bytes)`, `removed <path>`.
pub(crate) fn describe(scope: &Scope, change: &Change) -> String {
    let shown = scope.show(&change.key);
    match (change.kind, &change.now, change.was_size) {
        (ChangeKind::Created, Some(now), _) => format!("created {shown} ({} bytes)", now.0),
        (ChangeKind::Modified, Some(now), Some(was)) => {
            format!("modified {shown} ({was} → {} bytes)", now.0)
        }
        (kind, _, _) => format!("{} {shown}", kind.as_str()),
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::{ChangeKind, Entry, Scope, Snapshot, describe, diff};

    #[test]
    fn a_diff_names_each_created_modified_and_removed_file_once_and_ignores_a_touch() {
        let mut before = Snapshot::new();
        before.insert("a".into(), Entry(1, 10, Some("x".into())));
        before.insert("b".into(), Entry(2, 10, Some("y".into())));
        before.insert("c".into(), Entry(3, 10, Some("z".into())));
        let mut after = before.clone();
        after.insert("a".into(), Entry(1, 99, Some("x".into())));
        after.insert("b".into(), Entry(5, 11, Some("w".into())));
        after.remove("c");
        after.insert("d".into(), Entry(7, 12, None));
        let scope = Scope {
            root: "/w".into(),
            folder: true,
            recursive: false,
            max_files: 10,
        };
        let changes = diff(&before, &after);
        assert_eq!(
            changes
                .iter()
                .map(|c| (c.kind, describe(&scope, c)))
                .collect::<Vec<_>>(),
            [
                (ChangeKind::Modified, "modified b (2 → 5 bytes)".to_owned()),
                (ChangeKind::Removed, "removed c".to_owned()),
                (ChangeKind::Created, "created d (7 bytes)".to_owned()),
            ]
        );
    }

    #[test]
    fn keys_are_relative_to_the_folder_and_depth_needs_recursive() {
        let flat = Scope {
            root: "/w".into(),
            folder: true,
            recursive: false,
            max_files: 10,
        };
        assert_eq!(flat.key_of("/w/a.txt".as_ref()).as_deref(), Some("a.txt"));
        assert_eq!(flat.key_of("/w/sub/a.txt".as_ref()), None);
        assert_eq!(flat.key_of("/other/a.txt".as_ref()), None);
        let deep = Scope {
            recursive: true,
            ..flat
        };
        assert_eq!(
            deep.key_of("/w/sub/a.txt".as_ref()).as_deref(),
            Some("sub/a.txt")
        );
        let file = Scope {
            root: "/w/f".into(),
            folder: false,
            recursive: false,
            max_files: 1,
        };
        assert_eq!(file.key_of("/w/f".as_ref()).as_deref(), Some(""));
        assert_eq!(file.key_of("/w/g".as_ref()), None);
        assert_eq!(file.show(""), "/w/f");
    }
}
