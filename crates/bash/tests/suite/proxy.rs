//! The network by name with real processes: a job whose `sandbox.network` is a policy
//! reaches a host's loopback test server only through the server's proxy, only by an allowed
//! name, and is told what was refused. Each test counts the requests that reached the test
//! server.

use std::sync::{Arc, Mutex};

use pretty_assertions::assert_eq;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use turnkit_bash::{BashProcess, Sandbox, bash_outcome_with, with_refusals};
use turnkit_jobs::TerminalStatus;

use super::support::{finish, options};

/// `sandbox` if this host can provide it; otherwise a loud skip (a failure under CI=true).
fn provided(network: &serde_json::Value) -> Option<Arc<Sandbox>> {
    let sandbox: Sandbox =
        serde_json::from_value(serde_json::json!({ "network": network })).unwrap();
    match turnkit_bash::probe_sandbox(&sandbox) {
        Ok(_) => Some(Arc::new(sandbox)),
        Err(missing) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "sandbox test cannot run under CI: {missing}"
            );
            turnkit_testkit::skip::skipped(&format!(
                "this host cannot confine jobs ({missing}): run the tests as root on Linux"
            ));
            None
        }
    }
}

/// An HTTP server on the host's `127.0.0.1` answering `hello` to every request and keeping
/// the request line of each.
struct TestServer {
    port: u16,
    requests: Arc<Mutex<Vec<String>>>,
    _task: tokio_util::task::AbortOnDropHandle<()>,
}

impl TestServer {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                let seen = seen.clone();
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut chunk = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match stream.read(&mut chunk).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => head.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let text = String::from_utf8_lossy(&head);
                    let line = text.lines().next().unwrap_or_default().to_owned();
                    seen.lock().unwrap().push(line);
                    let _ = stream
                        .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
                        .await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        Self {
            port,
            requests,
            _task: tokio_util::task::AbortOnDropHandle::new(task),
        }
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

async fn run(command: &str, sandbox: Arc<Sandbox>) -> (String, String, BashProcess) {
    let mut options = options(command);
    options.sandbox = Some(sandbox);
    let process = BashProcess::spawn(options).unwrap();
    let end = finish(&process).await;
    let outcome = with_refusals(
        bash_outcome_with(&end, process.limit_hits()),
        process.refusals().as_deref(),
    );
    assert_eq!(outcome.status, TerminalStatus::Completed);
    (process.read(), outcome.detail.unwrap_or_default(), process)
}

/// curl printing the body and ` <status>` (` 000` for no answer), then `failed <exit code>`
/// when it failed (56: the CONNECT was answered 403; 97: the SOCKS5 connect was refused).
fn curl(args: &str) -> String {
    format!("{{ curl -sS {args} -w ' %{{http_code}}\\n' 2>/dev/null || echo \"failed $?\"; }}")
}

#[tokio::test]
async fn curl_reaches_an_allowed_name_by_every_protocol_and_not_its_address() {
    let Some(sandbox) = provided(&serde_json::json!(["localhost"])) else {
        return;
    };
    assert_eq!(
        turnkit_bash::probe_sandbox(&sandbox).unwrap(),
        "sandbox: writes only in the job's temporary folder (Landlock); network by name: allow \
         localhost (network namespace, loopback only; the server's HTTP and SOCKS5 proxy on \
         127.0.0.1:3128); no Unix sockets (seccomp)"
    );
    let server = TestServer::start().await;
    let port = server.port;
    let script = [
        // Plain HTTP through the proxy, a CONNECT tunnel, SOCKS5 with the name resolved by
        // the proxy.
        curl(&format!("http://localhost:{port}/plain")),
        curl(&format!("-p http://localhost:{port}/tunnel")),
        curl(&format!(
            "-x socks5h://127.0.0.1:3128 http://localhost:{port}/socks"
        )),
        // The same server by its address: refused three ways.
        curl(&format!("http://127.0.0.1:{port}/address")),
        curl(&format!("-p http://127.0.0.1:{port}/address")),
        curl(&format!(
            "-x socks5h://127.0.0.1:3128 http://127.0.0.1:{port}/address"
        )),
    ]
    .join("; ");
    let (output, detail, _process) = run(&script, sandbox).await;
    let refused = format!(
        "harness sandbox: 127.0.0.1:{port} is not allowed: the name is not in sandbox.network.allow\n 403"
    );
    assert_eq!(
        output,
        format!(
            "hello 200\nhello 200\nhello 200\n{refused}\n 000\nfailed 56\n 000\nfailed 97\n\
             network: 3 connections refused (127.0.0.1:{port} ×3)\n"
        )
    );
    assert_eq!(
        detail,
        format!("exit code: 0; network: 3 connections refused (127.0.0.1:{port} ×3)")
    );
    assert_eq!(
        server.requests(),
        [
            "GET /plain HTTP/1.1",
            "GET /tunnel HTTP/1.1",
            "GET /socks HTTP/1.1"
        ]
    );
}

#[tokio::test]
async fn without_the_proxy_nothing_leaves_the_job_not_even_a_name_lookup() {
    let Some(sandbox) = provided(&serde_json::json!(["localhost"])) else {
        return;
    };
    let server = TestServer::start().await;
    let port = server.port;
    let script = format!(
        "try() {{ if eval \"$2\" 2>/dev/null; then echo \"through: $1\"; else echo \"refused: $1\"; fi; }}; \
         try raw-loopback 'exec 3<>/dev/tcp/127.0.0.1/{port}'; \
         try raw-outside 'exec 3<>/dev/tcp/192.0.2.1/80'; \
         try lookup 'getent ahosts example.com'; \
         try noproxy 'curl -sS --noproxy \"*\" http://localhost:{port}/direct'"
    );
    let (output, detail, _process) = run(&script, sandbox).await;
    assert_eq!(
        output,
        "refused: raw-loopback\nrefused: raw-outside\nrefused: lookup\nrefused: noproxy\n"
    );
    assert_eq!(detail, "exit code: 0");
    assert_eq!(server.requests(), Vec::<String>::new());
}

#[tokio::test]
async fn a_denied_name_is_refused_under_an_allowed_wildcard_and_ports_bind() {
    let Some(sandbox) = provided(&serde_json::json!({
        "allow": ["*.example.org", "localhost"],
        "deny": ["blocked.example.org"],
        "ports": [443]
    })) else {
        return;
    };
    let server = TestServer::start().await;
    let port = server.port;
    let script = [
        curl("-p https://blocked.example.org/"),
        curl(&format!("http://localhost:{port}/port")),
    ]
    .join("; ");
    let (output, detail, _process) = run(&script, sandbox).await;
    assert_eq!(
        output,
        format!(
            " 000\nfailed 56\nharness sandbox: localhost:{port} is not allowed: the port is not in \
             sandbox.network.ports\n 403\n\
             network: 2 connections refused (blocked.example.org:443, localhost:{port})\n"
        )
    );
    assert_eq!(
        detail,
        format!(
            "exit code: 0; network: 2 connections refused (blocked.example.org:443, localhost:{port})"
        )
    );
    assert_eq!(server.requests(), Vec::<String>::new());
}

#[tokio::test]
async fn git_and_python_clients_honour_the_proxy_variables() {
    let Some(sandbox) = provided(&serde_json::json!(["localhost"])) else {
        return;
    };
    let server = TestServer::start().await;
    let port = server.port;
    let python = "import sys, urllib.request; \
                  print(urllib.request.urlopen(sys.argv[1]).read().decode())";
    let script = format!(
        "export GIT_TERMINAL_PROMPT=0; \
         git ls-remote http://localhost:{port}/repo.git >/dev/null 2>&1; \
         git ls-remote http://127.0.0.1:{port}/repo.git >/dev/null 2>&1; \
         python3 -c '{python}' http://localhost:{port}/python"
    );
    let (output, detail, _process) = run(&script, sandbox).await;
    assert_eq!(
        output,
        format!("hello\nnetwork: 1 connection refused (127.0.0.1:{port})\n")
    );
    assert_eq!(
        detail,
        format!("exit code: 0; network: 1 connection refused (127.0.0.1:{port})")
    );
    let requests = server.requests();
    assert_eq!(
        requests,
        [
            "GET /repo.git/info/refs?service=git-upload-pack HTTP/1.1",
            // The server's answer is not git's: git tries the dumb protocol next.
            "GET /repo.git/HEAD HTTP/1.1",
            "GET /python HTTP/1.1"
        ]
    );
}

#[tokio::test]
async fn job_output_and_the_settlement_end_with_the_refusals_through_the_tools() {
    if provided(&serde_json::json!(["localhost"])).is_none() {
        return;
    }
    let server = TestServer::start().await;
    let port = server.port;
    let host = super::support::Host::new(
        &serde_json::json!({"killGraceMs": 300, "sandbox": {"network": ["localhost"]}}),
        serde_json::json!({}),
    );
    host.session("s1");
    let command = format!(
        "curl -s http://example.com/; curl -s http://example.com/; curl -s http://example.com/; \
         curl -s http://localhost:{port}/ok; exit 7"
    );
    let out = host
        .call(
            Some("s1"),
            "bash",
            serde_json::json!({"command": command, "description": "fetch", "run_in_background": true}),
        )
        .await;
    assert!(!out.is_error, "{}", out.text());
    let refused = "harness sandbox: example.com:80 is not allowed: the name is not in \
                   sandbox.network.allow\n";
    assert_eq!(
        host.collect(Some("s1"), "bash-1").await,
        format!(
            "{refused}{refused}{refused}hello\nnetwork: 3 connections refused (example.com:80 ×3)\n\
             [status: completed, exit code: 7; network: 3 connections refused (example.com:80 ×3)]"
        )
    );
    let snapshot = host.settled(Some("s1"), "bash-1").await;
    assert_eq!(
        snapshot.detail.as_deref(),
        Some("exit code: 7; network: 3 connections refused (example.com:80 ×3)")
    );
    assert_eq!(server.requests(), ["GET /ok HTTP/1.1"]);
}
