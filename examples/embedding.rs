//! A real host without the testkit: a JSONL store, turnkit-host's `HostKit` as the `Harness`
//! and its production turn loop (`LoopAgent`) as the `Agent`, and an LLM-shaped model step
//! (here scripted). The user asks for a build; the model writes a plan and starts a
//! background shell job; the job's completion notice wakes the idle agent; the model then
//! marks the plan done. Before the story, the host's agents pass the host-contract
//! conformance suite. Exits non-zero when any step did not happen.
#![expect(clippy::print_stdout, reason = "an example prints what it does")]

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use turnkit_core::{
    Agent, JsonlStore, MessageSource, SessionHeader, SessionId, SessionStore, SystemClock,
    UserMessage,
};
use turnkit_host::{HostKit, LoopAgent};
use turnkit_testkit::conformance::{self, Candidate};

// ---- The host: everything a runtime writes to embed harness. ----

/// What the model asks for after one step.
enum Step {
    Call(&'static str, Value),
    Reply(String),
}

/// The runtime's model step: the conversation so far in, one action out.
type Model = Arc<dyn Fn(&[String]) -> Step + Send + Sync>;

/// Builds the host and installs the families into it.
fn host(dir: &std::path::Path) -> anyhow::Result<(Arc<HostKit>, Arc<JsonlStore>, Families)> {
    let clock = Arc::new(SystemClock);
    let kit = Arc::new(HostKit::new(clock.clone()));
    let harness: Arc<dyn turnkit_core::Harness> = kit.clone();
    let jobs = turnkit_jobs_local::install(&harness, Default::default())?;
    let families = Families {
        _todo: turnkit_todo::install(&harness, turnkit_todo::TodoConfig::new(false))?,
        _tools: turnkit_tool_jobs::install(&harness, Default::default())?,
        _bash: turnkit_bash::install(&harness, Default::default())?,
        jobs,
    };
    Ok((kit, Arc::new(JsonlStore::new(dir, clock)?), families))
}

struct Families {
    _todo: turnkit_todo::Installed,
    _tools: turnkit_tool_jobs::Installed,
    _bash: turnkit_bash::Installed,
    jobs: turnkit_jobs_local::Installed,
}

/// One live agent: a session, the production loop, and a driver task running `model`.
fn start(kit: &Arc<HostKit>, store: &JsonlStore, id: &str, model: Model) -> Arc<LoopAgent> {
    let session = match store.create(SessionHeader::new(id)) {
        Ok(session) => session,
        Err(error) => panic!("cannot create session {id}: {error}"),
    };
    let agent = kit.start_agent(session);
    let (kit, turns) = (kit.clone(), agent.turns());
    tokio::spawn(async move {
        while let Some(mut turn) = turns.next_turn().await {
            let caller = turn.agent().as_dyn();
            let mut context: Vec<String> = turn.take_input().iter().map(render).collect();
            loop {
                match model(&context) {
                    Step::Call(tool, args) => {
                        let cancel = Default::default();
                        let output = kit.call(tool, args, Some(caller.clone()), cancel).await;
                        context.push(format!("tool {tool}: {}", output.text()));
                    }
                    Step::Reply(text) => context.push(format!("assistant: {text}")),
                }
                let late = turn.claim_injected();
                if late.is_empty() && context.last().is_some_and(|l| l.starts_with("assistant")) {
                    break;
                }
                context.extend(late.iter().map(render));
            }
            context.extend(turn.finish().iter().map(render));
            if let Err(error) = caller.session().flush().await {
                println!("could not persist the turn of {}: {error}", caller.id());
            }
        }
    });
    agent
}

/// A claimed message as the model sees it: `<source>: <text>`.
fn render(message: &UserMessage) -> String {
    format!("{}: {}", message.source.name(), message.joined_text())
}

// ---- The story: a scripted model and the checks. ----

fn scripted(done: mpsc::UnboundedSender<String>) -> Model {
    Arc::new(move |context: &[String]| {
        let last = context.last().map_or("", String::as_str);
        let plan = |status| json!({"todos": [{"content": "Build the docs", "status": status}]});
        if last.starts_with("user: build") {
            Step::Call("todo_write", plan("in_progress"))
        } else if last.starts_with("tool todo_write") && context[0].starts_with("user:") {
            let command = "sleep 0.2; echo built";
            Step::Call(
                "bash",
                json!({"command": command, "run_in_background": true}),
            )
        } else if last.starts_with("tool-jobs:") {
            let _ = done.send(last.to_owned());
            Step::Call("todo_write", plan("completed"))
        } else {
            Step::Reply(format!("noted ({} messages)", context.len()))
        }
    })
}

fn main() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    // The suite runs on paused time (deterministic waits), the story on real time.
    let paused = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()?;
    let report = paused.block_on(async {
        let (kit, store, families) = host(dir.path())?;
        let (tx, _rx) = mpsc::unbounded_channel();
        let mut n = 0;
        let report = conformance::check_agent(|| {
            n += 1;
            let agent = start(&kit, &store, &format!("check-{n}"), scripted(tx.clone()));
            Candidate::new(agent.as_dyn(), move || {
                Box::pin(async move { agent.dispose().await })
            })
        })
        .await;
        families.jobs.dispose().await;
        anyhow::Ok(report)
    })?;
    print!("conformance:\n{report}");
    anyhow::ensure!(report.passed(), "the host failed {:?}", report.failed());
    tokio::runtime::Runtime::new()?.block_on(story(dir.path()))
}

async fn story(dir: &std::path::Path) -> anyhow::Result<()> {
    let (kit, store, families) = host(dir)?;
    let (tx, mut done) = mpsc::unbounded_channel();
    let agent = start(&kit, &store, "s1", scripted(tx));
    agent.send(
        UserMessage::text("build the docs", MessageSource::User),
        None,
    )?;
    let notice = tokio::time::timeout(Duration::from_secs(20), done.recv()).await?;
    println!("the woken turn saw: {}", notice.unwrap_or_default());
    agent.when_idle().await;
    let view = kit.view(&SessionId::from("s1"), "todos");
    let todos = view.map_or(Value::Null, |v| v.value);
    println!("todos projection: {todos}");
    anyhow::ensure!(
        todos.to_string().contains("completed"),
        "plan not completed"
    );
    agent.dispose().await;
    families.jobs.dispose().await;
    drop(agent); // the last handle of the session: its file can be reopened now
    let turns = store.open(&SessionId::from("s1"))?.raw_events_after(0);
    let turns = turns.iter().filter(|e| e.r#type() == "turn/start").count();
    println!("turns on disk: {turns}");
    anyhow::ensure!(turns == 2, "expected 2 turns on disk, found {turns}");
    anyhow::ensure!(kit.directory().all().is_empty(), "agent still published");
    Ok(())
}
