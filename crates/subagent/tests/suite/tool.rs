use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use turnkit_core::{Agent, AgentId, Harness, ScopeKey};
use turnkit_jobs::{JobId, JobStatus};
use turnkit_subagent::{ChildAction, SubagentConfig};
use turnkit_testkit::settle;

use super::support::Host;

fn todos() -> Value {
    json!({"todos": [{"content": "read the notes", "status": "in_progress"}]})
}

#[tokio::test(start_paused = true)]
async fn background_child_writes_its_own_todos_and_answers_once_settled() {
    let host = Host::new(SubagentConfig::default());
    let parent = host.root("s1");
    host.children.script(
        "take notes",
        vec![
            ChildAction::Call {
                tool: "todo_write".to_owned(),
                args: todos(),
            },
            ChildAction::Answer("3 notes".to_owned()),
        ],
    );
    let out = host
        .call(
            &parent,
            "agent",
            json!({"prompt": "take notes", "description": "notes", "run_in_background": true}),
        )
        .await;
    assert_eq!(out.text(), "started background job subagent-1");
    assert_eq!(
        out.value,
        json!({"kind": "background", "jobId": "subagent-1", "sessionId": "s1.agent-1"})
    );
    settle().await;
    // The idle parent got exactly one notice, as a followup (its turn would claim it).
    assert_eq!(
        parent
            .pending_input()
            .iter()
            .map(|m| m.joined_text())
            .collect::<Vec<_>>(),
        [
            "background job subagent-1 (subagent: notes) finished [status: completed]. Read its output with job_output."
        ]
    );
    for _ in 0..2 {
        let read = host
            .call(&parent, "job_output", json!({"job_id": "subagent-1"}))
            .await;
        assert_eq!(read.text(), "3 notes\n[status: completed]");
    }
    // The todo list is the child's, in the child's session; the parent's log has none.
    let types: Vec<String> = host.log("s1.agent-1").into_iter().map(|(t, _)| t).collect();
    assert_eq!(
        types,
        [
            "subagent/start",
            "turn/start",
            "todo/write",
            "turn/end",
            "subagent/end"
        ]
    );
    assert_eq!(host.log("s1"), vec![]);
    assert_eq!(
        host.log("s1.agent-1").last().map(|(_, d)| d.clone()),
        Some(json!({"status": "completed", "output": "3 notes"}))
    );
    // Settled and disposed: it left the host, and the parent runs no children.
    assert!(host.kit.agent(&AgentId::from("s1.agent-1")).is_none());
    assert_eq!(host.subagents.subagents().running(parent.id()), 0);
}

#[tokio::test(start_paused = true)]
async fn the_child_is_not_a_root_and_reports_its_parents_chain() {
    let host = Host::new(SubagentConfig::default());
    let parent = host.root("s1");
    host.children.script("wait", vec![ChildAction::Hang]);
    host.call(
        &parent,
        "agent",
        json!({"prompt": "wait", "run_in_background": true}),
    )
    .await;
    settle().await;
    let child = host.kit.agent(&AgentId::from("s1.agent-1")).unwrap();
    assert!(!child.is_root());
    assert_eq!(
        child.scope_chain(),
        [ScopeKey::from("s1.agent-1"), ScopeKey::from("s1")]
    );
    let names = |agent: &dyn Agent| -> Vec<String> {
        host.kit
            .tool_definitions(agent)
            .into_iter()
            .map(|d| d.name)
            .collect()
    };
    assert_eq!(
        names(child.as_ref()),
        ["todo_write", "job_output", "job_list", "job_kill", "agent"]
    );
    assert_eq!(
        names(parent.as_ref()),
        [
            "todo_write",
            "job_output",
            "job_list",
            "job_kill",
            "agent",
            "schedule_create",
            "schedule_list",
            "schedule_delete"
        ]
    );
    host.call(&parent, "job_kill", json!({"job_id": "subagent-1"}))
        .await;
    settle().await;
}

#[tokio::test(start_paused = true)]
async fn job_kill_settles_killed_and_disposes_the_child() {
    let host = Host::new(SubagentConfig::default());
    let parent = host.root("s1");
    host.children.script("wait", vec![ChildAction::Hang]);
    host.call(
        &parent,
        "agent",
        json!({"prompt": "wait", "run_in_background": true}),
    )
    .await;
    settle().await;
    let child = host.kit.agent(&AgentId::from("s1.agent-1")).unwrap();
    assert_eq!(child.status(), turnkit_core::AgentStatus::Running);
    host.call(&parent, "job_kill", json!({"job_id": "subagent-1"}))
        .await;
    settle().await;
    let snapshot = host
        .jobs
        .registry()
        .get(&JobId::from("subagent-1"), Some(parent.id()))
        .unwrap();
    assert_eq!(
        (snapshot.status, snapshot.detail),
        (JobStatus::Killed, None)
    );
    assert!(child.is_disposed());
    assert!(host.kit.agent(child.id()).is_none());
    assert_eq!(
        host.log("s1.agent-1").last().cloned(),
        Some(("subagent/end".to_owned(), json!({"status": "killed"})))
    );
    // A kill sets `reported`: no notice follows it.
    assert!(parent.pending_input().is_empty());
}

#[tokio::test(start_paused = true)]
async fn disposing_the_parent_kills_its_running_children() {
    let host = Host::new(SubagentConfig::default());
    let parent = host.root("s1");
    host.children.script("wait", vec![ChildAction::Hang]);
    host.call(
        &parent,
        "agent",
        json!({"prompt": "wait", "run_in_background": true}),
    )
    .await;
    settle().await;
    let child = host.kit.agent(&AgentId::from("s1.agent-1")).unwrap();
    parent.dispose().await;
    settle().await;
    assert!(child.is_disposed());
    assert_eq!(
        host.log("s1.agent-1").last().cloned(),
        Some(("subagent/end".to_owned(), json!({"status": "killed"})))
    );
    assert_eq!(host.subagents.subagents().running(&AgentId::from("s1")), 0);
}

#[tokio::test(start_paused = true)]
async fn a_stopped_child_fails_with_its_reason_in_the_foreground() {
    let host = Host::new(SubagentConfig::default());
    let parent = host.root("s1");
    host.children
        .script("sum", vec![ChildAction::Fail("max-tokens".to_owned())]);
    let out = host.call(&parent, "agent", json!({"prompt": "sum"})).await;
    assert_eq!(out.text(), "(no output)\n[status: failed, max-tokens]");
    assert_eq!(
        out.value,
        json!({"kind": "foreground", "jobId": "subagent-1", "sessionId": "s1.agent-1",
               "output": "", "status": "failed", "detail": "max-tokens"})
    );
    // Waited through the registry: no notice.
    settle().await;
    assert!(parent.pending_input().is_empty());
}

#[tokio::test(start_paused = true)]
async fn aborting_a_foreground_call_kills_the_child() {
    let host = Arc::new(Host::new(SubagentConfig::default()));
    let parent = host.root("s1");
    host.children.script("wait", vec![ChildAction::Hang]);
    let cancel = CancellationToken::new();
    let call = {
        let host = host.clone();
        let parent = parent.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            host.call_with(&parent, "agent", json!({"prompt": "wait"}), cancel)
                .await
        })
    };
    settle().await;
    assert_eq!(host.subagents.subagents().running(parent.id()), 1);
    cancel.cancel();
    let out = call.await.unwrap();
    assert_eq!(
        (out.is_error, out.text()),
        (true, "Error: This operation was aborted".to_owned())
    );
    settle().await;
    let snapshot = host
        .jobs
        .registry()
        .get(&JobId::from("subagent-1"), Some(parent.id()))
        .unwrap();
    assert_eq!(snapshot.status, JobStatus::Killed);
    assert_eq!(host.subagents.subagents().running(parent.id()), 0);
}

#[tokio::test(start_paused = true)]
async fn caps_count_running_children_and_spawns_per_session() {
    let host = Host::new(
        SubagentConfig::default()
            .with_max_concurrent_per_agent(1)
            .with_max_spawns_per_session(2),
    );
    let parent = host.root("s1");
    host.children.script("wait", vec![ChildAction::Hang]);
    host.children
        .script("answer", vec![ChildAction::Answer("ok".to_owned())]);
    let background = json!({"prompt": "wait", "run_in_background": true});
    assert!(
        !host
            .call(&parent, "agent", background.clone())
            .await
            .is_error
    );
    settle().await;
    let refused = host
        .call(&parent, "agent", json!({"prompt": "answer"}))
        .await;
    assert_eq!(
        refused.text(),
        "Error: subagent limit reached: s1 already has 1 running subagents (maxConcurrentPerAgent); wait for one to finish or stop one with job_kill"
    );
    host.call(&parent, "job_kill", json!({"job_id": "subagent-1"}))
        .await;
    settle().await;
    // The refused start did not count: this is the second spawn.
    let out = host
        .call(&parent, "agent", json!({"prompt": "answer"}))
        .await;
    assert_eq!(out.text(), "ok\n[status: completed]");
    let refused = host
        .call(&parent, "agent", json!({"prompt": "answer"}))
        .await;
    assert_eq!(
        refused.text(),
        "Error: subagent limit reached: session s1 already started 2 subagents (maxSpawnsPerSession)"
    );
    // Another session has its own budget.
    let other = host.root("s2");
    let out = host
        .call(&other, "agent", json!({"prompt": "answer"}))
        .await;
    assert_eq!(out.text(), "ok\n[status: completed]");
}

#[tokio::test(start_paused = true)]
async fn child_session_ids_skip_ones_already_in_the_store() {
    let host = Host::new(SubagentConfig::default());
    let parent = host.root("s1");
    host.store
        .create(turnkit_core::SessionHeader::new("s1.agent-1"))
        .unwrap();
    host.children
        .script("answer", vec![ChildAction::Answer("ok".to_owned())]);
    let out = host
        .call(&parent, "agent", json!({"prompt": "answer"}))
        .await;
    assert_eq!(out.value["sessionId"], json!("s1.agent-2"));
}

#[tokio::test(start_paused = true)]
async fn children_nest_only_to_max_depth() {
    let call_agent = |prompt: &str| ChildAction::Call {
        tool: "agent".to_owned(),
        args: json!({"prompt": prompt}),
    };
    let script = |host: &Host| {
        host.children.script(
            "outer",
            vec![call_agent("inner"), ChildAction::AnswerLastResult],
        );
        host.children
            .script("inner", vec![ChildAction::Answer("deep".to_owned())]);
    };
    let host = Host::new(SubagentConfig::default());
    script(&host);
    let parent = host.root("s1");
    let out = host
        .call(&parent, "agent", json!({"prompt": "outer"}))
        .await;
    assert_eq!(
        out.text(),
        "Error: subagent limit reached: s1.agent-1 is a subagent at depth 1 and cannot start subagents (maxDepth)\n[status: completed]"
    );
    let host = Host::new(SubagentConfig::default().with_max_depth(2));
    script(&host);
    let parent = host.root("s1");
    let out = host
        .call(&parent, "agent", json!({"prompt": "outer"}))
        .await;
    assert_eq!(out.text(), "deep\n[status: completed]\n[status: completed]");
}

/// A child's driver task belongs to its job: once the registry's disposal (which awaits
/// every settlement) returned, the task has ended and the child is disposed.
#[tokio::test(start_paused = true)]
async fn the_registrys_disposal_joins_a_running_childs_driver() {
    let host = Host::new(SubagentConfig::default());
    let parent = host.root("s1");
    let metrics = tokio::runtime::Handle::current().metrics();
    settle().await;
    let before = metrics.num_alive_tasks();
    host.children.script("wait", vec![ChildAction::Hang]);
    host.call(
        &parent,
        "agent",
        json!({"prompt": "wait", "run_in_background": true}),
    )
    .await;
    settle().await;
    let child = host.kit.agent(&AgentId::from("s1.agent-1")).unwrap();
    // The child's driver and the registry's settlement driver.
    assert_eq!(metrics.num_alive_tasks(), before + 2);
    host.jobs.dispose().await;
    assert!(child.is_disposed());
    assert_eq!(metrics.num_alive_tasks(), before);
}
