//! A test that cannot run its subject here says so where every test run shows it.
//!
//! The test harness captures what a passing test prints with `print!`/`eprint!`, so a skip
//! announced that way shows as a plain `ok`. [`skipped`] writes its line to the process's
//! standard error handle directly, which the harness does not capture: every `cargo test` run
//! shows one line per skipped test, numbered per test binary:
//!
//! ```text
//! SKIPPED #3 of this test binary: suite::group::a_flush_waits: HARNESS_TEST_POSTGRES_URL is not set …
//! ```
//!
//! When a test binary with skips exits, it prints how many of its tests skipped and why,
//! counted per reason, and, when `cargo` started it, the total of the `cargo test` run so far
//! (each binary of one run adds its count to a tally file named after the `cargo` process, in
//! the temporary folder), so the last such line of a run is the run's total:
//!
//! ```text
//! SKIPPED in total: 44 tests of this test binary (47 so far in this cargo run): 44 × HARNESS_TEST_POSTGRES_URL is not set; …
//! ```
//!
//! With [`SKIP_LOG`] set to a file, each skip is also appended to it as one line
//! `<test binary>\t<test>\t<reason>`; the CI script prints the count per reason from it.

use std::io::Write as _;
use std::sync::{Mutex, Once};

/// The environment variable naming the file skips are appended to (unset: none is written).
pub const SKIP_LOG: &str = "HARNESS_TEST_SKIP_LOG";

/// The reasons of this binary's skips, in order (one entry per skip).
static REASONS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Records that the calling test skips its subject for `reason` (one sentence saying what is
/// missing and how to provide it), and returns the number of this skip in this test binary
/// (1 for the first). The caller returns right after; it still shows as `ok`.
///
/// The line goes to standard error uncaptured (see the module documentation); the test's name
/// is the harness's name for the current thread. The first skip of a binary registers the
/// summary printed at its exit. A failure to write is ignored: a skip never fails the test.
pub fn skipped(reason: &str) -> usize {
    static SUMMARY: Once = Once::new();
    SUMMARY.call_once(register_summary);
    let number = {
        let mut reasons = REASONS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        reasons.push(reason.to_owned());
        reasons.len()
    };
    let current = std::thread::current();
    let test = current.name().unwrap_or("(unnamed test)");
    let _ = writeln!(
        std::io::stderr().lock(),
        "SKIPPED #{number} of this test binary: {test}: {reason}"
    );
    if let Ok(path) = std::env::var(SKIP_LOG)
        && !path.is_empty()
    {
        let binary = std::env::current_exe()
            .ok()
            .and_then(|exe| exe.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_default();
        // One `write` per line with O_APPEND: lines of parallel test processes do not mix.
        let line = format!("{binary}\t{test}\t{reason}\n");
        append(std::path::Path::new(&path), &line);
    }
    number
}

/// Appends `line` to `path` in one `write` (created if missing); failures are ignored.
fn append(path: &std::path::Path, line: &str) {
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = file.write_all(line.as_bytes());
    }
}

/// Registers [`print_summary`] to run when the process exits (the test harness returns from
/// `main` or calls `exit`; neither runs Rust destructors of statics).
#[expect(
    unsafe_code,
    reason = "atexit is the one hook that runs when the test harness's main returns; the \
              callback is a plain extern \"C\" function that only writes to stderr and a file"
)]
fn register_summary() {
    // SAFETY: `atexit` only stores the function pointer; `summary_at_exit` is a valid
    // `extern "C" fn()` for the life of the process and does not unwind (it catches panics).
    let _ = unsafe { libc::atexit(summary_at_exit) };
}

extern "C" fn summary_at_exit() {
    let _ = std::panic::catch_unwind(print_summary);
}

/// The exit summary: this binary's skip count by reason and, under `cargo`, the run's tally.
fn print_summary() {
    let reasons = REASONS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    if reasons.is_empty() {
        return;
    }
    let mut counted: Vec<(&str, usize)> = Vec::new();
    for reason in &reasons {
        match counted.iter_mut().find(|(r, _)| *r == reason.as_str()) {
            Some((_, n)) => *n += 1,
            None => counted.push((reason, 1)),
        }
    }
    let why = counted
        .iter()
        .map(|(reason, n)| format!("{n} × {reason}"))
        .collect::<Vec<_>>()
        .join("; ");
    let run = run_tally(reasons.len())
        .map(|total| format!(" ({total} so far in this cargo run)"))
        .unwrap_or_default();
    let _ = writeln!(
        std::io::stderr().lock(),
        "SKIPPED in total: {} tests of this test binary{run}: {why}",
        reasons.len()
    );
}

/// Adds `count` to the tally of the `cargo` process that started this binary and returns the
/// tally, or `None` when the parent is not `cargo` (run by hand, or a test's child process).
/// The tally file, in the temporary folder, is named after the parent's pid and start time
/// (`/proc/<pid>/stat`), so a reused pid starts afresh.
fn run_tally(count: usize) -> Option<usize> {
    let parent = std::os::unix::process::parent_id();
    let comm = std::fs::read_to_string(format!("/proc/{parent}/comm")).ok()?;
    if comm.trim_end() != "cargo" {
        return None;
    }
    let stat = std::fs::read_to_string(format!("/proc/{parent}/stat")).ok()?;
    // Field 22 (start time), counted after the parenthesized command name.
    let started = stat
        .rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(19)?
        .to_owned();
    let path = std::env::temp_dir().join(format!("turnkit-skips-{parent}-{started}"));
    append(&path, &format!("{count}\n"));
    let text = std::fs::read_to_string(&path).ok()?;
    Some(text.lines().filter_map(|l| l.parse::<usize>().ok()).sum())
}
