use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_core::MemoryStore;

use super::*;

/// A session host over a memory store, with todo configured (shared with the HTTP module's
/// unit tests).
pub(crate) fn host() -> Arc<SessionHost> {
    let configs =
        FamiliesConfig::from_json(&json!({"todo": {"allowParallelInProgress": false}})).unwrap();
    let options = SessionOptions {
        dir: PathBuf::new(),
        session: Some("s".to_owned()),
        configs,
    };
    SessionHost::open_in(&MemoryStore::new(Arc::new(SystemClock)), &options).unwrap()
}

#[tokio::test]
async fn shutdown_returns_only_once_the_sessions_own_tasks_have_ended() {
    let host = host();
    // Fenced first, so the shutdown flushes nothing: all it waits for is the tasks.
    host.fence(&PersistenceError::Fenced(SessionId::from("s")))
        .await;
    let (finish, finished) = tokio::sync::oneshot::channel::<()>();
    let ended = Arc::new(AtomicBool::new(false));
    let flag = ended.clone();
    host.spawn(async move {
        let _ = finished.await;
        flag.store(true, Ordering::SeqCst);
    });
    // A task that waits on a client ends when the shutdown starts waiting.
    let stopping = host.stopping().clone();
    host.spawn(async move { stopping.cancelled().await });
    assert_eq!(host.background_tasks(), 2);

    let mut shutdown = std::pin::pin!(host.shutdown());
    assert!(futures::poll!(shutdown.as_mut()).is_pending());
    assert!(!ended.load(Ordering::SeqCst));
    finish.send(()).unwrap();
    // A guard against a hang (a task never told to stop), not a synchronisation.
    tokio::time::timeout(std::time::Duration::from_secs(20), shutdown)
        .await
        .unwrap_or_else(|_| panic!("the shutdown did not return within 20 s"));
    assert!(ended.load(Ordering::SeqCst));
    assert_eq!(host.background_tasks(), 0);
}

#[tokio::test]
async fn a_queued_messages_flush_is_a_task_of_the_session_joined_by_shutdown() {
    let host = host();
    assert_eq!(host.background_tasks(), 0);
    let notice = UserMessage::text(
        "job bash-1 finished",
        turnkit_core::MessageSource::Plugin {
            plugin: "tool-jobs".to_owned(),
            form: None,
            summary: None,
        },
    );
    host.agent_handle().followup(notice).unwrap();
    // Its flush was started and has not run yet (one thread, no await since).
    assert_eq!(host.background_tasks(), 1);
    host.shutdown().await;
    assert_eq!(host.background_tasks(), 0);
    let queued = host
        .log()
        .events()
        .iter()
        .filter(|event| event.r#type == QUEUED_EVENT)
        .count();
    assert_eq!(queued, 1);
}
