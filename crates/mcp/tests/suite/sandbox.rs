//! A configured sandbox is named in the server's instructions and by `job_list`: what is in
//! force, and under `bestEffort` what is not.

use turnkit_mcp::{FamiliesConfig, SessionHost, SessionOptions};

#[tokio::test]
async fn the_instructions_say_what_confinement_is_in_force() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = serde_json::json!({"writableRoots": ["/tmp"], "pidsMax": 64, "bestEffort": true});
    let configs = FamiliesConfig::from_json(&serde_json::json!({
        "todo": {"allowParallelInProgress": false},
        "bash": {"sandbox": sandbox},
        "terminal": {"sandbox": sandbox},
    }))
    .unwrap();
    let host = SessionHost::open(&SessionOptions {
        dir: dir.path().to_owned(),
        session: Some("s1".to_owned()),
        configs,
        job_task_ttl: None,
    })
    .unwrap();
    let instructions = host.instructions();
    let line = |prefix: &str| {
        instructions
            .lines()
            .find(|line| line.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} in {instructions}"))
            .to_owned()
    };
    let bash = line("Shell commands (bash) run confined: sandbox: ");
    let terminal = line("Terminal programs run confined: sandbox: ");
    // The same summary for both, naming the roots and the pids limit (in force, or under
    // `; not in force:` on a host without it).
    assert_eq!(
        bash.strip_prefix("Shell commands (bash)"),
        terminal.strip_prefix("Terminal programs")
    );
    assert!(
        bash.contains("/tmp and the job's temporary folder") && bash.contains("pids ≤ 64"),
        "{bash}"
    );
    assert!(bash.ends_with('.'), "{bash}");
    // job_list ends with the same, one line per job kind.
    let listed = host.call_tool("job_list", serde_json::json!({})).await;
    let summary = bash
        .strip_prefix("Shell commands (bash) run confined: ")
        .unwrap();
    assert_eq!(
        listed.text(),
        format!(
            "(no background jobs)\n\nbash jobs run confined: {summary}\n\
             Terminal programs (pty-send jobs) run confined: {summary}"
        )
    );
    host.shutdown().await;
}
