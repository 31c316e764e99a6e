use std::io::Write;
use std::sync::Arc;

use chrono::{TimeZone, Utc};
use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_core::{
    Clock, JsonlStore, MemoryStore, SessionHeader, SessionId, SessionStore, StoreError,
};

/// A clock frozen at 2026-08-05T12:00:00.000Z (core cannot use the testkit's ManualClock).
pub(super) struct Frozen;

impl Clock for Frozen {
    fn now(&self) -> chrono::DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 8, 5, 12, 0, 0).unwrap()
    }

    fn sleep(&self, _: std::time::Duration) -> futures::future::BoxFuture<'static, ()> {
        Box::pin(std::future::pending())
    }
}

fn store(dir: &tempfile::TempDir) -> JsonlStore {
    JsonlStore::new(dir.path(), Arc::new(Frozen)).unwrap()
}

/// Creates session `id` with one event of each of `types` (payload `{}`), flushes it, lets
/// go of the handle and returns the file's path.
async fn stored(store: &JsonlStore, id: &str, types: &[&str]) -> std::path::PathBuf {
    let session = store.create(SessionHeader::new(id)).unwrap();
    for r#type in types {
        session.append(r#type, json!({})).unwrap();
    }
    session.flush().await.unwrap();
    drop(session);
    store.dir().join(format!("{id}.jsonl"))
}

#[tokio::test]
async fn jsonl_round_trip_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let session = store
        .create(SessionHeader::new("s1").with_time_zone("Europe/Paris"))
        .unwrap();
    session.append("turn/start", json!({"turn": 1})).unwrap();
    session
        .append(
            "todo/write",
            json!({"todos": [{"content": "a\nb \"q\"", "status": "pending"}]}),
        )
        .unwrap();
    session.flush().await.unwrap();
    let text = std::fs::read_to_string(dir.path().join("s1.jsonl")).unwrap();
    assert_eq!(
        text,
        concat!(
            "{\"id\":\"s1\",\"timeZone\":\"Europe/Paris\"}\n",
            "{\"seq\":1,\"type\":\"turn/start\",\"time\":\"2026-08-05T12:00:00.000Z\",\"data\":{\"turn\":1}}\n",
            "{\"seq\":2,\"type\":\"todo/write\",\"time\":\"2026-08-05T12:00:00.000Z\",\"data\":{\"todos\":[{\"content\":\"a\\nb \\\"q\\\"\",\"status\":\"pending\"}]}}\n",
        )
    );
    let (header, events) = (session.header().clone(), session.events());
    drop(session);
    let reopened = store.open(&SessionId::from("s1")).unwrap();
    assert_eq!(reopened.header(), &header);
    assert_eq!(reopened.events(), events);
    let third = reopened.append("turn/end", json!({"turn": 1})).unwrap();
    assert_eq!(third.seq, 3);
    reopened.flush().await.unwrap();
    drop(reopened);
    assert_eq!(store.open(&SessionId::from("s1")).unwrap().len(), 3);
    assert_eq!(store.list(), vec![SessionId::from("s1")]);
}

#[tokio::test]
async fn unflushed_events_are_not_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let session = store.create(SessionHeader::new("s1")).unwrap();
    session.append("a", json!({})).unwrap();
    assert_eq!(session.len(), 1);
    drop(session);
    assert_eq!(store.open(&SessionId::from("s1")).unwrap().len(), 0);
}

#[tokio::test]
async fn torn_last_line_is_truncated_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let session = store.create(SessionHeader::new("s1")).unwrap();
    session.append("a", json!({"n": 1})).unwrap();
    session.flush().await.unwrap();
    drop(session);
    let path = dir.path().join("s1.jsonl");
    let intact = std::fs::read(&path).unwrap();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(b"{\"seq\":2,\"type\":\"b\",\"ti").unwrap();
    drop(file);
    let reopened = store.open(&SessionId::from("s1")).unwrap();
    assert_eq!(reopened.len(), 1);
    drop(reopened);
    assert_eq!(std::fs::read(&path).unwrap(), intact);
    // A complete value missing only its newline is torn too.
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(br#"{"seq":2,"type":"b","time":"2026-08-05T12:00:00.000Z","data":{}}"#)
        .unwrap();
    drop(file);
    assert_eq!(store.open(&SessionId::from("s1")).unwrap().len(), 1);
    assert_eq!(std::fs::read(&path).unwrap(), intact);
}

#[tokio::test]
async fn malformed_middle_line_is_an_error_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let path = stored(&store, "s1", &["a", "b"]).await;
    let text = std::fs::read_to_string(&path).unwrap();
    let broken = text.replacen("\"type\":\"a\"", "\"type\":", 1);
    std::fs::write(&path, &broken).unwrap();
    let error = store.open(&SessionId::from("s1")).err().unwrap();
    match error {
        StoreError::Malformed { file, line, .. } => {
            assert_eq!(file, path.display().to_string());
            assert_eq!(line, 2);
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        broken,
        "nothing truncated"
    );
    // A gap in sequence numbers is malformed too.
    let gap = text.replacen("\"seq\":2", "\"seq\":5", 1)
        + &text
            .lines()
            .nth(1)
            .unwrap()
            .replace("\"seq\":1", "\"seq\":6");
    std::fs::write(&path, format!("{gap}\n")).unwrap();
    assert!(matches!(
        store.open(&SessionId::from("s1")),
        Err(StoreError::Malformed { line: 3, .. })
    ));
}

#[test]
fn invalid_ids_and_duplicates_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    for bad in ["", "..", "a/b", ".hidden"] {
        assert!(matches!(
            store.create(SessionHeader::new(bad)),
            Err(StoreError::InvalidId(_))
        ));
    }
    store.create(SessionHeader::new("s1")).unwrap();
    assert!(matches!(
        store.create(SessionHeader::new("s1")),
        Err(StoreError::AlreadyExists(_))
    ));
    assert!(matches!(
        store.open(&SessionId::from("nope")),
        Err(StoreError::NotFound(_))
    ));
}

#[tokio::test]
async fn fork_copies_events_and_sets_seed_length() {
    let dir = tempfile::tempdir().unwrap();
    for store in [
        Box::new(MemoryStore::new(Arc::new(Frozen))) as Box<dyn SessionStore>,
        Box::new(JsonlStore::new(dir.path(), Arc::new(Frozen)).unwrap()),
    ] {
        let parent = store
            .create(SessionHeader::new("p").with_time_zone("UTC"))
            .unwrap();
        parent.append("a", json!({"n": 1})).unwrap();
        parent.append("b", json!({"n": 2})).unwrap();
        let child = store.fork(parent.as_ref(), SessionId::from("c")).unwrap();
        assert_eq!(child.header().seed_length, Some(2));
        assert_eq!(child.header().time_zone.as_deref(), Some("UTC"));
        assert_eq!(child.events(), parent.events());
        assert_eq!(child.append("c", json!({})).unwrap().seq, 3);
        assert_eq!(parent.len(), 2);
        child.flush().await.unwrap();
        drop(child);
        let reopened = store.open(&SessionId::from("c")).unwrap();
        assert_eq!(reopened.header().seed_length, Some(2));
        assert_eq!(reopened.events_after(2).len(), 1);
    }
}

#[tokio::test]
async fn a_complete_but_invalid_last_line_is_malformed_not_torn() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let path = stored(&store, "s1", &["a"]).await;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    // Valid JSON with a newline, but a gap in seq: not a torn write.
    file.write_all(
        b"{\"seq\":9,\"type\":\"b\",\"time\":\"2026-08-05T12:00:00.000Z\",\"data\":{}}\n",
    )
    .unwrap();
    drop(file);
    let before = std::fs::read(&path).unwrap();
    assert!(matches!(
        store.open(&SessionId::from("s1")),
        Err(StoreError::Malformed { line: 3, .. })
    ));
    assert_eq!(std::fs::read(&path).unwrap(), before, "nothing truncated");
}

#[tokio::test]
async fn inspect_reports_a_torn_tail_without_truncating() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let path = stored(&store, "s1", &["a"]).await;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(b"{\"seq\":2,").unwrap();
    drop(file);
    let before = std::fs::read(&path).unwrap();
    let parsed = JsonlStore::inspect(&path).unwrap();
    assert_eq!(parsed.events.len(), 1);
    let torn = parsed.torn.unwrap();
    assert_eq!(
        (torn.line, torn.reason.as_str()),
        (3, "missing trailing newline")
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

pub(super) fn names_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn one_writer_per_session_file_in_one_process() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let id = SessionId::from("s1");
    let path = dir.path().join("s1.jsonl");
    let created = store.create(SessionHeader::new("s1")).unwrap();
    let locked = format!(
        "session file {} is locked by another open handle",
        path.display()
    );
    for attempt in [
        store.open(&id),
        JsonlStore::open_path(&path, Arc::new(Frozen)),
    ] {
        match attempt.err().unwrap() {
            error @ StoreError::Locked { .. } => assert_eq!(error.to_string(), locked),
            other => panic!("unexpected {other:?}"),
        }
    }
    created.append("a", json!({})).unwrap();
    created.flush().await.unwrap();
    drop(created);
    // Dropping the handle releases the lock; the next handle holds it in turn.
    let reopened = store.open(&id).unwrap();
    assert_eq!(reopened.len(), 1);
    assert!(matches!(store.open(&id), Err(StoreError::Locked { .. })));
    drop(reopened);
    assert_eq!(store.open(&id).unwrap().len(), 1);
}

#[tokio::test]
async fn a_newline_terminated_last_line_that_does_not_parse_is_malformed_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let path = stored(&store, "s1", &["a"]).await;
    let intact = std::fs::read(&path).unwrap();
    let mut flipped = intact.clone();
    let at = flipped.len() - 3;
    flipped[at] ^= 0x04; // one bit: the empty data object's `}` becomes `y`
    let cases: [(Vec<u8>, usize, &str); 4] = [
        (
            [intact.as_slice(), b"{\"seq\":2,\"ty\n"].concat(),
            3,
            "invalid event: EOF while parsing a string at line 1 column 12",
        ),
        (
            [intact.as_slice(), b"\n"].concat(),
            3,
            "invalid event: EOF while parsing a value at line 1 column 0",
        ),
        (
            [intact.as_slice(), b"\"\xff\xfe\"\n"].concat(),
            3,
            "invalid event: invalid unicode code point at line 1 column 2",
        ),
        (
            flipped,
            2,
            "invalid event: key must be a string at line 1 column 63",
        ),
    ];
    for (bytes, want_line, want_message) in cases {
        std::fs::write(&path, &bytes).unwrap();
        match store.open(&SessionId::from("s1")).err().unwrap() {
            StoreError::Malformed {
                file,
                line,
                message,
            } => assert_eq!(
                (file, line, message.as_str()),
                (path.display().to_string(), want_line, want_message)
            ),
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "nothing cut");
    }
}

#[tokio::test]
async fn opening_an_id_whose_file_header_names_another_session_is_malformed() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let a = stored(&store, "a", &["x"]).await;
    let b = dir.path().join("b.jsonl");
    // A copy of `a` with a torn tail: the refusal must not cut it either.
    let bytes = [std::fs::read(&a).unwrap().as_slice(), b"{\"seq\""].concat();
    std::fs::write(&b, &bytes).unwrap();
    // By id and by path alike (before, `open_path` opened `b.jsonl` as session `a`: a second
    // writer of `a` beside `a.jsonl`).
    let attempts = [
        store.open(&SessionId::from("b")),
        JsonlStore::open_path(&b, Arc::new(Frozen)),
    ];
    for attempt in attempts {
        match attempt.err().unwrap() {
            StoreError::Malformed {
                file,
                line,
                message,
            } => assert_eq!(
                (file, line, message.as_str()),
                (
                    b.display().to_string(),
                    1,
                    "the header names session \"a\", but this is the file of session \"b\""
                )
            ),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(std::fs::read(&b).unwrap(), bytes);
    let a_session = store.open(&SessionId::from("a")).unwrap();
    assert_eq!(a_session.len(), 1);
    drop(a_session);
    // A file not named `<id>.jsonl` opens as the session its header names.
    let other = dir.path().join("a.backup");
    std::fs::copy(&a, &other).unwrap();
    assert_eq!(
        JsonlStore::open_path(&other, Arc::new(Frozen))
            .unwrap()
            .id(),
        &SessionId::from("a")
    );
}

#[test]
fn a_file_without_a_complete_header_names_itself_and_the_recovery() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    for (id, bytes) in [("empty", &b""[..]), ("cut", &b"{\"id\":\"cut\"}"[..])] {
        let path = dir.path().join(format!("{id}.jsonl"));
        std::fs::write(&path, bytes).unwrap();
        let want = format!(
            "{}: no complete session header (left by an interrupted create); nothing in it was \
             acknowledged: delete the file and create the session again",
            path.display()
        );
        for error in [
            store.open(&SessionId::from(id)).err().unwrap(),
            JsonlStore::inspect(&path).err().unwrap(),
        ] {
            assert!(
                matches!(error, StoreError::InterruptedCreate { .. }),
                "{error:?}"
            );
            assert_eq!(error.to_string(), want);
        }
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "nothing changed");
        // The recovery the message names works.
        std::fs::remove_file(&path).unwrap();
        store.create(SessionHeader::new(id)).unwrap();
    }
}

#[test]
fn create_leaves_only_the_session_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let session = store.create(SessionHeader::new("s1")).unwrap();
    assert!(matches!(
        store.create(SessionHeader::new("s1")),
        Err(StoreError::AlreadyExists(_))
    ));
    assert_eq!(names_in(dir.path()), vec!["s1.jsonl".to_owned()]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("s1.jsonl")).unwrap(),
        "{\"id\":\"s1\"}\n"
    );
    assert_eq!(session.len(), 0);
}

/// A payload as `append_raw` takes it: the compact text `serde_json` writes.
fn raw(value: &serde_json::Value) -> turnkit_core::JsonText {
    turnkit_core::JsonText::serialize(value).unwrap()
}

/// The in-memory store keeps a raw payload's text and numbers it in seq order with `append`.
#[test]
fn memory_append_raw_keeps_the_text_in_seq_order() {
    let store = MemoryStore::new(Arc::new(Frozen));
    let session = store.create(SessionHeader::new("m1")).unwrap();
    session.append("a/one", json!({"n": 1})).unwrap();
    let payload = json!({"id": "bash-1", "label": "echo \"hi\"\n", "at": -3});
    let event = session.append_raw("a/two", raw(&payload)).unwrap();
    assert_eq!(
        (event.seq(), event.r#type(), event.payload()),
        (
            2,
            "a/two",
            r#"{"id":"bash-1","label":"echo \"hi\"\n","at":-3}"#
        )
    );
    assert_eq!(event.time(), Frozen.now());
    session.append("a/three", json!([])).unwrap();
    let events = session.raw_events_after(0);
    assert_eq!(events.len(), 3);
    assert_eq!(events[1], event);
    assert_eq!(events[2].seq(), 3);
    assert_eq!(session.events()[1].data, payload);
}

/// A store on the default `append_raw` (JSONL) writes byte for byte the file `append` writes.
#[tokio::test]
async fn jsonl_append_raw_writes_the_bytes_append_writes() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let payloads = [
        json!({"version": 1, "id": "subagent-1", "label": "summarize \"notes\"\t\u{1}"}),
        json!({"output": "line 1\nline 2 é \u{2028}", "n": 1785931200000_i64, "ok": true}),
    ];
    let by_value = store.create(SessionHeader::new("v")).unwrap();
    let by_text = store.create(SessionHeader::new("t")).unwrap();
    for (n, payload) in payloads.iter().enumerate() {
        by_value.append("job/start", payload.clone()).unwrap();
        let event = by_text.append_raw("job/start", raw(payload)).unwrap();
        assert_eq!(event.seq(), n as u64 + 1);
        assert_eq!(event.payload(), payload.to_string());
    }
    by_value.flush().await.unwrap();
    by_text.flush().await.unwrap();
    let read = |id: &str| std::fs::read_to_string(dir.path().join(format!("{id}.jsonl"))).unwrap();
    let (value_file, text_file) = (read("v"), read("t"));
    assert_eq!(
        text_file.lines().skip(1).collect::<Vec<_>>(),
        value_file.lines().skip(1).collect::<Vec<_>>()
    );
    assert_eq!(
        text_file.len(),
        value_file.len() - r#""id":"v""#.len() + r#""id":"t""#.len()
    );
}

/// The default `append_raw` refuses a payload it cannot parse into a `Value`, and the log is
/// unchanged.
#[test]
fn default_append_raw_refuses_a_number_beyond_f64() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let session = store.create(SessionHeader::new("r")).unwrap();
    let payload = serde_json::value::RawValue::from_string(r#"{"n":1e400}"#.to_owned()).unwrap();
    let error = session.append_raw("x/y", payload.into()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "append rejected: payload is not one JSON value: number out of range at line 1 column 10"
    );
    assert_eq!(session.len(), 0);
}
