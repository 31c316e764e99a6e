//! What the stdio and tasks benchmarks share: the `todo_write` arguments they send, the
//! percentiles they print, the release binary and the session folder.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

/// The arguments of round `round`'s `todo_write`: one completed item and one that alternates
/// between in progress and pending, so every call changes the list.
pub(crate) fn todos(round: usize) -> Value {
    let status = if round.is_multiple_of(2) {
        "in_progress"
    } else {
        "pending"
    };
    json!({"todos": [
        {"content": "Write the benchmark", "status": "completed"},
        {"content": format!("Round {round}"), "status": status},
    ]})
}

/// The 50th and 99th percentiles of `samples` (nearest rank).
pub(crate) fn percentiles(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    (at(0.50), at(0.99))
}

/// The release `harness` binary, built first.
pub(crate) fn release_harness() -> PathBuf {
    let status = std::process::Command::new(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "--release",
            "-p",
            "turnkit-cli",
            "--bin",
            "harness",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("cargo runs");
    assert!(status.success());
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/release/harness")
}

/// A temporary folder for sessions, under `/dev/shm` when it exists (so an fsync per flush
/// does not dominate what is measured).
pub(crate) fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    }
}

/// A release `harness mcp` child serving session `bench` of `dir/sessions` with `config`
/// (written to `dir/config.json`) over piped stdio: the child, its stdin and its stdout lines.
pub(crate) fn spawn_stdio(
    bin: &Path,
    dir: &Path,
    config: &Value,
) -> (
    tokio::process::Child,
    tokio::process::ChildStdin,
    tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
) {
    use tokio::io::AsyncBufReadExt;
    let config_path = dir.join("config.json");
    std::fs::write(&config_path, config.to_string()).unwrap();
    let mut child = tokio::process::Command::new(bin)
        .arg("mcp")
        .arg("--dir")
        .arg(dir.join("sessions"))
        .args(["--session", "bench"])
        .arg("--config")
        .arg(&config_path)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    (child, stdin, stdout)
}
