//! The main demo: one realistic session on the embedded defaults — the in-memory host from
//! the testkit, a `JsonlStore` in a temporary folder, the system clock, real processes and
//! real time. A scripted model plans with `todo_write`, starts a background shell job, is
//! woken by its completion notice, reads the output, schedules a reminder, receives it as a
//! woken turn, finishes its plan; then the session file is reopened to show that replay
//! gives the same `todos` and no pending reminders.
//!
//! `cargo run --example quickstart -- --store postgres://…` runs the same session on a
//! PostgreSQL store (`turnkit-store-pg`) instead, under a fresh session id.
#![expect(clippy::print_stdout, reason = "an example prints its transcript")]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use turnkit_core::{
    Agent, Clock, JsonlStore, SessionHeader, SessionId, SessionStore, SystemClock, fold_events,
};
use turnkit_testkit::{HostRecord, MemoryAgent, MemoryHarness};

/// The scripted model: each call prints what the model sends and what the tool returns.
struct Model {
    host: Arc<MemoryHarness>,
    session: SessionId,
}

impl Model {
    async fn call(&self, tool: &str, args: Value) -> Value {
        println!("  model     → {tool} {args}");
        let output = self.host.execute(tool, args, Some(&self.session)).await;
        for line in output.text().lines() {
            println!("  result    ← {line}");
        }
        output.value
    }

    fn say(&self, text: &str) {
        println!("  model     : {text}");
    }
}

fn show(record: &HostRecord) {
    match record {
        HostRecord::Turn { phase, .. } => println!("── turn {phase} ──"),
        HostRecord::Claimed { source, text, .. } => {
            let mut lines = text.lines();
            println!("  {source:<9} ⇒ {}", lines.next().unwrap_or_default());
            for line in lines {
                println!("              {line}");
            }
        }
        HostRecord::Followup { .. } | HostRecord::Inject { .. } => {}
    }
}

/// What the agent claimed into its turns, as `(source, text)`, in order.
type Claims = Arc<Mutex<Vec<(String, String)>>>;

/// Runs one turn by hand, as a runtime's loop would: claim the queued input, let the model
/// act, close the turn, and make the log durable. Fails unless the turn opened on exactly one
/// message, from `source`, whose text contains `expected` — the input this turn exists for.
async fn turn(
    agent: &Arc<MemoryAgent>,
    claims: &Claims,
    (source, expected): (&str, &str),
    act: impl AsyncFnOnce(),
) -> anyhow::Result<()> {
    let before = claims.lock().map_or(0, |c| c.len());
    // A reminder is queued while the schedule runtime still holds the agent for its
    // delivery, so the turn opens once the agent is idle, not at the instant of the wake.
    agent.start_turn_when_idle().await;
    let opened_on: Vec<(String, String)> = claims
        .lock()
        .map(|c| c.get(before..).unwrap_or_default().to_vec())
        .unwrap_or_default();
    match opened_on.as_slice() {
        [(from, text)] if from == source && text.contains(expected) => {}
        _ => bail!(
            "the turn should have opened on one {source} message with {expected:?}, but it claimed {opened_on:?}"
        ),
    }
    act().await;
    agent.end_turn();
    agent
        .session()
        .flush()
        .await
        .context("flushing the session")?;
    Ok(())
}

/// Waits for the next followup a plugin queues (a completion notice or a reminder).
async fn next_followup(
    wakes: &mut mpsc::UnboundedReceiver<String>,
    limit: Duration,
) -> anyhow::Result<String> {
    match tokio::time::timeout(limit, wakes.recv()).await {
        Ok(Some(text)) => Ok(text),
        _ => bail!("nothing woke the agent within {limit:?}"),
    }
}

/// Where the demo keeps its session: a JSONL file in a temporary folder (the default), or a
/// PostgreSQL database (`--store postgres://…`).
enum Store {
    Jsonl(Arc<JsonlStore>),
    Postgres(Arc<turnkit_store_pg::PgStore>),
}

impl Store {
    fn open(clock: &Arc<dyn Clock>) -> anyhow::Result<Self> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        match args.as_slice() {
            [] => {
                let folder = tempfile::Builder::new()
                    .prefix("harness-quickstart-")
                    .tempdir()?
                    .keep();
                Ok(Self::Jsonl(Arc::new(JsonlStore::new(
                    &folder,
                    clock.clone(),
                )?)))
            }
            [flag, url]
                if flag == "--store"
                    && (url.starts_with("postgres://") || url.starts_with("postgresql://")) =>
            {
                let store = turnkit_store_pg::PgStore::connect(
                    url,
                    clock.clone(),
                    turnkit_store_pg::PgOptions {
                        index: Some(Arc::new(turnkit_schedule::ReminderIndex)),
                        ..turnkit_store_pg::PgOptions::default()
                    },
                )
                .context("connecting to the PostgreSQL store")?;
                Ok(Self::Postgres(Arc::new(store)))
            }
            _ => bail!("usage: quickstart [--store postgres://…]"),
        }
    }

    fn dyn_store(&self) -> Arc<dyn SessionStore> {
        match self {
            Self::Jsonl(store) => store.clone(),
            Self::Postgres(store) => store.clone(),
        }
    }

    /// The session id: `quickstart` in a fresh folder; a fresh one in a shared database.
    fn session_id(&self, clock: &dyn Clock) -> SessionId {
        match self {
            Self::Jsonl(_) => SessionId::from("quickstart"),
            Self::Postgres(_) => SessionId::from(format!(
                "quickstart-{}",
                turnkit_core::epoch_millis(clock.now())
            )),
        }
    }

    /// Where the session is kept, for the transcript.
    fn place(&self, id: &SessionId) -> anyhow::Result<String> {
        Ok(match self {
            Self::Jsonl(store) => store.path_of(id)?.display().to_string(),
            Self::Postgres(store) => {
                format!("PostgreSQL schema {}, session {id}", store.options().schema)
            }
        })
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let started = Instant::now();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let kept = Store::open(&clock)?;
    let store = kept.dyn_store();
    let host = MemoryHarness::with_store(store.clone(), clock.clone());
    // This demo drives its turns by hand, like a runtime's own loop.
    host.set_auto_turns(false);
    let (wake_tx, mut wakes) = mpsc::unbounded_channel();
    let claims = Claims::default();
    let claimed = claims.clone();
    host.set_recorder(Arc::new(move |record: HostRecord| {
        match &record {
            HostRecord::Followup { text, .. } => {
                let _ = wake_tx.send(text.clone());
            }
            HostRecord::Claimed { source, text, .. } => {
                if let Ok(mut claimed) = claimed.lock() {
                    claimed.push((source.clone(), text.clone()));
                }
            }
            HostRecord::Turn { .. } | HostRecord::Inject { .. } => {}
        }
        show(&record);
    }));

    // Install the families, each with one call.
    let harness = host.as_dyn();
    let todo = turnkit_todo::install(&harness, turnkit_todo::TodoConfig::new(false))?;
    let jobs = turnkit_jobs_local::install(&harness, turnkit_jobs_local::JobsConfig::default())?;
    let tool_jobs =
        turnkit_tool_jobs::install(&harness, turnkit_tool_jobs::ToolJobsConfig::default())?;
    let schedule =
        turnkit_schedule::install(&harness, turnkit_schedule::ScheduleConfig::default())?;
    let bash = turnkit_bash::install(&harness, turnkit_bash::BashConfig::default())?;

    let id = kept.session_id(clock.as_ref());
    let agent = host.create_session(SessionHeader::new(id.clone()))?;
    let model = Model {
        host: host.clone(),
        session: id.clone(),
    };
    match &kept {
        Store::Jsonl(_) => println!("session file: {}", kept.place(&id)?),
        Store::Postgres(_) => println!("session: {}", kept.place(&id)?),
    }
    println!();

    // Turn 1: the user asks; the model plans and starts the checks in the background.
    agent.send_user(
        "Run the release checks, then remind me to announce the release.",
        None,
    )?;
    let request = "Run the release checks, then remind me to announce the release.";
    turn(&agent, &claims, ("user", request), async || {
        model
            .call(
                "todo_write",
                json!({"todos": [
                    {"content": "Run the release checks", "status": "in_progress"},
                    {"content": "Review the check results", "status": "pending"},
                    {"content": "Remind the user to announce", "status": "pending"},
                ]}),
            )
            .await;
        model
            .call(
                "bash",
                json!({
                    "command": "for check in build tests docs; do echo \"$check: ok\"; sleep 0.3; done",
                    "run_in_background": true,
                }),
            )
            .await;
        model.say("The checks run in the background; I will read them when they finish.");
    })
    .await?;

    // Turn 2: woken by the completion notice; read the output, schedule the reminder.
    next_followup(&mut wakes, Duration::from_secs(10)).await?;
    let mut output = Value::Null;
    let notice = ("tool-jobs", "background job bash-1 (bash: ");
    turn(&agent, &claims, notice, async || {
        output = model.call("job_output", json!({"job_id": "bash-1"})).await;
        model
            .call(
                "todo_write",
                json!({"todos": [
                    {"content": "Run the release checks", "status": "completed"},
                    {"content": "Review the check results", "status": "completed"},
                    {"content": "Remind the user to announce", "status": "in_progress"},
                ]}),
            )
            .await;
        model
            .call(
                "schedule_create",
                json!({"prompt": "Announce the release", "after_seconds": 2}),
            )
            .await;
    })
    .await?;
    if output["text"] != "build: ok\ntests: ok\ndocs: ok\n" {
        bail!("job_output did not return the checks' output: {output}");
    }

    // Turn 3: the reminder arrives as a woken turn; the plan is done.
    next_followup(&mut wakes, Duration::from_secs(10)).await?;
    let mut pending = Value::Null;
    let reminder = ("schedule", "reminder_prompt_json: \"Announce the release\"");
    turn(&agent, &claims, reminder, async || {
        model.say("Reminder: time to announce the release. All checks passed.");
        model
            .call(
                "todo_write",
                json!({"todos": [
                    {"content": "Run the release checks", "status": "completed"},
                    {"content": "Review the check results", "status": "completed"},
                    {"content": "Remind the user to announce", "status": "completed"},
                ]}),
            )
            .await;
        pending = model.call("schedule_list", json!({})).await;
    })
    .await?;
    if pending != json!([]) {
        bail!("the delivered reminder should leave no pending reminders: {pending}");
    }

    let live = host
        .projections()
        .view(&id, turnkit_todo::TODOS_KEY)
        .map_or(Value::Null, |v| v.value);

    // Shut down as a process exit would, then replay the file.
    host.dispose_all().await;
    bash.dispose();
    schedule.dispose().await;
    tool_jobs.dispose();
    jobs.dispose().await;
    todo.dispose();

    // The store lets one handle write a session at a time: let go of ours before reopening.
    drop(agent);
    let reopened = store.open(&id)?;
    let events = reopened.events();
    let replayed = turnkit_todo::TodosProjection;
    let state = fold_events(&replayed, &events);
    let replayed_view = turnkit_core::Projection::view(&replayed, &state);
    let reminders = turnkit_schedule::domain::ScheduleFold::open(&events, None)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    println!();
    println!("replayed {} events from {}", events.len(), kept.place(&id)?);
    println!("  todos (live)     = {live}");
    println!("  todos (replayed) = {replayed_view}");
    println!("  same todos after replay: {}", live == replayed_view);
    println!(
        "  pending reminders after replay: {}",
        reminders.active_len()
    );
    println!("finished in {:.1}s", started.elapsed().as_secs_f64());
    if live != replayed_view || reminders.active_len() != 0 {
        bail!("replay disagrees with the live session");
    }
    Ok(())
}
