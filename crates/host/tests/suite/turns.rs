//! LoopAgent: a host-opened turn waits out a maintenance task and claims what it queued.

use std::sync::Arc;

use pretty_assertions::assert_eq;
use turnkit_core::{
    Agent, MemoryStore, MessageSource, Session, SessionHeader, SessionStore, StoreError,
    SystemClock, UserMessage,
};
use turnkit_host::LoopAgent;

fn session() -> Result<Arc<dyn Session>, StoreError> {
    MemoryStore::new(Arc::new(SystemClock)).create(SessionHeader::new("s1"))
}

fn schedule() -> MessageSource {
    MessageSource::Plugin {
        plugin: "schedule".into(),
        form: None,
        summary: None,
    }
}

#[tokio::test(start_paused = true)]
async fn a_turn_opened_when_idle_claims_the_followup_queued_under_maintenance() {
    let agent = LoopAgent::new(session().unwrap());
    // The schedule runtime's shape: hold the guard, queue the reminder, then let go.
    let guard = agent.try_begin_maintenance().unwrap();
    agent
        .followup(UserMessage::text("the reminder", schedule()))
        .unwrap();
    assert!(agent.open_turn().is_none(), "a turn opened under the guard");

    let waiting = agent.clone();
    let opener = tokio::spawn(async move {
        let turn = waiting.open_turn_when_idle().await?;
        Some((turn.number(), turn.input().to_vec()))
    });
    tokio::task::yield_now().await;
    assert!(
        !opener.is_finished(),
        "the turn opened before the guard dropped"
    );

    drop(guard);
    let (number, input) = opener.await.unwrap().expect("a turn opened");
    assert_eq!(number, 1);
    let texts: Vec<String> = input.iter().map(UserMessage::joined_text).collect();
    assert_eq!(texts, ["the reminder"]);
    assert_eq!(input[0].source, schedule());
}

#[tokio::test(start_paused = true)]
async fn a_turn_opened_when_idle_waits_for_the_open_turn_to_finish() {
    let agent = LoopAgent::new(session().unwrap());
    let first = agent.open_turn().expect("an idle agent opens a turn");
    let waiting = agent.clone();
    let opener =
        tokio::spawn(async move { waiting.open_turn_when_idle().await.map(|t| t.number()) });
    tokio::task::yield_now().await;
    assert!(
        !opener.is_finished(),
        "a second turn opened inside the first"
    );
    let _late = first.finish();
    assert_eq!(opener.await.unwrap(), Some(2));
}

#[tokio::test(start_paused = true)]
async fn waiting_for_an_idle_agent_ends_at_disposal() {
    let agent = LoopAgent::new(session().unwrap());
    let guard = agent.try_begin_maintenance().unwrap();
    let waiting = agent.clone();
    let opener =
        tokio::spawn(async move { waiting.open_turn_when_idle().await.map(|t| t.number()) });
    tokio::task::yield_now().await;
    let disposer = agent.clone();
    let disposal = tokio::spawn(async move { disposer.dispose().await });
    tokio::task::yield_now().await;
    drop(guard);
    disposal.await.unwrap();
    assert_eq!(opener.await.unwrap(), None);
}
