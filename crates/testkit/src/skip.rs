//! A test that cannot run its subject here says so where every test run shows it.
//!
//! The test harness captures what a passing test prints with `print!`/`eprint!`, so a skip
//! announced that way shows as a plain `ok`. [`skipped`] writes its line to the process's
//! standard error handle directly, which the harness does not capture: every `cargo test` run
//! shows one line per skipped test, numbered per test binary, so the last number of a binary
//! is how many of its tests skipped:
//!
//! ```text
//! SKIPPED #3 of this test binary: suite::group::a_flush_waits: HARNESS_TEST_POSTGRES_URL is not set …
//! ```
//!
//! With [`SKIP_LOG`] set to a file, each skip is also appended to it as one line
//! `<test binary>\t<test>\t<reason>`; the CI script prints the count per reason from it.

use std::io::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The environment variable naming the file skips are appended to (unset: none is written).
pub const SKIP_LOG: &str = "HARNESS_TEST_SKIP_LOG";

/// Records that the calling test skips its subject for `reason` (one sentence saying what is
/// missing and how to provide it), and returns the number of this skip in this test binary
/// (1 for the first). The caller returns right after; it still shows as `ok`.
///
/// The line goes to standard error uncaptured (see the module documentation); the test's name
/// is the harness's name for the current thread. A failure to write is ignored: a skip never
/// fails the test.
pub fn skipped(reason: &str) -> usize {
    static SKIPS: AtomicUsize = AtomicUsize::new(0);
    let number = SKIPS.fetch_add(1, Ordering::SeqCst) + 1;
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
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = file.write_all(line.as_bytes());
        }
    }
    number
}
