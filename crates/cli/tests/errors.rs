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
        format!("harness: --store mysql://db/harness: unknown store; {GIVE}\n")
    );
}

/// What `--store` accepts, as its refusals end.
const GIVE: &str = "give a postgres:// or postgresql:// URL, a PostgreSQL connection string \
                    (host=... dbname=... user=...), or an existing folder for JSONL files";

/// `harness mcp` with `--store value` on session `s`: its exit status and standard error.
#[expect(clippy::unwrap_used, reason = "a test helper stops on failure")]
fn with_store(value: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.json");
    std::fs::write(&config, r#"{"todo":{"allowParallelInProgress":false}}"#).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_harness"))
        .current_dir(dir.path())
        .args(["mcp", "--session", "s", "--store", value, "--config"])
        .arg(&config)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let entries: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(
        entries,
        ["config.json"],
        "nothing is created for a refused --store"
    );
    (
        output.status.code(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

/// A `--store` that is neither a URL, an existing folder nor a key-value connection string
/// that parses is refused before anything is opened or created, with what was wrong.
#[test]
fn a_store_neither_folder_nor_connection_string_is_refused() {
    assert_eq!(
        with_store("sessions-not-made"),
        (
            Some(1),
            format!(
                "harness: --store sessions-not-made: no such folder, and not a PostgreSQL \
                 connection string; {GIVE} (--dir creates its folder)\n"
            )
        )
    );
    assert_eq!(
        with_store("hots=/tmp dbname=harness"),
        (
            Some(1),
            format!(
                "harness: --store hots=/tmp dbname=harness: not a PostgreSQL connection string \
                 (unknown option `hots`); {GIVE}\n"
            )
        )
    );
    assert_eq!(
        with_store("host=/tmp dbname='harness"),
        (
            Some(1),
            format!(
                "harness: --store host=/tmp dbname='harness: not a PostgreSQL connection string \
                 (unterminated quoted connection parameter value); {GIVE}\n"
            )
        )
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
