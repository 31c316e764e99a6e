//! The inspector follows every write of a `JsonlStore` writer, including those made through the
//! handle a session was created with (opened under a temporary name, linked into place), and
//! stops with an event stream open.
#![cfg(unix)]
#![expect(clippy::unwrap_used, reason = "a test stops on failure")]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use turnkit_core::{CancellationToken, JsonlStore, SessionHeader, SessionStore, SystemClock};
use turnkit_inspect::Inspector;

/// Well under the folder's 5 s listing, which would otherwise find each change by itself.
const BOUND: Duration = Duration::from_secs(3);

/// An open `/updates` stream.
struct Updates {
    stream: TcpStream,
    seen: String,
}

impl Updates {
    async fn open(addr: std::net::SocketAddr) -> Self {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let request = format!("GET /updates HTTP/1.1\r\nHost: {addr}\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut updates = Self {
            stream,
            seen: String::new(),
        };
        assert!(
            updates.until("\r\n\r\n").await.is_some(),
            "no response head"
        );
        updates
    }

    /// Reads until `needle` arrived (consuming up to it) or [`BOUND`] passed (`None`), or
    /// the stream ended (`None`).
    async fn until(&mut self, needle: &str) -> Option<()> {
        let deadline = tokio::time::Instant::now() + BOUND;
        loop {
            if let Some(at) = self.seen.find(needle) {
                self.seen.drain(..at + needle.len());
                return Some(());
            }
            let mut buf = [0u8; 4096];
            let read = tokio::time::timeout_at(deadline, self.stream.read(&mut buf)).await;
            match read {
                Ok(Ok(0)) | Err(_) => return None,
                Ok(Ok(n)) => self.seen.push_str(&String::from_utf8_lossy(&buf[..n])),
                Ok(Err(error)) => panic!("reading the event stream: {error}"),
            }
        }
    }
}

fn store(dir: &Path) -> JsonlStore {
    JsonlStore::new(dir, Arc::new(SystemClock)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_through_the_creating_handle_show_and_stop_ends_the_stream() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    // Created before the inspector starts: the writer keeps the handle it created it with.
    let early = store.create(SessionHeader::new("early")).unwrap();
    let inspector = Inspector::open(dir.path()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let served = tokio::spawn(inspector.serve(listener, stop.clone()));
    let mut updates = Updates::open(addr).await;

    early.append("turn/start", json!({"turn": 1})).unwrap();
    early.flush().await.unwrap();
    assert_eq!(updates.until("data: early\n\n").await, Some(()), "early");

    // Created while it runs: announced when linked into place, then every write again.
    let late = store.create(SessionHeader::new("late")).unwrap();
    assert_eq!(
        updates.until("data: late\n\n").await,
        Some(()),
        "late created"
    );
    for turn in 1..=3 {
        late.append("turn/start", json!({ "turn": turn })).unwrap();
        late.flush().await.unwrap();
        assert_eq!(
            updates.until("data: late\n\n").await,
            Some(()),
            "late, turn {turn}"
        );
    }

    // Stopping ends the open stream and the server, with the stream still connected.
    stop.cancel();
    let result = tokio::time::timeout(Duration::from_secs(5), served)
        .await
        .expect("serve returned within 5 s of the stop");
    result.unwrap().unwrap();
    assert_eq!(updates.until("never").await, None);
    drop((early, late));
}
