//! Background jobs alone: a real shell job in the background, `job_list` while it runs, the
//! completion notice that wakes the idle owner, `job_output`, and `job_kill` on a long job.
#![expect(clippy::print_stdout, reason = "an example prints what it does")]

use std::sync::Arc;
use std::time::Duration;

use harness_core::{SessionHeader, SessionId, SystemClock};
use harness_testkit::{HostRecord, MemoryHarness};
use serde_json::json;
use tokio::sync::mpsc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let host = MemoryHarness::new(Arc::new(SystemClock));
    let (tx, mut notices) = mpsc::unbounded_channel();
    host.set_recorder(Arc::new(move |record: HostRecord| {
        if let HostRecord::Claimed { source, text, .. } = record {
            println!("  [woken turn claims {source}] {text}");
            let _ = tx.send(());
        }
    }));
    let harness = host.as_dyn();
    let jobs = harness_jobs_local::install(&harness, Default::default())?;
    let _tools = harness_tool_jobs::install(&harness, jobs.registry(), Default::default())?;
    let _bash = harness_bash::install(&harness, Some(jobs.registry()), Default::default())?;
    let _agent = host.create_session(SessionHeader::new("s1"))?;
    let s1 = SessionId::from("s1");

    let call = async |tool: &str, args: serde_json::Value| {
        let output = host.execute(tool, args.clone(), Some(&s1)).await;
        println!(
            "{tool} {args}\n  → {}",
            output.text().replace('\n', "\n    ")
        );
    };
    call(
        "bash",
        json!({"command": "echo compiling; sleep 0.5; echo done", "run_in_background": true}),
    )
    .await;
    call("job_list", json!({})).await;
    tokio::time::timeout(Duration::from_secs(10), notices.recv()).await?;
    call("job_output", json!({"job_id": "bash-1"})).await;
    call(
        "bash",
        json!({"command": "sleep 600", "run_in_background": true}),
    )
    .await;
    call("job_kill", json!({"job_id": "bash-2"})).await;
    call("bash", json!({"command": "echo foreground; exit 3"})).await;
    host.dispose_all().await;
    jobs.dispose().await;
    Ok(())
}
