//! A host cut off from PostgreSQL (a relay in front of the server that goes silent: nothing
//! gets through, no connection is closed) stops its session's jobs before its lease can
//! lapse, so another host that takes the session finds no process of them alive.
//!
//! The servers are real child processes on the wall clock: a wait polls what they write
//! (their answers, a job's file, `/proc`), bounded by a deadline.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::http_support::{Connection, client, start_http, texts};
use super::postgres::{fresh_database, server_url};
use super::support::BOUND;

/// A TCP relay to the PostgreSQL server of `url` that can go silent: from then on every
/// byte either way is dropped and new connections are accepted but never reach the server.
struct Relay {
    silent: Arc<AtomicBool>,
}

enum Upstream {
    Tcp(String),
    Unix(std::path::PathBuf),
}

/// Copies `from` to `to` until either ends; once `silent`, what is read is dropped.
async fn pipe(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    silent: Arc<AtomicBool>,
) {
    let mut buffer = vec![0; 16 * 1024];
    loop {
        let read = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(read) => read,
        };
        if !silent.load(Ordering::SeqCst) && to.write_all(&buffer[..read]).await.is_err() {
            return;
        }
    }
}

async fn relay(client: tokio::net::TcpStream, upstream: Arc<Upstream>, silent: Arc<AtomicBool>) {
    if silent.load(Ordering::SeqCst) {
        // Held open, never answered.
        pipe(client, tokio::io::sink(), silent).await;
        return;
    }
    let (client_read, client_write) = client.into_split();
    match &*upstream {
        Upstream::Tcp(addr) => {
            let server = tokio::net::TcpStream::connect(addr).await.unwrap();
            let (server_read, server_write) = server.into_split();
            tokio::join!(
                pipe(client_read, server_write, silent.clone()),
                pipe(server_read, client_write, silent)
            );
        }
        Upstream::Unix(path) => {
            let server = tokio::net::UnixStream::connect(path).await.unwrap();
            let (server_read, server_write) = server.into_split();
            tokio::join!(
                pipe(client_read, server_write, silent.clone()),
                pipe(server_read, client_write, silent)
            );
        }
    }
}

impl Relay {
    /// A relay to the server of `url`, and the URL of the same database through it.
    async fn start(url: &str) -> (Self, String) {
        let config: tokio_postgres::Config = url.parse().unwrap();
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let upstream = match &config.get_hosts()[0] {
            tokio_postgres::config::Host::Tcp(host) => Upstream::Tcp(format!("{host}:{port}")),
            tokio_postgres::config::Host::Unix(folder) => {
                Upstream::Unix(folder.join(format!(".s.PGSQL.{port}")))
            }
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let silent = Arc::new(AtomicBool::new(false));
        let upstream = Arc::new(upstream);
        let flag = silent.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(relay(stream, upstream.clone(), flag.clone()));
            }
        });
        // A URL (the CLI tells a PostgreSQL store by its scheme).
        let user = config.get_user().unwrap_or("postgres");
        let password = config
            .get_password()
            .map(|p| format!(":{}", String::from_utf8(p.to_vec()).unwrap()))
            .unwrap_or_default();
        let relayed = format!(
            "postgresql://{user}{password}@127.0.0.1:{}/{}",
            addr.port(),
            config.get_dbname().unwrap()
        );
        (Self { silent }, relayed)
    }

    fn silence(&self) {
        self.silent.store(true, Ordering::SeqCst);
    }
}

/// The pids of live processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let state = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // A zombie runs nothing.
        let zombie = state
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z'));
        if !zombie && String::from_utf8_lossy(&cmdline).contains(marker) {
            pids.push(pid);
        }
    }
    pids
}

const TTL: &str = "6";

#[tokio::test]
async fn a_partitioned_host_stops_its_jobs_before_another_host_can_take_the_session() {
    let Some(url) = server_url() else { return };
    let store = fresh_database(&url).await;
    let (relay, relayed) = Relay::start(&store).await;
    let dir = tempfile::tempdir().unwrap();
    let a_dir = dir.path().join("a");
    let b_dir = dir.path().join("b");
    std::fs::create_dir_all(&a_dir).unwrap();
    std::fs::create_dir_all(&b_dir).unwrap();
    let instance = |id: &'static str, store: String, dir: std::path::PathBuf| async move {
        start_http(
            &dir,
            &[
                "--store",
                &store,
                "--host-id",
                id,
                "--lease-ttl",
                TTL,
                "--idle-release",
                "600",
                "--no-auth",
            ],
        )
        .await
    };
    let a = instance("inst-a", relayed, a_dir).await;
    // B reaches the server itself, and asks for the session from the moment A is cut off.
    let b = instance("inst-b", store.clone(), b_dir).await;
    let http = client();
    let mut on_a = Connection::open(&http, &a.url("part"), None).await.unwrap();
    let marker = format!("partition-{}", std::process::id());
    let ticks = dir.path().join("ticks");
    let command = format!(
        ": {marker}; while :; do echo tick >> {}; sleep 0.05; done",
        ticks.display()
    );
    let started = on_a
        .call(
            &http,
            "bash",
            json!({"command": command, "run_in_background": true}),
        )
        .await
        .unwrap();
    assert!(
        texts(&started)[0].starts_with("started background job bash-1"),
        "{started}"
    );
    let deadline = tokio::time::Instant::now() + BOUND;
    while processes_with(&marker).is_empty() || !ticks.exists() {
        assert!(tokio::time::Instant::now() < deadline, "the job never ran");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }

    relay.silence();
    let silenced = tokio::time::Instant::now();
    let mut stopped = None;
    // Polled every 50 ms: when A's job ended, and when B first got the session.
    let deadline = silenced + BOUND;
    let mut on_b = loop {
        if stopped.is_none() && processes_with(&marker).is_empty() {
            stopped = Some(silenced.elapsed());
        }
        if let Ok(connection) = Connection::open(&http, &b.url("part"), None).await {
            break connection;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "b never took the session: {:#?}",
            a.log.lock().unwrap()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let taken = silenced.elapsed();
    let alive = processes_with(&marker);
    assert!(
        alive.is_empty(),
        "processes {alive:?} of a's job alive when b took the session {taken:?} after the \
         partition: {:#?}",
        a.log.lock().unwrap()
    );
    let stopped = stopped.unwrap_or(taken);
    let before = std::fs::metadata(&ticks).unwrap().len();
    let listed = on_b.call(&http, "job_list", json!({})).await.unwrap();
    let text = texts(&listed);
    // B runs on the same machine: a process of A's job still running when B opened the
    // session would have been stopped by B's leftover check, and the job listed `killed`
    // (`stopped at the restart`); `failed` and lost says A had stopped it itself.
    assert_eq!(
        text[0].lines().next().unwrap(),
        format!("bash-1 [bash] failed — {command} (from before the restart)")
    );
    assert_eq!(
        text[1],
        format!(
            "background job bash-1 (bash: {command}) was lost [status: failed, the host \
             stopped while it ran]. Its output went with the stopped host."
        )
    );
    assert_eq!(std::fs::metadata(&ticks).unwrap().len(), before);
    tracing::info!(
        "a's job stopped {stopped:?} after the partition; b took the session after {taken:?}"
    );

    // A's next request lets the stopped session go and tries to open it again: the store
    // does not answer within the lease's TTL.
    let Ok(answer) = tokio::time::timeout(BOUND, on_a.call(&http, "job_list", json!({}))).await
    else {
        panic!("a does not answer: {:#?}", a.log.lock().unwrap());
    };
    let refused = answer.unwrap_err();
    assert_eq!(
        (refused.status, refused.json()),
        (
            503,
            json!({"error": "store_unavailable",
                "message": "the session store could not be reached; retry"})
        )
    );
    let log = a.log.lock().unwrap().join("\n");
    assert!(
        log.contains(
            "the session store confirmed no lease renewal for 4s, so this host \
        stopped the session's jobs and terminals before its lease (6s) could lapse"
        ),
        "{log}"
    );
    assert!(!log.contains("lease taken by"), "{log}");
    drop(a);
}
