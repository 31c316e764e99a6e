//! tool-todo installed on a `MemoryHarness`: the tool through the host pipeline, the
//! projection through the host's projection set, install and unload.

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use turnkit_core::{ConfigError, Harness, RegisterError, SessionHeader, SessionId};
use turnkit_testkit::{ManualClock, MemoryHarness, settle};
use turnkit_todo::{TodoConfig, check_history, install};

fn host() -> Arc<MemoryHarness> {
    MemoryHarness::new(Arc::new(ManualClock::at_default()))
}

fn config(allow_parallel: bool) -> TodoConfig {
    TodoConfig::from_json(json!({ "allowParallelInProgress": allow_parallel })).unwrap()
}

fn sid(id: &str) -> SessionId {
    SessionId::from(id)
}

/// `(seq, type, data)` of every event of a session.
fn log(host: &MemoryHarness, id: &str) -> Vec<(u64, String, Value)> {
    host.store()
        .open(&sid(id))
        .unwrap()
        .events()
        .into_iter()
        .map(|e| (e.seq, e.r#type, e.data))
        .collect()
}

fn todos_view(host: &MemoryHarness, id: &str) -> Option<(Value, u64)> {
    host.projections()
        .view(&sid(id), "todos")
        .map(|v| (v.value, v.as_of_seq))
}

// C-002 through the host: the calling agent's session gets the event.
#[tokio::test(start_paused = true)]
async fn successful_write_as_an_agent() {
    let host = host();
    let _todo = install(&host.as_dyn(), config(true)).unwrap();
    host.create_session(SessionHeader::new("writer")).unwrap();
    let list = json!([{"content": "plan", "status": "in_progress"}, {"content": "build", "status": "pending"}]);
    let output = host
        .execute("todo_write", json!({ "todos": list }), Some(&sid("writer")))
        .await;
    assert_eq!(
        (output.is_error, output.value.clone(), output.text()),
        (
            false,
            json!({"todos": list, "counts": {"pending": 1, "inProgress": 1, "completed": 0}}),
            "Updated todo list: 1 pending, 1 in progress, 0 completed.".to_owned()
        )
    );
    assert_eq!(
        log(&host, "writer"),
        [(1, "todo/write".to_owned(), json!({ "todos": list }))]
    );
    assert_eq!(todos_view(&host, "writer"), Some((list, 1)));
}

// C-017 and §2.4 through the host: no agent, no event anywhere.
#[tokio::test(start_paused = true)]
async fn caller_without_agent_is_rejected() {
    let host = host();
    let _todo = install(&host.as_dyn(), config(true)).unwrap();
    host.create_session(SessionHeader::new("s1")).unwrap();
    let output = host.execute("todo_write", json!({"todos": []}), None).await;
    assert_eq!(
        (output.is_error, output.value.clone(), output.text()),
        (
            true,
            Value::Null,
            "Error: todo_write requires an owning agent session".to_owned()
        )
    );
    let dup = json!({"todos": [{"content": "dup", "status": "pending"}, {"content": "dup", "status": "pending"}]});
    let output = host.execute("todo_write", dup, None).await;
    assert_eq!(
        output.text(),
        r#"Error: invalid todos: duplicate content "dup""#
    );
    assert_eq!(log(&host, "s1"), []);
}

// C-005/C-006/C-007 through the host pipeline, with a real agent: no event.
#[tokio::test(start_paused = true)]
async fn argument_errors_append_nothing() {
    let host = host();
    let _todo = install(&host.as_dyn(), config(true)).unwrap();
    host.create_session(SessionHeader::new("s1")).unwrap();
    let cases = [
        (
            json!({"todos": [{"content": "x", "status": "doing"}]}),
            r#"Error: invalid arguments: "todos[0].status" must be one of ["pending","in_progress","completed"]"#,
        ),
        (
            json!({"todos": "nope"}),
            r#"Error: invalid arguments: "todos" must be an array"#,
        ),
        (
            json!({"todos": [{"content": "a", "status": "pending", "children": []}]}),
            r#"Error: invalid arguments: "todos[0].children" is not a declared property (additionalProperties: false)"#,
        ),
    ];
    for (args, text) in cases {
        let output = host.execute("todo_write", args, Some(&sid("s1"))).await;
        assert_eq!((output.is_error, output.text()), (true, text.to_owned()));
    }
    assert_eq!(log(&host, "s1"), []);
}

// C-022: the configuration decides the check and the description.
#[tokio::test(start_paused = true)]
async fn config_round_trip() {
    let two = json!({"todos": [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}]});
    for allow in [false, true] {
        let host = host();
        let _todo = install(&host.as_dyn(), config(allow)).unwrap();
        host.create_session(SessionHeader::new("s1")).unwrap();
        let description = host.tools().all_definitions()[0].description.clone();
        let output = host
            .execute("todo_write", two.clone(), Some(&sid("s1")))
            .await;
        if allow {
            assert!(!output.is_error);
            assert_eq!(
                log(&host, "s1"),
                [(1, "todo/write".to_owned(), two.clone())]
            );
            assert!(description.contains("several at once"));
        } else {
            assert_eq!(
                (output.is_error, output.text()),
                (
                    true,
                    "Error: invalid todos: at most one task may be in_progress (got 2)".to_owned()
                )
            );
            assert_eq!(log(&host, "s1"), []);
            assert!(description.contains("Keep AT MOST ONE todo `in_progress` "));
        }
    }
}

// C-021 at install time: loading fails with the upstream texts.
#[test]
fn config_errors() {
    assert_eq!(
        TodoConfig::from_json(json!({})),
        Err(ConfigError::Invalid(
            "tool-todo: $.allowParallelInProgress missing required value".to_owned()
        ))
    );
    assert_eq!(
        TodoConfig::from_json(json!({"allowParallelInProgress": "no"})),
        Err(ConfigError::Invalid(
            "tool-todo: $.allowParallelInProgress expected boolean".to_owned()
        ))
    );
}

// C-023: null before the first write, asOfSeq = last seq (after a user message's turn).
#[tokio::test(start_paused = true)]
async fn projection_is_null_before_the_first_write() {
    let host = host();
    let _todo = install(&host.as_dyn(), config(false)).unwrap();
    let agent = host.create_session(SessionHeader::new("s1")).unwrap();
    agent.send_user("hello", None).unwrap();
    settle().await;
    let events = log(&host, "s1");
    assert_eq!(
        events
            .iter()
            .map(|(seq, t, _)| (*seq, t.as_str()))
            .collect::<Vec<_>>(),
        [(1, "turn/start"), (2, "turn/end")]
    );
    assert_eq!(todos_view(&host, "s1"), Some((Value::Null, 2)));
}

// C-025 through the host's turn loop: turn/end keeps the plan, turn/start clears it.
#[tokio::test(start_paused = true)]
async fn turn_end_keeps_turn_start_clears() {
    let host = host();
    let _todo = install(&host.as_dyn(), config(false)).unwrap();
    let agent = host.create_session(SessionHeader::new("s1")).unwrap();
    host.set_auto_turns(false);
    agent.start_turn();
    let done = json!([{"content": "done", "status": "completed"}]);
    let output = host
        .execute("todo_write", json!({ "todos": done }), Some(&sid("s1")))
        .await;
    assert!(!output.is_error);
    agent.end_turn();
    settle().await;
    assert_eq!(todos_view(&host, "s1"), Some((done, 3)));
    agent.start_turn();
    settle().await;
    assert_eq!(todos_view(&host, "s1"), Some((Value::Null, 4)));
    assert_eq!(
        log(&host, "s1").last().map(|(_, t, _)| t.clone()),
        Some("turn/start".to_owned())
    );
}

// C-026: no key without tool-todo; null once loaded; absent again after unload, tool gone.
#[tokio::test(start_paused = true)]
async fn key_lives_with_the_plugin() {
    let host = host();
    host.create_session(SessionHeader::new("s1")).unwrap();
    assert_eq!(host.projections().keys(), Vec::<String>::new());
    assert_eq!(todos_view(&host, "s1"), None);

    let todo = install(&host.as_dyn(), config(true)).unwrap();
    assert!(todo.has_projection());
    assert_eq!(todos_view(&host, "s1"), Some((Value::Null, 0)));
    assert_eq!(host.tools().all_definitions().len(), 1);

    todo.dispose();
    todo.dispose();
    assert_eq!(todos_view(&host, "s1"), None);
    assert_eq!(host.tools().all_definitions(), []);
    let output = host
        .execute("todo_write", json!({"todos": []}), Some(&sid("s1")))
        .await;
    assert_eq!(output.text(), "Error: unknown tool: todo_write");

    // Dropping the handle unloads too, and a reinstall works.
    let again = install(&host.as_dyn(), config(true)).unwrap();
    drop(again);
    assert_eq!(host.projections().keys(), Vec::<String>::new());
}

// A second mount is refused and leaves the first intact.
#[tokio::test(start_paused = true)]
async fn double_install_is_refused() {
    let host = host();
    let first = install(&host.as_dyn(), config(true)).unwrap();
    let second = install(&host.as_dyn(), config(false));
    assert!(matches!(
        second,
        Err(ConfigError::Register(RegisterError::ToolConflict(ref name))) if name == "todo_write"
    ));
    assert_eq!(host.projections().keys(), ["todos"]);
    assert!(
        host.tools().all_definitions()[0]
            .description
            .contains("several at once")
    );
    drop(first);
}

// C-027 through the host: other events do not change the view.
#[tokio::test(start_paused = true)]
async fn unrelated_events_leave_the_view() {
    let host = host();
    let _todo = install(&host.as_dyn(), config(true)).unwrap();
    let agent = host.create_session(SessionHeader::new("s1")).unwrap();
    let x = json!([{"content": "X", "status": "in_progress"}]);
    host.execute("todo_write", json!({ "todos": x }), Some(&sid("s1")))
        .await;
    let session = turnkit_core::Agent::session(agent.as_ref());
    session
        .append("user/message", json!({"text": "hi"}))
        .unwrap();
    session.append("step/start", json!({})).unwrap();
    assert_eq!(todos_view(&host, "s1"), Some((x, 3)));
}

// C-031 (host without a model): two writes in one turn, the last wins; the history is
// coherent. This host logs no `tool/call` / `tool/result` events, so those are not checked.
#[tokio::test(start_paused = true)]
async fn two_writes_in_a_turn_last_wins() {
    let host = host();
    let _todo = install(&host.as_dyn(), config(false)).unwrap();
    let agent = host.create_session(SessionHeader::new("s1")).unwrap();
    host.set_auto_turns(false);
    agent.send_user("fix the bug", None).unwrap();
    agent.start_turn();
    let first = json!([{"content": "read the code", "status": "in_progress"}, {"content": "write the fix", "status": "pending"}]);
    let second = json!([{"content": "read the code", "status": "completed"}, {"content": "write the fix", "status": "in_progress"}]);
    for list in [&first, &second] {
        let output = host
            .execute("todo_write", json!({ "todos": list }), Some(&sid("s1")))
            .await;
        assert!(!output.is_error, "{}", output.text());
    }
    agent.end_turn();
    settle().await;
    let events = log(&host, "s1");
    let writes: Vec<&Value> = events
        .iter()
        .filter(|(_, t, _)| t == "todo/write")
        .map(|(_, _, d)| d)
        .collect();
    assert_eq!(
        writes,
        [&json!({ "todos": first }), &json!({ "todos": second })]
    );
    assert_eq!(todos_view(&host, "s1"), Some((second, 4)));
    let session = host.store().open(&sid("s1")).unwrap();
    assert_eq!(check_history(&session.events()), Ok(()));
}

// An append the host refuses (fault injection) is reported and nothing is logged.
#[tokio::test(start_paused = true)]
async fn append_failure_is_an_error() {
    let host = host();
    let _todo = install(&host.as_dyn(), config(false)).unwrap();
    host.create_session(SessionHeader::new("s1")).unwrap();
    host.faults(&sid("s1")).set_append_fail(true);
    let output = host
        .execute("todo_write", json!({"todos": []}), Some(&sid("s1")))
        .await;
    assert!(output.is_error);
    assert!(output.text().starts_with("Error: "), "{}", output.text());
    assert_eq!(log(&host, "s1"), []);
    assert_eq!(todos_view(&host, "s1"), Some((Value::Null, 0)));
}

#[tokio::test(start_paused = true)]
async fn harness_trait_object_is_enough() {
    let host = host();
    let dyn_host: Arc<dyn Harness> = host.as_dyn();
    let todo = install(&dyn_host, config(false)).unwrap();
    assert!(todo.has_projection());
}
