//! An interactive terminal: a program that asks a question, answered through
//! `terminal_send`; Ctrl-C to a running command; a background send read with `job_output`;
//! and the terminal stopped with its owner. Exits non-zero when a step did not happen.
#![expect(clippy::print_stdout, reason = "an example prints what it does")]

use std::sync::Arc;

use serde_json::json;
use turnkit_core::{SessionHeader, SessionId, SystemClock};
use turnkit_testkit::MemoryHarness;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let host = MemoryHarness::new(Arc::new(SystemClock));
    let harness = host.as_dyn();
    let _jobs = turnkit_jobs_local::install(&harness, Default::default())?;
    let _tools = turnkit_tool_jobs::install(&harness, Default::default())?;
    let terminal = turnkit_terminal::install(&harness, Default::default())?;
    let _agent = host.create_session(SessionHeader::new("s1"))?;
    let s1 = SessionId::from("s1");

    let call = async |tool: &str, args: serde_json::Value| {
        let output = host.execute(tool, args.clone(), Some(&s1)).await;
        let text = output.text();
        println!("{tool} {args}\n  → {}", text.replace('\n', "\n    "));
        text
    };
    let expect = |what: &str, ok: bool| -> anyhow::Result<()> {
        anyhow::ensure!(ok, "step failed: {what}");
        Ok(())
    };

    let started = call(
        "terminal_start",
        json!({"command": "read -p 'Project name? ' name; echo \"created $name\"; exec bash --norc -i"}),
    )
    .await;
    expect("the terminal started", started == "started terminal term-1")?;
    let question = call(
        "terminal_send",
        json!({"terminal_id": "term-1", "wait_for": "Project name? "}),
    )
    .await;
    expect("the program asked", question.starts_with("Project name? "))?;
    let answer = call(
        "terminal_send",
        json!({"terminal_id": "term-1", "text": "demo", "keys": ["enter"], "wait_for": "created demo"}),
    )
    .await;
    expect("the answer was taken", answer.contains("created demo"))?;

    let running = call(
        "terminal_send",
        json!({"terminal_id": "term-1", "text": "sleep 600; echo finished", "keys": ["enter"], "settle_ms": 300}),
    )
    .await;
    expect(
        "the command is running",
        running.lines().all(|l| l != "finished"),
    )?;
    let interrupted = call(
        "terminal_send",
        json!({"terminal_id": "term-1", "keys": ["ctrl-c"], "text": "", "settle_ms": 300}),
    )
    .await;
    expect("Ctrl-C reached sleep", interrupted.contains("^C"))?;

    let background = call(
        "terminal_send",
        json!({"terminal_id": "term-1", "text": "echo answer-$((40 + 2))", "keys": ["enter"],
               "wait_for": "answer-42", "run_in_background": true}),
    )
    .await;
    expect(
        "the send runs in the background",
        background.starts_with("started background job pty-send-"),
    )?;
    let id = background.trim_start_matches("started background job ");
    let output = call("job_output", json!({"job_id": id, "wait": true})).await;
    expect("job_output has the response", output.contains("answer-42"))?;

    let pid = terminal
        .terminals()
        .get(Some(&turnkit_core::AgentId::from(&s1)), "term-1")?
        .pid();
    host.dispose_agent(&s1).await;
    println!(
        "owner disposed: {} terminal(s) left",
        terminal.terminals().ids().len()
    );
    expect(
        "the owner's terminal was removed",
        terminal.terminals().ids().is_empty(),
    )?;
    // Process exit has no event to wait on: poll /proc for up to 5 s (a zombie is gone).
    let alive = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            let state = stat
                .rfind(')')
                .and_then(|i| stat[i + 1..].split_whitespace().next());
            !matches!(state, Some("Z" | "X"))
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while alive() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    expect("the terminal's shell has stopped", !alive())?;
    println!("the terminal's shell (pid {pid}) has stopped");
    Ok(())
}
