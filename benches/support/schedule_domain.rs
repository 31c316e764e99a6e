//! Domain benchmark of turnkit-schedule, included by `benches/schedule.rs`:
//! decode + fold of a 1,000,000-event JSONL session log (mixed creates, deletes, one-shot
//! and every dispatches, plus other event types) against plain `serde_json` parsing of the
//! same lines into `serde_json::Value`. The same-run ratio (plain time / decode+fold time,
//! target ≥ 0.5) is printed to stderr.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use serde_json::Value;
use turnkit_core::SessionEvent;
use turnkit_schedule::domain::ScheduleFold;

use crate::schedule_log::log_lines;

const EVENTS: usize = 1_000_000;

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
    let lines = log_lines(EVENTS);
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
