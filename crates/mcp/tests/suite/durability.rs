//! A reply is an acknowledgement: over the real binary, a call answered success is in the
//! log after a crash, a call whose flush failed was answered with the error, and a job whose
//! start could not be saved never ran its command.

use pretty_assertions::assert_eq;
use serde_json::json;

use crate::suite::support::{config, harness_bin, serve_command, texts};

/// The file-size limit of the server in the size test: the header and a few `todo_write`
/// events fit, then every write fails with `EFBIG`, as on a full disk.
const FILE_LIMIT: u64 = 4096;

fn kill9(pid: u32) {
    super::support::kill("KILL", pid);
}

/// The `todo/write` lines of the session file.
fn logged_writes(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|line| line.contains("\"todo/write\""))
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn a_write_answered_success_survives_kill_9_and_one_that_hit_the_size_limit_was_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("config.json");
    std::fs::write(&config_path, config().to_string()).unwrap();
    // `trap "" XFSZ` ignores the signal a write past the limit raises (the ignored
    // disposition survives exec), so the write fails with EFBIG instead.
    let mut command = tokio::process::Command::new("sh");
    command
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; exec prlimit --fsize={FILE_LIMIT} -- \"$0\" \"$@\""
        ))
        .arg(harness_bin())
        .arg("mcp")
        .arg("--dir")
        .arg(dir.path().join("sessions"))
        .args(["--session", "s"])
        .arg("--config")
        .arg(&config_path);
    let (server, pid) = serve_command(command).await;
    let file = dir.path().join("sessions").join("s.jsonl");
    let mut saved = Vec::new();
    let mut refused = Vec::new();
    for i in 0..60 {
        let item = format!("item-{i}-{}", "x".repeat(40));
        let result = server
            .call(
                "todo_write",
                json!({"todos": [{"content": item, "status": "pending"}]}),
            )
            .await;
        if result["isError"] == json!(true) {
            refused.push((item, texts(&result)));
            if refused.len() == 3 {
                break;
            }
        } else {
            saved.push(item);
        }
    }
    assert!(!saved.is_empty() && refused.len() == 3, "saved {saved:?}");
    let why = format!(
        "i/o error persisting session s: {}: File too large (os error 27)",
        file.display()
    );
    for (_, answer) in &refused {
        assert_eq!(
            answer[0],
            format!(
                "Error: the change may not be saved: {why}; it stays pending and is written \
                 by the next save that succeeds"
            )
        );
    }
    kill9(pid);
    drop(server);
    let logged = logged_writes(&file);
    let found: Vec<&String> = saved
        .iter()
        .filter(|item| logged.iter().any(|line| line.contains(item.as_str())))
        .collect();
    assert_eq!(
        found.len(),
        saved.len(),
        "every acknowledged write is logged"
    );
    for (item, _) in &refused {
        assert!(
            !logged.iter().any(|line| line.contains(item.as_str())),
            "{item} was refused yet logged"
        );
    }
    assert_eq!(logged.len(), saved.len());
}

/// Pids of the live processes whose command line starts with `name` (an `exec -a name`).
fn running_as(name: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let state = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = state
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
        if cmdline.starts_with(name.as_bytes()) && !zombie {
            found.push(pid);
        }
    }
    found
}

#[tokio::test]
async fn a_job_whose_start_cannot_be_saved_never_runs_its_command() {
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("config.json");
    std::fs::write(&config_path, config().to_string()).unwrap();
    let mut command = tokio::process::Command::new("sh");
    command
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; exec prlimit --fsize={FILE_LIMIT} -- \"$0\" \"$@\""
        ))
        .arg(harness_bin())
        .arg("mcp")
        .arg("--dir")
        .arg(dir.path().join("sessions"))
        .args(["--session", "s"])
        .arg("--config")
        .arg(&config_path);
    let (server, pid) = serve_command(command).await;
    let file = dir.path().join("sessions").join("s.jsonl");
    // Fill the file to its limit: the first refused write means no flush succeeds now.
    let mut filled = false;
    for i in 0..60 {
        let item = format!("item-{i}-{}", "x".repeat(40));
        let result = server
            .call(
                "todo_write",
                json!({"todos": [{"content": item, "status": "pending"}]}),
            )
            .await;
        if result["isError"] == json!(true) {
            filled = true;
            break;
        }
    }
    assert!(filled, "the file never reached its limit");
    let name = format!("unsaved-job-{}", std::process::id());
    let result = server
        .call(
            "bash",
            json!({"command": format!("exec -a {name} sleep 1000"), "run_in_background": true}),
        )
        .await;
    // The held shell was stopped at its gate. Real processes: polled, at most 5 s.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !running_as(&name).is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let running = running_as(&name);
    for pid in &running {
        kill9(*pid);
    }
    kill9(pid);
    drop(server);
    assert_eq!(
        running,
        Vec::<u32>::new(),
        "the unsaved job's command ran; answered {:?}",
        texts(&result)
    );
    let texts = texts(&result);
    assert_eq!(
        texts[0],
        format!(
            "Error: background job bash-1 was stopped before its command ran: its start could \
             not be saved: i/o error persisting session s: {}: File too large (os error 27)",
            file.display()
        )
    );
    // The stopped job's notice rides on this answer when it settled before the answer was
    // built, else on the next one.
    let notice = format!(
        "background job bash-1 (bash: exec -a {name} sleep 1000) finished [status: killed, \
         signal: SIGTERM]. Read its output with job_output."
    );
    assert!(texts[1..].is_empty() || texts[1..] == [notice], "{texts:?}");
}
