//! Path watches, in process over the in-memory host with every family installed through
//! turnkit-families:
//!
//! - **idle**: the process's CPU time (user + system, `/proc/self/stat`, 10 ms ticks) over
//!   [`IDLE`] of real time with no watch, then with [`WATCHES`] path watches armed on as many
//!   folders of [`FILES`] files each while nothing changes; and the resident memory
//!   (`VmRSS`) before and after arming them. Target: no measurable CPU (the same ticks as with
//!   no watch) and the memory per watch reported.
//! - **write → message**: one path watch (`coalesce_ms` 0); a file renamed into its folder,
//!   then the wall time until the wake is handed to the owner's session. [`ROUNDS`] writes
//!   after [`WARM_UP`]. Target: p99 ≤ 50 ms.
//!
//! - **output line → message**: a bash job copying a FIFO to its output and one output watch
//!   on it (`coalesce_ms` 0); a line written to the FIFO, then the wall time until the wake
//!   is handed to the owner's session. [`ROUNDS`] lines after [`WARM_UP`]. Target: p99 ≤ 50 ms.
//!
//! Numbers are printed to stderr. Folders live under `/dev/shm` when it exists.
#![expect(
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark reports its numbers and unwraps its fixtures"
)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::json;
use turnkit_core::{SessionHeader, SessionId, SystemClock};
use turnkit_families::{Families, FamiliesConfig};
use turnkit_testkit::{HostRecord, MemoryHarness};

const WATCHES: usize = 1_000;
const FILES: usize = 10;
const IDLE: Duration = Duration::from_secs(3);
const ROUNDS: usize = 300;
const WARM_UP: usize = 20;

/// The process's CPU time so far, in clock ticks (user + system).
fn cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 of stat(5), counted from the state field (3).
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// The resident set size in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    }
}

fn put(dir: &Path, name: &str, content: &str) {
    let staging = dir.parent().unwrap().join(format!(".staging-{name}"));
    std::fs::write(&staging, content).unwrap();
    std::fs::rename(&staging, dir.join(name)).unwrap();
}

struct Fx {
    harness: Arc<MemoryHarness>,
    families: Families,
    session: SessionId,
}

impl Fx {
    fn new(wakes: mpsc::Sender<Instant>) -> Self {
        let harness = MemoryHarness::new(Arc::new(SystemClock));
        harness.set_recorder(Arc::new(move |record| {
            if let HostRecord::Followup { text, .. } | HostRecord::Inject { text, .. } = &record
                && text.contains(" says: ")
            {
                let _ = wakes.send(Instant::now());
            }
        }));
        let config = FamiliesConfig::from_json(&json!({
            "todo": {"allowParallelInProgress": false},
            "toolJobs": {"maxConsecutiveWakes": 1_000_000},
            "jobs": {"maxConcurrentJobsPerOwner": WATCHES + 10},
            "watch": {"maxWatchesPerOwner": WATCHES + 10, "defaultCoalesceMs": 0},
        }))
        .expect("config");
        let families = Families::install(&harness.as_dyn(), &config, None).expect("install");
        harness
            .create_session(SessionHeader::new("s1"))
            .expect("session");
        Self {
            harness,
            families,
            session: SessionId::from("s1"),
        }
    }

    async fn watch(&self, folder: &Path) -> String {
        let out = self
            .harness
            .answer(
                "watch_create",
                json!({"path": {"path": folder.display().to_string()}, "max_events": 10_000}),
                Some(&self.session),
            )
            .await;
        assert!(!out.is_error, "{}", out.text());
        out.value["jobId"].as_str().unwrap().to_owned()
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let root = scratch();
    let (tx, wakes) = mpsc::channel();
    let fx = Fx::new(tx);

    // Idle, with no watch.
    let before = cpu_ticks();
    tokio::time::sleep(IDLE).await;
    let idle_none = cpu_ticks() - before;

    let folders: Vec<PathBuf> = (0..WATCHES)
        .map(|i| {
            let dir = root.path().join(format!("w{i:04}"));
            std::fs::create_dir(&dir).unwrap();
            for f in 0..FILES {
                std::fs::write(dir.join(format!("f{f}.txt")), "some content\n").unwrap();
            }
            dir
        })
        .collect();
    let rss_before = rss_kib();
    let armed = Instant::now();
    for dir in &folders {
        fx.watch(dir).await;
    }
    let arming = armed.elapsed();
    // Let every watch's task arm (its first comparison), then measure.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_after = rss_kib();
    let before = cpu_ticks();
    tokio::time::sleep(IDLE).await;
    let idle_armed = cpu_ticks() - before;
    let folders_watched = fx
        .families
        .watch()
        .map(|w| w.watches().watched_folders())
        .unwrap_or(0);
    eprintln!(
        "idle: {WATCHES} path watches ({FILES} files each, {folders_watched} OS watches) armed in \
         {arming:?}; CPU over {IDLE:?}: {idle_none} ticks with none, {idle_armed} ticks with \
         them; RSS {rss_before} KiB → {rss_after} KiB ({} bytes per watch)",
        (rss_after.saturating_sub(rss_before) * 1024) / WATCHES as u64
    );
    assert!(wakes.try_recv().is_err(), "no wake while nothing changed");

    // Write → message, on one more watch.
    let hot = root.path().join("hot");
    std::fs::create_dir(&hot).unwrap();
    fx.watch(&hot).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut samples = Vec::with_capacity(ROUNDS);
    for round in 0..WARM_UP + ROUNDS {
        let start = Instant::now();
        put(&hot, &format!("n{round}.txt"), "x");
        let Ok(at) = wakes.recv_timeout(Duration::from_secs(10)) else {
            let out = fx
                .harness
                .answer("job_list", json!({}), Some(&fx.session))
                .await;
            let listed = out.text();
            let tail: Vec<&str> = listed.lines().rev().take(3).collect();
            panic!("no wake for write {round}: {tail:?}");
        };
        if round >= WARM_UP {
            samples.push(at.saturating_duration_since(start));
        }
    }
    samples.sort();
    eprintln!(
        "write → message: {ROUNDS} writes: p50 {:?}, p99 {:?}, max {:?} (target p99 ≤ 50 ms)",
        percentile(&samples, 0.5),
        percentile(&samples, 0.99),
        samples[samples.len() - 1]
    );

    // Output line → message: a bash job copies a FIFO to its output; one output watch on it.
    let fifo = root.path().join("lines");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let out = fx
        .harness
        .answer(
            "bash",
            json!({"command": format!("cat {}", fifo.display()), "run_in_background": true}),
            Some(&fx.session),
        )
        .await;
    let job = out.value["jobId"].as_str().unwrap().to_owned();
    let out = fx
        .harness
        .answer(
            "watch_create",
            json!({"output": {"job_id": job, "pattern": "^line"}, "max_events": 10_000, "coalesce_ms": 0}),
            Some(&fx.session),
        )
        .await;
    assert!(!out.is_error, "{}", out.text());
    let mut writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    let mut samples = Vec::with_capacity(ROUNDS);
    for round in 0..WARM_UP + ROUNDS {
        let start = Instant::now();
        std::io::Write::write_all(&mut writer, format!("line {round}\n").as_bytes()).unwrap();
        let at = wakes
            .recv_timeout(Duration::from_secs(10))
            .expect("the wake arrived");
        if round >= WARM_UP {
            samples.push(at.saturating_duration_since(start));
        }
    }
    drop(writer);
    samples.sort();
    eprintln!(
        "output line → message: {ROUNDS} lines: p50 {:?}, p99 {:?}, max {:?} (target p99 ≤ 50 ms)",
        percentile(&samples, 0.5),
        percentile(&samples, 0.99),
        samples[samples.len() - 1]
    );
    fx.families.dispose().await;
}
