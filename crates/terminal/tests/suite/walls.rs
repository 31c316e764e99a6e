//! Another job's terminal is out of reach of a job with `isolateProcesses` (a devpts
//! instance of its own): a real attacker terminal tries to open, read and write a real
//! victim terminal, and the attempts are counted (the same ones get through without it).

use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::Host;

/// Starts the victim terminal (`cat`, echoing what it reads) and returns its device path.
async fn victim(host: &Host) -> String {
    host.session("v");
    host.call(
        Some("v"),
        "terminal_start",
        json!({"command": "readlink /proc/$$/fd/1; echo ready; exec cat"}),
    )
    .await;
    let ready = host
        .call(
            Some("v"),
            "terminal_send",
            json!({"terminal_id": "term-1", "wait_for": "ready"}),
        )
        .await;
    let text = ready.text();
    let path = text.lines().next().unwrap_or_default().trim().to_owned();
    assert!(path.starts_with("/dev/pts/"), "{text}");
    path
}

/// Runs the attempts in a terminal of `host` and returns the verdict lines.
async fn attack(host: &Host, pts: &str) -> String {
    host.session("a");
    let script = format!(
        "try() {{ if eval \"$2\" >/dev/null 2>&1; then echo \"through: $1\"; else echo \"refused: $1\"; fi; }}; \
         try open-read 'exec 3<{pts}'; \
         try write 'echo pwned-by-attacker > {pts}'; \
         try listed 'ls /dev/pts | grep -qx {n}'; \
         echo attack-done",
        n = pts.trim_start_matches("/dev/pts/"),
    );
    host.call(Some("a"), "terminal_start", json!({ "command": script }))
        .await;
    let done = host
        .call(
            Some("a"),
            "terminal_send",
            json!({"terminal_id": "term-1", "wait_for": "attack-done"}),
        )
        .await;
    done.text()
        .lines()
        .filter(|l| l.starts_with("through: ") || l.starts_with("refused: "))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// What the victim terminal shows after a marker line is sent to it (so anything the
/// attacker wrote before is in the output too).
async fn victim_output(host: &Host) -> String {
    host.call(
        Some("v"),
        "terminal_send",
        json!({"terminal_id": "term-1", "text": "victim-mark", "keys": ["enter"], "wait_for": "victim-mark"}),
    )
    .await
    .text()
}

#[tokio::test]
async fn an_isolated_job_cannot_reach_another_jobs_terminal() {
    let config = json!({"sandbox": {"network": true, "isolateProcesses": true}});
    let sandbox = serde_json::from_value(config["sandbox"].clone()).unwrap();
    if let Err(missing) = turnkit_bash::probe_sandbox(&sandbox) {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "sandbox test cannot run under CI: {missing}"
        );
        turnkit_testkit::skip::skipped(&format!("no isolated terminals here: {missing}"));
        return;
    }
    let victims = Host::new(&json!({}));
    let pts = victim(&victims).await;
    let confined = Host::new(&config);
    let walled = attack(&confined, &pts).await;
    assert_eq!(
        walled,
        "refused: open-read\nrefused: write\nrefused: listed\n"
    );
    assert!(!victim_output(&victims).await.contains("pwned"));
    // Without the wall, all three get through and the victim shows the attacker's line.
    let open = attack(&Host::new(&json!({})), &pts).await;
    assert_eq!(
        open,
        "through: open-read\nthrough: write\nthrough: listed\n"
    );
    assert!(victim_output(&victims).await.contains("pwned-by-attacker"));
}
