//! Benchmarks for the todo family.
//!
//! - `todo_write/10_items`: one `todo_write` call with 10 items through the whole tool path of
//!   the in-memory host (schema validation, the body's checks, the append, the `todos`
//!   projection fold); throughput is calls/s.
//! - `todo_replay/*`: 100,000 `todo/write` JSONL lines, parsed as events and folded into the
//!   `todos` projection, against plain `serde_json` parsing of the same lines. After the
//!   criterion groups, a same-run ratio (plain time / replay time, target ≥ 0.5) is printed
//!   to stderr.
#![expect(
    clippy::print_stderr,
    clippy::unwrap_used,
    reason = "a benchmark reports its ratio and unwraps its fixtures"
)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group};
use turnkit::core::{Projection, SessionEvent, SessionHeader, SessionId, fold_events};
use turnkit::todo::{TodoConfig, TodosProjection, install};
use turnkit_testkit::{ManualClock, MemoryHarness};

#[path = "support/todo_log.rs"]
mod todo_log;
use serde_json::{Value, json};
use todo_log::replay_lines;

/// Calls per fresh session, so the log does not grow without bound across iterations.
const CALLS_PER_SESSION: u64 = 5_000;
const REPLAY_EVENTS: usize = 100_000;

fn ten_items(round: u64) -> Value {
    let statuses = ["completed", "completed", "in_progress", "pending"];
    let todos: Vec<Value> = (0..10)
        .map(|i| {
            json!({
                "content": format!("  step {i} of the plan, round {round}  "),
                "status": statuses[usize::min(i, 3)],
            })
        })
        .collect();
    json!({ "todos": todos })
}

fn bench_todo_write(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let args = ten_items(0);
    let mut group = c.benchmark_group("todo_write");
    group.throughput(Throughput::Elements(1));
    group.bench_function("10_items", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let host = MemoryHarness::new(Arc::new(ManualClock::at_default()));
                let config =
                    TodoConfig::from_json(json!({"allowParallelInProgress": false})).unwrap();
                let _todo = install(&host.as_dyn(), config).unwrap();
                let mut elapsed = Duration::ZERO;
                let mut done = 0;
                let mut session = 0u64;
                while done < iters {
                    let id = SessionId::from(format!("s{session}"));
                    session += 1;
                    host.create_session(SessionHeader::new(id.clone())).unwrap();
                    let n = (iters - done).min(CALLS_PER_SESSION);
                    let start = Instant::now();
                    for _ in 0..n {
                        let output = host.execute("todo_write", args.clone(), Some(&id)).await;
                        black_box(output);
                    }
                    elapsed += start.elapsed();
                    done += n;
                    host.dispose_agent(&id).await;
                }
                elapsed
            })
        });
    });
    group.finish();
}

fn plain_parse(lines: &[String]) -> usize {
    let mut n = 0;
    for line in lines {
        let value: Value = serde_json::from_str(line).unwrap();
        n += usize::from(value.is_object());
    }
    n
}

fn replay(lines: &[String]) -> Value {
    let projection = TodosProjection;
    let events = lines
        .iter()
        .map(|line| serde_json::from_str::<SessionEvent>(line).unwrap());
    let mut state = projection.init();
    for event in events {
        if let Some(next) = projection.apply(&state, &event) {
            state = next;
        }
    }
    projection.view(&state)
}

fn bench_replay(c: &mut Criterion) {
    let lines = replay_lines(REPLAY_EVENTS);
    // The fold must end on the last list.
    let last: SessionEvent = serde_json::from_str(lines.last().unwrap()).unwrap();
    assert_eq!(replay(&lines), last.data["todos"]);
    assert_eq!(
        TodosProjection.view(&fold_events(&TodosProjection, [&last])),
        last.data["todos"]
    );

    let mut group = c.benchmark_group("todo_replay");
    group.throughput(Throughput::Elements(REPLAY_EVENTS as u64));
    group.sample_size(10);
    group.bench_function("serde_json_parse_100k", |b| {
        b.iter(|| plain_parse(black_box(&lines)))
    });
    group.bench_function("projection_replay_100k", |b| {
        b.iter(|| replay(black_box(&lines)))
    });
    group.finish();

    // Same run, interleaved rounds, best of each: the ratio the target is stated in. Skipped when
    // a name filter on the command line leaves out the replay group.
    if !replay_selected() {
        return;
    }
    let mut plain_best = Duration::MAX;
    let mut replay_best = Duration::MAX;
    for _ in 0..5 {
        let start = Instant::now();
        black_box(plain_parse(&lines));
        plain_best = plain_best.min(start.elapsed());
        let start = Instant::now();
        black_box(replay(&lines));
        replay_best = replay_best.min(start.elapsed());
    }
    let ratio = plain_best.as_secs_f64() / replay_best.as_secs_f64();
    eprintln!(
        "todo_replay: plain serde_json {plain_best:?}, projection replay {replay_best:?}, \
         ratio {ratio:.2} (target >= 0.5)"
    );
}

/// Whether the command line's name filters (if any) select `todo_replay`.
fn replay_selected() -> bool {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-') && a.parse::<f64>().is_err())
        .collect();
    filters.is_empty()
        || filters
            .iter()
            .any(|f| "todo_replay".contains(f.as_str()) || f.contains("todo_replay"))
}

criterion_group!(benches, bench_todo_write, bench_replay);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
