use std::path::PathBuf;

use pretty_assertions::assert_eq;
use rustix::process::Signal;

use super::*;

#[cfg(target_os = "linux")]
#[test]
fn the_cgroup2_mount_and_own_path_give_the_parent_folder() {
    let hybrid = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
                  41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
    assert_eq!(
        cgroup::parse_parent(hybrid, "/"),
        Some(PathBuf::from("/sys/fs/cgroup/unified"))
    );
    let unified = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
    assert_eq!(
        cgroup::parse_parent(
            unified,
            "/user.slice/user-1000.slice/user@1000.service/app.slice"
        ),
        Some(PathBuf::from(
            "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice"
        ))
    );
    // A mount of a subtree (containers): the own path is relative to the namespace root
    // and must lie under the mount's root.
    let sub = "30 23 0:26 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
    assert_eq!(
        cgroup::parse_parent(sub, "/kubepods/pod1/c1"),
        Some(PathBuf::from("/sys/fs/cgroup/c1"))
    );
    assert_eq!(cgroup::parse_parent(sub, "/other"), None);
    // Only cgroup v1: no parent.
    let v1 = "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n";
    assert_eq!(cgroup::parse_parent(v1, "/"), None);
    assert_eq!(cgroup::parse_parent("", "/"), None);
    assert_eq!(
        cgroup::parse_parent("garbage without separator\n", "/"),
        None
    );
}

#[cfg(target_os = "linux")]
#[test]
fn mountinfo_escapes_are_decoded() {
    assert_eq!(cgroup::unescape(r"/mnt/with\040space"), "/mnt/with space");
    assert_eq!(cgroup::unescape(r"/a\134b"), r"/a\b");
    // A truncated or non-octal escape stays as it is.
    assert_eq!(cgroup::unescape(r"/a\04"), r"/a\04");
    assert_eq!(cgroup::unescape(r"/a\xyz"), r"/a\xyz");
}

#[test]
fn markers_are_distinct_hex() {
    let a = random_hex();
    let b = random_hex();
    assert_eq!(a.len(), 32);
    assert!(
        a.bytes()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
    );
    assert_ne!(a, b);
}

#[test]
fn a_process_tree_without_processes_has_no_members() {
    let tree = Tree::prepare(Containment::ProcessTree);
    assert!(!tree.has_members());
    let expected = if cfg!(target_os = "linux") {
        Mechanism::ProcessTree
    } else {
        Mechanism::ProcessGroup
    };
    assert_eq!(tree.mechanism(), expected);
    // Signalling an empty tree does nothing (and never the group, which is unset).
    tree.signal(Signal::KILL, Group::Include);
}
