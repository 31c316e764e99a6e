//! The process runner with real `bash` processes (real time, short durations).

use std::sync::Arc;
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use turnkit_bash::{BashError, BashProcess, EndStatus, ProcessEnd, SpillOptions, StreamStats};
use turnkit_testkit::ManualClock;

use super::support::{
    assert_group_gone, finish, live_group_members, options, read_until, wait_until,
};

async fn run(command: &str) -> (String, ProcessEnd) {
    let process = BashProcess::spawn(options(command)).unwrap();
    let end = finish(&process).await;
    (process.read(), end)
}

fn exited(code: i32) -> ProcessEnd {
    ProcessEnd {
        status: EndStatus::Exited(code),
        cancel_requested: false,
    }
}

#[tokio::test]
async fn stdout_only() {
    assert_eq!(run("echo out").await, ("out\n".to_owned(), exited(0)));
}

#[tokio::test]
async fn stderr_only() {
    assert_eq!(
        run("echo err >&2").await,
        ("[stderr]\nerr\n".to_owned(), exited(0))
    );
}

#[tokio::test]
async fn interleaved_output_is_sectioned_stdout_first() {
    assert_eq!(
        run("echo out; echo err >&2").await,
        ("out\n[stderr]\nerr\n".to_owned(), exited(0))
    );
    assert_eq!(
        run("printf out; echo err >&2").await,
        ("out\n[stderr]\nerr\n".to_owned(), exited(0))
    );
    assert_eq!(
        run("for i in 1 2 3; do echo o$i; echo e$i >&2; done").await,
        ("o1\no2\no3\n[stderr]\ne1\ne2\ne3\n".to_owned(), exited(0))
    );
}

#[tokio::test]
async fn no_trailing_newline() {
    assert_eq!(run("printf abc").await, ("abc".to_owned(), exited(0)));
}

#[tokio::test]
async fn binary_and_invalid_utf8_output_is_lossy() {
    assert_eq!(
        run(r"printf 'A\xff\xfeB\x00C\xe2\x98'").await,
        ("A\u{FFFD}\u{FFFD}B\0C\u{FFFD}".to_owned(), exited(0))
    );
}

#[tokio::test]
async fn exit_codes() {
    assert_eq!(run("exit 0").await, (String::new(), exited(0)));
    assert_eq!(run("exit 3").await, (String::new(), exited(3)));
    let (text, end) = run("no-such-command-harness").await;
    assert_eq!(end, exited(127));
    // bash words the prefix differently by version (`bash: line 1: …`).
    assert!(text.starts_with("[stderr]\nbash: "), "{text}");
    assert!(
        text.ends_with("no-such-command-harness: command not found\n"),
        "{text}"
    );
}

#[tokio::test]
async fn working_directory_and_environment() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = options("pwd; echo \"$HARNESS_TEST_VAR\"");
    options.cwd = Some(dir.path().to_path_buf());
    options
        .env
        .insert("HARNESS_TEST_VAR".to_owned(), "from-options".to_owned());
    let process = BashProcess::spawn(options).unwrap();
    assert_eq!(finish(&process).await, exited(0));
    let expected = format!(
        "{}\nfrom-options\n",
        dir.path().canonicalize().unwrap().display()
    );
    assert_eq!(process.read(), expected);
}

#[tokio::test]
async fn a_missing_working_directory_fails_to_spawn() {
    let mut options = options("true");
    options.cwd = Some("/nonexistent/harness-bash-test".into());
    let error = BashProcess::spawn(options).unwrap_err();
    assert!(matches!(error, BashError::Spawn(_)));
    assert!(
        error.to_string().starts_with("failed to start bash: "),
        "{error}"
    );
}

#[tokio::test]
async fn reads_are_consuming_while_the_process_runs() {
    let dir = tempfile::tempdir().unwrap();
    let flag = dir.path().join("flag");
    let command = format!(
        "echo first; while [ ! -e '{}' ]; do sleep 0.01; done; echo second",
        flag.display()
    );
    let process = BashProcess::spawn(options(&command)).unwrap();
    assert_eq!(read_until(&process, "first\n").await, "first\n");
    assert_eq!(process.read(), "");
    std::fs::write(&flag, "").unwrap();
    assert_eq!(finish(&process).await, exited(0));
    assert_eq!(process.read(), "second\n");
    assert_eq!(process.read(), "");
}

#[tokio::test]
async fn the_end_waits_for_pipes_held_by_grandchildren() {
    let process = BashProcess::spawn(options("(sleep 0.3; echo late) & echo early")).unwrap();
    assert_eq!(finish(&process).await, exited(0));
    assert_eq!(process.read(), "early\nlate\n");
}

#[tokio::test]
async fn dropped_output_notice_without_spill_files() {
    let mut options = options("head -c 100 /dev/zero | tr '\\0' a");
    options.max_output_bytes = 10;
    let process = BashProcess::spawn(options).unwrap();
    assert_eq!(finish(&process).await, exited(0));
    assert_eq!(
        process.read(),
        "aaaaaaaaaa\n[some output was dropped from memory; full output: (unavailable)]"
    );
    assert_eq!(process.read(), "");
    assert_eq!(
        process.stats(),
        (
            StreamStats {
                written: 100,
                dropped: 90
            },
            StreamStats::default()
        )
    );
}

#[tokio::test]
async fn dropped_output_notice_names_the_spill_files_that_exist() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = options("for i in $(seq 1 100); do echo line$i; done; echo oops >&2");
    options.max_output_bytes = 100;
    options.spill = Some(SpillOptions::new(dir.path().join("spill"), 1 << 20));
    let process = BashProcess::spawn(options).unwrap();
    assert_eq!(finish(&process).await, exited(0));
    let paths = process.spill_paths();
    assert_eq!(paths.len(), 2);
    let text = process.read();
    let notice = format!(
        "[some output was dropped from memory; full output: {}, {}]",
        paths[0].display(),
        paths[1].display()
    );
    assert!(
        text.ends_with(&format!("line100\n[stderr]\noops\n{notice}")),
        "{text}"
    );
    let full: String = (1..=100).map(|i| format!("line{i}\n")).collect();
    assert_eq!(std::fs::read_to_string(&paths[0]).unwrap(), full);
    assert_eq!(std::fs::read_to_string(&paths[1]).unwrap(), "oops\n");
    assert!(paths[0].extension().is_some_and(|e| e == "stdout"));
    // Spill files live as long as the process handle.
    drop(process);
    assert!(!paths[0].exists());
    assert!(!paths[1].exists());
}

#[tokio::test]
async fn only_streams_with_output_get_a_spill_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = options("head -c 50 /dev/zero");
    options.max_output_bytes = 10;
    options.spill = Some(SpillOptions::new(dir.path(), 20));
    let process = BashProcess::spawn(options).unwrap();
    assert_eq!(finish(&process).await, exited(0));
    let paths = process.spill_paths();
    assert_eq!(paths.len(), 1);
    assert_eq!(
        process.read(),
        format!(
            "{}\n[some output was dropped from memory; full output: {}]",
            "\0".repeat(10),
            paths[0].display()
        )
    );
    // The spill cap bounds the file.
    assert_eq!(std::fs::metadata(&paths[0]).unwrap().len(), 20);
}

fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[tokio::test]
async fn a_hundred_mebibytes_of_output_stay_within_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = options("head -c 104857600 /dev/zero");
    options.spill = Some(SpillOptions::new(dir.path(), 1 << 20));
    let before = peak_rss_kib();
    let process = BashProcess::spawn(options).unwrap();
    assert_eq!(finish(&process).await, exited(0));
    let text = process.read();
    let growth_kib = peak_rss_kib().saturating_sub(before);
    let (stdout, stderr) = process.stats();
    assert_eq!(stdout.written, 104_857_600);
    assert_eq!(stdout.dropped, 104_857_600 - 1_048_576);
    assert_eq!(stderr, StreamStats::default());
    let notice = format!(
        "\n[some output was dropped from memory; full output: {}]",
        process.spill_paths()[0].display()
    );
    assert_eq!(text.len(), 1_048_576 + notice.len());
    assert!(text.ends_with(&notice));
    // Unbounded buffering would grow by 100 MiB; the buffer is capped at 1 MiB (plus the
    // copy handed out by the read). Generous slack for parallel tests in one process.
    assert!(growth_kib < 48 * 1024, "peak RSS grew by {growth_kib} KiB");
}

#[tokio::test]
async fn cancel_kills_the_group_with_sigterm() {
    let process = BashProcess::spawn(options("echo ready; sleep 1000")).unwrap();
    read_until(&process, "ready").await;
    process.cancel();
    process.cancel();
    assert_eq!(
        finish(&process).await,
        ProcessEnd {
            status: EndStatus::Signaled(15),
            cancel_requested: true
        }
    );
    assert_group_gone(process.pid()).await;
}

#[tokio::test]
async fn a_command_ignoring_sigterm_is_killed_after_the_grace() {
    let process = BashProcess::spawn(options("trap '' TERM; echo ready; sleep 1000")).unwrap();
    read_until(&process, "ready").await;
    let started = Instant::now();
    process.cancel();
    let end = finish(&process).await;
    let elapsed = started.elapsed();
    assert_eq!(
        end,
        ProcessEnd {
            status: EndStatus::Signaled(9),
            cancel_requested: true
        }
    );
    assert!(elapsed >= Duration::from_millis(300), "{elapsed:?}");
    assert_group_gone(process.pid()).await;
}

#[tokio::test]
async fn cancel_reaches_grandchildren() {
    let process =
        BashProcess::spawn(options("sleep 1000 & sleep 1000 & echo ready; wait")).unwrap();
    read_until(&process, "ready").await;
    assert_eq!(live_group_members(process.pid()).len(), 3);
    process.cancel();
    let end = finish(&process).await;
    assert_eq!(end.status, EndStatus::Signaled(15));
    assert_group_gone(process.pid()).await;
}

#[tokio::test]
async fn cancel_after_the_shell_exited_still_stops_grandchildren_holding_the_pipes() {
    let process = BashProcess::spawn(options("sleep 1000 & echo ready")).unwrap();
    read_until(&process, "ready").await;
    let pid = process.pid();
    wait_until(|| !live_group_members(pid).contains(&pid)).await;
    assert_eq!(live_group_members(pid).len(), 1);
    assert_eq!(process.try_end(), None);
    process.cancel();
    let end = finish(&process).await;
    assert_eq!(
        end,
        ProcessEnd {
            status: EndStatus::Exited(0),
            cancel_requested: true
        }
    );
    assert_group_gone(process.pid()).await;
}

#[tokio::test]
async fn dropping_the_last_handle_stops_the_group() {
    let process = BashProcess::spawn(options("sleep 1000 & echo ready; wait")).unwrap();
    read_until(&process, "ready").await;
    let pid = process.pid();
    let done = process.wait();
    drop(process);
    let end = tokio::time::timeout(super::support::LIMIT, done)
        .await
        .unwrap();
    assert_eq!(
        end,
        ProcessEnd {
            status: EndStatus::Signaled(15),
            cancel_requested: true
        }
    );
    assert_group_gone(pid).await;
}

#[tokio::test]
async fn cancel_racing_a_natural_exit_ends_once() {
    for _ in 0..20 {
        let process = BashProcess::spawn(options("true")).unwrap();
        process.cancel();
        let end = finish(&process).await;
        assert!(
            matches!(end.status, EndStatus::Exited(0) | EndStatus::Signaled(15)),
            "{end:?}"
        );
        assert!(end.cancel_requested);
        // A cancel after the end does nothing.
        process.cancel();
        assert_eq!(process.try_end(), Some(end));
    }
}

#[tokio::test]
async fn the_kill_grace_is_measured_through_the_clock_seam() {
    let clock = Arc::new(ManualClock::at_default());
    let mut options = options("trap '' TERM; echo ready; sleep 1000");
    options.clock = clock.clone();
    options.kill_grace = Duration::from_secs(2);
    let process = BashProcess::spawn(options).unwrap();
    read_until(&process, "ready").await;
    process.cancel();
    // The supervisor arms the grace timer on the manual clock; nothing escalates until the
    // clock moves, however long that takes in real time.
    wait_until(|| clock.pending_sleeps() == 1).await;
    assert_eq!(process.try_end(), None);
    assert_eq!(live_group_members(process.pid()), vec![process.pid()]);
    clock.advance(Duration::from_millis(1999)).await;
    assert_eq!(process.try_end(), None);
    clock.advance(Duration::from_millis(1)).await;
    assert_eq!(
        finish(&process).await,
        ProcessEnd {
            status: EndStatus::Signaled(9),
            cancel_requested: true
        }
    );
    assert_group_gone(process.pid()).await;
}
