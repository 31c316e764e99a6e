//! Benchmarks for the bash producer. Plain timing, no criterion: each measurement
//! runs real processes for seconds, and the targets are same-run ratios.
//!
//! - `throughput`: a job writing 1 GiB (`head -c 1073741824 /dev/zero`) read to the end
//!   through consuming reads (`output_ready` + `read`), with the default 1 MiB per-stream
//!   buffers and spill files capped at the default 64 MiB, against
//!   `head -c 1073741824 /dev/zero | cat > /dev/null` in the same run. Ratio = pipeline time
//!   / job time (target ≥ 0.5). Peak RSS of this process (VmHWM) is reported against the
//!   buffer caps + 8 MiB.
//! - `spawn`: 200 sequential `bash -c true` jobs through a `LocalJobRegistry` (start, registry
//!   wait for the settlement, read) against
//!   200 plain `tokio::process::Command` spawns of the same command. Ratio = job time /
//!   plain time (target ≤ 1.3).
//!
//! - `sandbox`: 100 sequential `bash -c true` processes (spawn, wait for the end) without a
//!   sandbox against 100 with one (a writable root, network off, `memoryMaxBytes` and
//!   `pidsMax`), rounds interleaved in the same run. Reported: the extra start cost per job in
//!   ms (target <= 2 ms).
//!
//! - `walls`: 100 sequential `bash -c true` processes without a sandbox against 100 with
//!   every wall on (a writable root, network off with its seccomp filter, `denyRead`,
//!   `readableRoots`, `isolateProcesses`, `inheritEnv`), rounds interleaved in the same run.
//!   Reported: the extra start cost per job in ms (target <= 3 ms) and the ratio.
//!
//! Results go to stderr. `BASH_BENCH_ONLY=sandbox` runs only the sandbox and walls measurements. `BASH_BENCH_BYTES` overrides the 1 GiB (for a quick run).
#![expect(
    clippy::print_stderr,
    clippy::unwrap_used,
    reason = "a benchmark reports its numbers and unwraps its fixtures"
)]

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use turnkit::bash::{
    BashConfig, BashJobs, BashProcess, DEFAULT_MAX_OUTPUT_BYTES, ProcessOptions, SpillOptions,
};
use turnkit::core::{Clock, RegistrationScope, SystemClock};
use turnkit::jobs::JobRegistry;
use turnkit::jobs_local::{JobLimits, LocalJobRegistry};

const GIB: u64 = 1 << 30;
const SPAWNS: usize = 200;
const ROUNDS: usize = 3;

fn status_kib(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

async fn pipeline(bytes: u64) -> Duration {
    let started = Instant::now();
    let status = tokio::process::Command::new("bash")
        .arg("-c")
        .arg(format!("head -c {bytes} /dev/zero | cat > /dev/null"))
        .status()
        .await
        .unwrap();
    assert!(status.success());
    started.elapsed()
}

/// Runs the job and reads it to the end; returns the time and the bytes delivered by reads.
async fn job(bytes: u64, spill_dir: &std::path::Path) -> (Duration, u64, u64) {
    let mut options =
        ProcessOptions::new(format!("head -c {bytes} /dev/zero"), Arc::new(SystemClock));
    options.spill = Some(SpillOptions::new(
        spill_dir,
        turnkit::bash::DEFAULT_MAX_SPILL_BYTES,
    ));
    let started = Instant::now();
    let process = BashProcess::spawn(options).unwrap();
    let mut delivered = 0u64;
    loop {
        process.output_ready().await;
        let text = process.read();
        delivered += text.len() as u64;
        if text.is_empty() && process.try_end().is_some() {
            break;
        }
    }
    let elapsed = started.elapsed();
    let (stdout, _) = process.stats();
    assert_eq!(stdout.written, bytes);
    (elapsed, delivered, stdout.dropped)
}

async fn throughput(bytes: u64) {
    let spill = tempfile::tempdir().unwrap();
    let rss_before = status_kib("VmRSS:");
    let mut plain = Vec::new();
    let mut jobs = Vec::new();
    let mut dropped_total = 0;
    let mut delivered_total = 0;
    for _ in 0..ROUNDS {
        plain.push(pipeline(bytes).await);
        let (elapsed, delivered, dropped) = job(bytes, spill.path()).await;
        jobs.push(elapsed);
        dropped_total += dropped;
        delivered_total += delivered;
    }
    let peak = status_kib("VmHWM:");
    let (plain, job) = (median(plain), median(jobs));
    let mib = bytes as f64 / (1024.0 * 1024.0);
    let caps_kib = 2 * DEFAULT_MAX_OUTPUT_BYTES as u64 / 1024;
    eprintln!(
        "bash/throughput: {mib:.0} MiB, job {:.3} s ({:.0} MiB/s), pipeline {:.3} s ({:.0} MiB/s), ratio {:.2} (target >= 0.5)",
        job.as_secs_f64(),
        mib / job.as_secs_f64(),
        plain.as_secs_f64(),
        mib / plain.as_secs_f64(),
        plain.as_secs_f64() / job.as_secs_f64(),
    );
    eprintln!(
        "bash/throughput: reads delivered {delivered_total} bytes, dropped {dropped_total} bytes over {ROUNDS} rounds",
    );
    eprintln!(
        "bash/memory: peak RSS {peak} KiB, RSS before {rss_before} KiB, growth {} KiB; bound = caps {caps_kib} KiB + 8192 KiB = {} KiB ({})",
        peak.saturating_sub(rss_before),
        caps_kib + 8192,
        if peak <= caps_kib + 8192 {
            "peak within"
        } else if peak.saturating_sub(rss_before) <= caps_kib + 8192 {
            "growth within"
        } else {
            "EXCEEDED"
        },
    );
}

async fn spawn_overhead() {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let local = LocalJobRegistry::new(JobLimits::default(), clock.clone(), None);
    let registry: Arc<dyn JobRegistry> = Arc::new(local.clone());
    let _controller = registry.attach_controller(RegistrationScope::Global, "bench");
    let launcher = BashJobs::new(BashConfig::default(), clock, Some(registry.clone()));
    let mut plain = Vec::new();
    let mut jobs = Vec::new();
    for _ in 0..ROUNDS {
        let started = Instant::now();
        for _ in 0..SPAWNS {
            let status = tokio::process::Command::new("bash")
                .arg("-c")
                .arg("true")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .await
                .unwrap();
            assert!(status.success());
        }
        plain.push(started.elapsed());
        let started = Instant::now();
        for _ in 0..SPAWNS {
            let id = launcher.start_saved(None, "true", None).await.unwrap();
            let snapshot = registry
                .wait(&id, std::time::Duration::from_millis(30_000), None, None)
                .await
                .unwrap();
            assert_eq!(snapshot.detail.as_deref(), Some("exit code: 0"));
            assert_eq!(registry.read(&id, None).unwrap().text, "");
        }
        jobs.push(started.elapsed());
    }
    local.dispose().await;
    let (plain, job) = (median(plain), median(jobs));
    eprintln!(
        "bash/spawn: {SPAWNS} jobs {:.3} s ({:.0} us each), {SPAWNS} plain spawns {:.3} s ({:.0} us each), ratio {:.2} (target <= 1.3)",
        job.as_secs_f64(),
        job.as_secs_f64() * 1e6 / SPAWNS as f64,
        plain.as_secs_f64(),
        plain.as_secs_f64() * 1e6 / SPAWNS as f64,
        job.as_secs_f64() / plain.as_secs_f64(),
    );
}

async fn start_and_wait(options: &ProcessOptions, count: usize) -> Duration {
    let started = Instant::now();
    for _ in 0..count {
        let process = BashProcess::spawn(options.clone()).unwrap();
        let end = process.wait().await;
        assert_eq!(end.status, turnkit::bash::EndStatus::Exited(0));
    }
    started.elapsed()
}

async fn sandbox_overhead() {
    const JOBS: usize = 100;
    let root = tempfile::tempdir().unwrap();
    let sandbox: turnkit::bash::Sandbox = serde_json::from_value(serde_json::json!({
        "writableRoots": [root.path()],
        "network": false,
        "memoryMaxBytes": 256u64 << 20,
        "pidsMax": 128,
    }))
    .unwrap();
    if let Err(missing) = turnkit::bash::probe_sandbox(&sandbox) {
        eprintln!("bash/sandbox: SKIPPED, this host cannot confine jobs: {missing}");
        return;
    }
    let off = ProcessOptions::new("true", Arc::new(SystemClock));
    let mut on = off.clone();
    on.sandbox = Some(Arc::new(sandbox));
    let (mut plain, mut confined) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        plain.push(start_and_wait(&off, JOBS).await);
        confined.push(start_and_wait(&on, JOBS).await);
    }
    let (plain, confined) = (median(plain), median(confined));
    let per = |d: Duration| d.as_secs_f64() * 1e3 / JOBS as f64;
    eprintln!(
        "bash/sandbox: {JOBS} jobs off {:.3} ms each, on {:.3} ms each, extra {:.3} ms per job (target <= 2 ms), ratio {:.2}",
        per(plain),
        per(confined),
        per(confined) - per(plain),
        confined.as_secs_f64() / plain.as_secs_f64(),
    );
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing special either, so
    // a test run (no `--bench`) does a tiny smoke run only.
    let benching = std::env::args().any(|a| a == "--bench");
    let bytes = std::env::var("BASH_BENCH_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if benching { GIB } else { 1 << 20 });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let only_sandbox = std::env::var("BASH_BENCH_ONLY").as_deref() == Ok("sandbox");
    runtime.block_on(async {
        if !only_sandbox {
            throughput(bytes).await;
        }
        if benching {
            if !only_sandbox {
                spawn_overhead().await;
            }
            sandbox_overhead().await;
            walls_overhead().await;
        }
    });
}

async fn walls_overhead() {
    const JOBS: usize = 100;
    let root = tempfile::tempdir().unwrap();
    let hidden = tempfile::tempdir().unwrap();
    let readable: Vec<&str> = ["/usr", "/lib", "/lib64", "/bin", "/etc", "/proc", "/tmp"]
        .into_iter()
        .filter(|p| std::path::Path::new(p).exists())
        .collect();
    let sandbox: turnkit::bash::Sandbox = serde_json::from_value(serde_json::json!({
        "writableRoots": [root.path()],
        "network": false,
        "denyRead": [hidden.path()],
        "readableRoots": readable,
        "isolateProcesses": true,
        "inheritEnv": ["PATH", "HOME", "LANG", "LC_*", "TERM", "TZ", "USER", "LOGNAME", "SHELL"],
    }))
    .unwrap();
    match turnkit::bash::probe_sandbox(&sandbox) {
        Ok(summary) => eprintln!("bash/walls: {summary}"),
        Err(missing) => {
            eprintln!("bash/walls: SKIPPED, this host cannot build the walls: {missing}");
            return;
        }
    }
    let off = ProcessOptions::new("true", Arc::new(SystemClock));
    let mut on = off.clone();
    on.sandbox = Some(Arc::new(sandbox));
    let (mut plain, mut walled) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        plain.push(start_and_wait(&off, JOBS).await);
        walled.push(start_and_wait(&on, JOBS).await);
    }
    let (plain, walled) = (median(plain), median(walled));
    let per = |d: Duration| d.as_secs_f64() * 1e3 / JOBS as f64;
    eprintln!(
        "bash/walls: {JOBS} jobs off {:.3} ms each, every wall on {:.3} ms each, extra {:.3} ms per job (target <= 3 ms), ratio {:.2}",
        per(plain),
        per(walled),
        per(walled) - per(plain),
        walled.as_secs_f64() / plain.as_secs_f64(),
    );
    // One wall at a time (with the network on unless it is the wall), for where the cost is.
    let alone = [
        ("landlock only", serde_json::json!({"network": true})),
        ("network off + seccomp", serde_json::json!({})),
        (
            "denyRead",
            serde_json::json!({"network": true, "denyRead": [hidden.path()]}),
        ),
        (
            "isolateProcesses",
            serde_json::json!({"network": true, "isolateProcesses": true}),
        ),
    ];
    for (name, config) in alone {
        let sandbox: turnkit::bash::Sandbox = serde_json::from_value(config).unwrap();
        let mut one = off.clone();
        one.sandbox = Some(Arc::new(sandbox));
        let (mut plain, mut walled) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            plain.push(start_and_wait(&off, JOBS).await);
            walled.push(start_and_wait(&one, JOBS).await);
        }
        let (plain, walled) = (median(plain), median(walled));
        eprintln!(
            "bash/walls: {name}: extra {:.3} ms per job, ratio {:.2}",
            per(walled) - per(plain),
            walled.as_secs_f64() / plain.as_secs_f64(),
        );
    }
}
