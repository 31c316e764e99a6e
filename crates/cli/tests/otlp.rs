//! `harness mcp --otlp-endpoint URL`: with the `otlp` feature the real binary exports its spans
//! to a loopback OTLP/HTTP receiver, which decodes them; without it the flag is refused with
//! the way to get it.
#![allow(clippy::unwrap_used, reason = "a test stops on failure")]

use std::io::Write;
use std::process::{Command, Stdio};

/// Two `todo_write` calls (one valid, one with a bad argument), as a client sends them.
fn requests() -> String {
    [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"otlp-test","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"todo_write","arguments":{"todos":[{"content":"Ship it","status":"in_progress"}]}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"todo_write","arguments":{"todos":"not a list"}}}"#,
    ]
    .join("\n")
        + "\n"
}

/// Runs `harness mcp` on session `s1` with `extra` arguments, the requests on stdin (closed
/// after them, which ends the server), and returns its exit code and standard error.
fn serve(extra: &[&str]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.json");
    std::fs::write(&config, r#"{"todo":{"allowParallelInProgress":false}}"#).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["mcp", "--session", "s1", "--dir"])
        .arg(dir.path())
        .arg("--config")
        .arg(&config)
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A refused flag exits before reading: the pipe may already be closed.
    let _ = child.stdin.take().unwrap().write_all(requests().as_bytes());
    let output = child.wait_with_output().unwrap();
    (
        output.status.code(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

#[cfg(not(feature = "otlp"))]
#[test]
fn without_the_feature_the_flag_is_refused_with_the_way_to_get_it() {
    use pretty_assertions::assert_eq;
    let (code, stderr) = serve(&["--otlp-endpoint", "http://127.0.0.1:4318"]);
    assert_eq!(code, Some(1));
    assert_eq!(
        stderr,
        "harness: this harness binary was built without the OTLP exporter, so --otlp-endpoint \
         http://127.0.0.1:4318 cannot be used; build it with `--features otlp` (cargo install \
         turnkit-cli --features otlp)\n"
    );
}

/// One exported `plan` span as the test compares it: its name, kind, operation name, agent
/// name and the name of its parent span.
#[cfg(feature = "otlp")]
type PlanSpan = (String, i32, Option<String>, Option<String>, String);

#[cfg(feature = "otlp")]
mod exported {
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};

    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::any_value::Value;
    use opentelemetry_proto::tonic::trace::v1::Span;
    use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
    use pretty_assertions::assert_eq;
    use prost::Message;

    use super::serve;

    /// Every request body posted to `/v1/traces`, with its content type.
    type Received = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

    /// A loopback OTLP/HTTP receiver on its own thread; returns its base URL.
    fn receiver(received: Received) -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let app = axum::Router::new().route(
                    "/v1/traces",
                    axum::routing::post(
                        move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                            let received = received.clone();
                            async move {
                                let kind = headers
                                    .get("content-type")
                                    .and_then(|v| v.to_str().ok())
                                    .unwrap_or("")
                                    .to_owned();
                                received.lock().unwrap().push((kind, body.to_vec()));
                                ""
                            }
                        },
                    ),
                );
                axum::serve(listener, app).await.unwrap();
            });
        });
        url
    }

    /// An exported `execute_tool` span: its name, `gen_ai.tool.call.id`,
    /// `gen_ai.conversation.id`, `error.type`, and its parent span's name.
    type Call = (
        String,
        Option<String>,
        Option<String>,
        Option<String>,
        String,
    );

    /// A string attribute of a span.
    fn attribute(span: &Span, key: &str) -> Option<String> {
        span.attributes
            .iter()
            .find(|kv| kv.key == key)
            .and_then(|kv| kv.value.as_ref()?.value.as_ref())
            .map(|value| match value {
                Value::StringValue(text) => text.clone(),
                other => format!("{other:?}"),
            })
    }

    /// The spans of the session's two tool calls arrive when the server exits: names,
    /// GenAI attributes, the failing call's `error.type`, and each `execute_tool` span a child
    /// of its `tools/call` request span.
    #[test]
    fn the_tool_call_spans_reach_the_collector() {
        let received = Received::default();
        let url = receiver(received.clone());
        let (code, stderr) = serve(&["--otlp-endpoint", &url]);
        assert_eq!(
            (code, stderr.as_str()),
            (Some(0), "harness mcp: session s1\n")
        );
        // The last batch is sent before the process exits.
        let bodies = received.lock().unwrap().clone();
        assert!(!bodies.is_empty(), "no export reached the receiver");
        let mut spans = Vec::new();
        let mut services = Vec::new();
        for (kind, body) in &bodies {
            assert_eq!(kind, "application/x-protobuf");
            let request = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
            for resource in request.resource_spans {
                if let Some(resource_attributes) = &resource.resource {
                    for kv in &resource_attributes.attributes {
                        if kv.key == "service.name" {
                            services.push(format!("{:?}", kv.value));
                        }
                    }
                }
                for scope in resource.scope_spans {
                    spans.extend(scope.spans);
                }
            }
        }
        assert!(
            services.iter().all(|s| s.contains("\"harness\"")),
            "{services:?}"
        );
        let by_id: BTreeMap<Vec<u8>, &Span> =
            spans.iter().map(|s| (s.span_id.clone(), s)).collect();
        let mut calls: Vec<Call> = spans
            .iter()
            .filter(|s| s.name.starts_with("execute_tool"))
            .map(|s| {
                let parent = by_id
                    .get(&s.parent_span_id)
                    .map_or_else(|| "no parent".to_owned(), |p| p.name.clone());
                (
                    s.name.clone(),
                    attribute(s, "gen_ai.tool.call.id"),
                    attribute(s, "gen_ai.conversation.id"),
                    attribute(s, "error.type"),
                    parent,
                )
            })
            .collect();
        calls.sort();
        assert_eq!(
            calls,
            vec![
                (
                    "execute_tool todo_write".to_owned(),
                    Some("2".to_owned()),
                    Some("s1".to_owned()),
                    None,
                    "tools/call todo_write".to_owned(),
                ),
                (
                    "execute_tool todo_write".to_owned(),
                    Some("3".to_owned()),
                    Some("s1".to_owned()),
                    Some("invalid_arguments".to_owned()),
                    "tools/call todo_write".to_owned(),
                ),
            ]
        );
        let tool = spans
            .iter()
            .find(|s| s.name == "execute_tool todo_write")
            .unwrap();
        assert_eq!(
            (
                attribute(tool, "gen_ai.operation.name"),
                attribute(tool, "gen_ai.tool.name")
            ),
            (
                Some("execute_tool".to_owned()),
                Some("todo_write".to_owned())
            )
        );
        // The successful write's body is a `plan` span inside its `execute_tool` span; the
        // refused call never reached the body.
        let plans: Vec<super::PlanSpan> = spans
            .iter()
            .filter(|s| s.name.starts_with("plan"))
            .map(|s| {
                let parent = by_id
                    .get(&s.parent_span_id)
                    .map_or_else(|| "no parent".to_owned(), |p| p.name.clone());
                (
                    s.name.clone(),
                    s.kind,
                    attribute(s, "gen_ai.operation.name"),
                    attribute(s, "gen_ai.agent.name"),
                    parent,
                )
            })
            .collect();
        assert_eq!(
            plans,
            vec![(
                "plan s1".to_owned(),
                SpanKind::Internal as i32,
                Some("plan".to_owned()),
                Some("s1".to_owned()),
                "execute_tool todo_write".to_owned(),
            )]
        );
        let mut requests: Vec<Option<String>> = spans
            .iter()
            .filter(|s| s.name == "tools/call todo_write")
            .map(|s| attribute(s, "jsonrpc.request.id"))
            .collect();
        requests.sort();
        assert_eq!(requests, vec![Some("2".to_owned()), Some("3".to_owned())]);
    }
}
