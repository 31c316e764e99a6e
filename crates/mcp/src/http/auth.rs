//! What every request must pass before it reaches a session: its `Origin`, its bearer token,
//! the session id's shape and the token's session-id prefixes, and the body's size. Each
//! refusal is a [`Refusal`]: an HTTP status and a stable JSON body.

use std::net::SocketAddr;
use std::path::Path;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::json;
use subtle::ConstantTimeEq;

use crate::ServeError;

/// The longest session id served over HTTP, in bytes.
pub const MAX_SESSION_ID: usize = 128;

/// The shortest token a token file may hold, in bytes.
pub const MIN_TOKEN: usize = 16;

/// A refused request: its status and the stable `error` code and `message` of its JSON body
/// (`{"error": "unauthorized", "message": "…"}`). Bodies never carry a path, a stack trace or
/// a store's own error text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The HTTP status.
    pub status: StatusCode,
    /// The stable machine-readable code.
    pub error: &'static str,
    /// One sentence for a person.
    pub message: String,
    /// The owning host of a session another instance serves (`session_owned` only).
    pub owner: Option<String>,
}

impl Refusal {
    pub(crate) fn new(status: StatusCode, error: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            error,
            message: message.into(),
            owner: None,
        }
    }

    /// The JSON body.
    pub fn body(&self) -> serde_json::Value {
        let mut body = json!({"error": self.error, "message": self.message});
        if let Some(owner) = &self.owner {
            body["owner"] = json!(owner);
        }
        body
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let mut response = Response::new(Body::from(self.body().to_string()));
        *response.status_mut() = self.status;
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if self.status == StatusCode::UNAUTHORIZED {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// One token of a token file and the session-id prefixes it may reach (none: every session).
#[derive(Clone)]
struct Token {
    secret: Vec<u8>,
    prefixes: Vec<String>,
}

/// The bearer tokens a server accepts, read from a token file: one token a line, optionally
/// followed by whitespace-separated session-id prefixes the token is limited to; blank lines
/// and lines starting with `#` are skipped.
///
/// ```text
/// # ci runners: their own sessions only
/// 3f9c1d…e2  ci-
/// # the team's token: every session
/// 77ab09…41
/// ```
#[derive(Clone, Default)]
pub struct Tokens {
    tokens: Vec<Token>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("count", &self.tokens.len())
            .finish_non_exhaustive()
    }
}

impl Tokens {
    /// Parses a token file's text.
    ///
    /// # Errors
    /// [`ServeError::Config`] for a token shorter than [`MIN_TOKEN`] bytes (`token file line
    /// 3: a token is at least 16 characters`), a prefix that is not a session id's characters,
    /// or a file without any token.
    pub fn parse(text: &str) -> Result<Self, ServeError> {
        let mut tokens = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut words = line.split_whitespace();
            let Some(secret) = words.next() else {
                continue;
            };
            let number = index + 1;
            if secret.len() < MIN_TOKEN {
                return Err(ServeError::Config(format!(
                    "token file line {number}: a token is at least {MIN_TOKEN} characters"
                )));
            }
            let prefixes: Vec<String> = words.map(str::to_owned).collect();
            if let Some(bad) = prefixes.iter().find(|p| !p.bytes().all(id_byte)) {
                return Err(ServeError::Config(format!(
                    "token file line {number}: the prefix {bad:?} is not made of session id \
                     characters (A-Z a-z 0-9 . _ -)"
                )));
            }
            tokens.push(Token {
                secret: secret.as_bytes().to_vec(),
                prefixes,
            });
        }
        if tokens.is_empty() {
            return Err(ServeError::Config(
                "the token file holds no token".to_owned(),
            ));
        }
        Ok(Self { tokens })
    }

    /// Reads and parses a token file.
    ///
    /// # Errors
    /// [`ServeError::Config`] when the file cannot be read (the message names it) or does not
    /// parse ([`Tokens::parse`]).
    pub fn read(path: &Path) -> Result<Self, ServeError> {
        let text = std::fs::read_to_string(path).map_err(|error| {
            ServeError::Config(format!(
                "reading the token file {}: {error}",
                path.display()
            ))
        })?;
        Self::parse(&text)
    }

    /// The tokens limited to no session prefix (those that reach every session), in the
    /// file's order.
    #[must_use]
    pub fn unlimited(&self) -> Vec<String> {
        self.tokens
            .iter()
            .filter(|token| token.prefixes.is_empty())
            .map(|token| String::from_utf8_lossy(&token.secret).into_owned())
            .collect()
    }

    /// The index of the token `presented` equals, comparing against every token in constant
    /// time per token (only the lengths are compared early).
    fn find(&self, presented: &[u8]) -> Option<usize> {
        let mut found = None;
        for (index, token) in self.tokens.iter().enumerate() {
            if bool::from(token.secret.as_slice().ct_eq(presented)) {
                found = Some(index);
            }
        }
        found
    }
}

/// Whether `b` may appear in a session id served over HTTP.
fn id_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')
}

/// Refuses an id that is empty, longer than [`MAX_SESSION_ID`] bytes or holds a byte other
/// than `A-Z a-z 0-9 . _ -`.
pub(crate) fn check_session_id(id: &str) -> Result<(), Refusal> {
    if id.is_empty() || id.len() > MAX_SESSION_ID || !id.bytes().all(id_byte) {
        return Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            "invalid_session_id",
            format!("a session id is 1 to {MAX_SESSION_ID} characters of A-Z a-z 0-9 . _ -"),
        ));
    }
    Ok(())
}

/// Refuses a request whose `Origin` is present and neither a loopback origin (any port;
/// what a local tool's page is) nor one of `allowed` (exact `scheme://host[:port]`): a page of
/// another site that reached this server through DNS rebinding.
pub(crate) fn check_origin(headers: &HeaderMap, allowed: &[String]) -> Result<(), Refusal> {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let refused = || {
        Refusal::new(
            StatusCode::FORBIDDEN,
            "origin_refused",
            "the request's Origin is not allowed (see --allow-origin)",
        )
    };
    let origin = origin.to_str().map_err(|_| refused())?;
    if allowed.iter().any(|a| a.eq_ignore_ascii_case(origin)) || is_loopback_origin(origin) {
        return Ok(());
    }
    Err(refused())
}

/// Refuses a request to a loopback listener whose `Host` is not a loopback name
/// (`localhost`, `127.0.0.1`, `[::1]`, any port): a page whose own host name was rebound to
/// this machine.
pub(crate) fn check_loopback_host(headers: &HeaderMap) -> Result<(), Refusal> {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.parse::<http::uri::Authority>().ok());
    match host {
        Some(host) if matches!(host.host(), "localhost" | "127.0.0.1" | "[::1]") => Ok(()),
        _ => Err(Refusal::new(
            StatusCode::FORBIDDEN,
            "host_refused",
            "a loopback server answers requests for localhost, 127.0.0.1 or [::1] only",
        )),
    }
}

fn is_loopback_origin(origin: &str) -> bool {
    let Ok(uri) = origin.parse::<http::Uri>() else {
        return false;
    };
    matches!(uri.scheme_str(), Some("http" | "https"))
        && matches!(uri.host(), Some("localhost" | "127.0.0.1" | "[::1]"))
        && uri.path_and_query().is_none_or(|p| p.as_str() == "/")
}

/// The credentials of an `Authorization` value of the `Bearer` scheme: the scheme word in
/// any case (RFC 9110 §11.1), one or more spaces, then the token.
pub(crate) fn bearer(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at_checked(b"Bearer".len())?;
    if !scheme.eq_ignore_ascii_case(b"Bearer") || rest.first() != Some(&b' ') {
        return None;
    }
    let start = rest.iter().position(|b| *b != b' ')?;
    Some(&rest[start..])
}

/// How to send the token, in every 401 message (worded so that clients that redact
/// `Authorization: …` from their logs still show it).
const SEND_IT: &str = "Send the token the server printed (a line of its token file) as the \
                       Bearer token of the Authorization header";

/// The 401 message of a request with no Bearer token.
const NO_TOKEN: &str = "no token was sent: send the token the server printed (a \
                                   line of its token file) as the Bearer token of the \
                                   Authorization header";

fn unauthorized(message: String) -> Refusal {
    Refusal::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
}

/// The 401 message of a Bearer token that is not one of the server's: a client that sent a
/// placeholder it did not expand (Claude Code sends `${HARNESS_TOKEN}` as is when the
/// variable is unset) is told to set that variable; any other token is not echoed.
fn wrong_token(presented: &[u8]) -> String {
    let placeholder = presented
        .strip_prefix(b"${")
        .and_then(|rest| rest.strip_suffix(b"}"))
        .filter(|name| {
            (1..=64).contains(&name.len())
                && !name[0].is_ascii_digit()
                && name.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_')
        })
        .and_then(|name| std::str::from_utf8(name).ok());
    match placeholder {
        Some(name) => format!(
            "the token sent is the unexpanded text ${{{name}}}: set {name} to the token the \
             server printed in the environment the client starts in, then restart the client"
        ),
        None => format!("the token sent is not one of this server's tokens. {SEND_IT}"),
    }
}

/// With `tokens`, refuses a request without `Authorization: Bearer <token>` naming one of
/// them (401), or whose token is limited to prefixes `session` starts with none of (403);
/// what passes is the index of its token in the file. Without tokens (`--no-auth`, loopback
/// only) every request passes, as token 0.
pub(crate) fn check_token(
    headers: &HeaderMap,
    tokens: Option<&Tokens>,
    session: &str,
) -> Result<usize, Refusal> {
    let Some(tokens) = tokens else {
        return Ok(0);
    };
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| bearer(value.as_bytes()));
    let Some(presented) = presented else {
        return Err(unauthorized(NO_TOKEN.to_owned()));
    };
    let Some(index) = tokens.find(presented) else {
        return Err(unauthorized(wrong_token(presented)));
    };
    let prefixes = &tokens.tokens[index].prefixes;
    if prefixes.is_empty() || prefixes.iter().any(|p| session.starts_with(p.as_str())) {
        return Ok(index);
    }
    Err(Refusal::new(
        StatusCode::FORBIDDEN,
        "forbidden",
        "this token may not reach this session",
    ))
}

/// Refuses a body whose `Content-Length` exceeds `max` bytes (a body without one is bounded
/// while it streams, by the MCP transport).
pub(crate) fn check_length(headers: &HeaderMap, max: usize) -> Result<(), Refusal> {
    let length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    match length {
        Some(length) if length > max as u64 => Err(Refusal::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!("a request body is at most {max} bytes"),
        )),
        _ => Ok(()),
    }
}

/// Refuses to listen on a non-loopback address without tokens.
pub(crate) fn check_bind(addr: SocketAddr, tokens: Option<&Tokens>) -> Result<(), ServeError> {
    if addr.ip().is_loopback() || tokens.is_some() {
        return Ok(());
    }
    Err(ServeError::Unusable(format!(
        "{addr} is not a loopback address: serving it without a token is refused (drop \
         --no-auth)"
    )))
}

#[cfg(test)]
#[path = "auth_tests.rs"]
mod tests;
