//! HostKit: projections stay current over unwrapped sessions; disposal leaves the kit.

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use turnkit_core::{
    Agent, Harness, LifecycleEvent, MemoryStore, MessageSource, Projection, ProjectionState,
    SessionEvent, SessionHeader, SessionId, SessionStore, SystemClock, UserMessage,
};
use turnkit_host::HostKit;

/// Counts events by type.
struct Types;

impl Projection for Types {
    fn key(&self) -> &str {
        "types"
    }
    fn init(&self) -> ProjectionState {
        Arc::new(Vec::<String>::new())
    }
    fn apply(&self, state: &ProjectionState, event: &SessionEvent) -> Option<ProjectionState> {
        let mut seen = state.downcast_ref::<Vec<String>>()?.clone();
        seen.push(event.r#type.clone());
        Some(Arc::new(seen))
    }
    fn view(&self, state: &ProjectionState) -> Value {
        json!(state.downcast_ref::<Vec<String>>())
    }
}

#[tokio::test(start_paused = true)]
async fn views_follow_the_log_without_a_session_wrapper() {
    let clock = Arc::new(SystemClock);
    let kit = Arc::new(HostKit::new(clock.clone()));
    let _projection = kit.register_projection(Arc::new(Types)).unwrap();
    let store = MemoryStore::new(clock);
    let session = store.create(SessionHeader::new("s1")).unwrap();
    session.append("note", json!({})).unwrap();
    let agent = kit.start_agent(session.clone());
    // Appended straight to the store's session: nothing tells the kit.
    session.append("other", json!({})).unwrap();
    let turns = agent.turns();
    let driver = tokio::spawn(async move {
        while let Some(turn) = turns.next_turn().await {
            turn.finish();
        }
    });
    agent
        .followup(UserMessage::text("go", MessageSource::User))
        .unwrap();
    agent.when_idle().await;
    tokio::task::yield_now().await;
    let view = kit.view(&SessionId::from("s1"), "types").unwrap();
    assert_eq!(
        (view.value, view.as_of_seq),
        (json!(["note", "other", "turn/start", "turn/end"]), 4)
    );
    agent.dispose().await;
    driver.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_disposed_loop_agent_leaves_the_kit() {
    let clock = Arc::new(SystemClock);
    let kit = Arc::new(HostKit::new(clock.clone()));
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let _listener = kit.subscribe_agents(Arc::new(move |event: &LifecycleEvent| {
        let line = match event {
            LifecycleEvent::Created(a) => format!("created {}", a.id()),
            LifecycleEvent::Disposed(a) => format!("disposed {} {}", a.id(), a.is_disposed()),
        };
        sink.lock().unwrap().push(line);
    }));
    let store = MemoryStore::new(clock);
    let agent = kit.start_agent(store.create(SessionHeader::new("s1")).unwrap());
    let generation = kit.agents_generation().unwrap();
    assert!(kit.agent(&"s1".into()).is_some());
    agent.dispose().await;
    assert!(kit.agent(&"s1".into()).is_none());
    assert_eq!(kit.agents_generation(), Some(generation + 1));
    assert_eq!(*seen.lock().unwrap(), ["created s1", "disposed s1 true"]);
    assert_eq!(kit.view(&SessionId::from("s1"), "types"), None);
}
