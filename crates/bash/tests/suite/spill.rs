//! Decision 17: spill files are private (a 0700 folder of this user, 0600 files with
//! unpredictable names), and live exactly as long as their job record unless the host
//! asked to keep them.

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_bash::{BashProcess, SpillOptions};
use turnkit_core::SessionId;

use super::support::{Host, LIMIT, finish, options};

/// A process printing 100 lines to stdout and one to stderr with 10 bytes of memory per
/// stream, spilling into `dir`; returns it finished.
async fn chatty(dir: &Path) -> BashProcess {
    let mut options = options("seq 1 100; echo oops >&2");
    options.max_output_bytes = 10;
    options.spill = Some(SpillOptions::new(dir, 1 << 20));
    let process = BashProcess::spawn(options).unwrap();
    finish(&process).await;
    process
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

fn is_private_name(path: &Path, extension: &str) -> bool {
    let name = path.file_name().unwrap().to_str().unwrap();
    name.strip_prefix("bash-")
        .and_then(|rest| rest.strip_suffix(extension))
        .is_some_and(|hex| {
            hex.len() == 32
                && hex
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        })
}

#[tokio::test]
async fn the_folder_is_0700_and_the_files_0600_with_unpredictable_names() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("spill");
    let first = chatty(&dir).await;
    let second = chatty(&dir).await;
    assert_eq!(mode(&dir), 0o700);
    let paths = first.spill_paths();
    assert_eq!(paths.len(), 2);
    assert!(is_private_name(&paths[0], ".stdout"), "{paths:?}");
    assert!(is_private_name(&paths[1], ".stderr"), "{paths:?}");
    // One stem per process, unrelated between processes.
    assert_eq!(paths[0].with_extension(""), paths[1].with_extension(""));
    assert_ne!(paths[0], second.spill_paths()[0]);
    for path in paths.iter().chain(&second.spill_paths()) {
        assert_eq!(mode(path), 0o600, "{}", path.display());
        assert_eq!(
            std::fs::metadata(path).unwrap().uid(),
            rustix::process::geteuid().as_raw()
        );
    }
    assert_eq!(
        std::fs::read_to_string(&paths[1]).unwrap(),
        "oops\n",
        "the files still hold everything"
    );
}

/// Nothing is spilled into `dir`: no files, the notice says `(unavailable)`.
async fn assert_refused(dir: &Path) {
    let process = chatty(dir).await;
    assert_eq!(process.spill_paths(), Vec::<PathBuf>::new());
    assert!(
        process
            .read()
            .ends_with("[some output was dropped from memory; full output: (unavailable)]")
    );
    let listed: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    assert_eq!(listed, Vec::<PathBuf>::new());
}

#[tokio::test]
async fn a_group_or_world_writable_folder_is_refused() {
    for writable in [0o777, 0o770, 0o702] {
        let temp = tempfile::tempdir().unwrap();
        std::fs::set_permissions(temp.path(), std::fs::Permissions::from_mode(writable)).unwrap();
        assert_refused(temp.path()).await;
        assert_eq!(
            mode(temp.path()),
            writable,
            "the host's folder is left alone"
        );
    }
}

#[tokio::test]
async fn a_link_in_place_of_the_folder_is_refused() {
    let temp = tempfile::tempdir().unwrap();
    let target = temp.path().join("elsewhere");
    std::fs::create_dir(&target).unwrap();
    let link = temp.path().join("spill");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    assert_refused(&link).await;
    assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);
}

#[tokio::test]
async fn a_folder_owned_by_another_user_is_refused() {
    if !rustix::process::geteuid().is_root() {
        // Only root can give a folder away; CI runs as root.
        turnkit_testkit::skip::skipped(
            "not root: only root can give a folder to another user (run the tests as root)",
        );
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let theirs = temp.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
    assert_refused(&theirs).await;
}

#[tokio::test]
async fn the_notice_names_only_the_files_that_still_exist() {
    let temp = tempfile::tempdir().unwrap();
    let process = chatty(temp.path()).await;
    let paths = process.spill_paths();
    assert_eq!(paths.len(), 2);
    std::fs::remove_file(&paths[0]).unwrap();
    let text = process.read();
    assert!(
        text.ends_with(&format!(
            "[some output was dropped from memory; full output: {}]",
            paths[1].display()
        )),
        "{text}"
    );
}

/// Starts a chatty job as `s1`, collects it (the notice names the stdout file) and returns
/// the files in the host's spill folder.
async fn spilled_job(host: &Host) -> Vec<PathBuf> {
    host.session("s1");
    host.call(
        Some("s1"),
        "bash",
        json!({"command": "seq 1 100", "run_in_background": true}),
    )
    .await;
    let text = host.collect(Some("s1"), "bash-1").await;
    let files = listing(host.spill.path());
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(
        text.ends_with(&format!(
            "[some output was dropped from memory; full output: {}]\n[status: completed, exit code: 0]",
            files[0].display()
        )),
        "{text}"
    );
    // A later read of the finished job's stream leaves the files alone.
    host.collect(Some("s1"), "bash-1").await;
    assert_eq!(listing(host.spill.path()), files);
    files
}

fn listing(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

#[tokio::test]
async fn spill_files_are_removed_with_the_record_on_owner_disposal() {
    let host = Host::new(&json!({"maxOutputBytes": 100}), json!({}));
    spilled_job(&host).await;
    let disposed = tokio::time::timeout(LIMIT, host.harness.dispose_agent(&SessionId::from("s1")))
        .await
        .unwrap();
    assert!(disposed);
    assert_eq!(listing(host.spill.path()), Vec::<PathBuf>::new());
}

#[tokio::test]
async fn spill_files_are_removed_on_registry_disposal() {
    let host = Host::new(&json!({"maxOutputBytes": 100}), json!({}));
    spilled_job(&host).await;
    tokio::time::timeout(LIMIT, host.jobs.dispose())
        .await
        .unwrap();
    assert_eq!(listing(host.spill.path()), Vec::<PathBuf>::new());
}

#[tokio::test]
async fn a_host_folder_with_keep_spill_files_keeps_them() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("kept");
    let host = Host::new(
        &json!({"maxOutputBytes": 100, "spillDir": dir, "keepSpillFiles": true}),
        json!({}),
    );
    host.session("s1");
    host.call(
        Some("s1"),
        "bash",
        json!({"command": "seq 1 100", "run_in_background": true}),
    )
    .await;
    host.collect(Some("s1"), "bash-1").await;
    tokio::time::timeout(LIMIT, host.jobs.dispose())
        .await
        .unwrap();
    let files = listing(&dir);
    assert_eq!(files.len(), 1, "{files:?}");
    let full: String = (1..=100).map(|i| format!("{i}\n")).collect();
    assert_eq!(std::fs::read_to_string(&files[0]).unwrap(), full);
    assert_eq!(mode(&files[0]), 0o600);
}
