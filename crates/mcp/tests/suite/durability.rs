//! A reply is an acknowledgement: over the real binary, a call answered success is in the
//! log after a crash, and a call whose flush failed was answered with the error.

use pretty_assertions::assert_eq;
use serde_json::json;

use crate::suite::support::{config, harness_bin, serve_command, texts};

/// The file-size limit of the server in the size test: the header and a few `todo_write`
/// events fit, then every write fails with `EFBIG`, as on a full disk.
const FILE_LIMIT: u64 = 4096;

fn kill9(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -KILL {pid}");
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
