//! `[plugin]` cases of cases-schedule.md (section L) and the config shape.

use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_core::{Agent, ConfigError, SessionId};
use turnkit_schedule::{PLUGIN_NAME, ScheduleConfig, install};

use super::fixture::{Host, create_after, settled};

fn tool_names(h: &Host, agent: &dyn Agent) -> Vec<String> {
    h.host
        .tools()
        .definitions(Some(&agent.scope_chain()))
        .into_iter()
        .map(|d| d.name)
        .collect()
}

#[test]
fn case_98_plugin_name_and_config() {
    assert_eq!(PLUGIN_NAME, "schedule");
    let config: ScheduleConfig = turnkit_core::decode_config(PLUGIN_NAME, json!({})).unwrap();
    assert_eq!(config, ScheduleConfig::default());
    let bad = turnkit_core::decode_config::<ScheduleConfig>(PLUGIN_NAME, json!({"pause": true}));
    assert!(
        matches!(bad, Err(ConfigError::Invalid(message)) if message.starts_with("schedule: unknown field `pause`"))
    );
}

#[test]
fn install_outside_a_runtime_is_a_config_error() {
    let h = Host::new();
    let error = install(&h.dyn_host(), ScheduleConfig::default()).unwrap_err();
    assert_eq!(
        error,
        ConfigError::Invalid("schedule: install must run inside a tokio runtime".to_owned())
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn case_99_future_roots_only_and_unwinds_on_disposal() {
    let h = Host::new();
    let existing = h.session("schedule-existing");
    let installed = h.install();
    assert!(tool_names(&h, existing.as_ref()).is_empty());
    assert!(h.host.tools().definitions(None).is_empty());
    let root = h.session("schedule-root");
    assert_eq!(
        tool_names(&h, root.as_ref()),
        ["schedule_create", "schedule_list", "schedule_delete"]
    );
    let out = h
        .call(
            "schedule-root",
            "schedule_create",
            json!({"prompt":"future reminder","after_seconds":3600}),
        )
        .await;
    assert!(!out.is_error);
    assert_eq!(out.value["id"], "schedule-1");
    assert_eq!(out.value["deliveryMode"], "session-local");
    let existing_call = h
        .call("schedule-existing", "schedule_list", json!({}))
        .await;
    assert_eq!(existing_call.text(), "Error: unknown tool: schedule_list");
    assert_eq!(installed.adopted_agents(), 1);

    // A disposed root loses its tools.
    h.host
        .dispose_agent(&SessionId::from("schedule-root"))
        .await;
    assert!(tool_names(&h, root.as_ref()).is_empty());
    assert_eq!(installed.adopted_agents(), 0);

    // Plugin disposal unwinds the remaining roots and stops adopting new ones.
    let second = h.session("schedule-second");
    assert_eq!(tool_names(&h, second.as_ref()).len(), 3);
    // One delivery task per adopted root, tracked by the plugin; none outlives disposal.
    assert_eq!(installed.running_tasks(), 1);
    installed.dispose().await;
    assert_eq!(installed.running_tasks(), 0);
    assert!(tool_names(&h, second.as_ref()).is_empty());
    let late = h.session("schedule-late");
    assert!(tool_names(&h, late.as_ref()).is_empty());
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn dropping_installed_unregisters_everything() {
    let h = Host::new();
    let installed = h.install();
    let root = h.session("s1");
    assert_eq!(tool_names(&h, root.as_ref()).len(), 3);
    drop(installed);
    assert!(tool_names(&h, root.as_ref()).is_empty());
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn start_always_preflights_and_sessions_without_schedule_events_skip_idle() {
    let h = Host::new();
    let _installed = h.install();
    let agent = h.session("s1");
    settled().await;
    assert_eq!(h.flushes("s1"), 1);
    agent.send_user("hello", None).unwrap();
    settled().await;
    assert_eq!(agent.turns(), 1);
    // No schedule/change event: the idle transition does not preflight.
    assert_eq!(h.flushes("s1"), 1);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn case_101_idle_status_redrives_when_schedule_events_exist() {
    let h = Host::new();
    let _installed = h.install();
    h.seed(
        "s1",
        &[create_after(
            "schedule-1",
            "later",
            3600,
            "2026-08-05T13:00:00.000Z",
        )],
    );
    let agent = h.resume("s1");
    settled().await;
    assert_eq!(h.flushes("s1"), 1);
    assert_eq!(h.clock.pending_sleeps(), 1);
    agent.start_turn();
    agent.end_turn();
    settled().await;
    assert_eq!(h.flushes("s1"), 2);
    // The timer was re-derived: still exactly one pending.
    assert_eq!(h.clock.pending_sleeps(), 1);
    h.advance_secs(3600).await;
    assert_eq!(h.followups().len(), 1);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn fork_inherits_no_reminders_and_reuses_ids() {
    let h = Host::new();
    let _installed = h.install();
    h.session("parent");
    h.call(
        "parent",
        "schedule_create",
        json!({"prompt":"parent only","after_seconds":60}),
    )
    .await;
    let child = h
        .host
        .fork_session(SessionId::from("child"), &SessionId::from("parent"))
        .unwrap();
    settled().await;
    assert_eq!(
        h.call("child", "schedule_list", json!({})).await.value,
        json!([])
    );
    let created = h
        .call(
            "child",
            "schedule_create",
            json!({"prompt":"mine","after_seconds":120}),
        )
        .await;
    assert_eq!(created.value["id"], "schedule-1");
    h.advance_secs(60).await;
    // Only the parent delivers its reminder; the child's fires later.
    assert_eq!(h.followups().len(), 1);
    h.advance_secs(60).await;
    assert_eq!(h.followups().len(), 2);
    assert_eq!(child.turns(), 1);
}
