//! The inspector over a real PostgreSQL store (`HARNESS_TEST_POSTGRES_URL`, from
//! `.ci/postgres start`), read over HTTP: the sessions page with each session's live owner,
//! a session page's plan, and another host's append pushed to `/updates` and shown.
//!
//! Outside CI a missing server skips the test loudly; with `CI=true` it fails.
#![expect(clippy::unwrap_used, reason = "a test stops on failure")]

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use turnkit_core::{CancellationToken, Session, SessionHeader, SystemClock};
use turnkit_inspect::Inspector;
use turnkit_store_pg::{PgOptions, PgStore};

fn server_url() -> Option<String> {
    match std::env::var("HARNESS_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "HARNESS_TEST_POSTGRES_URL is not set and CI=true: start a server with .ci/postgres"
            );
            turnkit_testkit::skip::skipped(
                "HARNESS_TEST_POSTGRES_URL is not set; start a server with .ci/postgres and \
                 export its URL to run the inspector's PostgreSQL test",
            );
            None
        }
    }
}

fn store(url: &str, schema: &str, host: &str) -> PgStore {
    PgStore::connect(
        url,
        Arc::new(SystemClock),
        PgOptions {
            schema: schema.to_owned(),
            host: host.to_owned(),
            lease_ttl: Duration::from_secs(30),
            pool_size: 4,
            ..PgOptions::default()
        },
    )
    .unwrap()
}

fn todo_write(items: &[(&str, &str)]) -> Value {
    let todos: Vec<Value> = items
        .iter()
        .map(|(content, status)| json!({"content": content, "status": status}))
        .collect();
    json!({ "todos": todos })
}

/// One `GET` over a fresh connection: the response's body.
async fn get(base: &str, path: &str) -> String {
    let mut stream = TcpStream::connect(base).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {base}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_owned()
}

/// The text of each cell of the table row whose opening tag contains `marker`.
fn row_after(html: &str, marker: &str) -> Vec<String> {
    let start = html
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker} in {html}"));
    let row = &html[start..start + html[start..].find("</tr>").unwrap()];
    row.split("</td>")
        .filter(|cell| cell.contains("<td"))
        .map(|cell| {
            let mut text = String::new();
            let mut tag = false;
            for c in cell[cell.find("<td").unwrap()..].chars() {
                match c {
                    '<' => tag = true,
                    '>' => tag = false,
                    c if !tag => text.push(c),
                    _ => {}
                }
            }
            text
        })
        .collect()
}

/// The `<tbody>` rows of the table with `id`, each as its cells' text.
fn table_rows(html: &str, id: &str) -> Vec<Vec<String>> {
    let start = html.find(&format!("<table id=\"{id}\"")).unwrap();
    let table = &html[start..start + html[start..].find("</table>").unwrap()];
    let body = &table[table.find("<tbody>").unwrap()..];
    body.split("<tr")
        .skip(1)
        .map(|row| row_after(&format!("<tr{row}</tr>"), "<tr"))
        .collect()
}

/// An open `/updates` stream.
struct Updates {
    stream: TcpStream,
    seen: String,
}

impl Updates {
    async fn open(base: &str) -> Self {
        let mut stream = TcpStream::connect(base).await.unwrap();
        let request = format!("GET /updates HTTP/1.1\r\nHost: {base}\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        Self {
            stream,
            seen: String::new(),
        }
    }

    /// Waits (at most `within`) for the next `change` event naming `id`.
    async fn next_change(&mut self, id: &str, within: Duration) {
        let line = format!("data: {id}\n");
        let read = async {
            loop {
                if let Some(at) = self.seen.find(&line) {
                    self.seen.drain(..at + line.len());
                    return;
                }
                let mut buffer = [0_u8; 4096];
                let n = self.stream.read(&mut buffer).await.unwrap();
                assert!(n > 0, "the update stream ended");
                self.seen.push_str(&String::from_utf8_lossy(&buffer[..n]));
            }
        };
        tokio::time::timeout(within, read)
            .await
            .unwrap_or_else(|_| panic!("no change of {id} within {within:?}: {}", self.seen));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owners_and_appends_of_another_host_show_live() {
    let Some(url) = server_url() else { return };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let schema = format!("t_inspect_{}_{nanos:x}", std::process::id());
    let writer = store(&url, &schema, "writer-a");
    let alpha = writer
        .create_session(SessionHeader::new("alpha").with_time_zone("Europe/Paris"))
        .await
        .unwrap();
    alpha.append("turn/start", json!({"turn": 1})).unwrap();
    alpha
        .append(
            "todo/write",
            todo_write(&[
                ("Read the store", "completed"),
                ("Show owners", "in_progress"),
            ]),
        )
        .unwrap();
    alpha.flush().await.unwrap();
    {
        // Written and closed: its lease is released, it has no owner.
        let beta = writer
            .create_session(SessionHeader::new("beta"))
            .await
            .unwrap();
        beta.append("todo/write", todo_write(&[("Idle", "pending")]))
            .unwrap();
        beta.flush().await.unwrap();
    }

    let inspector = Inspector::open_store(store(&url, &schema, "inspector"))
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = listener.local_addr().unwrap().to_string();
    let stop = CancellationToken::new();
    let server = tokio::spawn(inspector.serve(listener, stop.clone()));

    let page = get(&base, "/?sort=id").await;
    let cells = |page: &str, id: &str| {
        let row = row_after(page, &format!("<tr data-session=\"{id}\""));
        // The session, its parent, its owner, then (past the two times) the counts and state.
        [&row[0..3], &row[5..]].concat()
    };
    assert_eq!(
        cells(&page, "alpha"),
        ["alpha", "", "writer-a", "1", "0", "0", "2", "ok"]
    );
    assert_eq!(
        cells(&page, "beta"),
        ["beta", "", "—", "1", "0", "0", "1", "ok"]
    );
    assert!(
        page.contains("2 sessions in <code>PostgreSQL schema "),
        "{page}"
    );

    // Another host's append shows within 2 s, pushed to the update stream.
    let mut updates = Updates::open(&base).await;
    alpha
        .append(
            "todo/write",
            todo_write(&[
                ("Read the store", "completed"),
                ("Show owners", "completed"),
                ("Follow appends", "in_progress"),
            ]),
        )
        .unwrap();
    alpha.flush().await.unwrap();
    updates.next_change("alpha", Duration::from_secs(2)).await;
    let page = get(&base, "/session/alpha").await;
    assert_eq!(
        table_rows(&page, "todos"),
        [
            ["1", "Read the store", "completed"],
            ["2", "Show owners", "completed"],
            ["3", "Follow appends", "in_progress"],
        ]
    );
    assert!(
        page.contains("owned by <code id=\"owner\">writer-a</code>"),
        "{page}"
    );

    // The writer closes the session: its owner is gone from the page within 2 s.
    drop(alpha);
    updates.next_change("alpha", Duration::from_secs(2)).await;
    let page = get(&base, "/?sort=id").await;
    assert_eq!(
        cells(&page, "alpha"),
        ["alpha", "", "—", "1", "0", "0", "3", "ok"]
    );

    // The server's graceful stop waits for its open connections.
    drop(updates);
    stop.cancel();
    server.await.unwrap().unwrap();
}
