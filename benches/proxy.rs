//! Benchmarks of the network by name (the server's proxy). Plain timing, no criterion; the
//! targets are same-run comparisons.
//!
//! - `start`: 500 `bash -c true` jobs with `"network": false` and 500 with
//!   `"network": ["localhost"]` (the listener made in the job's namespace, passed to the
//!   server, an accept task started), alternating job by job. Reported: the median start
//!   and end of each and the extra cost per job in ms (target <= 1 ms).
//! - `download`: a confined job running `curl` to fetch 100 MB from a loopback server of the
//!   host, through the proxy (`["localhost"]`) against directly (`"network": true`), rounds
//!   alternating, 15 of each. Reported: MB/s of each (median and best) and the ratios
//!   proxy / direct (target >= 0.8).
//!
//! Results go to stderr. A test run (no `--bench`) fetches 1 MB once as a smoke test.
#![expect(
    clippy::print_stderr,
    clippy::unwrap_used,
    reason = "a benchmark reports its numbers and unwraps its fixtures"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use turnkit::bash::{BashProcess, EndStatus, ProcessOptions, Sandbox};
use turnkit::core::SystemClock;

const ROUNDS: usize = 5;
const JOBS: usize = 100;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn sandbox(network: &serde_json::Value) -> Option<Arc<Sandbox>> {
    let sandbox: Sandbox =
        serde_json::from_value(serde_json::json!({ "network": network })).unwrap();
    match turnkit::bash::probe_sandbox(&sandbox) {
        Ok(_) => Some(Arc::new(sandbox)),
        Err(missing) => {
            eprintln!("proxy: SKIPPED, this host cannot confine jobs: {missing}");
            None
        }
    }
}

fn options(command: &str, sandbox: &Arc<Sandbox>) -> ProcessOptions {
    let mut options = ProcessOptions::new(command, Arc::new(SystemClock));
    options.sandbox = Some(sandbox.clone());
    options
}

async fn run(options: &ProcessOptions) -> Duration {
    let started = Instant::now();
    let process = BashProcess::spawn(options.clone()).unwrap();
    let end = process.wait().await;
    let elapsed = started.elapsed();
    assert_eq!(end.status, EndStatus::Exited(0), "{}", process.read());
    elapsed
}

async fn start() {
    let (Some(off), Some(by_name)) = (
        sandbox(&serde_json::json!(false)),
        sandbox(&serde_json::json!(["localhost"])),
    ) else {
        return;
    };
    let (off, by_name) = (options("true", &off), options("true", &by_name));
    // Alternating job by job and taking medians keeps the load of the machine out of the
    // comparison as far as a same-run measurement can.
    let (mut plain, mut proxied) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS * JOBS {
        plain.push(run(&off).await);
        proxied.push(run(&by_name).await);
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let (plain, proxied) = (ms(median(plain)), ms(median(proxied)));
    eprintln!(
        "proxy/start: {} jobs each, alternating: network off {plain:.3} ms, by name \
         {proxied:.3} ms (medians), extra {:.3} ms per job (target <= 1 ms)",
        ROUNDS * JOBS,
        proxied - plain
    );
}

/// A server on the host's loopback answering every request with `bytes` bytes, on threads of
/// its own (outside the server's runtime, like a real remote host).
fn server(bytes: u64) -> u16 {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut chunk = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&chunk[..n]),
                    }
                }
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {bytes}\r\nConnection: close\r\n\r\n"
                );
                if stream.write_all(answer.as_bytes()).is_err() {
                    return;
                }
                let block = vec![b'x'; 1 << 20];
                let mut left = bytes;
                while left > 0 {
                    let n = left.min(block.len() as u64) as usize;
                    if stream.write_all(&block[..n]).is_err() {
                        return;
                    }
                    left -= n as u64;
                }
            });
        }
    });
    port
}

async fn download(bytes: u64, rounds: usize) {
    let (Some(on), Some(by_name)) = (
        sandbox(&serde_json::json!(true)),
        sandbox(&serde_json::json!(["localhost"])),
    ) else {
        return;
    };
    let port = server(bytes);
    // `--noproxy` keeps the direct job's curl off any proxy of the host's environment.
    let direct = options(
        &format!("curl -sSf --noproxy '*' -o /dev/null http://localhost:{port}/"),
        &on,
    );
    let proxied = options(
        &format!("curl -sSf -o /dev/null http://localhost:{port}/"),
        &by_name,
    );
    let (mut plain, mut through) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        plain.push(run(&direct).await);
        through.push(run(&proxied).await);
    }
    let rate = |d: Duration| bytes as f64 / 1e6 / d.as_secs_f64();
    let best = |samples: &[Duration]| samples.iter().min().copied().unwrap_or_default();
    let (plain_best, through_best) = (rate(best(&plain)), rate(best(&through)));
    let (plain, through) = (rate(median(plain)), rate(median(through)));
    eprintln!(
        "proxy/download: {} MB x {rounds}, alternating: median direct {plain:.0} MB/s, through \
         the proxy {through:.0} MB/s, ratio {:.2}; best direct {plain_best:.0} MB/s, through \
         the proxy {through_best:.0} MB/s, ratio {:.2} (target >= 0.8)",
        bytes / 1_000_000,
        through / plain,
        through_best / plain_best,
    );
}

fn main() {
    let benching = std::env::args().any(|a| a == "--bench");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        if benching {
            start().await;
            download(100_000_000, 3 * ROUNDS).await;
        } else {
            download(1_000_000, 1).await;
        }
    });
}
