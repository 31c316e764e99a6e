//! One request, from its head to its session: the checks that need only the head (`Host`,
//! `Origin`, the path, the token and its connection cap, the session id, the length), then the
//! method, then the body (read in full within the body timeout, and a JSON-RPC message), and
//! only then the session, opened (or created) by a `POST` or found open for a `GET` or
//! `DELETE`.

use std::sync::Arc;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderValue, Method, StatusCode, header};
use http_body_util::{BodyExt as _, Full, LengthLimitError, Limited};

use super::conn::{Conn, TooManyConnections};
use super::held::{Committing, Held};
use super::{HttpServer, Refusal, auth, sessions};

/// The path's session id: `/sessions/{id}/mcp`.
fn session_of(path: &str) -> Option<&str> {
    path.strip_prefix("/sessions/")?.strip_suffix("/mcp")
}

pub(crate) async fn route(
    server: HttpServer,
    conn: Arc<Conn>,
    request: http::Request<hyper::body::Incoming>,
) -> Response {
    // A browser's origin that passes the origin check gets the CORS headers on every answer
    // (refusals included, so a page can read why); any other origin is refused by the check.
    let cors = request
        .headers()
        .get(header::ORIGIN)
        .filter(|_| auth::check_origin(request.headers(), &server.options.allowed_origins).is_ok())
        .cloned();
    // Only a well-formed id is repeated in the server's log.
    let session = session_of(request.uri().path())
        .filter(|id| auth::check_session_id(id).is_ok())
        .map(str::to_owned);
    let mut response = match serve_request(&server, &conn, request).await {
        Ok(response) => response,
        Err(refused) => {
            let told = server.refused.note(
                &refused.refusal,
                session.as_deref(),
                tokio::time::Instant::now(),
            );
            if let Some(line) = told {
                tracing::warn!("{line}");
            }
            let close = refused.close;
            let mut response = refused.refusal.into_response();
            if close {
                response
                    .headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            response
        }
    };
    if let Some(origin) = cors {
        let headers = response.headers_mut();
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        headers.append(header::VARY, HeaderValue::from_static("origin"));
        headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static(CORS_EXPOSED),
        );
    }
    response
}

/// The request headers a browser may send to a session's URL (the MCP ones and the token).
const CORS_ALLOWED: &str = "authorization, content-type, accept, mcp-session-id, \
    mcp-protocol-version, mcp-method, mcp-name, last-event-id";

/// The response headers a page may read.
const CORS_EXPOSED: &str = "mcp-session-id, mcp-protocol-version, www-authenticate";

/// How long a browser may keep a preflight's answer, in seconds.
const CORS_MAX_AGE: &str = "600";

/// The answer to a browser's preflight (`OPTIONS` with `Origin` and
/// `Access-Control-Request-Method`) of an origin the origin check admitted: `204`, the methods
/// and headers a session's URL takes. It carries no token (browsers send none), and says
/// nothing a page could not read from the documentation.
fn preflight() -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, DELETE"),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(CORS_ALLOWED),
    );
    headers.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static(CORS_MAX_AGE),
    );
    response
}

/// A refusal, and whether its connection is closed after it (the rest of the body will never
/// be read, or the connection is over its token's cap).
struct Refused {
    refusal: Refusal,
    close: bool,
}

impl From<Refusal> for Refused {
    fn from(refusal: Refusal) -> Self {
        Self {
            refusal,
            close: false,
        }
    }
}

impl Refused {
    fn closing(refusal: Refusal) -> Self {
        Self {
            refusal,
            close: true,
        }
    }
}

async fn serve_request(
    server: &HttpServer,
    conn: &Arc<Conn>,
    request: http::Request<hyper::body::Incoming>,
) -> Result<Response, Refused> {
    let options = &server.options;
    if server.loopback.load(std::sync::atomic::Ordering::SeqCst) {
        auth::check_loopback_host(request.headers())?;
    }
    auth::check_origin(request.headers(), &options.allowed_origins)?;
    let path = request.uri().path().to_owned();
    if path == "/healthz" {
        return Ok((StatusCode::OK, "ok\n").into_response());
    }
    let Some(id) = session_of(&path) else {
        return Err(Refusal::new(
            StatusCode::NOT_FOUND,
            "not_found",
            "sessions are served at /sessions/{id}/mcp",
        )
        .into());
    };
    if request.method() == Method::OPTIONS
        && request.headers().contains_key(header::ORIGIN)
        && request
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
    {
        return Ok(preflight());
    }
    let token = server.check_token(request.headers(), id)?;
    auth::check_session_id(id)?;
    conn.claim(token).map_err(|TooManyConnections(max)| {
        Refused::closing(Refusal::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_connections",
            format!("this token holds {max} connections to this server already"),
        ))
    })?;
    auth::check_length(request.headers(), options.max_body)?;
    let (parts, body) = request.into_parts();
    let (live, body) = match parts.method {
        Method::POST => {
            let body = read_body(server, body).await?;
            check_json_rpc(&body)?;
            let live = server.sessions.get(id, token).await?;
            (live, body)
        }
        Method::GET | Method::DELETE => {
            let live = server.sessions.get_open(id, token).await?;
            (live, Bytes::new())
        }
        _ => {
            let mut response = Refusal::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "a session's URL takes POST, GET and DELETE",
            )
            .into_response();
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
            return Ok(response);
        }
    };
    let mut request = http::Request::from_parts(parts, Body::new(Full::new(body)));
    let held = Held::new(live.host.clone());
    request.extensions_mut().insert(held.clone());
    // Counted until the response body is dropped, or until this future is dropped first (a
    // client that hangs up while a 2026-07-28 call runs: the transport answers that call
    // inside `handle`).
    let counted = sessions::InFlight::new(live.clone(), request.method() == Method::POST);
    let on_drop = Box::new(move || drop(counted));
    let response = live.service.handle(request).await;
    let response = super::plain::json_refusal(response.map(Body::new)).await;
    let (parts, body) = response.into_parts();
    let body = Committing::new(body, held, on_drop);
    Ok(Response::from_parts(parts, Body::new(body)))
}

/// The whole body, read within the body timeout and at most the largest body's bytes; a
/// stopping server stops waiting for it.
async fn read_body(server: &HttpServer, body: hyper::body::Incoming) -> Result<Bytes, Refused> {
    let options = &server.options;
    let too_large = || {
        Refused::closing(Refusal::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!("a request body is at most {} bytes", options.max_body),
        ))
    };
    let collected = tokio::select! {
        collected = tokio::time::timeout(
            options.body_timeout,
            Limited::new(body, options.max_body).collect(),
        ) => collected,
        () = options.stop.cancelled() => {
            return Err(Refused::closing(sessions::stopping()));
        }
    };
    match collected {
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(error)) if error.downcast_ref::<LengthLimitError>().is_some() => Err(too_large()),
        Ok(Err(_)) => Err(Refused::closing(Refusal::new(
            StatusCode::BAD_REQUEST,
            "invalid_body",
            "the request body could not be read",
        ))),
        Err(_) => Err(Refused::closing(Refusal::new(
            StatusCode::REQUEST_TIMEOUT,
            "body_timeout",
            format!(
                "the request body did not arrive within {} s",
                options.body_timeout.as_secs_f64()
            ),
        ))),
    }
}

/// Refuses a body that is not a JSON-RPC message: an object whose `jsonrpc` is `"2.0"`, or a
/// non-empty array of them.
fn check_json_rpc(body: &[u8]) -> Result<(), Refusal> {
    #[derive(serde::Deserialize)]
    struct Message<'a> {
        #[serde(borrow)]
        jsonrpc: std::borrow::Cow<'a, str>,
    }
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Messages<'a> {
        #[serde(borrow)]
        One(Message<'a>),
        Many(Vec<Message<'a>>),
    }
    let well_formed = match serde_json::from_slice::<Messages<'_>>(body) {
        Ok(Messages::One(message)) => message.jsonrpc == "2.0",
        Ok(Messages::Many(messages)) => {
            !messages.is_empty() && messages.iter().all(|m| m.jsonrpc == "2.0")
        }
        Err(_) => false,
    };
    if well_formed {
        return Ok(());
    }
    Err(Refusal::new(
        StatusCode::BAD_REQUEST,
        "invalid_body",
        "a POST's body is a JSON-RPC 2.0 message (an object with \"jsonrpc\": \"2.0\")",
    ))
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
