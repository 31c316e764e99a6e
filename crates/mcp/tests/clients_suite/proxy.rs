//! A recording reverse proxy on `127.0.0.1` in front of `harness mcp --http`: it forwards every
//! request unchanged, streams every response back as it comes (event streams included), and
//! records the JSON-RPC messages a client posted.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse as _, Response};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

struct Shared {
    upstream: SocketAddr,
    client: Client<HttpConnector, Body>,
    posted: Mutex<Vec<Value>>,
}

/// A running proxy.
pub(crate) struct Proxy {
    pub(crate) addr: SocketAddr,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl Proxy {
    /// Forwards a free loopback port to `upstream`.
    pub(crate) async fn start(upstream: SocketAddr) -> Self {
        let shared = Arc::new(Shared {
            upstream,
            client: Client::builder(TokioExecutor::new()).build_http(),
            posted: Mutex::new(Vec::new()),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = Router::new().fallback(forward).with_state(shared.clone());
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self {
            addr,
            shared,
            server,
        }
    }

    /// The JSON-RPC messages clients posted, in arrival order (a batch counts as its members).
    pub(crate) fn posted(&self) -> Vec<Value> {
        self.shared.posted.lock().unwrap().clone()
    }
}

async fn forward(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (mut parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 1 << 20).await else {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    if let Ok(value) = serde_json::from_slice::<Value>(&bytes) {
        let mut posted = shared.posted.lock().unwrap();
        match value {
            Value::Array(batch) => posted.extend(batch),
            one => posted.push(one),
        }
    }
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    parts.uri = Uri::try_from(format!("http://{}{path}", shared.upstream)).unwrap();
    // The server checks `Host` on loopback; the client named the proxy's port.
    parts.headers.insert(
        axum::http::header::HOST,
        format!("{}", shared.upstream).parse().unwrap(),
    );
    match shared
        .client
        .request(Request::from_parts(parts, Body::from(bytes)))
        .await
    {
        Ok(response) => response.map(Body::new),
        Err(_) => StatusCode::BAD_GATEWAY.into_response(),
    }
}
