//! Domain benchmark of harness-schedule, included by `benches/schedule.rs`:
//! decode + fold of a 1,000,000-event JSONL session log (mixed creates, deletes, one-shot
//! and every dispatches, plus other event types) against plain `serde_json` parsing of the
//! same lines into `serde_json::Value`. The same-run ratio (plain time / decode+fold time,
//! target ≥ 0.5) is printed to stderr.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use harness_core::SessionEvent;
use harness_schedule::domain::{
    SCHEDULE_CHANGE, ScheduleChange, ScheduleFold, Timestamp, create_after, create_at, create_every,
};
use serde_json::{Value, json};

const EVENTS: usize = 1_000_000;
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
fn log_lines() -> Vec<String> {
    let mut fold = ScheduleFold::default();
    let mut lines = Vec::with_capacity(EVENTS);
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
    while lines.len() < EVENTS {
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

fn plain_parse(lines: &[String]) -> usize {
    let mut objects = 0;
    for line in lines {
        let value: Value = serde_json::from_str(line).unwrap_or_default();
        objects += usize::from(value.is_object());
    }
    objects
}

fn decode_and_fold(lines: &[String]) -> ScheduleFold {
    let mut fold = ScheduleFold::default();
    for line in lines {
        match serde_json::from_str::<SessionEvent>(line) {
            Ok(event) => {
                if let Err(error) = fold.apply(&event) {
                    panic!("benchmark log does not fold: {error}");
                }
            }
            Err(error) => panic!("benchmark line is not an event: {error}"),
        }
    }
    fold
}

#[expect(
    clippy::print_stderr,
    reason = "a benchmark reports its same-run ratio"
)]
/// `schedule_decode_fold/*`: 1,000,000 JSONL events, decode + fold vs plain parse, then the
/// same-run ratio on stderr.
pub(crate) fn bench_decode_fold(c: &mut Criterion) {
    let lines = log_lines();
    let folded = decode_and_fold(&lines);
    assert_eq!(folded.last_seq(), EVENTS as u64);

    let mut group = c.benchmark_group("schedule_decode_fold");
    group.throughput(Throughput::Elements(EVENTS as u64));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.bench_function("serde_json_value_parse_1m", |b| {
        b.iter(|| plain_parse(black_box(&lines)))
    });
    group.bench_function("decode_fold_1m", |b| {
        b.iter(|| decode_and_fold(black_box(&lines)))
    });
    group.finish();

    // Same run, interleaved rounds, best of each.
    let mut plain_best = Duration::MAX;
    let mut fold_best = Duration::MAX;
    for _ in 0..3 {
        let start = Instant::now();
        black_box(plain_parse(&lines));
        plain_best = plain_best.min(start.elapsed());
        let start = Instant::now();
        black_box(decode_and_fold(&lines));
        fold_best = fold_best.min(start.elapsed());
    }
    let ratio = plain_best.as_secs_f64() / fold_best.as_secs_f64();
    eprintln!(
        "schedule_decode_fold: {EVENTS} events ({} active at end, {} ids seen), plain \
         serde_json Value parse {plain_best:?}, decode + fold {fold_best:?}, ratio {ratio:.2} \
         (target >= 0.5)",
        folded.active_len(),
        folded.seen_ids().len(),
    );
}
