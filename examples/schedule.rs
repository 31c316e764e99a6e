//! Durable reminders alone, on a manual clock: create one of each kind, list them, delete
//! one, move time forward, and watch the reminders arrive as woken turns. Exits non-zero
//! when a step does not answer as shown.
#![expect(clippy::print_stdout, reason = "an example prints what it does")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::ensure;
use serde_json::json;
use turnkit_core::{SessionHeader, SessionId};
use turnkit_testkit::{HostRecord, ManualClock, MemoryHarness};

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() -> anyhow::Result<()> {
    let clock = ManualClock::at_default();
    let host = MemoryHarness::new(Arc::new(clock.clone()));
    let claimed = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = claimed.clone();
    host.set_recorder(Arc::new(move |record: HostRecord| {
        if let HostRecord::Claimed { source, text, .. } = record {
            println!(
                "  [woken turn claims {source}]\n    {}",
                text.replace('\n', "\n    ")
            );
            if let Ok(mut claimed) = sink.lock() {
                claimed.push(text);
            }
        }
    }));
    let _schedule = turnkit_schedule::install(&host.as_dyn(), Default::default())?;
    let _agent = host.create_session(SessionHeader::new("s1"))?;
    turnkit_testkit::settle().await;
    let s1 = SessionId::from("s1");
    let call = async |tool: &str, args: serde_json::Value| {
        let output = host.execute(tool, args.clone(), Some(&s1)).await;
        println!("{tool} {args}\n  → {}", output.text());
        output.value
    };
    call(
        "schedule_create",
        json!({"prompt": "check the deploy", "after_seconds": 60}),
    )
    .await;
    call(
        "schedule_create",
        json!({"prompt": "stand-up", "at": "2026-08-05T14:08:00+02:00"}),
    )
    .await;
    call(
        "schedule_create",
        json!({"prompt": "check metrics", "every_seconds": 300}),
    )
    .await;
    let refused = call(
        "schedule_create",
        json!({"prompt": "too often", "every_seconds": 60}),
    )
    .await;
    ensure!(
        refused["code"] == "frequency_too_high",
        "a 60 s interval should be refused"
    );
    let deleted = call("schedule_delete", json!({"id": "schedule-2"})).await;
    ensure!(deleted == json!({"id": "schedule-2", "deleted": true}));
    let ids = |list: &serde_json::Value| -> Vec<String> {
        list.as_array()
            .map(|items| {
                items
                    .iter()
                    .map(|item| item["id"].as_str().unwrap_or_default().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let listed = call("schedule_list", json!({})).await;
    ensure!(
        ids(&listed) == ["schedule-1", "schedule-3"],
        "schedule_list"
    );
    // Let the delivery runtime arm its timer for the new reminders before time moves.
    turnkit_testkit::settle().await;
    println!("advancing the clock by 10 minutes…");
    clock.advance(Duration::from_secs(600)).await;
    let listed = call("schedule_list", json!({})).await;
    ensure!(
        ids(&listed) == ["schedule-3"],
        "only the every-reminder stays"
    );
    ensure!(
        listed[0]["scheduledAt"] == "2026-08-05T12:15:00.000Z",
        "the every-reminder should be due next at 12:15"
    );
    let claimed = claimed.lock().map(|c| c.clone()).unwrap_or_default();
    let firsts: Vec<&str> = claimed
        .iter()
        .map(|text| text.lines().next().unwrap_or_default())
        .collect();
    ensure!(
        firsts
            == [
                "[SCHEDULE REMINDER]",
                "[SCHEDULE REMINDER BATCH]",
                "[SCHEDULE REMINDER BATCH]"
            ],
        "three reminder turns should have run: {firsts:?}"
    );
    ensure!(claimed[0].ends_with("reminder_prompt_json: \"check the deploy\""));
    host.dispose_all().await;
    Ok(())
}
