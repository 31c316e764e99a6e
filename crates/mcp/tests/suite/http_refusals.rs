//! The transport's own refusals (rmcp's streamable HTTP service answers them in plain text)
//! reach the client as the documented JSON body `{"error": CODE, "message": TEXT}`, with
//! their status, like every other refusal.

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::http_support::{INITIALIZE, client, start_http};

/// Sends exactly `headers` (no defaults) and returns the status, the content type and the
/// body.
async fn raw(
    url: &str,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String, Value) {
    let mut request = http::Request::builder().method(method).uri(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Full::new(Bytes::from(body.to_owned())))
        .unwrap();
    let response = client().request(request).await.unwrap();
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (status, content_type, body)
}

#[tokio::test]
async fn the_transports_refusals_are_the_documented_json_bodies() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_http(dir.path(), &[]).await;
    let url = server.url("s1");
    let bearer = server.bearer();
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let json = "application/json";
    let both = "application/json, text/event-stream";
    let cases = [
        (
            "an Mcp-Session-Id this server never gave",
            vec![
                ("accept", both),
                ("content-type", json),
                ("mcp-session-id", "not-a-session"),
            ],
            list,
            404,
            json!({"error": "session_not_found", "message": "the Mcp-Session-Id is not a session this server has open (it restarted, or released the session when idle): open a new one with initialize"}),
        ),
        (
            "a request after initialize without its Mcp-Session-Id",
            vec![("accept", both), ("content-type", json)],
            list,
            400,
            json!({"error": "session_id_required", "message": "a request after initialize carries the Mcp-Session-Id header its initialize answer gave"}),
        ),
        (
            "an Accept without text/event-stream",
            vec![("accept", json), ("content-type", json)],
            INITIALIZE,
            406,
            json!({"error": "not_acceptable", "message": "the Accept header must list both application/json and text/event-stream (a GET stream: text/event-stream)"}),
        ),
    ];
    for (what, mut headers, body, status, expected) in cases {
        headers.push(("authorization", bearer.as_str()));
        let got = raw(&url, "POST", &headers, body).await;
        assert_eq!(got, (status, json.to_owned(), expected), "{what}");
    }
}
