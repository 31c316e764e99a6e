//! Tool-path benchmarks of turnkit-schedule, included by `benches/schedule.rs`:
//!
//! * `schedule_create` through the host's tool registry with the plugin installed, on a
//!   session whose log already holds 1,000 vs 100,000 events (target: the second costs at
//!   most 2x the first; the fold is incremental, so neither re-reads the log);
//! * 100,000 active reminders in one session: one pending timer for the agent, and the
//!   resident memory the folded state adds per reminder.

use std::sync::Arc;

use criterion::Criterion;
use serde_json::json;
use tokio::runtime::Runtime;
use turnkit_core::{SessionHeader, SessionId};
use turnkit_schedule::{Installed, ScheduleConfig, install};
use turnkit_testkit::{ManualClock, MemoryAgent, MemoryHarness, settle};

const SESSION: &str = "bench";

struct Fixture {
    runtime: Runtime,
    host: Arc<MemoryHarness>,
    clock: ManualClock,
    _installed: Installed,
    _agent: Arc<MemoryAgent>,
    /// Resident bytes after the log was written, before the plugin folded it.
    seeded_rss: Option<u64>,
}

fn runtime() -> Runtime {
    match tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => panic!("tokio runtime: {error}"),
    }
}

/// `{"version":1,"operation":"create",…}` of an `after` record far in the future.
fn create_payload(id: &str) -> serde_json::Value {
    json!({"version":1,"operation":"create","schedule":{"id":id,"kind":"after","prompt":"seeded reminder","afterSeconds":86400,"scheduledAt":"2026-08-06T12:00:00.000Z"}})
}

/// A session log of `len` events: turn events and create/delete pairs (mixed event types,
/// a growing set of seen ids, few active records), then the plugin adopts its agent.
fn fixture(len: usize, active: usize) -> Fixture {
    let runtime = runtime();
    let clock = ManualClock::at_default();
    let host = MemoryHarness::new(Arc::new(clock.clone()));
    let (installed, agent, seeded_rss) = runtime.block_on(async {
        let session = match host.store().create(SessionHeader::new(SESSION)) {
            Ok(session) => session,
            Err(error) => panic!("create session: {error}"),
        };
        let mut appended = 0usize;
        let mut n = 0usize;
        while appended < len {
            let result = if appended < active {
                session.append(
                    "schedule/change",
                    create_payload(&format!("active-{appended}")),
                )
            } else {
                match n % 4 {
                    0 => session.append("turn/start", json!({"turn": n})),
                    1 => session.append("schedule/change", create_payload(&format!("seed-{n}"))),
                    2 => session.append(
                        "schedule/change",
                        json!({"version":1,"operation":"delete","id":format!("seed-{}", n - 1)}),
                    ),
                    _ => session.append("turn/end", json!({"turn": n})),
                }
            };
            if let Err(error) = result {
                panic!("append: {error}");
            }
            appended += 1;
            n += 1;
        }
        let seeded_rss = resident_bytes();
        let installed = match install(&host.as_dyn(), ScheduleConfig::default()) {
            Ok(installed) => installed,
            Err(error) => panic!("install: {error}"),
        };
        let agent = match host.resume(&SessionId::from(SESSION)) {
            Ok(agent) => agent,
            Err(error) => panic!("resume: {error}"),
        };
        // The runtime's first pass does the one full fold at open.
        settle().await;
        (installed, agent, seeded_rss)
    });
    Fixture {
        runtime,
        host,
        clock,
        _installed: installed,
        _agent: agent,
        seeded_rss,
    }
}

impl Fixture {
    fn create(&self) {
        let id = SessionId::from(SESSION);
        let out = self.runtime.block_on(self.host.execute(
            "schedule_create",
            json!({"prompt":"bench reminder","after_seconds":3600}),
            Some(&id),
        ));
        assert!(!out.is_error, "{}", out.text());
    }
}

/// `schedule_create` at log length 1,000 vs 100,000.
pub(crate) fn bench_create_by_log_length(c: &mut Criterion) {
    let mut group = c.benchmark_group("schedule_create");
    for len in [1_000usize, 100_000] {
        let fixture = fixture(len, 0);
        // The tool's first call folds through the shared ledger (already opened by the
        // runtime's start); warm it once.
        fixture.create();
        group.bench_function(format!("log_{len}"), |b| b.iter(|| fixture.create()));
    }
    group.finish();
}

fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// 100,000 active reminders in one session: one timer for the agent, and the resident memory
/// per reminder of the session log plus the folded state (Linux `/proc/self/statm`).
#[expect(
    clippy::print_stderr,
    reason = "the benchmark reports a measured figure that criterion cannot express"
)]
pub(crate) fn report_active_reminder_memory(_c: &mut Criterion) {
    const ACTIVE: usize = 100_000;
    let before = resident_bytes();
    let fixture = fixture(ACTIVE, ACTIVE);
    let after = resident_bytes();
    let timers = fixture.clock.pending_sleeps();
    let listed = fixture.runtime.block_on(fixture.host.execute(
        "schedule_list",
        json!({}),
        Some(&SessionId::from(SESSION)),
    ));
    let active = listed.value.as_array().map_or(0, Vec::len);
    assert_eq!(active, ACTIVE);
    assert_eq!(timers, 1, "one timer per agent");
    if let (Some(before), Some(seeded), Some(after)) = (before, fixture.seeded_rss, after) {
        let per = |bytes: u64| bytes / ACTIVE as u64;
        eprintln!(
            "schedule: {ACTIVE} active reminders, {timers} pending timer(s); resident bytes per reminder: ~{} in the session log, ~{} in the folded state",
            per(seeded.saturating_sub(before)),
            per(after.saturating_sub(seeded))
        );
    }
}

/// Same-run ratio of `schedule_create` cost at 100,000 vs 1,000 log events (target ≤ 2),
/// printed to stderr. Both fixtures are built first, then measured in alternating batches
/// (the best batch of each counts), so machine noise hits both alike.
#[expect(
    clippy::print_stderr,
    reason = "the benchmark reports a same-run ratio that criterion cannot express"
)]
pub(crate) fn report_create_ratio(_c: &mut Criterion) {
    const ROUNDS: usize = 10;
    const CALLS: u32 = 500;
    let fixtures = [fixture(1_000, 0), fixture(100_000, 0)];
    for fixture in &fixtures {
        fixture.create();
    }
    let mut best = [std::time::Duration::MAX; 2];
    for _ in 0..ROUNDS {
        for (slot, fixture) in fixtures.iter().enumerate() {
            let started = std::time::Instant::now();
            for _ in 0..CALLS {
                fixture.create();
            }
            best[slot] = best[slot].min(started.elapsed() / CALLS);
        }
    }
    let [small, large] = best;
    eprintln!(
        "schedule_create: {small:?}/call at 1,000 events, {large:?}/call at 100,000 events, ratio {:.2} (target <= 2)",
        large.as_secs_f64() / small.as_secs_f64()
    );
}
