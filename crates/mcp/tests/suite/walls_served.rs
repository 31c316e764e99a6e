//! The walls of `harness mcp --http`, tried by the attacker they are for: a `bash` job of
//! session `a-1` (reached with a token limited to `a-`) tries to read session `b-1`'s log, the
//! token file and the server's `/proc/<pid>/environ` and `cmdline`, to append to `b-1`'s log,
//! to stop the server, to connect to a Unix socket of the host with the network off, and to
//! find the server's secrets in its own environment. Nothing gets through, and the summary the
//! model reads names each wall. The same attempts with `--no-walls` get through (the test can
//! fail).

use std::os::unix::net::UnixListener;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

use super::http_support::{Connection, HttpServer, client, start_http_with, texts};

const TOKEN_A: &str = "token-a-0123456789abcdef";
const TOKEN_B: &str = "token-b-0123456789abcdef";
/// In the server's environment only: a walled job must not see it.
const SECRET: &str = "HARNESS_WALLS_TEST_SECRET";
const SECRET_VALUE: &str = "s3cret-value-of-the-server";
/// What `b-1` writes to its plan: found in its log by whoever reads it.
const MARKER: &str = "plan of tenant b";

/// A Unix socket of the host (outside every hidden folder) counting the connections it
/// accepts.
fn host_socket(path: &Path) -> Arc<AtomicUsize> {
    let listener = UnixListener::bind(path).unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            if stream.is_ok() {
                count.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    accepted
}

/// The attacker's script: one `GOT <what>` line per attempt that got through, then `done`.
/// `stop` is the signal sent to the server (`STOP` walled; `0`, which only checks reach,
/// unwalled, so the server keeps running).
fn attack(sessions: &Path, tokens: &Path, socket: &Path, server: u32, stop: &str) -> String {
    let (s, t, u) = (sessions.display(), tokens.display(), socket.display());
    format!(
        r#"
grep -q '{MARKER}' {s}/b-1.jsonl 2>/dev/null && echo 'GOT read b-1 log'
ls {s} 2>/dev/null | grep -q b-1 && echo 'GOT list sessions'
grep -q {TOKEN_B} {t} 2>/dev/null && echo 'GOT read token file'
tr '\0' '\n' < /proc/{server}/environ 2>/dev/null | grep -q {SECRET} && echo 'GOT server environ'
tr '\0' ' ' < /proc/{server}/cmdline 2>/dev/null | grep -q token-file && echo 'GOT server cmdline'
echo '{{"seq":99,"type":"forged"}}' >> {s}/b-1.jsonl 2>/dev/null && echo 'GOT append to b-1 log'
kill -{stop} {server} 2>/dev/null && echo 'GOT signal the server'
perl -MIO::Socket::UNIX -e 'IO::Socket::UNIX->new(Peer => $ARGV[0]) or exit 1' {u} 2>/dev/null && echo 'GOT unix socket'
env | grep -q {SECRET} && echo 'GOT secret in the environment'
echo done
"#
    )
}

struct Tenants {
    server: HttpServer,
    b: Connection,
    a: Connection,
}

/// The server over `dir/sessions` with tokens A (`a-`) and B (`b-`) and bash's `sandbox` (if
/// any); `b-1` has its plan.
async fn serve(dir: &Path, sandbox: Option<Value>, args: &[&str]) -> Tenants {
    let sessions = dir.join("sessions");
    let tokens = dir.join("tokens");
    std::fs::write(&tokens, format!("{TOKEN_A} a-\n{TOKEN_B} b-\n")).unwrap();
    let mut config = json!({"todo": {"allowParallelInProgress": false}, "bash": {}});
    if let Some(sandbox) = sandbox {
        config["bash"]["sandbox"] = sandbox;
    }
    let mut all = vec![
        "--dir",
        sessions.to_str().unwrap(),
        "--token-file",
        tokens.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let server = start_http_with(dir, &config, &all, &[(SECRET, SECRET_VALUE)]).await;
    let http = client();
    let mut b = Connection::open(&http, &server.url("b-1"), Some(TOKEN_B))
        .await
        .unwrap();
    let todos = json!({"todos": [{"content": MARKER, "status": "pending"}]});
    b.call(&http, "todo_write", todos).await.unwrap();
    // Token A cannot reach b-1 itself.
    assert!(
        Connection::open(&http, &server.url("b-1"), Some(TOKEN_A))
            .await
            .is_err()
    );
    let a = Connection::open(&http, &server.url("a-1"), Some(TOKEN_A))
        .await
        .unwrap();
    Tenants { server, b, a }
}

/// Runs the attack from `a-1`; the `GOT` lines.
async fn got_through(tenants: &mut Tenants, dir: &Path, socket: &Path, stop: &str) -> Vec<String> {
    let pid = tenants.server.child.id().unwrap();
    let script = attack(
        &dir.join("sessions"),
        &dir.join("tokens"),
        socket,
        pid,
        stop,
    );
    let http = client();
    let result = tenants
        .a
        .call(&http, "bash", json!({"command": script}))
        .await
        .unwrap();
    let text = texts(&result).join("\n");
    assert!(text.contains("done"), "{text}");
    text.lines()
        .filter(|line| line.starts_with("GOT "))
        .map(str::to_owned)
        .collect()
}

fn log_of_b(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("sessions/b-1.jsonl")).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_served_job_reaches_nothing_of_another_session_or_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let socket = outside.path().join("host.sock");
    let accepted = host_socket(&socket);
    let mut tenants = serve(dir.path(), Some(json!({"network": false})), &[]).await;

    // The startup line names the walls.
    let walls = tenants
        .server
        .start_lines
        .iter()
        .find(|line| line.starts_with("harness mcp: walls of every bash job: sandbox: "))
        .unwrap_or_else(|| panic!("no walls line in {:#?}", tenants.server.start_lines))
        .clone();

    let got = got_through(&mut tenants, dir.path(), &socket, "STOP").await;
    assert_eq!(got, Vec::<String>::new());
    assert_eq!(accepted.load(Ordering::SeqCst), 0);
    assert!(!log_of_b(dir.path()).contains("forged"));
    // The server still answers (it was not stopped), and b-1's plan is intact.
    let http = client();
    let listed = tenants.b.call(&http, "job_list", json!({})).await.unwrap();
    assert!(texts(&listed)[0].starts_with("(no background jobs)"));
    assert!(log_of_b(dir.path()).contains(MARKER));

    // The model's summary (the bash tool's description, the same line as the startup's)
    // names each wall.
    let summary = walls
        .strip_prefix("harness mcp: walls of every bash job: ")
        .unwrap();
    let sessions = std::fs::canonicalize(dir.path().join("sessions")).unwrap();
    let tokens = std::fs::canonicalize(dir.path().join("tokens")).unwrap();
    let config = std::fs::canonicalize(dir.path().join("config.json")).unwrap();
    for wall in [
        sessions.display().to_string(),
        tokens.display().to_string(),
        config.display().to_string(),
        "(mount namespace)".to_owned(),
        "processes isolated (PID namespace, own /proc".to_owned(),
        "no signals or abstract Unix sockets outside the job".to_owned(),
        "network off".to_owned(),
        "no Unix sockets".to_owned(),
        "environment: only PATH, HOME".to_owned(),
    ] {
        assert!(summary.contains(&wall), "{wall:?} not in {summary}");
    }
    let listed = tenants.a.call(&http, "job_list", json!({})).await.unwrap();
    let listed = texts(&listed).join("\n");
    assert!(
        listed.contains(&format!("bash jobs run confined: {summary}")),
        "{listed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_walls_the_same_job_gets_through() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let socket = outside.path().join("host.sock");
    let accepted = host_socket(&socket);
    let mut tenants = serve(dir.path(), None, &["--no-walls"]).await;
    assert!(
        tenants
            .server
            .start_lines
            .iter()
            .any(|line| line.starts_with("harness mcp: WARNING: --no-walls: ")),
        "{:#?}",
        tenants.server.start_lines
    );
    let got = got_through(&mut tenants, dir.path(), &socket, "0").await;
    // No sandbox and no walls: every attempt gets through.
    assert_eq!(
        got,
        [
            "GOT read b-1 log",
            "GOT list sessions",
            "GOT read token file",
            "GOT server environ",
            "GOT server cmdline",
            "GOT append to b-1 log",
            "GOT signal the server",
            "GOT unix socket",
            "GOT secret in the environment",
        ]
    );
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
    assert!(log_of_b(dir.path()).contains("forged"));
}
