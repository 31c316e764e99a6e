//! The schedule benchmarks' session log: JSONL event lines built through the domain itself,
//! shared by `benches/schedule.rs` and `benches/replay.rs`.

use serde_json::{Value, json};
use turnkit_schedule::domain::{
    SCHEDULE_CHANGE, ScheduleChange, ScheduleFold, Timestamp, create_after, create_at, create_every,
};

/// `2026-08-05T12:00:00.000Z`.
const T0: i64 = 1_785_931_200_000;

/// One JSONL line as the session stores write it (`seq`, `type`, `time`, `data`).
fn event(seq: usize, r#type: &str, data: &Value) -> String {
    json!({"seq": seq, "type": r#type, "time": "2026-08-05T12:00:00.000Z", "data": data})
        .to_string()
}

/// A valid log built through the domain itself: about 40% creates (after / at / every),
/// 30% dispatches (one-shot and every), 20% deletes and 10% other events, with 200 to 400
/// records active at any time.
pub(crate) fn log_lines(events: usize) -> Vec<String> {
    let mut fold = ScheduleFold::default();
    let mut lines = Vec::with_capacity(events);
    let mut now = T0;
    let mut step = 0usize;
    let push = |lines: &mut Vec<String>, fold: &mut ScheduleFold, change: ScheduleChange| {
        let data = change.to_value();
        if let Err(error) = fold.apply_change(change) {
            panic!("benchmark generator produced an invalid change: {error}");
        }
        let seq = lines.len() + 1;
        lines.push(event(seq, SCHEDULE_CHANGE, &data));
    };
    while lines.len() < events {
        step += 1;
        now += 1_000;
        let active = fold.active_len();
        match step % 10 {
            0 => {
                let seq = lines.len() + 1;
                lines.push(event(seq, "turn/start", &json!({"turn": step})));
            }
            5..=7 if active > 0 => {
                let Some(record) = fold.active().nth(step % active).cloned() else {
                    continue;
                };
                let id = record.id_arc().clone();
                let change = if record.kind().is_one_shot() {
                    ScheduleChange::Dispatch { id }
                } else {
                    let late = (step % 1_000) as i64 * 1_000;
                    match Timestamp::from_millis(record.scheduled_at().millis() + late) {
                        Some(accepted_at) => ScheduleChange::DispatchEvery { id, accepted_at },
                        None => continue,
                    }
                };
                push(&mut lines, &mut fold, change);
            }
            // Deletes keep the active set between 200 and 400 records.
            step_kind if active > 400 || (active > 200 && step_kind >= 8) => {
                let Some(record) = fold.active().nth(step % active) else {
                    continue;
                };
                let id = record.id_arc().clone();
                push(&mut lines, &mut fold, ScheduleChange::Delete { id });
            }
            _ => {
                let id = fold.allocate_id();
                let prompt = format!("reminder {step}: check the deployment logs");
                let at = Timestamp::from_millis(now + 1_800_000)
                    .map(|at| at.to_string())
                    .unwrap_or_default();
                let record = match step % 3 {
                    0 => create_after(&id, &prompt, &json!(60 + step % 600), now),
                    1 => create_every(&id, &prompt, &json!(300 + step % 900), now),
                    _ => create_at(&id, &prompt, &json!(at), now, None),
                };
                match record {
                    Ok(record) => push(&mut lines, &mut fold, ScheduleChange::Create(record)),
                    Err(error) => panic!("benchmark generator: {error}"),
                }
            }
        }
    }
    lines
}
