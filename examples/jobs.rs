//! Background jobs alone: a real shell job in the background, `job_list` while it runs, the
//! completion notice that wakes the idle owner, `job_output`, and `job_kill` on a long job.
//! Exits non-zero when a step does not answer as shown.
#![expect(clippy::print_stdout, reason = "an example prints what it does")]

use std::sync::Arc;
use std::time::Duration;

use anyhow::ensure;
use serde_json::json;
use tokio::sync::mpsc;
use turnkit_core::{SessionHeader, SessionId, SystemClock};
use turnkit_testkit::{HostRecord, MemoryHarness};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let host = MemoryHarness::new(Arc::new(SystemClock));
    let (tx, mut notices) = mpsc::unbounded_channel();
    host.set_recorder(Arc::new(move |record: HostRecord| {
        if let HostRecord::Claimed { source, text, .. } = record {
            println!("  [woken turn claims {source}] {text}");
            let _ = tx.send(text);
        }
    }));
    let harness = host.as_dyn();
    let jobs = turnkit_jobs_local::install(&harness, Default::default())?;
    let _tools = turnkit_tool_jobs::install(&harness, Default::default())?;
    let _bash = turnkit_bash::install(&harness, Default::default())?;
    let _agent = host.create_session(SessionHeader::new("s1"))?;
    let s1 = SessionId::from("s1");

    let call = async |tool: &str, args: serde_json::Value| {
        let output = host.execute(tool, args.clone(), Some(&s1)).await;
        let text = output.text();
        println!("{tool} {args}\n  → {}", text.replace('\n', "\n    "));
        text
    };
    let started = call(
        "bash",
        json!({"command": "echo compiling; sleep 0.5; echo done", "run_in_background": true}),
    )
    .await;
    ensure!(
        started == "started background job bash-1",
        "bash: {started}"
    );
    let listed = call("job_list", json!({})).await;
    ensure!(
        listed.starts_with("bash-1 [bash] running"),
        "job_list: {listed}"
    );
    let notice = tokio::time::timeout(Duration::from_secs(10), notices.recv()).await?;
    ensure!(
        notice.is_some_and(|text| text.starts_with("background job bash-1 (bash: ")),
        "the completion notice did not wake the agent"
    );
    let output = call("job_output", json!({"job_id": "bash-1"})).await;
    ensure!(
        output == "compiling\ndone\n[status: completed, exit code: 0]",
        "job_output: {output}"
    );
    let started = call(
        "bash",
        json!({"command": "sleep 600", "run_in_background": true}),
    )
    .await;
    ensure!(
        started == "started background job bash-2",
        "bash: {started}"
    );
    let killed = call("job_kill", json!({"job_id": "bash-2"})).await;
    ensure!(
        killed == "requested cancellation of job bash-2",
        "job_kill: {killed}"
    );
    let foreground = call("bash", json!({"command": "echo foreground; exit 3"})).await;
    ensure!(
        foreground == "foreground\n[status: completed, exit code: 3]",
        "bash: {foreground}"
    );
    host.dispose_all().await;
    jobs.dispose().await;
    Ok(())
}
