//! The plugin owns its terminals' tasks: [`turnkit_terminal::Installed::shutdown`] ends a
//! stop's grace at once (the grace runs on the host clock, which a manual clock never
//! moves here) and joins every task.

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::{Host, LIMIT, settle_count, unique};

#[tokio::test]
async fn shutdown_ends_a_stopped_terminals_grace_and_joins_its_tasks() {
    let clock = turnkit_testkit::ManualClock::at_default();
    let host = Host::with_clock(&json!({"killGraceMs": 300}), Arc::new(clock));
    host.session("s1");
    assert_eq!(host.terminal.running_tasks(), 0);
    let marker = unique("shutdown");
    // A program that ignores the stop's SIGHUP and SIGTERM: only the grace's SIGKILL ends it.
    let started = host
        .call(
            Some("s1"),
            "terminal_start",
            json!({"command": format!("trap '' HUP TERM; exec -a {marker} sleep 1000")}),
        )
        .await;
    assert_eq!(started.text(), "started terminal term-1");
    assert_eq!(settle_count(&marker, 1).await, 1);
    // The reader and the supervisor.
    assert_eq!(host.terminal.running_tasks(), 2);
    host.terminal.dispose();
    // Plus the grace timer, which the manual clock never ends.
    assert_eq!(host.terminal.running_tasks(), 3);
    assert_eq!(settle_count(&marker, 1).await, 1);
    tokio::time::timeout(LIMIT, host.terminal.shutdown())
        .await
        .expect("the shutdown finished without waiting out the grace");
    assert_eq!(host.terminal.running_tasks(), 0);
    assert_eq!(settle_count(&marker, 0).await, 0);
}
