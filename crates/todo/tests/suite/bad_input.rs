//! Bad input through the whole host pipeline: random JSON arguments never panic, and each
//! call either succeeds with exactly one coherent event or fails with a spec error and
//! appends nothing.

use std::sync::Arc;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};
use turnkit_core::{SessionHeader, SessionId};
use turnkit_testkit::{ManualClock, MemoryHarness};
use turnkit_todo::{TodoConfig, check_history, install};

fn arb_json() -> impl Strategy<Value = Value> {
    turnkit_testkit::strategies::arb_json(
        &["content", "status", "todos"],
        &["pending", "in_progress", "completed", "paused"],
    )
}

fn arb_arguments() -> impl Strategy<Value = Value> {
    let item = (
        prop_oneof![3 => "[ ab]{0,3}".prop_map(Value::from), 1 => arb_json()],
        prop_oneof![
            4 => prop_oneof![Just("pending"), Just("in_progress"), Just("completed")].prop_map(Value::from),
            1 => arb_json()
        ],
    )
        .prop_map(|(content, status)| json!({"content": content, "status": status}));
    prop_oneof![
        1 => arb_json(),
        3 => prop::collection::vec(item, 0..5).prop_map(|items| json!({ "todos": items })),
    ]
}

fn is_spec_error(text: &str) -> bool {
    text.starts_with("Error: invalid arguments: ")
        || text == "Error: invalid todo: `content` must be a non-empty string"
        || text.starts_with("Error: invalid todos: duplicate content \"")
        || text.starts_with("Error: invalid todos: at most one task may be in_progress (got ")
        || text == "Error: todo_write requires an owning agent session"
}

#[test]
fn ten_thousand_random_argument_values() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async {
        let host = MemoryHarness::new(Arc::new(ManualClock::at_default()));
        let config = TodoConfig::from_json(json!({"allowParallelInProgress": false})).unwrap();
        let _todo = install(&host.as_dyn(), config).unwrap();
        host.create_session(SessionHeader::new("s1")).unwrap();
        let session = host.store().open(&SessionId::from("s1")).unwrap();

        let mut runner = TestRunner::new(Config::with_cases(10_000));
        let mut cases = Vec::with_capacity(10_000);
        for _ in 0..10_000 {
            let strategy = (arb_arguments(), prop::bool::weighted(0.9));
            cases.push(strategy.new_tree(&mut runner).unwrap().current());
        }
        let mut successes = 0;
        for (args, as_agent) in cases {
            let before = session.len();
            let caller = as_agent.then(|| SessionId::from("s1"));
            let output = host
                .execute("todo_write", args.clone(), caller.as_ref())
                .await;
            if output.is_error {
                assert!(
                    is_spec_error(&output.text()),
                    "{args} gave {:?}",
                    output.text()
                );
                assert_eq!(session.len(), before, "{args} appended on error");
            } else {
                successes += 1;
                assert_eq!(session.len(), before + 1, "{args}");
                let event = session.events_after(before).remove(0);
                assert_eq!(event.data["todos"], output.value["todos"]);
                assert_eq!(check_history([&event]), Ok(()));
            }
        }
        // The generator must reach the success path often enough to mean something.
        assert!(successes > 1_000, "only {successes} successes");
    });
}
