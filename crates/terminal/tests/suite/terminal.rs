//! The terminal tools with real PTYs: a prompt answered, Ctrl-C, the output cap, and
//! containment on owner disposal.

use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_core::SessionId;
use turnkit_jobs::JobStatus;

use super::support::{Host, LIMIT, settle_count, unique};

#[tokio::test]
async fn a_prompt_is_answered_through_terminal_send() {
    let host = Host::new(&json!({}));
    host.session("s1");
    let started = host
        .call(
            Some("s1"),
            "terminal_start",
            json!({"command": "read -p 'Name? ' name; echo \"hello $name\"; read -p 'Again? ' x"}),
        )
        .await;
    assert_eq!(started.text(), "started terminal term-1");
    assert_eq!(started.value, json!({"terminalId": "term-1"}));
    let prompt = host
        .call(
            Some("s1"),
            "terminal_send",
            json!({"terminal_id": "term-1", "wait_for": "Name? "}),
        )
        .await;
    assert_eq!(
        prompt.text(),
        "Name? \n[status: completed, wait_for matched]"
    );
    let answer = host
        .call(
            Some("s1"),
            "terminal_send",
            json!({"terminal_id": "term-1", "text": "Alice", "keys": ["enter"], "wait_for": "Again? "}),
        )
        .await;
    assert_eq!(
        answer.text(),
        "Alice\nhello Alice\nAgain? \n[status: completed, wait_for matched]"
    );
    assert_eq!(answer.value["jobId"], json!("pty-send-2"));
    let list = host.call(Some("s1"), "job_list", json!({})).await;
    assert_eq!(
        list.text(),
        "pty-send-1 [pty-send] completed — term-1: (input)\n\
         pty-send-2 [pty-send] completed — term-1: Alice"
    );
    // The program exits after its last answer: the send ends with it.
    let last = host
        .call(
            Some("s1"),
            "terminal_send",
            json!({"terminal_id": "term-1", "text": "x\n"}),
        )
        .await;
    assert_eq!(
        last.text(),
        "x\n[status: completed, terminal exited (exit code: 0)]"
    );
    let again = host
        .call(
            Some("s1"),
            "terminal_send",
            json!({"terminal_id": "term-1", "text": "y"}),
        )
        .await;
    assert!(again.is_error);
    assert_eq!(
        again.text(),
        "Error: terminal term-1 has exited (exit code: 0); start another with terminal_start"
    );
    let killed = host
        .call(
            Some("s1"),
            "terminal_kill",
            json!({"terminal_id": "term-1"}),
        )
        .await;
    assert_eq!(
        killed.text(),
        "terminal term-1 had already exited (exit code: 0)"
    );
}

#[tokio::test]
async fn ctrl_c_reaches_the_foreground_process() {
    let host = Host::new(&json!({}));
    host.session("s1");
    host.call(
        Some("s1"),
        "terminal_start",
        json!({"command": "trap 'echo got-sigint; exit 7' INT; echo ready; while :; do sleep 0.05; done"}),
    )
    .await;
    let ready = host
        .call(
            Some("s1"),
            "terminal_send",
            json!({"terminal_id": "term-1", "wait_for": "ready"}),
        )
        .await;
    assert_eq!(ready.text(), "ready\n[status: completed, wait_for matched]");
    let interrupted = host
        .call(
            Some("s1"),
            "terminal_send",
            json!({"terminal_id": "term-1", "keys": ["ctrl-c"], "wait_for": "got-sigint"}),
        )
        .await;
    // The terminal echoes Ctrl-C as ^C; the shell's trap prints and exits.
    assert!(
        interrupted
            .text()
            .ends_with("got-sigint\n[status: completed, wait_for matched]"),
        "{}",
        interrupted.text()
    );
    let end = host
        .call(
            Some("s1"),
            "terminal_send",
            json!({"terminal_id": "term-1"}),
        )
        .await;
    assert!(
        end.text()
            .ends_with("[status: completed, terminal exited (exit code: 7)]"),
        "{}",
        end.text()
    );
}

#[tokio::test]
async fn output_over_max_result_bytes_is_capped_with_the_marker() {
    let host = Host::new(&json!({"maxResultBytes": 64}));
    host.session("s1");
    host.call(
        Some("s1"),
        "terminal_start",
        json!({"command": "head -c 1000 /dev/zero | tr '\\0' a; echo; echo END"}),
    )
    .await;
    let capped = host
        .call(
            Some("s1"),
            "terminal_send",
            json!({"terminal_id": "term-1", "wait_for": "END"}),
        )
        .await;
    assert_eq!(
        capped.text(),
        "aaa\nEND\n[output truncated]\n[status: completed, wait_for matched]"
    );
    assert_eq!(capped.text().len(), 64);
    // In the background, job_output caps the same way (the job's outputLimitBytes).
    host.call(
        Some("s1"),
        "terminal_start",
        json!({"command": "head -c 1000 /dev/zero | tr '\\0' b; echo; echo END"}),
    )
    .await;
    let started = host
        .call(
            Some("s1"),
            "terminal_send",
            json!({"terminal_id": "term-2", "wait_for": "END", "run_in_background": true}),
        )
        .await;
    assert_eq!(started.text(), "started background job pty-send-2");
    let output = host
        .call(
            Some("s1"),
            "job_output",
            json!({"job_id": "pty-send-2", "wait": true}),
        )
        .await;
    assert_eq!(
        output.text(),
        "bbb\nEND\n[output truncated]\n[status: completed, wait_for matched]"
    );
}

#[tokio::test]
async fn disposing_the_owner_leaves_no_process_behind() {
    let host = Host::new(&json!({"killGraceMs": 300}));
    host.session("s1");
    let marker = unique("owner");
    // An interactive shell with a background job, a job in its own session, and a
    // foreground job that ignores SIGHUP and SIGTERM.
    host.call(Some("s1"), "terminal_start", json!({})).await;
    let command = format!(
        "(exec -a {marker} sleep 1000) & setsid bash -c 'exec -a {marker} sleep 1000' & \
         bash -c 'trap \"\" HUP TERM; echo armed; exec -a {marker} sleep 1000'"
    );
    let armed = host
        .call(
            Some("s1"),
            "terminal_send",
            json!({"terminal_id": "term-1", "text": command, "keys": ["enter"], "wait_for": "armed\n"}),
        )
        .await;
    assert!(
        armed
            .text()
            .ends_with("[status: completed, wait_for matched]"),
        "{}",
        armed.text()
    );
    assert_eq!(settle_count(&marker, 3).await, 3);
    let disposed = tokio::time::timeout(LIMIT, host.harness.dispose_agent(&SessionId::from("s1")))
        .await
        .unwrap();
    assert!(disposed);
    assert!(host.terminal.terminals().ids().is_empty());
    assert_eq!(settle_count(&marker, 0).await, 0);
}

#[tokio::test]
async fn job_kill_of_a_send_settles_killed_and_terminal_kill_stops_the_tree() {
    let host = Host::new(&json!({"killGraceMs": 300}));
    host.session("s1");
    let marker = unique("kill");
    host.call(
        Some("s1"),
        "terminal_start",
        json!({"command": format!("echo go; exec -a {marker} sleep 1000")}),
    )
    .await;
    let go = host
        .call(
            Some("s1"),
            "terminal_send",
            json!({"terminal_id": "term-1", "wait_for": "go"}),
        )
        .await;
    assert_eq!(go.text(), "go\n[status: completed, wait_for matched]");
    let started = host
        .call(
            Some("s1"),
            "terminal_send",
            json!({"terminal_id": "term-1", "wait_for": "never", "run_in_background": true}),
        )
        .await;
    assert_eq!(started.text(), "started background job pty-send-2");
    let busy = host
        .call(
            Some("s1"),
            "terminal_send",
            json!({"terminal_id": "term-1"}),
        )
        .await;
    assert_eq!(
        busy.text(),
        "Error: terminal term-1 is busy with another send; wait for it or job_kill it first"
    );
    let kill = host
        .call(Some("s1"), "job_kill", json!({"job_id": "pty-send-2"}))
        .await;
    assert_eq!(kill.text(), "requested cancellation of job pty-send-2");
    let output = host
        .call(
            Some("s1"),
            "job_output",
            json!({"job_id": "pty-send-2", "wait": true}),
        )
        .await;
    assert_eq!(output.text(), "(no new output)\n[status: killed]");
    let snapshot = host
        .jobs
        .registry()
        .get(&"pty-send-2".into(), Some(&"s1".into()))
        .unwrap();
    assert_eq!(snapshot.status, JobStatus::Killed);
    assert_eq!(settle_count(&marker, 1).await, 1);
    let foreign = host
        .call(None, "terminal_kill", json!({"terminal_id": "term-1"}))
        .await;
    assert_eq!(
        foreign.text(),
        "Error: terminal term-1 belongs to another session"
    );
    let stopped = host
        .call(
            Some("s1"),
            "terminal_kill",
            json!({"terminal_id": "term-1"}),
        )
        .await;
    assert_eq!(stopped.text(), "stopped terminal term-1 (signal: SIGHUP)");
    assert_eq!(settle_count(&marker, 0).await, 0);
    let unknown = host
        .call(
            Some("s1"),
            "terminal_send",
            json!({"terminal_id": "term-1"}),
        )
        .await;
    assert_eq!(unknown.text(), "Error: unknown terminal term-1");
}

#[tokio::test]
async fn without_wait_for_a_send_ends_when_output_is_quiet_for_settle_ms_on_the_host_clock() {
    let clock = turnkit_testkit::ManualClock::at_default();
    let host = Host::with_clock(
        &json!({"settleMs": 500}),
        std::sync::Arc::new(clock.clone()),
    );
    host.session("s1");
    host.call(Some("s1"), "terminal_start", json!({"command": "cat"}))
        .await;
    let started = host
        .call(
            Some("s1"),
            "terminal_send",
            json!({"terminal_id": "term-1", "text": "hi", "keys": ["enter"], "run_in_background": true}),
        )
        .await;
    assert_eq!(started.text(), "started background job pty-send-1");
    // A real program's output has no event to wait on: read until the echo and cat's copy
    // are both in (every 5 ms, at most 5 s of real time).
    let mut seen = String::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while seen != "hi\nhi\n" && std::time::Instant::now() < deadline {
        let read = host
            .jobs
            .registry()
            .read(&"pty-send-1".into(), Some(&"s1".into()))
            .unwrap();
        seen.push_str(&read.text);
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(seen, "hi\nhi\n");
    // Let the send see the last output (it restarts the quiet window at the manual now).
    turnkit_testkit::settle().await;
    let status = || {
        host.jobs
            .registry()
            .get(&"pty-send-1".into(), Some(&"s1".into()))
            .unwrap()
    };
    clock.advance(std::time::Duration::from_millis(499)).await;
    turnkit_testkit::settle().await;
    assert_eq!(status().status, JobStatus::Running);
    clock.advance(std::time::Duration::from_millis(1)).await;
    let done = tokio::time::timeout(LIMIT, async {
        loop {
            let snapshot = status();
            if snapshot.status.is_terminal() {
                return snapshot;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .unwrap();
    assert_eq!(
        done.status_line(),
        "[status: completed, output quiet for 500ms]"
    );
}

#[tokio::test]
async fn a_sandboxed_terminal_cannot_write_outside_its_roots() {
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("root");
    let out = base.path().join("out");
    std::fs::create_dir(&root).unwrap();
    std::fs::create_dir(&out).unwrap();
    let sandbox: turnkit_bash::Sandbox =
        serde_json::from_value(json!({"writableRoots": [root]})).unwrap();
    if let Err(missing) = turnkit_bash::probe_sandbox(&sandbox) {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "sandbox test cannot run under CI: {missing}"
        );
        turnkit_testkit::skip::skipped(&format!(
            "this host cannot confine terminals ({missing}): run the tests as root on Linux with \
             Landlock"
        ));
        return;
    }
    let host = Host::new(&json!({"sandbox": {"writableRoots": [root]}}));
    host.session("s1");
    let command = format!(
        "echo x > {out}/plain; echo x > {root}/../out/dotdot; \
         setsid -w bash -c 'echo x > {out}/setsid'; echo ok > {root}/inside; \
         echo done-$((6*7)); read -r _",
        out = out.display(),
        root = root.display()
    );
    let started = host
        .call(Some("s1"), "terminal_start", json!({"command": command}))
        .await;
    assert_eq!(started.text(), "started terminal term-1");
    let sent = host
        .call(
            Some("s1"),
            "terminal_send",
            json!({"terminal_id": "term-1", "wait_for": "done-42"}),
        )
        .await;
    let text = sent.text();
    assert_eq!(text.matches("Permission denied").count(), 3, "{text}");
    assert_eq!(
        std::fs::read_dir(&out).unwrap().count(),
        0,
        "nothing got through"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("inside")).unwrap(),
        "ok\n"
    );
    host.call(
        Some("s1"),
        "terminal_kill",
        json!({"terminal_id": "term-1"}),
    )
    .await;
}

/// Set in the copy of this test binary that runs with `SIGINT` ignored.
const IGNORING_SIGINT: &str = "TERMINAL_TEST_HOST_IGNORES_SIGINT";

/// A host started with `SIGINT` ignored (as a non-interactive shell starts a background
/// command) still gives its terminals' programs the default disposition: Ctrl-C ends a
/// `sleep`. This test runs itself again under `trap '' INT`, where the check happens.
#[tokio::test]
async fn ctrl_c_interrupts_a_sleep_when_the_host_ignores_sigint() {
    if std::env::var_os(IGNORING_SIGINT).is_none() {
        let me = std::env::current_exe().unwrap();
        let output = std::process::Command::new("bash")
            .args(["-c", "trap '' INT; exec \"$@\"", "bash"])
            .arg(me)
            .args([
                "--exact",
                "suite::terminal::ctrl_c_interrupts_a_sleep_when_the_host_ignores_sigint",
                "--nocapture",
            ])
            .env(IGNORING_SIGINT, "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("1 passed"),
            "{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        return;
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let ignored = status
        .lines()
        .find_map(|line| line.strip_prefix("SigIgn:"))
        .map(|mask| u64::from_str_radix(mask.trim(), 16).unwrap())
        .unwrap();
    assert_eq!(
        ignored & (1 << 1),
        1 << 1,
        "SIGINT (2) is ignored in this copy"
    );
    let host = Host::new(&json!({}));
    host.session("s1");
    host.call(
        Some("s1"),
        "terminal_start",
        json!({"command": "echo ready; exec sleep 1000"}),
    )
    .await;
    let ready = host
        .call(
            Some("s1"),
            "terminal_send",
            json!({"terminal_id": "term-1", "wait_for": "ready"}),
        )
        .await;
    assert_eq!(ready.text(), "ready\n[status: completed, wait_for matched]");
    let interrupted = host
        .call(
            Some("s1"),
            "terminal_send",
            json!({"terminal_id": "term-1", "keys": ["ctrl-c"], "settle_ms": 5000, "timeout_ms": 10000}),
        )
        .await;
    assert_eq!(
        interrupted.text(),
        "^C\n[status: completed, terminal exited (signal: SIGINT)]"
    );
}
