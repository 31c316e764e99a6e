//! `[tool]` cases of cases-schedule.md (sections C–I): the tools on a host without a delivery
//! runtime, so flush and notify counts are the tools' own.

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use turnkit_core::{Agent, SessionHeader, Tool, ToolCall};
use turnkit_schedule::ScheduleTools;
use turnkit_schedule::tools::{
    CREATE_DESCRIPTION, create_output_schema, definitions, present_call,
};

use super::fixture::{ERR_CORRUPT, ERR_INTERNAL, ERR_UNCERTAIN, ToolsOnly, settled};

const ERR_SELECTOR: &str =
    "schedule_create accepts exactly one of after_seconds, at, or every_seconds.";
const ERR_PROMPT: &str = "prompt must be non-empty after trimming.";
const ERR_DELETE_ID: &str = "schedule_delete id must be non-empty without surrounding whitespace.";
const ERR_RANGE: &str =
    "The scheduled time must be representable as a four-digit-year RFC 3339 UTC instant.";

fn code(code: &str, message: &str) -> Value {
    json!({"code": code, "message": message})
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn case_49_registration_shape_and_definitions() {
    let t = ToolsOnly::new();
    let names: Vec<String> = t
        .host
        .host
        .tools()
        .definitions(Some(&t.agent.scope_chain()))
        .into_iter()
        .map(|d| d.name)
        .collect();
    assert_eq!(
        names,
        ["schedule_create", "schedule_list", "schedule_delete"]
    );
    // Not visible to callers without this agent's scope.
    assert!(t.host.host.tools().definitions(None).is_empty());
    let [create, list, delete] = definitions();
    assert_eq!(create.description, CREATE_DESCRIPTION);
    assert_eq!(list.input_schema, json!({"type":"object","properties":{}}));
    assert_eq!(
        delete.input_schema,
        json!({"type":"object","properties":{"id":{"type":"string","description":"Exact session-local schedule id."}},"required":["id"]})
    );
    let branches = create_output_schema()["oneOf"].as_array().unwrap().clone();
    let uncertain = branches
        .iter()
        .find(|b| b["properties"]["code"]["enum"][0] == "persistence_uncertain")
        .unwrap();
    assert_eq!(
        uncertain["properties"]["operation"]["enum"],
        json!(["create", "list", "delete"])
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn case_49_unregister_twice_removes_all_three() {
    let t = ToolsOnly::new();
    let other = t.host.session("s2");
    let tools = ScheduleTools::new(
        other.as_dyn(),
        Arc::new(t.host.clock.clone()),
        Arc::new(|| {}),
    );
    let registration = tools.register(t.host.host.as_ref()).unwrap();
    // A second registration for the same agent conflicts and changes nothing.
    assert_eq!(
        tools
            .register(t.host.host.as_ref())
            .unwrap_err()
            .to_string(),
        "tool \"schedule_create\" is already registered"
    );
    assert_eq!(
        t.host
            .host
            .tools()
            .definitions(Some(&other.scope_chain()))
            .len(),
        3
    );
    registration.unregister();
    registration.unregister();
    assert!(
        t.host
            .host
            .tools()
            .definitions(Some(&other.scope_chain()))
            .is_empty()
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn case_50_registration_rolls_back_on_conflict() {
    let t = ToolsOnly::new();
    let other = t.host.session("s2");
    // Someone else's `schedule_list` in s2's scope.
    let foreign = ScheduleTools::new(
        other.as_dyn(),
        Arc::new(t.host.clock.clone()),
        Arc::new(|| {}),
    );
    let list_only = foreign.tools().into_iter().nth(1).unwrap();
    let _foreign = t
        .host
        .host
        .tools()
        .register(
            list_only,
            turnkit_core::RegistrationScope::Scoped(turnkit_core::ScopeKey::from(other.id())),
        )
        .unwrap();
    let mine = ScheduleTools::new(
        other.as_dyn(),
        Arc::new(t.host.clock.clone()),
        Arc::new(|| {}),
    );
    assert_eq!(
        mine.register(t.host.host.as_ref()).unwrap_err().to_string(),
        "tool \"schedule_list\" is already registered"
    );
    let names: Vec<String> = t
        .host
        .host
        .tools()
        .definitions(Some(&other.scope_chain()))
        .into_iter()
        .map(|d| d.name)
        .collect();
    assert_eq!(names, ["schedule_list"]);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn case_51_create_list_overdue_delete_not_found_with_counts() {
    let t = ToolsOnly::new();
    let out = t
        .call(
            "schedule_create",
            json!({"prompt":"  check logs  ","after_seconds":30}),
        )
        .await;
    // The rendered content is the compact JSON of the value (§9.3).
    assert_eq!(out.text(), out.value.to_string());
    assert_eq!(
        out.value,
        json!({"id":"schedule-1","kind":"after","prompt":"check logs","afterSeconds":30,"scheduledAt":"2026-08-05T12:00:30.000Z","state":"scheduled","deliveryMode":"session-local"})
    );
    assert_eq!((t.flushes(), t.notifies()), (2, 2));
    t.host.set_clock("2026-08-05T12:00:31.000Z");
    let listed = t.call("schedule_list", json!({})).await.value;
    assert_eq!(listed[0]["state"], "overdue");
    assert_eq!(listed[0]["id"], "schedule-1");
    assert_eq!((t.flushes(), t.notifies()), (3, 3));
    let deleted = t
        .call("schedule_delete", json!({"id":"schedule-1"}))
        .await
        .value;
    assert_eq!(deleted, json!({"id":"schedule-1","deleted":true}));
    assert_eq!((t.flushes(), t.notifies()), (5, 5));
    let again = t
        .call("schedule_delete", json!({"id":"schedule-1"}))
        .await
        .value;
    assert_eq!(
        again,
        json!({"id":"schedule-1","deleted":false,"code":"schedule_not_found"})
    );
    assert_eq!(t.flushes(), 6);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn case_19_ids_are_never_reused() {
    let t = ToolsOnly::new();
    t.create(json!({"prompt":"  check logs  ","after_seconds":30}))
        .await;
    t.call("schedule_delete", json!({"id":"schedule-1"})).await;
    let next = t.create(json!({"prompt":"next","after_seconds":1})).await;
    assert_eq!(next["id"], "schedule-2");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn case_25_selector_and_prompt_rules_before_any_io() {
    let t = ToolsOnly::new();
    let cases = [
        (
            json!({"prompt":"x"}),
            code("invalid_selector", ERR_SELECTOR),
        ),
        (
            json!({"prompt":"x","after_seconds":1,"every_seconds":300}),
            code("invalid_selector", ERR_SELECTOR),
        ),
        (
            json!({"prompt":"x","after_seconds":1,"time_zone":"UTC"}),
            code("invalid_selector", ERR_SELECTOR),
        ),
        (
            json!({"prompt":"x","cron":"*/5 * * * *","time_zone":"UTC"}),
            code("invalid_selector", ERR_SELECTOR),
        ),
        (
            json!({"prompt":" ","after_seconds":1,"at":"x"}),
            code("invalid_selector", ERR_SELECTOR),
        ),
        (
            json!({"prompt":" ","after_seconds":0}),
            code("invalid_prompt", ERR_PROMPT),
        ),
        (
            json!({"prompt":"x","every_seconds":299}),
            code("frequency_too_high", "every_seconds must be at least 300."),
        ),
    ];
    for (args, expected) in cases {
        let out = t.call("schedule_create", args.clone()).await;
        assert!(!out.is_error, "{args}");
        assert_eq!(out.value, expected, "{args}");
    }
    assert_eq!(t.flushes(), 0);
    assert_eq!(t.notifies(), 0);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn case_26_range_error_only_after_preflight() {
    let t = ToolsOnly::new();
    let out = t
        .call(
            "schedule_create",
            json!({"prompt":"far future","after_seconds":9007199254740991_i64}),
        )
        .await;
    assert_eq!(out.value, code("time_out_of_range", ERR_RANGE));
    assert_eq!(t.flushes(), 1);
    assert!(t.changes().is_empty());
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn case_27_clock_failure_is_internal_error() {
    let t = ToolsOnly::new();
    t.host.clock.fail_next("clock exploded");
    let out = t
        .call(
            "schedule_create",
            json!({"prompt":"clock","after_seconds":1}),
        )
        .await;
    assert_eq!(out.value, code("internal_error", ERR_INTERNAL));
    assert!(t.changes().is_empty());
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn case_30_every_through_the_tool() {
    let t = ToolsOnly::new();
    let created = t
        .create(json!({"prompt":"  check metrics  ","every_seconds":300}))
        .await;
    assert_eq!(
        created,
        json!({"id":"schedule-1","kind":"every","prompt":"check metrics","everySeconds":300,"scheduledAt":"2026-08-05T12:05:00.000Z","state":"scheduled","deliveryMode":"session-local"})
    );
    t.host.set_clock("2026-08-05T12:06:00.000Z");
    let listed = t.call("schedule_list", json!({})).await.value;
    assert_eq!(
        listed,
        json!([{"id":"schedule-1","kind":"every","prompt":"check metrics","everySeconds":300,"scheduledAt":"2026-08-05T12:05:00.000Z","state":"overdue","deliveryMode":"session-local"}])
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn case_37_and_46_at_creates_store_utc_only() {
    let t = ToolsOnly::new();
    let created = t
        .create(json!({"prompt":"join meeting","at":"2026-08-06T09:00:00+08:00"}))
        .await;
    assert_eq!(
        created,
        json!({"id":"schedule-1","kind":"at","prompt":"join meeting","scheduledAt":"2026-08-06T01:00:00.000Z","state":"scheduled","deliveryMode":"session-local"})
    );
    let local = t
        .create(json!({"prompt":"local meeting","at":{"date":"2026-08-07","time":"09:30:00","time_zone":"Asia/Shanghai"}}))
        .await;
    assert_eq!(local["id"], "schedule-2");
    assert_eq!(local["scheduledAt"], "2026-08-07T01:30:00.000Z");
    let ids: Vec<Value> = t
        .call("schedule_list", json!({}))
        .await
        .value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["id"].clone())
        .collect();
    assert_eq!(ids, [json!("schedule-1"), json!("schedule-2")]);
    assert_eq!(
        t.changes(),
        [
            json!({"version":1,"operation":"create","schedule":{"id":"schedule-1","kind":"at","prompt":"join meeting","scheduledAt":"2026-08-06T01:00:00.000Z"}}),
            json!({"version":1,"operation":"create","schedule":{"id":"schedule-2","kind":"at","prompt":"local meeting","scheduledAt":"2026-08-07T01:30:00.000Z"}}),
        ]
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn case_38_at_errors_arrive_after_preflight() {
    let t = ToolsOnly::new();
    let cases = [
        (
            json!({"prompt":"bad instant","at":"2026-08-06T09:00:00"}),
            code(
                "invalid_rule",
                "at must use YYYY-MM-DDTHH:mm:ss with optional 1-3 digit fractional seconds and an explicit Z or numeric offset.",
            ),
        ),
        (
            json!({"prompt":"bad zone","at":{"date":"2026-08-06","time":"09:00:00","time_zone":"CST"}}),
            code(
                "invalid_time_zone",
                "time_zone must be UTC or a valid IANA Area/Location name.",
            ),
        ),
        (
            json!({"prompt":"past","at":"2026-08-05T12:00:00Z"}),
            code(
                "not_future",
                "The scheduled time must be strictly in the future.",
            ),
        ),
    ];
    for (args, expected) in cases {
        assert_eq!(t.call("schedule_create", args).await.value, expected);
    }
    assert_eq!(t.flushes(), 3);
    assert!(t.changes().is_empty());
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn case_47_session_zone_fallback() {
    let t = ToolsOnly::with_header(SessionHeader::new("s1").with_time_zone("America/New_York"));
    let created = t
        .create(json!({"prompt":"x","at":{"date":"2026-08-06","time":"09:00:00"}}))
        .await;
    assert_eq!(created["scheduledAt"], "2026-08-06T13:00:00.000Z");

    // Client zone equal to the session zone: still accepted.
    t.agent
        .send_user("hi", Some("America/New_York".to_owned()))
        .unwrap();
    settled().await;
    let created = t
        .create(json!({"prompt":"y","at":{"date":"2026-08-06","time":"10:00:00"}}))
        .await;
    assert_eq!(created["scheduledAt"], "2026-08-06T14:00:00.000Z");

    // A different client zone requires confirmation; nothing appended.
    t.agent
        .send_user("hi", Some("Europe/Berlin".to_owned()))
        .unwrap();
    settled().await;
    let before = t.changes().len();
    let out = t
        .call(
            "schedule_create",
            json!({"prompt":"x","at":{"date":"2026-08-06","time":"09:00:00"}}),
        )
        .await;
    assert_eq!(
        out.value,
        json!({"code":"timezone_confirmation_required","message":"Confirm the time zone: pass time_zone explicitly.","sessionTimeZone":"America/New_York","clientTimeZones":["Europe/Berlin"]})
    );
    assert_eq!(t.changes().len(), before);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn case_47_no_session_zone_and_argument_errors() {
    let t = ToolsOnly::new();
    let out = t
        .call(
            "schedule_create",
            json!({"prompt":"x","at":{"date":"2026-08-06","time":"09:00:00"}}),
        )
        .await;
    assert_eq!(
        out.value,
        json!({"code":"timezone_confirmation_required","message":"Confirm the time zone: pass time_zone explicitly.","sessionTimeZone":"unavailable","clientTimeZones":[]})
    );
    assert!(t.changes().is_empty());
    let flushes = t.flushes();
    let extra = t
        .call(
            "schedule_create",
            json!({"prompt":"x","at":{"date":"2026-08-06","time":"09:00:00","time_zone":"UTC","extra":1}}),
        )
        .await;
    assert!(extra.is_error);
    assert!(
        extra.text().starts_with("Error: invalid arguments: "),
        "{}",
        extra.text()
    );
    let number = t
        .call("schedule_create", json!({"prompt":"x","at":42}))
        .await;
    assert_eq!(
        number.text(),
        "Error: invalid arguments: \"at\" must be a string or an object"
    );
    assert!(number.is_error);
    assert_eq!(t.flushes(), flushes);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn case_53_delete_id_validation_before_persistence() {
    let t = ToolsOnly::new();
    for id in ["", " schedule-1", "schedule-1 "] {
        let out = t.call("schedule_delete", json!({ "id": id })).await;
        assert_eq!(out.value, code("invalid_rule", ERR_DELETE_ID));
    }
    assert_eq!(t.flushes(), 0);
    let missing = t.call("schedule_delete", json!({})).await;
    assert!(missing.is_error);
    assert_eq!(
        missing.text(),
        "Error: invalid arguments: missing required property \"id\""
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn case_54_delete_unknown_ids() {
    let t = ToolsOnly::new();
    let out = t.call("schedule_delete", json!({"id":"schedule-99"})).await;
    assert_eq!(
        out.value,
        json!({"id":"schedule-99","deleted":false,"code":"schedule_not_found"})
    );
    assert_eq!(t.flushes(), 1);
    assert!(t.changes().is_empty());
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn case_57_prompt_trimming_uses_js_rules() {
    let t = ToolsOnly::new();
    for prompt in ["\u{3000}\t\n", "\u{FEFF}"] {
        let out = t
            .call(
                "schedule_create",
                json!({"prompt":prompt,"after_seconds":1}),
            )
            .await;
        assert_eq!(out.value, code("invalid_prompt", ERR_PROMPT));
    }
    let nel = t
        .create(json!({"prompt":"\u{0085}","after_seconds":1}))
        .await;
    assert_eq!(nel["prompt"], "\u{0085}");
    let zwsp = t
        .create(json!({"prompt":"\u{200B}x","after_seconds":1}))
        .await;
    assert_eq!(zwsp["prompt"], "\u{200B}x");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn case_58_cross_owner_execution_refused() {
    let t = ToolsOnly::new();
    let other = t.host.session("s2").as_dyn();
    let tools = ScheduleTools::new(
        t.agent.as_dyn(),
        Arc::new(t.host.clock.clone()),
        Arc::new(|| {}),
    );
    let [create, list, delete]: [Arc<dyn Tool>; 3] = tools.tools().try_into().ok().unwrap();
    let call = |arguments: Value| ToolCall {
        caller: Some(other.clone()),
        arguments,
        cancel: CancellationToken::new(),
        progress: turnkit_core::Progress::default(),
    };
    let internal = code("internal_error", ERR_INTERNAL);
    let out = create
        .call(call(json!({"prompt":"x","after_seconds":1})))
        .await
        .unwrap();
    assert_eq!(out.value, internal);
    assert_eq!(list.call(call(json!({}))).await.unwrap().value, internal);
    assert_eq!(
        delete
            .call(call(json!({"id":"schedule-1"})))
            .await
            .unwrap()
            .value,
        internal
    );
    assert_eq!(
        delete.call(call(json!({"id":""}))).await.unwrap().value,
        code("invalid_rule", ERR_DELETE_ID)
    );
    // No caller at all is not the owner either.
    let anonymous = ToolCall {
        caller: None,
        arguments: json!({}),
        cancel: CancellationToken::new(),
        progress: turnkit_core::Progress::default(),
    };
    assert_eq!(list.call(anonymous).await.unwrap().value, internal);
    assert_eq!(t.flushes(), 0);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn case_59_missing_persistence_is_uncertainty() {
    let t = ToolsOnly::new();
    t.faults().set_flush_fail(true);
    let out = t.call("schedule_list", json!({})).await;
    assert_eq!(
        out.value,
        json!({"code":"persistence_uncertain","message":ERR_UNCERTAIN,"operation":"list"})
    );
    assert!(!out.is_error);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn case_61_create_post_barrier_rejection_reports_the_id() {
    let t = ToolsOnly::new();
    t.faults().script_flushes([true, false, true]);
    let out = t
        .call(
            "schedule_create",
            json!({"prompt":"persist me","after_seconds":10}),
        )
        .await;
    assert_eq!(
        out.value,
        json!({"code":"persistence_uncertain","message":ERR_UNCERTAIN,"operation":"create","id":"schedule-1"})
    );
    assert_eq!(t.notifies(), 1);
    let listed = t.call("schedule_list", json!({})).await.value;
    assert_eq!(listed[0]["id"], "schedule-1");
    assert_eq!(t.notifies(), 2);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn case_62_preflight_rejection_on_create_and_delete() {
    let t = ToolsOnly::new();
    t.faults().script_flushes([false]);
    let out = t
        .call("schedule_create", json!({"prompt":"x","after_seconds":10}))
        .await;
    assert_eq!(
        out.value,
        json!({"code":"persistence_uncertain","message":ERR_UNCERTAIN,"operation":"create"})
    );
    assert!(t.changes().is_empty());
    t.create(json!({"prompt":"x","after_seconds":10})).await;
    t.faults().script_flushes([false]);
    let out = t.call("schedule_delete", json!({"id":"schedule-1"})).await;
    assert_eq!(
        out.value,
        json!({"code":"persistence_uncertain","message":ERR_UNCERTAIN,"operation":"delete","id":"schedule-1"})
    );
    assert_eq!(t.changes().last().unwrap()["operation"], "create");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn case_63_delete_post_barrier_rejection_then_list_clarifies() {
    let t = ToolsOnly::new();
    t.create(json!({"prompt":"delete me","after_seconds":10}))
        .await;
    t.faults().script_flushes([true, false, true]);
    let out = t.call("schedule_delete", json!({"id":"schedule-1"})).await;
    assert_eq!(
        out.value,
        json!({"code":"persistence_uncertain","message":ERR_UNCERTAIN,"operation":"delete","id":"schedule-1"})
    );
    assert_eq!(t.call("schedule_list", json!({})).await.value, json!([]));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn case_65_corrupt_log_masks_input_errors() {
    let t = ToolsOnly::new();
    let session = t.agent.session();
    session
        .append(
            "schedule/change",
            json!({"version":9,"operation":"delete","id":"schedule-1"}),
        )
        .unwrap();
    let corrupt = code("corrupt_schedule_log", ERR_CORRUPT);
    for (tool, args) in [
        ("schedule_create", json!({"prompt":"x","after_seconds":1})),
        ("schedule_delete", json!({"id":"schedule-1"})),
        ("schedule_list", json!({})),
        ("schedule_create", json!({"prompt":"x","at":"nonsense"})),
    ] {
        assert_eq!(t.call(tool, args).await.value, corrupt, "{tool}");
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn case_66_append_failures_are_internal_errors() {
    let t = ToolsOnly::new();
    t.faults().set_append_fail(true);
    let out = t
        .call("schedule_create", json!({"prompt":"x","after_seconds":1}))
        .await;
    assert_eq!(out.value, code("internal_error", ERR_INTERNAL));
    t.faults().set_append_fail(false);
    t.create(json!({"prompt":"x","after_seconds":1})).await;
    t.faults().set_append_fail(true);
    let out = t.call("schedule_delete", json!({"id":"schedule-1"})).await;
    assert_eq!(out.value, code("internal_error", ERR_INTERNAL));
    t.faults().set_append_fail(false);
    assert_eq!(t.changes().len(), 1);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn case_67_fifo_serializes_across_both_barriers() {
    let t = Arc::new(ToolsOnly::new());
    let faults = t.faults();
    faults.hold_flushes(true);
    faults.script_flushes([true, false, true]);
    let creator = {
        let t = t.clone();
        tokio::spawn(async move {
            t.call(
                "schedule_create",
                json!({"prompt":"persist me","after_seconds":10}),
            )
            .await
        })
    };
    settled().await;
    assert_eq!(t.flushes(), 1);
    let lister = {
        let t = t.clone();
        tokio::spawn(async move { t.call("schedule_list", json!({})).await })
    };
    settled().await;
    assert_eq!(t.flushes(), 1);
    faults.hold_flushes(false);
    let created = creator.await.unwrap();
    let listed = lister.await.unwrap();
    assert_eq!(
        created.value,
        json!({"code":"persistence_uncertain","message":ERR_UNCERTAIN,"operation":"create","id":"schedule-1"})
    );
    assert_eq!(listed.value[0]["prompt"], "persist me");
    assert_eq!(t.flushes(), 3);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn case_69_create_cancelled_during_preflight() {
    let t = Arc::new(ToolsOnly::new());
    let faults = t.faults();
    faults.hold_flushes(true);
    let cancel = CancellationToken::new();
    let call = {
        let t = t.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            t.host
                .host
                .execute_with_cancel(
                    "schedule_create",
                    json!({"prompt":"x","after_seconds":10}),
                    Some(&"s1".into()),
                    cancel,
                )
                .await
        })
    };
    settled().await;
    cancel.cancel();
    faults.hold_flushes(false);
    let out = call.await.unwrap();
    assert!(out.is_error);
    assert_eq!(out.text(), "Error: This operation was aborted");
    assert_eq!(t.flushes(), 1);
    assert!(t.changes().is_empty());
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn case_70_delete_cancelled_during_preflight() {
    let t = Arc::new(ToolsOnly::new());
    t.create(json!({"prompt":"x","after_seconds":10})).await;
    assert_eq!(t.flushes(), 2);
    let faults = t.faults();
    faults.hold_flushes(true);
    let cancel = CancellationToken::new();
    let call = {
        let t = t.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            t.host
                .host
                .execute_with_cancel(
                    "schedule_delete",
                    json!({"id":"schedule-1"}),
                    Some(&"s1".into()),
                    cancel,
                )
                .await
        })
    };
    settled().await;
    assert_eq!(t.flushes(), 3);
    cancel.cancel();
    faults.hold_flushes(false);
    let out = call.await.unwrap();
    assert_eq!(out.text(), "Error: This operation was aborted");
    assert_eq!(t.flushes(), 3);
    assert_eq!(t.changes().len(), 1);
    let listed = t.call("schedule_list", json!({})).await.value;
    assert_eq!(listed[0]["id"], "schedule-1");
}

#[test]
fn case_49_present_call_cards() {
    assert_eq!(
        present_call("schedule_create", &json!({"prompt":"x","after_seconds":1})),
        Some(json!({"card":"generic","title":"Create reminder","kind":"other","rawInput":"x"}))
    );
    assert_eq!(
        present_call("schedule_list", &json!({})),
        Some(json!({"card":"generic","title":"List reminders","kind":"read"}))
    );
    assert_eq!(
        present_call("schedule_delete", &json!({"id":"schedule-1"})),
        Some(
            json!({"card":"generic","title":"Delete reminder","kind":"other","rawInput":"schedule-1"})
        )
    );
    assert_eq!(present_call("todo_write", &json!({})), None);
}

/// The three tools present the §9.8 cards themselves (`Tool::present_call`).
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn case_49_the_tools_present_their_call_cards() {
    let t = ToolsOnly::new();
    let chain = t.agent.scope_chain();
    let cards: Vec<Option<Value>> = [
        ("schedule_create", json!({"prompt":"x","after_seconds":1})),
        ("schedule_list", json!({})),
        ("schedule_delete", json!({"id":"schedule-1"})),
    ]
    .into_iter()
    .map(|(name, args)| {
        let tool = t.host.host.tools().find(name, Some(&chain))?;
        tool.present_call(&args)
    })
    .collect();
    assert_eq!(
        cards,
        [
            Some(json!({"card":"generic","title":"Create reminder","kind":"other","rawInput":"x"})),
            Some(json!({"card":"generic","title":"List reminders","kind":"read"})),
            Some(
                json!({"card":"generic","title":"Delete reminder","kind":"other","rawInput":"schedule-1"})
            ),
        ]
    );
}
