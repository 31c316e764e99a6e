//! JSONL store promises that need real processes: a file-size limit that cuts writes short, two
//! processes racing for one session, and `kill -9` at random moments (the crash torture).
//!
//! Each driver runs this test binary again as a child, selecting [`child_process_entry`] by
//! name and its part by the `HARNESS_STORE_CHILD` variable, set on the child's command only.
#![cfg(unix)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc as std_mpsc;
use std::time::{Duration, Instant};

use chrono::Utc;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use turnkit_core::{
    Clock, JsonlStore, SessionEvent, SessionHeader, SessionId, SessionStore, StoreError,
};

use super::store::{Frozen, names_in};

const MODE: &str = "HARNESS_STORE_CHILD";
const DIR: &str = "HARNESS_STORE_DIR";
const SESSION: &str = "HARNESS_STORE_SESSION";
/// What the child means for the driver follows this on a line (libtest prints its own lines
/// too, and starts the child's first line with the test's name).
const SAY: &str = "child: ";

fn child_args(mode: &str, dir: &Path, session: &str, command: &mut Command) {
    command
        .args([
            "suite::store_process::child_process_entry",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(MODE, mode)
        .env(DIR, dir)
        .env(SESSION, session)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
}

fn child(mode: &str, dir: &Path, session: &str) -> Command {
    let mut command = Command::new(std::env::current_exe().unwrap());
    child_args(mode, dir, session, &mut command);
    command
}

/// The child started through `sh` with `SIGXFSZ` ignored (an ignored signal stays ignored
/// across `exec`), so a write past `RLIMIT_FSIZE` fails with `EFBIG` instead of killing it.
fn child_ignoring_sigxfsz(mode: &str, dir: &Path, session: &str) -> Command {
    let mut command = Command::new("/bin/sh");
    command
        .arg("-c")
        .arg("trap '' XFSZ; exec \"$0\" \"$@\"")
        .arg(std::env::current_exe().unwrap());
    child_args(mode, dir, session, &mut command);
    command
}

/// What the child said, in order, after it exited successfully.
fn said(mut command: Command) -> Vec<String> {
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "child failed: {:?}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    lines_said(&stdout)
}

fn lines_said(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(said_on)
        .map(str::to_owned)
        .collect()
}

fn said_on(line: &str) -> Option<&str> {
    line.split_once(SAY).map(|(_, said)| said)
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{SAY}{line}").unwrap();
    out.flush().unwrap();
}

#[tokio::test]
#[ignore = "the child process of the other tests in this file, which start it"]
async fn child_process_entry() {
    let Ok(mode) = std::env::var(MODE) else {
        return;
    };
    let dir = PathBuf::from(std::env::var(DIR).unwrap());
    let id = SessionId::from(std::env::var(SESSION).unwrap());
    let store = JsonlStore::new(&dir, Arc::new(Frozen)).unwrap();
    match mode.as_str() {
        "fsize-flush" => fsize_flush(&store, &id).await,
        "fsize-create" => fsize_create(&store, &id),
        "race" => race(&store, &id),
        "torture" => torture_writer(&store, &id).await,
        other => panic!("unknown child mode {other:?}"),
    }
}

/// Sets this process's soft `RLIMIT_FSIZE` in bytes (`None`: unlimited).
fn limit_file_size(bytes: Option<u64>) {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let maximum = getrlimit(Resource::Fsize).maximum;
    setrlimit(
        Resource::Fsize,
        Rlimit {
            current: bytes,
            maximum,
        },
    )
    .unwrap();
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().len()
}

async fn fsize_flush(store: &JsonlStore, id: &SessionId) {
    let path = store.path_of(id).unwrap();
    let session = store.create(SessionHeader::new(id.clone())).unwrap();
    session.append("e", json!({"n": 1})).unwrap();
    say(&format!("flush 1: {:?}", session.flush().await));
    let durable = file_len(&path);
    // The next line is longer than 20 bytes: its write really stops 20 bytes in.
    limit_file_size(Some(durable + 20));
    session.append("e", json!({"n": 2})).unwrap();
    for attempt in [2, 3] {
        let result = session.flush().await.map_err(|e| e.to_string());
        say(&format!("flush {attempt}: {result:?}"));
        say(&format!(
            "length after flush {attempt}: {}",
            file_len(&path)
        ));
    }
    limit_file_size(None);
    session.append("e", json!({"n": 3})).unwrap();
    say(&format!("flush 4: {:?}", session.flush().await));
    drop(session);
    let seqs: Vec<u64> = store
        .open(id)
        .unwrap()
        .events()
        .iter()
        .map(|e| e.seq)
        .collect();
    say(&format!(
        "durable before the limit: {durable}; reopened: {seqs:?}"
    ));
}

fn fsize_create(store: &JsonlStore, id: &SessionId) {
    // Smaller than the header line: create's write stops 5 bytes in.
    limit_file_size(Some(5));
    match store.create(SessionHeader::new(id.clone()).with_time_zone("Europe/Paris")) {
        Ok(_) => say("create 1: ok"),
        Err(StoreError::Io { source, .. }) => say(&format!("create 1: {:?}", source.kind())),
        Err(other) => say(&format!("create 1: {other}")),
    }
    say(&format!("files: {:?}", names_in(store.dir())));
    say(&format!(
        "open: {:?}",
        store.open(id).err().map(|e| e.to_string())
    ));
    limit_file_size(None);
    let created = store.create(SessionHeader::new(id.clone()).with_time_zone("Europe/Paris"));
    say(&format!("create 2: {:?}", created.map(|s| s.len())));
    say(&format!("files: {:?}", names_in(store.dir())));
}

fn race(store: &JsonlStore, id: &SessionId) {
    match store.open(id) {
        Ok(session) => {
            say("won");
            // Hold the session until the driver closes our stdin.
            let mut sink = Vec::new();
            std::io::stdin().read_to_end(&mut sink).unwrap();
            say(&format!("released with {} events", session.len()));
        }
        Err(error) => say(&error.to_string()),
    }
}

#[test]
fn a_flush_cut_short_by_the_file_size_limit_is_retried_without_duplicated_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s1.jsonl");
    let said = said(child_ignoring_sigxfsz("fsize-flush", dir.path(), "s1"));
    let header = "{\"id\":\"s1\"}\n";
    let durable = header.len() + event_line_len(1, "{\"n\":1}");
    let too_large = format!(
        "i/o error persisting session s1: {}: File too large (os error 27)",
        path.display()
    );
    assert_eq!(
        said,
        vec![
            "flush 1: Ok(())".to_owned(),
            format!("flush 2: Err({too_large:?})"),
            format!("length after flush 2: {durable}"),
            format!("flush 3: Err({too_large:?})"),
            format!("length after flush 3: {durable}"),
            "flush 4: Ok(())".to_owned(),
            format!("durable before the limit: {durable}; reopened: [1, 2, 3]"),
        ]
    );
    let event = |seq: u64| {
        format!(
            "{{\"seq\":{seq},\"type\":\"e\",\"time\":\"2026-08-05T12:00:00.000Z\",\"data\":{{\"n\":{seq}}}}}\n"
        )
    };
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        format!("{header}{}{}{}", event(1), event(2), event(3))
    );
}

/// The length of the line of event `seq` of type `e` with payload `data`.
fn event_line_len(seq: u64, data: &str) -> usize {
    format!(
        "{{\"seq\":{seq},\"type\":\"e\",\"time\":\"2026-08-05T12:00:00.000Z\",\"data\":{data}}}\n"
    )
    .len()
}

#[test]
fn a_create_cut_short_by_the_file_size_limit_leaves_no_session() {
    let dir = tempfile::tempdir().unwrap();
    let said = said(child_ignoring_sigxfsz("fsize-create", dir.path(), "s1"));
    assert_eq!(
        said,
        vec![
            "create 1: FileTooLarge",
            "files: []",
            "open: Some(\"session s1 not found\")",
            "create 2: Ok(0)",
            "files: [\"s1.jsonl\"]",
        ]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("s1.jsonl")).unwrap(),
        "{\"id\":\"s1\",\"timeZone\":\"Europe/Paris\"}\n"
    );
}

#[tokio::test]
async fn two_processes_racing_to_resume_one_session_exactly_one_wins() {
    let dir = tempfile::tempdir().unwrap();
    let store = JsonlStore::new(dir.path(), Arc::new(Frozen)).unwrap();
    let session = store.create(SessionHeader::new("s1")).unwrap();
    session.append("a", json!({})).unwrap();
    session.append("b", json!({})).unwrap();
    session.flush().await.unwrap();
    drop(session);
    let mut children: Vec<Child> = (0..2)
        .map(|_| {
            let mut command = child("race", dir.path(), "s1");
            command.stdin(Stdio::piped());
            command.spawn().unwrap()
        })
        .collect();
    let mut readers: Vec<_> = children
        .iter_mut()
        .map(|c| BufReader::new(c.stdout.take().unwrap()))
        .collect();
    // Each child's first word, read while the winner still holds the session.
    let mut first: Vec<String> = readers
        .iter_mut()
        .map(|reader| {
            loop {
                let mut line = String::new();
                assert_ne!(
                    reader.read_line(&mut line).unwrap(),
                    0,
                    "child said nothing"
                );
                if let Some(said) = said_on(line.trim_end()) {
                    break said.to_owned();
                }
            }
        })
        .collect();
    first.sort();
    let path = dir.path().join("s1.jsonl");
    assert_eq!(
        first,
        vec![
            format!(
                "session file {} is locked by another open handle",
                path.display()
            ),
            "won".to_owned(),
        ]
    );
    let mut rest = Vec::new();
    for (mut child, mut reader) in children.into_iter().zip(readers) {
        drop(child.stdin.take());
        let mut stdout = String::new();
        reader.read_to_string(&mut stdout).unwrap();
        assert!(child.wait().unwrap().success());
        rest.extend(lines_said(&stdout));
    }
    assert_eq!(rest, vec!["released with 2 events".to_owned()]);
    assert_eq!(store.open(&SessionId::from("s1")).unwrap().len(), 2);
}

// ---- The crash torture -------------------------------------------------------------------

/// A small deterministic generator (xorshift64*), seeded per run and printed on failure.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

const TORTURE_TYPE: &str = "torture";

/// The payload of event `seq`: mostly short lines, every 13th one 20–50 KB, so that a kill
/// often lands inside a write of several pages.
fn torture_data(seq: u64) -> Value {
    let len = if seq.is_multiple_of(13) {
        20_000 + (seq * 7_919) % 30_000
    } else {
        (seq * 7_919) % 200
    };
    let fill = char::from(b'a' + (seq % 26) as u8);
    json!({"n": seq, "pad": fill.to_string().repeat(len as usize)})
}

fn torture_event(seq: u64) -> SessionEvent {
    SessionEvent {
        seq,
        r#type: TORTURE_TYPE.to_owned(),
        time: Frozen.now(),
        data: torture_data(seq),
    }
}

/// Appends batches of 1–4 events and flushes each, saying `ack <seq>` after every flush that
/// returned `Ok`, until it is killed.
async fn torture_writer(store: &JsonlStore, id: &SessionId) {
    let session = match store.open(id) {
        Ok(session) => session,
        Err(StoreError::NotFound(_)) => store.create(SessionHeader::new(id.clone())).unwrap(),
        Err(other) => panic!("open failed: {other}"),
    };
    say(&format!("opened {}", session.len()));
    let mut rng = Rng(u64::from(std::process::id()) | 1);
    loop {
        for _ in 0..=rng.below(4) {
            let seq = session.len() + 1;
            session.append(TORTURE_TYPE, torture_data(seq)).unwrap();
        }
        session.flush().await.unwrap();
        say(&format!("ack {}", session.len()));
    }
}

#[derive(Debug, Default)]
struct TortureReport {
    kills: usize,
    torn_tails_cut: usize,
    killed_before_create: usize,
    unacknowledged_kept: usize,
    acknowledged: u64,
    stray_temp_files: usize,
}

/// Kills a writer `kills` times at random moments, and after each kill reopens its session
/// and checks the file byte for byte: every acknowledged event is there, nothing else but
/// later events in order, and only an unterminated last line was cut. Reports what it saw
/// to stderr.
#[expect(
    clippy::print_stderr,
    reason = "the torture reports its figures (seen with --nocapture)"
)]
fn torture(kills: usize) -> TortureReport {
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let seed = Utc::now().timestamp_nanos_opt().unwrap_or(1) as u64 | 1;
    let mut rng = Rng(seed);
    let store = JsonlStore::new(dir.path(), Arc::new(Frozen)).unwrap();
    let mut report = TortureReport::default();
    // Per session: the highest acknowledged seq, and the expected file bytes so far.
    let mut acked: BTreeMap<String, u64> = BTreeMap::new();
    let mut expected: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for cycle in 0..kills {
        // A fresh session every 10 kills keeps files small and puts kills inside `create`.
        let id = format!("t{}", cycle / 10);
        let context = format!("seed {seed}, cycle {cycle}, session {id}");
        let mut child = child("torture", dir.path(), &id).spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (lines_tx, lines) = std_mpsc::channel::<String>();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = lines_tx.send(line);
            }
        });
        let mut seen = Vec::new();
        if rng.below(4) == 0 {
            // Early: during start-up, open (and its torn-tail cut) or create.
            std::thread::sleep(Duration::from_micros(rng.below(4_000)));
        } else {
            // Later: after 0–2 acknowledged flushes, so most kills land in the append, write
            // and sync loop.
            let acks_first = rng.below(3);
            let deadline = Instant::now() + Duration::from_secs(30);
            let mut acks = 0;
            loop {
                let line = lines
                    .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                    .unwrap_or_else(|_| panic!("{context}: the writer stalled: {seen:?}"));
                match said_on(&line) {
                    Some(said) if said.starts_with("opened") && acks_first == 0 => {
                        seen.push(line);
                        break;
                    }
                    Some(said) if said.starts_with("ack ") => acks += 1,
                    _ => {}
                }
                seen.push(line);
                if acks_first > 0 && acks == acks_first {
                    break;
                }
            }
            std::thread::sleep(Duration::from_micros(rng.below(3_000)));
        }
        child.kill().unwrap();
        let status = child.wait().unwrap();
        reader.join().unwrap();
        seen.extend(lines.try_iter());
        if status.signal() != Some(9) {
            let mut stderr = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut stderr)
                .unwrap();
            panic!("{context}: the writer was not killed but ended {status:?}: {seen:?}\n{stderr}");
        }
        report.kills += 1;
        let said = lines_said(&seen.join("\n"));
        let newly_acked = said
            .iter()
            .filter_map(|line| line.strip_prefix("ack "))
            .map(|n| n.parse::<u64>().unwrap())
            .max()
            .unwrap_or(0);
        let acked = acked.entry(id.clone()).or_default();
        *acked = (*acked).max(newly_acked);
        let path = dir.path().join(format!("{id}.jsonl"));
        match JsonlStore::inspect(&path) {
            Ok(file) => report.torn_tails_cut += usize::from(file.torn.is_some()),
            Err(StoreError::NotFound(_)) => {}
            Err(other) => panic!("{context}: {other}"),
        }
        let session = match store.open(&SessionId::from(id.as_str())) {
            Ok(session) => session,
            Err(StoreError::NotFound(_)) => {
                assert_eq!(*acked, 0, "{context}: acknowledged events but no file");
                report.killed_before_create += 1;
                continue;
            }
            Err(other) => panic!("{context}: reopen failed: {other}"),
        };
        let len = session.len();
        assert!(
            len >= *acked,
            "{context}: {len} events, {acked} acknowledged"
        );
        report.unacknowledged_kept += usize::from(len > *acked);
        drop(session);
        let want = expected.entry(id.clone()).or_insert_with(|| {
            let mut bytes = serde_json::to_vec(&SessionHeader::new(id.as_str())).unwrap();
            bytes.push(b'\n');
            bytes
        });
        let mut have_lines = want.iter().filter(|&&b| b == b'\n').count() as u64 - 1;
        while have_lines < len {
            have_lines += 1;
            serde_json::to_writer(&mut *want, &torture_event(have_lines)).unwrap();
            want.push(b'\n');
        }
        let bytes = std::fs::read(&path).unwrap();
        // Events the writer wrote but did not live to acknowledge may stay; they must be
        // the next events in order, which the exact comparison of the whole file shows.
        assert!(
            bytes == *want,
            "{context}: the file differs from the expected {len} events ({} bytes vs {})",
            bytes.len(),
            want.len()
        );
    }
    report.acknowledged = acked.values().sum();
    report.stray_temp_files = names_in(dir.path())
        .iter()
        .filter(|name| name.starts_with('.'))
        .count();
    let mut ids: Vec<SessionId> = acked
        .keys()
        .map(|id| SessionId::from(id.as_str()))
        .collect();
    ids.sort();
    ids.retain(|id| dir.path().join(format!("{}.jsonl", id.as_str())).exists());
    assert_eq!(
        store.list(),
        ids,
        "seed {seed}: stray files are not sessions"
    );
    eprintln!("crash torture: {report:?} in {:?}", started.elapsed());
    report
}

#[test]
fn crash_torture_200_kills_lose_no_acknowledged_event() {
    assert_eq!(torture(200).kills, 200);
}

/// The long run: 3,000 kills, or `HARNESS_CRASH_TORTURE_KILLS` of them (`.ci/run` runs
/// 1,000; docs/testing.md).
#[test]
#[ignore = "long: 3,000 kills (one to three minutes); the 200-kill run above is in every test run"]
fn crash_torture_many_kills_lose_no_acknowledged_event() {
    let kills = std::env::var("HARNESS_CRASH_TORTURE_KILLS").map_or(3_000, |n| {
        n.parse()
            .unwrap_or_else(|e| panic!("HARNESS_CRASH_TORTURE_KILLS={n:?}: {e}"))
    });
    assert_eq!(torture(kills).kills, kills);
}

/// Another process holding the session file's lock (here `flock`, standing for a child that
/// shares the descriptor between `fork` and `exec`): a brief hold is waited out, a long one
/// is `Locked`.
#[test]
fn a_lock_held_for_a_moment_by_another_process_is_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let store = JsonlStore::new(dir.path(), Arc::new(turnkit_core::SystemClock)).unwrap();
    drop(store.create(SessionHeader::new("s1")).unwrap());
    let path = dir.path().join("s1.jsonl");
    let hold = |seconds: &str| {
        let mut holder = Command::new("flock")
            .arg(&path)
            .args(["sh", "-c", &format!("echo held; sleep {seconds}")])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(holder.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line, "held\n");
        holder
    };
    let mut brief = hold("0.03");
    assert_eq!(store.open(&SessionId::from("s1")).unwrap().len(), 0);
    brief.wait().unwrap();
    let mut long = hold("2");
    let Err(error) = store.open(&SessionId::from("s1")) else {
        panic!("opened a session whose lock another process holds");
    };
    assert!(matches!(error, StoreError::Locked { .. }), "{error}");
    long.kill().unwrap();
    long.wait().unwrap();
}
