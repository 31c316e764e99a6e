//! Benchmarks for the JSONL session store, on a real file in a temporary folder.
//!
//! - `store_flush/append_1_flush`: append one ~200-byte event, then `flush` (write +
//!   `fdatasync`): the latency of the durability barrier for one event.
//! - `store_append/idle`: `append` of one ~200-byte event with no flush running (a flush
//!   every 1,000 appends, outside the timing, keeps the buffer small).
//! - `store_append/during_flush`: the same `append` while another thread flushes the same
//!   session in a loop, so most appends land while a write and sync are in progress. The
//!   buffer is shared with the flush only to add or take lines, so this stays close to
//!   `idle`: append never waits for the disk.
//!
//! After the criterion groups, one run of 20,000 appends against a looping flush reports
//! append latency percentiles and the flush latencies seen meanwhile to stderr.
#![expect(
    clippy::print_stderr,
    clippy::unwrap_used,
    reason = "a benchmark reports its figures and unwraps its fixtures"
)]

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use serde_json::{Value, json};
use tokio::runtime::Runtime;
use turnkit::core::{JsonlStore, Session, SessionHeader, SessionStore, SystemClock};

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn payload(n: u64) -> Value {
    json!({"n": n, "text": "x".repeat(150)})
}

struct Fixture {
    _dir: tempfile::TempDir,
    session: Arc<dyn Session>,
}

fn fixture(name: &str) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store = JsonlStore::new(dir.path(), Arc::new(SystemClock)).unwrap();
    let session = store.create(SessionHeader::new(name)).unwrap();
    Fixture { _dir: dir, session }
}

/// Flushes `session` on its own thread and runtime whenever it has new events, until
/// `stop`, which returns the latency of every flush that had lines to write.
struct Flusher {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Vec<Duration>>>,
}

impl Flusher {
    fn start(session: Arc<dyn Session>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let rt = runtime();
            let mut latencies = Vec::new();
            let mut flushed = session.len();
            while !flag.load(Ordering::Relaxed) {
                // Only flushes with new lines to write count (the others return at once).
                let len = session.len();
                if len == flushed {
                    std::thread::yield_now();
                    continue;
                }
                let started = Instant::now();
                rt.block_on(session.flush()).unwrap();
                latencies.push(started.elapsed());
                flushed = len;
            }
            latencies
        });
        Self {
            stop,
            thread: Some(thread),
        }
    }

    fn stop(mut self) -> Vec<Duration> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap()
    }
}

fn bench_flush(c: &mut Criterion) {
    let rt = runtime();
    let f = fixture("flush");
    let mut n = 0;
    let mut group = c.benchmark_group("store_flush");
    group.bench_function("append_1_flush", |b| {
        b.iter(|| {
            n += 1;
            f.session.append("bench", payload(n)).unwrap();
            rt.block_on(f.session.flush()).unwrap();
        });
    });
    group.finish();
}

/// The time `iters` appends take; with `flush_on`, a flush every 1,000 appends, not timed.
fn timed_appends(session: &dyn Session, iters: u64, flush_on: Option<&Runtime>) -> Duration {
    let mut spent = Duration::ZERO;
    for i in 0..iters {
        let data = payload(i);
        let started = Instant::now();
        black_box(session.append("bench", data).unwrap());
        spent += started.elapsed();
        if let Some(rt) = flush_on
            && i % 1_000 == 999
        {
            rt.block_on(session.flush()).unwrap();
        }
    }
    spent
}

fn bench_append(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("store_append");
    let f = fixture("idle");
    group.bench_function("idle", |b| {
        b.iter_custom(|iters| timed_appends(f.session.as_ref(), iters, Some(&rt)));
    });
    let f = fixture("during_flush");
    let flusher = Flusher::start(f.session.clone());
    group.bench_function("during_flush", |b| {
        b.iter_custom(|iters| timed_appends(f.session.as_ref(), iters, None));
    });
    flusher.stop();
    group.finish();
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let at = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[at]
}

fn report() {
    let f = fixture("report");
    let flusher = Flusher::start(f.session.clone());
    let mut appends = Vec::with_capacity(20_000);
    for i in 0..20_000 {
        let data = payload(i);
        let started = Instant::now();
        black_box(f.session.append("bench", data).unwrap());
        appends.push(started.elapsed());
        // About one append per 10 µs, so appends spread over many flushes.
        let pause = Instant::now();
        while pause.elapsed() < Duration::from_micros(10) {
            std::hint::spin_loop();
        }
    }
    let mut flushes = flusher.stop();
    appends.sort();
    flushes.sort();
    eprintln!(
        "store report: append during a looping flush (n={}): p50 {:?}, p99 {:?}, p99.9 {:?}, max {:?}",
        appends.len(),
        percentile(&appends, 0.5),
        percentile(&appends, 0.99),
        percentile(&appends, 0.999),
        appends[appends.len() - 1],
    );
    eprintln!(
        "store report: latency of those flushes (write + fdatasync, n={}): p50 {:?}, p99 {:?}, max {:?}",
        flushes.len(),
        percentile(&flushes, 0.5),
        percentile(&flushes, 0.99),
        flushes[flushes.len() - 1],
    );
}

criterion_group!(benches, bench_flush, bench_append);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    report();
}
