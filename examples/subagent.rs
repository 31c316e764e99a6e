//! A subagent in the background, on a real host (HostKit + the production turn loop): the
//! parent starts a child with the `agent` tool; the child, whose model step is ours, writes a
//! todo list in its own session and answers; the idle parent is woken by the completion
//! notice and reads the answer with `job_output` (twice: the final output stays); a second
//! child that never answers is stopped with `job_kill` and settles `killed`. Every step is
//! checked: the example exits non-zero when one did not happen.
#![expect(clippy::print_stdout, reason = "an example prints what it does")]

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, ensure};
use serde_json::json;
use tokio::sync::mpsc;
use turnkit_core::{
    Agent, Harness, MemoryStore, SessionHeader, SessionId, SessionStore, SystemClock, UserMessage,
};
use turnkit_host::HostKit;
use turnkit_jobs::{JobId, JobStatus};
use turnkit_subagent::{ChildContext, ChildHost, ChildModel, ChildStep, SubagentConfig};

/// The children's model step: plans with `todo_write`, then answers; a prompt starting with
/// "watch" never answers (it waits until the child is killed).
struct Planner;

#[turnkit_core::async_trait]
impl ChildModel for Planner {
    async fn step(&self, child: &ChildContext, input: Vec<UserMessage>) -> ChildStep {
        if child.prompt().starts_with("watch") {
            child.cancel().cancelled().await;
            return ChildStep::Stop("cancelled".to_owned());
        }
        if input.iter().any(|m| m.joined_text() == child.prompt()) {
            let todos = json!({"todos": [
                {"content": "list the crates", "status": "in_progress"},
                {"content": "count them", "status": "pending"},
            ]});
            let out = child.call("todo_write", todos).await;
            if out.is_error {
                return ChildStep::Stop(out.text());
            }
            return ChildStep::Continue;
        }
        ChildStep::Answer("the workspace has 12 crates".to_owned())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let clock = Arc::new(SystemClock);
    let kit = Arc::new(HostKit::new(clock.clone()));
    let harness: Arc<dyn Harness> = kit.clone();
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new(clock));
    let todo = turnkit_todo::TodoConfig::from_json(json!({"allowParallelInProgress": false}))?;
    let _todo = turnkit_todo::install(&harness, todo)?;
    let jobs = turnkit_jobs_local::install(&harness, Default::default())?;
    let _tool_jobs = turnkit_tool_jobs::install(&harness, Default::default())?;
    kit.services()
        .insert(ChildHost::new(&kit, store.clone(), Arc::new(Planner)));
    let _subagents = turnkit_subagent::install(&harness, SubagentConfig::default())?;

    // The parent's runtime: each turn reports what it claimed (a real runtime would run its
    // model over it).
    let parent = kit.start_agent(store.create(SessionHeader::new("s1"))?);
    let (claimed, mut claims) = mpsc::unbounded_channel();
    let turns = parent.turns();
    tokio::spawn(async move {
        while let Some(mut turn) = turns.next_turn().await {
            for message in turn.take_input() {
                let _ = claimed.send(message.joined_text());
            }
            drop(turn.finish());
        }
    });
    let call = async |tool: &str, args: serde_json::Value| {
        let out = kit
            .call(
                tool,
                args.clone(),
                Some(parent.as_dyn()),
                Default::default(),
            )
            .await;
        println!("{tool} {args}\n  → {}", out.text().replace('\n', "\n    "));
        out
    };

    let started = call(
        "agent",
        json!({"prompt": "count the crates", "description": "crate count", "run_in_background": true}),
    )
    .await;
    ensure!(
        started.text() == "started background job subagent-1",
        "no background start"
    );
    let notice = tokio::time::timeout(Duration::from_secs(10), claims.recv())
        .await
        .context("the completion notice never woke the parent")?
        .context("the parent's runtime ended")?;
    println!("  [woken turn claims] {notice}");
    ensure!(
        notice.contains("subagent-1 (subagent: crate count) finished [status: completed]"),
        "unexpected notice: {notice}"
    );
    for _ in 0..2 {
        let read = call("job_output", json!({"job_id": "subagent-1"})).await;
        ensure!(
            read.text() == "the workspace has 12 crates\n[status: completed]",
            "the answer was not the job's output"
        );
    }
    let child_log = store.open(&SessionId::from("s1.agent-1"))?;
    let types: Vec<String> = child_log.events().into_iter().map(|e| e.r#type).collect();
    println!("  child session s1.agent-1: {}", types.join(", "));
    ensure!(
        types.iter().any(|t| t == "todo/write"),
        "the child's todo list is not in its session"
    );

    call(
        "agent",
        json!({"prompt": "watch the build", "run_in_background": true}),
    )
    .await;
    call("job_kill", json!({"job_id": "subagent-2"})).await;
    let settled = jobs
        .registry()
        .wait(
            &JobId::from("subagent-2"),
            Duration::from_secs(10),
            Some(parent.id()),
            None,
        )
        .await?;
    println!("  subagent-2 settled {}", settled.status);
    ensure!(
        settled.status == JobStatus::Killed,
        "the killed child did not settle killed"
    );

    parent.dispose().await;
    jobs.dispose().await;
    Ok(())
}
