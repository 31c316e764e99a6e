//! Replay benchmarks: what every session open, resume and `harness log` pays, against a floor.
//!
//! One command prints every figure (`cargo bench --bench replay`; name one or more sections
//! after `--` to run only those: `schedule`, `todo`, `open`, `log`):
//!
//! - `schedule`: a 1,000,000-event JSONL session file (mixed creates, deletes, one-shot and
//!   every dispatches, other event types). The crate's replay (the store's read of the file,
//!   then the schedule fold over it) against the floor: `serde_json` parsing of the same file
//!   into borrowed typed structs (envelope and payload), nothing else. Target ≤ 2× the floor.
//! - `todo`: a 100,000-event `todo/write` session file; the crate's replay (the store's read,
//!   then the `todos` projection fold) against the same kind of floor. Target ≤ 1.5×.
//! - `open`: a 100,000-event JSONL session (turns, todo writes, schedule changes): a host over
//!   the JSONL store, the todo, jobs and schedule families installed, the session resumed and
//!   its first tool call (`schedule_create`) answered. Target ≤ 100 ms, ≤ 1 µs per event.
//! - `log`: `harness log`'s work (the summary of a session file, in a child process) on the
//!   100,000-event todo log and a 300,000-event schedule log, against Node's `JSON.parse` of
//!   the same lines (`node` on `PATH`): wall time and peak resident memory of each process.
//!   Target: at most half of Node's time, peak memory below twice the file's size.
//!
//! `-- --files DIR` keeps the session files in DIR instead of a temporary folder.
//!
//! Every comparison runs interleaved rounds in one process and reports the best round of
//! each side and their ratio, so drift in the machine's speed hits both sides alike.
#![expect(
    clippy::print_stdout,
    clippy::unwrap_used,
    reason = "a benchmark reports its figures and unwraps its fixtures"
)]

#[path = "support/schedule_log.rs"]
mod schedule_log;
#[path = "support/todo_log.rs"]
mod todo_log;

use std::hint::black_box;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Value, json};
use turnkit::core::{Clock, Harness, JsonlStore, Projection, SessionId, fold_raw_events};
use turnkit::schedule::domain::ScheduleFold;
use turnkit::todo::TodosProjection;
use turnkit_testkit::{ManualClock, MemoryHarness, settle};

const SCHEDULE_EVENTS: usize = 1_000_000;
const TODO_EVENTS: usize = 100_000;
const OPEN_EVENTS: usize = 100_000;
const LOG_SCHEDULE_EVENTS: usize = 300_000;

/// The child-process entry point of the `log` section.
const LOG_CHILD: &str = "__replay_log_child";

// ---------------------------------------------------------------------------------------
// The floor: borrowed typed structs, as a hand-written reader of these files would use.

#[derive(Deserialize)]
struct FloorEvent<'a, T> {
    seq: u64,
    #[serde(rename = "type", borrow)]
    r#type: &'a str,
    #[serde(borrow)]
    time: &'a str,
    data: T,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FloorSchedule<'a> {
    version: Option<u32>,
    #[serde(borrow)]
    operation: Option<&'a str>,
    #[serde(borrow)]
    id: Option<&'a str>,
    #[serde(borrow)]
    accepted_at: Option<&'a str>,
    #[serde(borrow)]
    schedule: Option<FloorRecord<'a>>,
    turn: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FloorRecord<'a> {
    #[serde(borrow)]
    id: &'a str,
    #[serde(borrow)]
    kind: &'a str,
    #[serde(borrow)]
    prompt: &'a str,
    after_seconds: Option<i64>,
    every_seconds: Option<i64>,
    #[serde(borrow)]
    scheduled_at: &'a str,
}

#[derive(Deserialize)]
struct FloorTodos<'a> {
    #[serde(borrow)]
    todos: Vec<FloorItem<'a>>,
}

#[derive(Deserialize)]
struct FloorItem<'a> {
    #[serde(borrow)]
    content: &'a str,
    #[serde(borrow)]
    status: &'a str,
}

/// Reads the file and parses every event line (the header line is skipped) into
/// `FloorEvent<T>`; returns a checksum so nothing is optimized away.
fn floor<T: serde::de::DeserializeOwned>(path: &Path, weigh: impl Fn(&T) -> usize) -> usize {
    let text = std::fs::read_to_string(path).unwrap();
    let mut sum = 0usize;
    for line in text.lines().skip(1) {
        let event: FloorEvent<'_, T> = serde_json::from_str(line).unwrap();
        sum += event.seq as usize + event.r#type.len() + event.time.len() + weigh(&event.data);
    }
    sum
}

fn floor_schedule(path: &Path) -> usize {
    floor::<FloorScheduleAny>(path, |_| 0)
}

/// The schedule payload read through borrowed fields ([`FloorSchedule`]), as a type with no
/// lifetime, so [`floor`] can name it.
struct FloorScheduleAny;

impl<'de> Deserialize<'de> for FloorScheduleAny {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let data = FloorSchedule::deserialize(d)?;
        black_box((
            data.version,
            data.operation,
            data.id,
            data.accepted_at,
            data.turn,
        ));
        if let Some(record) = data.schedule {
            black_box((
                record.id,
                record.kind,
                record.prompt,
                record.after_seconds,
                record.every_seconds,
                record.scheduled_at,
            ));
        }
        Ok(FloorScheduleAny)
    }
}

/// The todo payload read through borrowed fields ([`FloorTodos`]); holds their length.
struct FloorTodosAny(usize);

impl<'de> Deserialize<'de> for FloorTodosAny {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let data = FloorTodos::deserialize(d)?;
        let weight = data
            .todos
            .iter()
            .map(|item| item.content.len() + item.status.len())
            .sum();
        Ok(FloorTodosAny(weight))
    }
}

fn floor_todo(path: &Path) -> usize {
    floor::<FloorTodosAny>(path, |data| data.0)
}

// ---------------------------------------------------------------------------------------
// The crate's replay: the store's read of the file, then the consumer's fold.

fn crate_schedule(path: &Path) -> ScheduleFold {
    let file = JsonlStore::inspect(path).unwrap();
    ScheduleFold::open_raw(&file.events, file.header.seed_length).unwrap()
}

fn crate_todo(path: &Path) -> Value {
    let file = JsonlStore::inspect(path).unwrap();
    let state = fold_raw_events(&TodosProjection, &file.events);
    TodosProjection.view(&state)
}

// ---------------------------------------------------------------------------------------
// Fixtures.

/// Writes a session file: a header line for `id`, then `lines`.
fn write_session(dir: &Path, id: &str, lines: &[String]) -> PathBuf {
    let path = dir.join(format!("{id}.jsonl"));
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    writeln!(out, "{}", json!({ "id": id })).unwrap();
    for line in lines {
        out.write_all(line.as_bytes()).unwrap();
        out.write_all(b"\n").unwrap();
    }
    out.flush().unwrap();
    path
}

fn megabytes(path: &Path) -> f64 {
    std::fs::metadata(path).map_or(0.0, |m| m.len() as f64 / 1e6)
}

/// Interleaved rounds of `a` and `b`; the best of each.
fn interleave<A, B>(
    rounds: usize,
    mut a: impl FnMut() -> A,
    mut b: impl FnMut() -> B,
) -> [Duration; 2] {
    let mut best = [Duration::MAX; 2];
    for _ in 0..rounds {
        let start = Instant::now();
        black_box(a());
        best[0] = best[0].min(start.elapsed());
        let start = Instant::now();
        black_box(b());
        best[1] = best[1].min(start.elapsed());
    }
    best
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

// ---------------------------------------------------------------------------------------
// Sections.

fn section_schedule(dir: &Path) {
    let path = write_session(dir, "schedule", &schedule_log::log_lines(SCHEDULE_EVENTS));
    let fold = crate_schedule(&path);
    assert_eq!(fold.last_seq(), SCHEDULE_EVENTS as u64);
    let [floor_best, crate_best] = interleave(
        3,
        || floor_schedule(&path),
        || crate_schedule(&path).active_len(),
    );
    let ratio = crate_best.as_secs_f64() / floor_best.as_secs_f64();
    // Where the crate's time goes: the store's read alone, then the fold alone.
    let file = JsonlStore::inspect(&path).unwrap();
    let [read_best, fold_best] = interleave(
        3,
        || JsonlStore::inspect(&path).unwrap().events.len(),
        || {
            ScheduleFold::open_raw(&file.events, None)
                .unwrap()
                .active_len()
        },
    );
    drop(file);
    println!(
        "schedule replay, {SCHEDULE_EVENTS} events ({:.1} MB, {} active, {} ids seen): typed \
         borrowed parse floor {:.1} ms ({:.0} MB/s), crate decode + fold {:.1} ms ({:.0} MB/s; \
         store read {:.1} ms, fold {:.1} ms), ratio {ratio:.2}x the floor (target <= 2)",
        megabytes(&path),
        fold.active_len(),
        fold.seen_ids().len(),
        ms(floor_best),
        megabytes(&path) / floor_best.as_secs_f64(),
        ms(crate_best),
        megabytes(&path) / crate_best.as_secs_f64(),
        ms(read_best),
        ms(fold_best),
    );
}

fn section_todo(dir: &Path) {
    let lines = todo_log::replay_lines(TODO_EVENTS);
    let last: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    let path = write_session(dir, "todo", &lines);
    assert_eq!(crate_todo(&path), last["data"]["todos"]);
    let [floor_best, crate_best] = interleave(5, || floor_todo(&path), || crate_todo(&path));
    let ratio = crate_best.as_secs_f64() / floor_best.as_secs_f64();
    println!(
        "todo replay, {TODO_EVENTS} events ({:.1} MB): typed borrowed parse floor {:.1} ms \
         ({:.0} MB/s), crate read + projection fold {:.1} ms ({:.0} MB/s), ratio {ratio:.2}x the \
         floor (target <= 1.5)",
        megabytes(&path),
        ms(floor_best),
        megabytes(&path) / floor_best.as_secs_f64(),
        ms(crate_best),
        megabytes(&path) / crate_best.as_secs_f64(),
    );
}

/// The open fixture's event lines: cycles of turns, todo writes and schedule changes whose
/// records all end inside the log (nothing is active or due at open).
fn open_lines() -> Vec<String> {
    let time = "2026-08-05T12:00:00.000Z";
    let mut lines = Vec::with_capacity(OPEN_EVENTS);
    let mut cycle = 0usize;
    while lines.len() < OPEN_EVENTS {
        cycle += 1;
        let a = format!("seed-{cycle}-a");
        let b = format!("seed-{cycle}-b");
        let create = |id: &str| json!({"version":1,"operation":"create","schedule":{"id":id,"kind":"after","prompt":"seeded reminder","afterSeconds":86400,"scheduledAt":"2026-08-06T12:00:00.000Z"}});
        let todos = json!({"todos":[
            {"content": format!("step one of cycle {cycle}"), "status": "completed"},
            {"content": format!("step two of cycle {cycle}"), "status": "in_progress"},
            {"content": format!("step three of cycle {cycle}"), "status": "pending"},
        ]});
        let payloads = [
            ("turn/start", json!({"turn": cycle})),
            ("todo/write", todos),
            ("schedule/change", create(&a)),
            ("schedule/change", create(&b)),
            (
                "schedule/change",
                json!({"version":1,"operation":"delete","id":a}),
            ),
            (
                "schedule/change",
                json!({"version":1,"operation":"dispatch","id":b}),
            ),
            ("turn/end", json!({"turn": cycle})),
        ];
        for (r#type, data) in payloads {
            if lines.len() == OPEN_EVENTS {
                break;
            }
            let seq = lines.len() + 1;
            lines.push(json!({"seq": seq, "type": r#type, "time": time, "data": data}).to_string());
        }
    }
    lines
}

/// One open: a host over the JSONL store in `dir`, the families installed, the session
/// resumed and its first `schedule_create` answered. Returns the time to that answer.
fn open_once(dir: &Path, pristine: &Path) -> Duration {
    let live = dir.join("open.jsonl");
    std::fs::copy(pristine, &live).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async {
        let clock: Arc<dyn Clock> = Arc::new(ManualClock::at_default());
        let start = Instant::now();
        let store = JsonlStore::new(dir, clock.clone()).unwrap();
        let host = MemoryHarness::with_store(Arc::new(store), clock);
        let harness: Arc<dyn Harness> = host.as_dyn();
        let todo = turnkit::todo::install(
            &harness,
            turnkit::todo::TodoConfig::from_json(json!({"allowParallelInProgress": false}))
                .unwrap(),
        )
        .unwrap();
        let jobs = turnkit::jobs_local::install(&harness, Default::default()).unwrap();
        let tool_jobs = turnkit::tool_jobs::install(&harness, Default::default()).unwrap();
        let schedule = turnkit::schedule::install(&harness, Default::default()).unwrap();
        let id = SessionId::from("open");
        host.resume(&id).unwrap();
        settle().await;
        let out = host
            .execute(
                "schedule_create",
                json!({"prompt": "first call", "after_seconds": 3600}),
                Some(&id),
            )
            .await;
        let elapsed = start.elapsed();
        assert!(!out.is_error, "{}", out.text());
        host.dispose_all().await;
        schedule.dispose().await;
        tool_jobs.dispose();
        jobs.dispose().await;
        todo.dispose();
        elapsed
    })
}

fn section_open(dir: &Path) {
    let open_dir = dir.join("open");
    std::fs::create_dir_all(&open_dir).unwrap();
    let pristine = write_session(dir, "open", &open_lines());
    let mut best = Duration::MAX;
    for _ in 0..5 {
        best = best.min(open_once(&open_dir, &pristine));
    }
    println!(
        "open of a {OPEN_EVENTS}-event JSONL session ({:.1} MB; install + resume + first tool \
         call answered): {:.1} ms, {:.2} us per event (target <= 100 ms, <= 1 us per event)",
        megabytes(&pristine),
        ms(best),
        best.as_secs_f64() * 1e6 / OPEN_EVENTS as f64,
    );
}

/// A finished child process: wall time and peak resident memory (kB).
struct Run {
    wall: Duration,
    peak_kb: u64,
}

fn run_child(command: &mut Command) -> Run {
    let start = Instant::now();
    let output = command
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    let wall = start.elapsed();
    assert!(output.status.success(), "child failed: {:?}", output.status);
    let peak_kb = String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .unwrap_or(0);
    Run { wall, peak_kb }
}

/// The `log` child: summarizes `path` as `harness log` does, then prints its own peak
/// resident memory in kB.
fn log_child(path: &Path) {
    let summary = turnkit_families::summarize_log_file(path).unwrap();
    black_box(summary.text.len());
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let peak = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .unwrap_or(0);
    println!("{peak}");
}

const NODE_SCRIPT: &str = "const fs = require('fs'); \
    const text = fs.readFileSync(process.argv[1], 'utf8'); let n = 0; \
    for (const line of text.split('\\n')) { if (line) { JSON.parse(line); n++; } } \
    process.stdout.write(String(process.resourceUsage().maxRSS));";

fn section_log(dir: &Path) {
    let todo = write_session(dir, "log-todo", &todo_log::replay_lines(TODO_EVENTS));
    let schedule = write_session(
        dir,
        "log-schedule",
        &schedule_log::log_lines(LOG_SCHEDULE_EVENTS),
    );
    let exe = std::env::current_exe().unwrap();
    let node_available = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    for (name, path) in [("todo", &todo), ("schedule", &schedule)] {
        let mut ours = Vec::new();
        let mut node = Vec::new();
        for _ in 0..3 {
            ours.push(run_child(Command::new(&exe).arg(LOG_CHILD).arg(path)));
            if node_available {
                node.push(run_child(
                    Command::new("node").arg("-e").arg(NODE_SCRIPT).arg(path),
                ));
            }
        }
        let best = |runs: &[Run]| runs.iter().map(|r| r.wall).min().unwrap_or_default();
        let peak = |runs: &[Run]| runs.iter().map(|r| r.peak_kb).max().unwrap_or(0) as f64 / 1e3;
        let size = megabytes(path);
        let mut line = format!(
            "harness log, {name} log ({size:.1} MB): {:.0} ms, peak {:.0} MB ({:.2}x the file)",
            ms(best(&ours)),
            peak(&ours),
            peak(&ours) / size,
        );
        if node_available {
            line += &format!(
                "; node JSON.parse {:.0} ms, peak {:.0} MB; time ratio {:.2}x node (target <= \
                 0.5, peak < 2x the file)",
                ms(best(&node)),
                peak(&node),
                best(&ours).as_secs_f64() / best(&node).as_secs_f64(),
            );
        } else {
            line += "; node not found, no comparison";
        }
        println!("{line}");
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(LOG_CHILD) {
        log_child(Path::new(&args[1]));
        return;
    }
    // `__replay_probe schedule|todo FILE`: one crate replay of FILE, for a profiler.
    if args.first().map(String::as_str) == Some("__replay_probe") {
        match args[1].as_str() {
            "schedule" => black_box(crate_schedule(Path::new(&args[2])).active_len()),
            "schedule-floor" => black_box(floor_schedule(Path::new(&args[2]))),
            "todo-floor" => black_box(floor_todo(Path::new(&args[2]))),
            "open" => {
                let dir = Path::new(&args[2]);
                let open_dir = dir.join("open");
                std::fs::create_dir_all(&open_dir).unwrap();
                let pristine = write_session(dir, "open", &open_lines());
                black_box(open_once(&open_dir, &pristine).as_nanos() as usize)
            }
            _ => black_box(
                crate_todo(Path::new(&args[2]))
                    .as_array()
                    .map_or(0, Vec::len),
            ),
        };
        return;
    }
    // `--files DIR` keeps the session files in DIR (to time other tools on them).
    let keep = args
        .iter()
        .position(|a| a == "--files")
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from);
    let filters: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| !a.starts_with('-') && Some(Path::new(a)) != keep.as_deref())
        .collect();
    let wanted = |name: &str| filters.is_empty() || filters.iter().any(|f| name.contains(f));
    let temp = tempfile::tempdir().unwrap();
    let dir = match &keep {
        Some(dir) => {
            std::fs::create_dir_all(dir).unwrap();
            dir.clone()
        }
        None => temp.path().to_path_buf(),
    };
    let dir = dir.as_path();
    if wanted("schedule") {
        section_schedule(dir);
    }
    if wanted("todo") {
        section_todo(dir);
    }
    if wanted("open") {
        section_open(dir);
    }
    if wanted("log") {
        section_log(dir);
    }
}
