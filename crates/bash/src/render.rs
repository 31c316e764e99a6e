//! Model-facing text of the bash producer (todo-jobs §6): the delta format, the
//! dropped-output notice, and signal names.

use std::path::Path;

/// Joins one read of stdout and stderr into the delta format (todo-jobs §6, exact): the
/// stdout text; then, if there is stderr text, a `[stderr]\n` header and that text, with a
/// newline before the header only when stdout is non-empty and lacks a trailing newline.
///
/// `("out\n", "err\n")` → `out\n[stderr]\nerr\n`; `("out", "err\n")` → the same;
/// `("", "err\n")` → `[stderr]\nerr\n`.
pub fn render_delta(stdout: &str, stderr: &str) -> String {
    let mut body = String::with_capacity(stdout.len() + stderr.len() + 10);
    body.push_str(stdout);
    if !stderr.is_empty() {
        if !body.is_empty() && !body.ends_with('\n') {
            body.push('\n');
        }
        body.push_str("[stderr]\n");
        body.push_str(stderr);
    }
    body
}

/// The dropped-output notice (todo-jobs §6, exact):
/// `[some output was dropped from memory; full output: <paths>]`, the existing spill paths
/// joined with `, `, or `(unavailable)` when there are none.
pub fn dropped_notice(spill_paths: &[&Path]) -> String {
    let listed = if spill_paths.is_empty() {
        "(unavailable)".to_owned()
    } else {
        spill_paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!("[some output was dropped from memory; full output: {listed}]")
}

/// Appends `notice` to `delta`, with a separating newline only when the delta is non-empty
/// and lacks a trailing newline (todo-jobs §6).
pub fn append_notice(mut delta: String, notice: &str) -> String {
    if !delta.is_empty() && !delta.ends_with('\n') {
        delta.push('\n');
    }
    delta.push_str(notice);
    delta
}

/// The conventional name of a Linux signal number (`15` → `SIGTERM`); numbers without a
/// name render as `SIG<n>` (real-time signals as `SIGRTMIN+<k>`).
pub fn signal_name(signal: i32) -> String {
    let name = match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        16 => "SIGSTKFLT",
        17 => "SIGCHLD",
        18 => "SIGCONT",
        19 => "SIGSTOP",
        20 => "SIGTSTP",
        21 => "SIGTTIN",
        22 => "SIGTTOU",
        23 => "SIGURG",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        26 => "SIGVTALRM",
        27 => "SIGPROF",
        28 => "SIGWINCH",
        29 => "SIGIO",
        30 => "SIGPWR",
        31 => "SIGSYS",
        34..=64 => return format!("SIGRTMIN+{}", signal - 34),
        _ => return format!("SIG{signal}"),
    };
    name.to_owned()
}

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;
