//! `harness inspect` live and stoppable, against the real binaries: a `todo_write` made by a
//! real `harness mcp` (stdio) reaches an open page's event stream at once, not at the next
//! listing of the folder; SIGTERM and SIGINT end the inspector while pages hold connections
//! open (an event stream, an idle keep-alive connection, a request never finished).

#![expect(
    clippy::unwrap_used,
    clippy::print_stdout,
    reason = "a test stops on failure and reports what it measured"
)]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;

/// How long a change may take to reach the page in these tests: well under the 5 s of the
/// folder's periodic listing, which would otherwise find the change by itself.
const LIVE_BOUND: Duration = Duration::from_secs(3);

/// A running child process, killed on drop.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `harness inspect --no-auth` on `dir`, and the `host:port` it printed.
fn inspect(dir: &Path) -> (Running, String) {
    let (child, addr) = inspect_child(dir);
    (Running(child), addr)
}

fn inspect_child(dir: &Path) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["inspect", "--no-auth", "--dir"])
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap()
        .to_owned();
    (child, addr)
}

/// A `harness mcp` over stdio on session `s1` of `dir`, initialized.
struct Mcp {
    _child: Running,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Mcp {
    fn start(dir: &Path, config: &Path) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_harness"))
            .args(["mcp", "--session", "s1", "--dir"])
            .arg(dir)
            .arg("--config")
            .arg(config)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut mcp = Self {
            _child: Running(child),
            stdin,
            stdout,
        };
        let answer = mcp.call(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"inspect-live","version":"1"}}}"#,
        );
        assert!(answer.contains(r#""id":1,"result""#), "{answer}");
        writeln!(
            mcp.stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )
        .unwrap();
        mcp
    }

    /// Sends one request line and returns the answer line.
    fn call(&mut self, request: &str) -> String {
        writeln!(self.stdin, "{request}").unwrap();
        self.stdin.flush().unwrap();
        let mut answer = String::new();
        self.stdout.read_line(&mut answer).unwrap();
        answer
    }
}

/// An open `/updates` event stream, past its response head.
struct Updates {
    stream: TcpStream,
    /// What was read and not yet matched.
    pending: String,
}

impl Updates {
    fn open(addr: &str) -> Self {
        let mut stream = TcpStream::connect(addr).unwrap();
        write!(stream, "GET /updates HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
        let mut updates = Self {
            stream,
            pending: String::new(),
        };
        let head = updates.until("\r\n\r\n", LIVE_BOUND).unwrap();
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
        assert!(
            head.contains("content-type: text/event-stream\r\n"),
            "{head}"
        );
        updates
    }

    /// Reads until `needle` arrived (returning what came up to and including it) or `bound`
    /// passed (`None`).
    fn until(&mut self, needle: &str, bound: Duration) -> Option<String> {
        let deadline = Instant::now() + bound;
        loop {
            if let Some(at) = self.pending.find(needle) {
                let rest = self.pending.split_off(at + needle.len());
                return Some(std::mem::replace(&mut self.pending, rest));
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            self.stream
                .set_read_timeout(Some(left.max(Duration::from_millis(1))))
                .unwrap();
            let mut buf = [0u8; 4096];
            match self.stream.read(&mut buf) {
                Ok(0) => return None,
                Ok(n) => self.pending.push_str(&String::from_utf8_lossy(&buf[..n])),
                Err(error)
                    if matches!(
                        error.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(error) => panic!("reading the event stream: {error}"),
            }
        }
    }
}

/// One HTTP/1.1 GET (the connection closed after it); the whole response.
fn get(addr: &str, path: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

fn folder() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.json");
    std::fs::write(&config, r#"{"todo":{"allowParallelInProgress":false}}"#).unwrap();
    let sessions = dir.path().join("sessions");
    std::fs::create_dir(&sessions).unwrap();
    (dir, sessions, config)
}

#[test]
fn a_todo_write_by_harness_mcp_reaches_an_open_page_at_once() {
    let (_dir, sessions, config) = folder();
    // The session exists before the inspector starts: the server created it (under a
    // temporary name, linked into place) and writes through the handle it opened then.
    let mut mcp = Mcp::start(&sessions, &config);
    assert!(sessions.join("s1.jsonl").exists());
    let (_inspector, addr) = inspect(&sessions);
    let mut updates = Updates::open(&addr);
    let mut latencies = Vec::new();
    for n in 1..=5 {
        let sent = Instant::now();
        let answer = mcp.call(&format!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"todo_write","arguments":{{"todos":[{{"content":"Step {n}","status":"in_progress"}}]}}}}}}"#,
            n + 1
        ));
        assert!(answer.contains(r#""isError":false"#), "{answer}");
        // One chunk of the chunked body: its size line, then the event.
        let change = updates.until("\n\n", LIVE_BOUND);
        let latency = sent.elapsed();
        assert_eq!(
            change
                .as_deref()
                .and_then(|chunk| chunk.trim_start_matches("\r\n").split_once("\r\n")),
            Some(("18", "event: change\ndata: s1\n\n")),
            "todo_write {n}: no change announced within {LIVE_BOUND:?}"
        );
        let page = get(&addr, "/session/s1");
        assert!(page.contains(&format!("Step {n}")), "{page}");
        latencies.push(latency);
    }
    println!("todo_write by harness mcp to the page's change event: {latencies:?}");
}

/// Sends `signal` (its name for `kill`) to an inspector with three connections open and
/// expects it to exit with status 0.
fn stops_with_pages_open(signal: &str) {
    let (_dir, sessions, _config) = folder();
    std::fs::write(sessions.join("s1.jsonl"), "{\"id\":\"s1\"}\n").unwrap();
    let (mut inspector, addr) = inspect_child(&sessions);
    // A page's event stream, an idle keep-alive connection after a page, and a request whose
    // head never ends.
    let mut updates = Updates::open(&addr);
    let mut idle = TcpStream::connect(&addr).unwrap();
    write!(idle, "GET /session/s1 HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut first = [0u8; 12];
    idle.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"HTTP/1.1 200");
    let mut unfinished = TcpStream::connect(&addr).unwrap();
    write!(unfinished, "GET / HTTP/1.1\r\nHost: {addr}\r\n").unwrap();

    let pid = inspector.id().to_string();
    let (exited, exit) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = exited.send(inspector.wait());
    });
    let asked = Instant::now();
    let kill = |signal: &str| {
        Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .unwrap()
    };
    assert!(kill(signal).success());
    let Ok(status) = exit.recv_timeout(Duration::from_secs(10)) else {
        kill("KILL");
        panic!("SIG{signal}: still running after 10 s");
    };
    let status = status.unwrap();
    let took = asked.elapsed();
    assert_eq!(status.code(), Some(0), "SIG{signal}");
    assert_eq!(updates.until("never", Duration::from_secs(1)), None);
    println!("SIG{signal} with three connections open: exited 0 after {took:?}");
}

#[test]
fn sigterm_ends_the_inspector_with_pages_open() {
    stops_with_pages_open("TERM");
}

#[test]
fn sigint_ends_the_inspector_with_pages_open() {
    stops_with_pages_open("INT");
}
