//! Hosts as separate processes: contention for one session, and a killed owner.
//!
//! The test binary doubles as the host process: run with `HARNESS_PG_CHILD` set,
//! `child_host_process` opens the session and follows commands on stdin (`write A B` appends
//! events `n = A..=B` and flushes; `exit`), answering on stdout with lines starting `HOST `.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of the tests below, where a failure is a test failure"
)]

use std::io::BufRead;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use turnkit_core::{Session, SessionHeader, SessionId, SessionStore, StoreError, SystemClock};
use turnkit_store_pg::{PgOptions, PgStore};

#[allow(
    clippy::print_stdout,
    reason = "the child host answers its parent on stdout"
)]
pub(super) fn say(line: &str) {
    println!("HOST {line}");
}

/// The host process body, started by the tests below (ignored in a normal run, where it
/// could only return at once and count as a pass).
#[test]
#[ignore = "the child host process of the other tests in this file, which start it"]
fn child_host_process() {
    let Ok(url) = std::env::var("HARNESS_PG_CHILD") else {
        return;
    };
    let var = |name: &str| std::env::var(name).unwrap();
    let ttl = Duration::from_millis(var("HARNESS_PG_TTL_MS").parse().unwrap());
    let store = PgStore::connect(
        &url,
        Arc::new(SystemClock),
        PgOptions {
            schema: var("HARNESS_PG_SCHEMA"),
            host: var("HARNESS_PG_HOST"),
            lease_ttl: ttl,
            pool_size: 2,
            index: Some(Arc::new(turnkit_schedule::ReminderIndex)),
            ..PgOptions::default()
        },
    )
    .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let session = match store.open(&SessionId::from("s")) {
        Ok(session) => session,
        Err(error) => {
            say(&format!("refused {error}"));
            return;
        }
    };
    say(&format!("opened {}", session.len()));
    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap();
        let words: Vec<&str> = line.split(' ').collect();
        match words.as_slice() {
            ["write", from, to] => {
                let (from, to): (u64, u64) = (from.parse().unwrap(), to.parse().unwrap());
                for n in from..=to {
                    session.append("test/n", json!({ "n": n })).unwrap();
                }
                match runtime.block_on(session.flush()) {
                    Ok(()) => say(&format!("flushed {}", session.len())),
                    Err(error) => say(&format!("failed {error}")),
                }
            }
            _ => return,
        }
    }
}

/// A host process: the test binary run as the ignored test `test` (a child-process body that
/// is a no-op unless its environment says otherwise), talked to on stdin and stdout.
pub(super) struct Host {
    pub(super) child: Child,
    pub(super) stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl Host {
    fn start(url: &str, schema: &str, host: &str, ttl: Duration) -> Self {
        Self::spawn(
            "suite::processes::child_host_process",
            &[
                ("HARNESS_PG_CHILD", url.to_owned()),
                ("HARNESS_PG_SCHEMA", schema.to_owned()),
                ("HARNESS_PG_HOST", host.to_owned()),
                ("HARNESS_PG_TTL_MS", ttl.as_millis().to_string()),
            ],
        )
    }

    /// Runs the test `test` of this binary alone, with `env` set, as a child process.
    pub(super) fn spawn(test: &str, env: &[(&str, String)]) -> Self {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                test,
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("start a host process: {e}"));
        let stdin = child.stdin.take().unwrap_or_else(|| panic!("no stdin"));
        let stdout =
            BufReader::new(child.stdout.take().unwrap_or_else(|| panic!("no stdout"))).lines();
        Self {
            child,
            stdin,
            stdout,
        }
    }

    /// The next line the host said (after `HOST `).
    pub(super) async fn answer(&mut self) -> String {
        self.next_answer()
            .await
            .unwrap_or_else(|| panic!("the host process ended without answering"))
    }

    /// The next line the host said, `None` once its output ended (cancel-safe).
    pub(super) async fn next_answer(&mut self) -> Option<String> {
        loop {
            let line = self
                .stdout
                .next_line()
                .await
                .unwrap_or_else(|e| panic!("{e}"))?;
            // libtest may print its own text before ours on the same line.
            if let Some((_, answer)) = line.split_once("HOST ") {
                return Some(answer.to_owned());
            }
        }
    }

    /// Sends one command line.
    pub(super) async fn tell(&mut self, line: &str) {
        self.stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }

    /// Sends one command line and waits for the answer.
    pub(super) async fn send(&mut self, line: &str) -> String {
        self.tell(line).await;
        self.answer().await
    }

    /// Sends `signal` (`KILL`, `STOP`, `CONT`) to the host process.
    pub(super) fn signal(&self, signal: &str) {
        let pid = self
            .child
            .id()
            .unwrap_or_else(|| panic!("the host process is gone"));
        let status = std::process::Command::new("kill")
            .args([format!("-{signal}"), pid.to_string()])
            .status()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(status.success(), "kill -{signal} {pid}");
    }
}

fn log(session: &dyn Session) -> Vec<(u64, String, String)> {
    session
        .events()
        .iter()
        .map(|e| (e.seq, e.r#type.clone(), e.data.to_string()))
        .collect()
}

fn setup(url: &str, tag: &str) -> String {
    let schema = super::fresh_schema(tag);
    let store = super::store(url, &schema, "setup", Duration::from_secs(30));
    drop(store.create(SessionHeader::new("s")).unwrap());
    schema
}

/// The log one host writes alone: events `n = 1..=100`.
async fn single_host_log(url: &str) -> Vec<(u64, String, String)> {
    let schema = setup(url, "single");
    let mut host = Host::start(url, &schema, "only", Duration::from_secs(30));
    assert_eq!(host.answer().await, "opened 0");
    assert_eq!(host.send("write 1 50").await, "flushed 50");
    assert_eq!(host.send("write 51 100").await, "flushed 100");
    drop(host.stdin);
    host.child.wait().await.unwrap();
    let reader = super::store(url, &schema, "reader", Duration::from_secs(30));
    log(&*reader.open(&SessionId::from("s")).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_host_processes_contend_and_exactly_one_writes() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = setup(&url, "contend");
    let mut a = Host::start(&url, &schema, "host-a", Duration::from_secs(30));
    assert_eq!(a.answer().await, "opened 0");
    let mut refused = Host::start(&url, &schema, "host-b", Duration::from_secs(30));
    assert_eq!(
        refused.answer().await,
        "refused session s is owned by host host-a; retry after its lease expires"
    );
    assert_eq!(a.send("write 1 50").await, "flushed 50");

    // Host A stops (a paused VM, a GC pause) past its lease; host B takes the session.
    a.signal("STOP");
    let sql = super::client(&url).await;
    sql.execute(
        &format!("UPDATE \"{schema}\".sessions SET lease_expires = now() - interval '1 second'"),
        &[],
    )
    .await
    .unwrap();
    let mut b = Host::start(&url, &schema, "host-b", Duration::from_secs(30));
    assert_eq!(b.answer().await, "opened 50");
    assert_eq!(b.send("write 51 100").await, "flushed 100");

    // A wakes up and tries to write: fenced.
    a.signal("CONT");
    assert_eq!(
        a.send("write 51 60").await,
        "failed session s: this host no longer owns the session; stop its agents and jobs"
    );
    drop(b.stdin);
    b.child.wait().await.unwrap();

    let reader = super::store(&url, &schema, "reader", Duration::from_secs(30));
    let contended = log(&*reader.open(&SessionId::from("s")).unwrap());
    assert_eq!(contended, single_host_log(&url).await);
    let epoch: i64 = sql
        .query_one(&format!("SELECT epoch FROM \"{schema}\".sessions"), &[])
        .await
        .unwrap()
        .get(0);
    // setup, host-a, host-b, reader.
    assert_eq!(epoch, 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_owners_lease_expires_and_the_next_host_continues() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = setup(&url, "kill");
    let ttl = Duration::from_millis(800);
    let mut a = Host::start(&url, &schema, "host-a", ttl);
    assert_eq!(a.answer().await, "opened 0");
    assert_eq!(a.send("write 1 10").await, "flushed 10");
    a.signal("KILL");
    a.child.wait().await.unwrap();

    let next = super::store(&url, &schema, "host-b", Duration::from_secs(30));
    let id = SessionId::from("s");
    // The dead host's lease still holds until its TTL is over (the server's clock decides).
    match next.open(&id) {
        Err(StoreError::Owned { owner, .. }) => assert_eq!(owner, "host-a"),
        other => panic!("expected Owned, got {:?}", other.map(|s| s.len())),
    }
    let started = std::time::Instant::now();
    let session = loop {
        match next.open(&id) {
            Ok(session) => break session,
            Err(StoreError::Owned { .. }) if started.elapsed() < Duration::from_secs(20) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(error) => panic!("{error}"),
        }
    };
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "taken before the TTL ran out"
    );
    let want: Vec<(u64, String, String)> = (1..=10)
        .map(|n| (n, "test/n".to_owned(), format!("{{\"n\":{n}}}")))
        .collect();
    assert_eq!(log(&*session), want);
}
