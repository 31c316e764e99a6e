//! How the binary reports a failure on standard error.

use std::process::Command;

use pretty_assertions::assert_eq;

/// A store error whose text includes the operating system's message prints it once (before:
/// `… Is a directory (os error 21): Is a directory (os error 21)`).
#[test]
fn an_io_error_is_reported_once() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_harness"))
        .arg("log")
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let path = dir.path().display();
    assert_eq!(
        String::from_utf8(output.stderr).unwrap(),
        format!("harness: reading {path}: i/o error on {path}: Is a directory (os error 21)\n")
    );
}

/// `--store` takes a PostgreSQL URL or a folder; another URL scheme is refused before anything
/// is opened.
#[test]
fn an_unknown_store_scheme_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.json");
    std::fs::write(&config, r#"{"todo":{"allowParallelInProgress":false}}"#).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args([
            "mcp",
            "--session",
            "s",
            "--store",
            "mysql://db/harness",
            "--config",
        ])
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(output.stderr).unwrap(),
        "harness: --store mysql://db/harness: unknown store; give a postgres:// or \
         postgresql:// URL, or a folder for JSONL files\n"
    );
}

/// `--workers` counts threads: zero is refused before anything is opened.
#[test]
fn zero_http_workers_are_refused() {
    let output = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["mcp", "--http", "127.0.0.1:0", "--workers", "0"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(
        stderr.lines().next(),
        Some("error: invalid value '0' for '--workers <N>': 0 is not in 1..=65535")
    );
}
