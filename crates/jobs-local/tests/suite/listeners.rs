//! C-054 … C-057, C-087, C-090, C-091 and scope routing: completion listeners and change
//! observers.

use std::sync::{Arc, Mutex};

use pretty_assertions::assert_eq;
use turnkit_core::{RegistrationScope, ScopeKey};
use turnkit_jobs::{JobOutcome, JobRegistry, JobStatus};

use super::common::*;

#[tokio::test(start_paused = true)]
async fn c054_listeners_fire_once_and_are_contained() {
    let logs = LogCapture::start();
    let host = Host::new();
    let _l1 = host.registry.on_job_done(
        RegistrationScope::Global,
        Arc::new(|_, _| Err("listener boom".into())),
    );
    let (seen, _l2) = record_done(&host.registry);
    let (id, job) = host.start_ok(bash());
    job.settle(JobOutcome::completed().with_detail("exit code: 0"));
    tick().await;
    job.settle(JobOutcome::failed());
    tick().await;
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        (seen[0].id.clone(), seen[0].status, seen[0].reported),
        (id, JobStatus::Completed, false)
    );
    assert!(
        logs.text()
            .contains("jobs: onJobDone listener threw for bash-1: Error: listener boom"),
        "{}",
        logs.text()
    );
}

#[tokio::test(start_paused = true)]
async fn c055_a_rejecting_async_listener_is_contained() {
    let logs = LogCapture::start();
    let host = Host::new();
    let _l1 = host.registry.on_job_done(
        RegistrationScope::Global,
        Arc::new(|_, _| Ok(Some(Box::pin(async { Err("async listener boom".into()) })))),
    );
    let (seen, _l2) = record_done(&host.registry);
    let (id, job) = host.start_ok(bash());
    job.settle(JobOutcome::completed());
    tick().await;
    let ids: Vec<_> = seen.lock().unwrap().iter().map(|s| s.id.clone()).collect();
    assert_eq!(ids, vec![id]);
    let text = logs.text();
    assert!(text.contains("onJobDone listener rejected"), "{text}");
    assert!(text.contains("async listener boom"), "{text}");
}

#[tokio::test(start_paused = true)]
async fn c057_listener_unregistration() {
    let host = Host::new();
    let calls = Arc::new(Mutex::new(0));
    let plugin = {
        let calls = calls.clone();
        vec![host.registry.on_job_done(
            RegistrationScope::Global,
            Arc::new(move |_, _| {
                *calls.lock().unwrap() += 1;
                Ok(None)
            }),
        )]
    };
    let removed = {
        let calls = calls.clone();
        host.registry.on_job_done(
            RegistrationScope::Global,
            Arc::new(move |_, _| {
                *calls.lock().unwrap() += 1;
                Ok(None)
            }),
        )
    };
    drop(plugin);
    removed.unregister();
    let (_, job) = host.start_ok(bash());
    job.settle(JobOutcome::completed());
    tick().await;
    assert_eq!(*calls.lock().unwrap(), 0);
}

#[tokio::test(start_paused = true)]
async fn c087_observers_see_registration_stopping_and_settlement() {
    let host = Arc::new(Host::new());
    let alice = host.agent("alice");
    let seen: Arc<Mutex<Vec<(String, usize)>>> = Arc::default();
    let sink = seen.clone();
    let registry = host.registry.clone();
    let _observer = host.registry.on_jobs_changed(
        RegistrationScope::Global,
        Arc::new(move |owner| {
            // Re-entrant: the committed state is already visible.
            let owner = owner.map(|o| o.id().clone());
            let visible = registry.list(owner.as_ref()).len();
            sink.lock()
                .unwrap()
                .push((owner.map(|o| o.to_string()).unwrap_or_default(), visible));
            Ok(())
        }),
    );
    let (id, job) = host.start_ok(bash().owner(alice.as_dyn()).on_cancel(OnCancel::Hang));
    assert_eq!(seen.lock().unwrap().clone(), vec![("alice".to_owned(), 1)]);
    host.registry.kill(&id, id_of(&alice), None).unwrap();
    assert_eq!(seen.lock().unwrap().len(), 2);
    assert_eq!(
        host.registry.get(&id, id_of(&alice)).unwrap().status,
        JobStatus::Stopping
    );
    job.settle(JobOutcome::killed());
    tick().await;
    assert_eq!(
        seen.lock().unwrap().clone(),
        vec![("alice".to_owned(), 1); 3]
    );
    assert_eq!(
        host.registry.get(&id, id_of(&alice)).unwrap().status,
        JobStatus::Killed
    );
}

#[tokio::test(start_paused = true)]
async fn c090_a_throwing_observer_is_contained() {
    let logs = LogCapture::start();
    let host = Host::new();
    let _o1 = host.registry.on_jobs_changed(
        RegistrationScope::Global,
        Arc::new(|_| Err("observer boom".into())),
    );
    let (seen, _o2) = record_changes(&host.registry);
    assert_eq!(host.start_ok(bash()).0, "bash-1");
    assert_eq!(seen.lock().unwrap().clone(), owners(&[None]));
    assert!(
        logs.text()
            .contains("jobs: onJobsChanged listener threw: Error: observer boom")
    );
}

#[tokio::test(start_paused = true)]
async fn c091_observer_unregistration() {
    let host = Host::new();
    let seen: Arc<Mutex<Vec<u8>>> = Arc::default();
    let observer = |n: u8| {
        let sink = seen.clone();
        Arc::new(move |_: Option<&Arc<dyn turnkit_core::Agent>>| {
            sink.lock().unwrap().push(n);
            Ok(())
        })
    };
    let o1 = host
        .registry
        .on_jobs_changed(RegistrationScope::Global, observer(1));
    let plugin = vec![
        host.registry
            .on_jobs_changed(RegistrationScope::Global, observer(2)),
    ];
    host.start_ok(bash());
    assert_eq!(seen.lock().unwrap().clone(), [1, 2]);
    o1.unregister();
    o1.unregister();
    host.start_ok(bash());
    assert_eq!(seen.lock().unwrap().clone(), [1, 2, 2]);
    drop(plugin);
    host.start_ok(bash());
    assert_eq!(seen.lock().unwrap().clone(), [1, 2, 2]);
}

#[tokio::test(start_paused = true)]
async fn routing_is_global_first_then_farthest_ancestor_to_nearest() {
    let host = Host::new();
    let order: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let listener = |name: &'static str| {
        let sink = order.clone();
        Arc::new(
            move |_: &turnkit_jobs::JobSnapshot, _: Option<&Arc<dyn turnkit_core::Agent>>| {
                sink.lock().unwrap().push(name);
                Ok(None)
            },
        )
    };
    let scoped = |key: &str| RegistrationScope::Scoped(ScopeKey::new(key));
    let _regs = [
        host.registry.on_job_done(scoped("member"), listener("own")),
        host.registry
            .on_job_done(scoped("preset"), listener("preset")),
        host.registry
            .on_job_done(scoped("other"), listener("other")),
        host.registry.on_job_done(scoped("root"), listener("root")),
        host.registry
            .on_job_done(RegistrationScope::Global, listener("global")),
    ];
    let agent = host.scoped_agent("member", &["preset", "root"]);
    let (_, job) = host.start_ok(bash().owner(agent));
    job.settle(JobOutcome::completed());
    tick().await;
    assert_eq!(
        order.lock().unwrap().clone(),
        ["global", "root", "preset", "own"]
    );
    // Unowned jobs reach global registrations only.
    order.lock().unwrap().clear();
    let (_, job) = host.start_ok(bash());
    job.settle(JobOutcome::completed());
    tick().await;
    assert_eq!(order.lock().unwrap().clone(), ["global"]);
}

#[tokio::test(start_paused = true)]
async fn a_rejected_done_becomes_failed() {
    let logs = LogCapture::start();
    let host = Host::new();
    let (seen, _l) = record_done(&host.registry);
    let (id, job) = host.start_ok(bash());
    job.reject("transport exploded");
    tick().await;
    let snapshot = host.registry.get(&id, None).unwrap();
    assert_eq!(snapshot.status, JobStatus::Failed);
    assert_eq!(
        snapshot.detail.as_deref(),
        Some("Error: transport exploded")
    );
    assert_eq!(seen.lock().unwrap().len(), 1);
    assert!(logs.text().contains(
        "jobs: job bash-1 producer done promise rejected (producer contract violation): Error: transport exploded"
    ));
}

#[tokio::test(start_paused = true)]
async fn listeners_may_reenter_the_registry() {
    let host = Host::new();
    let registry = host.registry.clone();
    let reads: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = reads.clone();
    let _l = host.registry.on_job_done(
        RegistrationScope::Global,
        Arc::new(move |snapshot, _| {
            let read = registry.read(&snapshot.id, None)?;
            sink.lock().unwrap().push(read.text);
            let started = registry.start(FakeProducer::new("followup", "next").build().0)?;
            sink.lock().unwrap().push(started.to_string());
            Ok(None)
        }),
    );
    let (_, job) = host.start_ok(bash());
    job.emit("out");
    job.settle(JobOutcome::completed());
    tick().await;
    assert_eq!(reads.lock().unwrap().clone(), ["out", "followup-1"]);
}

/// Each job has a `harness.job` span with its id, kind and owner session; it records the
/// terminal status at settlement, and the completion listeners run inside it.
#[tokio::test(start_paused = true)]
async fn a_job_span_records_its_status_at_settlement() {
    let logs = LogCapture::start();
    let host = Host::new();
    let _listener = host.registry.on_job_done(
        RegistrationScope::Global,
        Arc::new(|snapshot, _| {
            tracing::info!("listener saw {}", snapshot.id);
            Ok(None)
        }),
    );
    let owner = host.agent("owner");
    let (_, owned) = host.start_ok(FakeProducer::new("subagent", "delegate").owner(owner.as_dyn()));
    let (_, unowned) = host.start_ok(bash());
    owned.settle(JobOutcome::failed().with_detail("boom"));
    tick().await;
    unowned.settle(JobOutcome::completed());
    tick().await;
    let text = logs.text();
    let lines: Vec<&str> = text
        .lines()
        .map(|line| line.split(" time.busy").next().unwrap_or(line).trim())
        .collect();
    assert_eq!(
        lines,
        [
            "INFO harness.job{job.id=subagent-1 job.kind=subagent job.owner=owner gen_ai.conversation.id=owner job.status=failed}: listener saw subagent-1",
            "INFO harness.job{job.id=subagent-1 job.kind=subagent job.owner=owner gen_ai.conversation.id=owner job.status=failed}: close",
            "INFO harness.job{job.id=bash-1 job.kind=bash job.status=completed}: listener saw bash-1",
            "INFO harness.job{job.id=bash-1 job.kind=bash job.status=completed}: close",
        ]
    );
}

/// A tool whose body starts one prepared job.
struct StartsJob {
    definition: turnkit_core::ToolDefinition,
    registry: turnkit_jobs_local::LocalJobRegistry,
    start: Mutex<Option<turnkit_jobs::JobStart>>,
}

#[async_trait::async_trait]
impl turnkit_core::Tool for StartsJob {
    fn definition(&self) -> &turnkit_core::ToolDefinition {
        &self.definition
    }

    async fn call(
        &self,
        _call: turnkit_core::ToolCall,
    ) -> Result<turnkit_core::ToolOutput, turnkit_core::ToolError> {
        let start = self.start.lock().ok().and_then(|mut slot| slot.take());
        let start = start.ok_or_else(|| turnkit_core::ToolError::msg("no job prepared"))?;
        let id = self
            .registry
            .start(start)
            .map_err(|error| turnkit_core::ToolError::msg(error.to_string()))?;
        Ok(turnkit_core::ToolOutput::json(serde_json::Value::from(
            id.to_string(),
        )))
    }
}

/// A job started by a tool call records the call's `gen_ai.tool.call.id`, and its span nests
/// under the call's `execute_tool` span (docs/observability.md).
#[tokio::test(start_paused = true)]
async fn a_job_span_records_the_tool_call_that_started_it() {
    let logs = LogCapture::start();
    let host = Host::new();
    let (start, job) = bash().build();
    let tools = turnkit_core::ToolRegistry::new();
    tools
        .register(
            Arc::new(StartsJob {
                definition: turnkit_core::ToolDefinition {
                    name: "start_job".to_owned(),
                    description: "starts a job".to_owned(),
                    input_schema: serde_json::json!({"type": "object"}),
                    output_schema: None,
                    annotations: None,
                },
                registry: host.registry.clone(),
                start: Mutex::new(Some(start)),
            }),
            RegistrationScope::Global,
        )
        .unwrap()
        .keep();
    let output = tools
        .execute_call(
            Some("call-7"),
            "start_job",
            serde_json::json!({}),
            None,
            turnkit_core::CancellationToken::new(),
        )
        .await;
    assert_eq!(output.value, serde_json::json!("bash-1"));
    job.settle(JobOutcome::completed());
    tick().await;
    let text = logs.text();
    let lines: Vec<&str> = text
        .lines()
        .map(|line| line.split(" time.busy").next().unwrap_or(line).trim())
        .filter(|line| line.contains("harness.job"))
        .collect();
    assert_eq!(
        lines,
        [
            r#"INFO execute_tool{otel.name=execute_tool start_job gen_ai.operation.name="execute_tool" gen_ai.tool.name="start_job" gen_ai.tool.call.id="call-7" gen_ai.conversation.id="" tool="start_job" session="" outcome="ok"}:harness.job{job.id=bash-1 job.kind=bash gen_ai.tool.call.id="call-7" job.status=completed}: close"#,
        ]
    );
}
