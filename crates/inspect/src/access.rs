//! [`Access`]: who may read the inspector's pages. Every request passes three checks before
//! any page is made:
//!
//! 1. **Host** (a loopback listener only): the `Host` header names `localhost`, `127.0.0.1`
//!    or `[::1]`, so a page whose own host name was rebound to this machine (DNS rebinding,
//!    `Host: attacker.example`) is refused with 403.
//! 2. **Origin**: when present, it is `http://` or `https://` followed by the request's own
//!    `Host` (a same-origin request); any other site's page is refused with 403.
//! 3. **Token** (unless the access is open): `?token=…` on any page sets an `HttpOnly`,
//!    `SameSite=Strict` cookie and redirects (303) to the same address without the token;
//!    later requests carry the cookie, or `Authorization: Bearer …`. A missing or wrong
//!    token is refused with 401. Tokens are compared in constant time.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq as _;

use crate::InspectError;

/// The cookie holding the token once a `?token=` link was followed.
pub const TOKEN_COOKIE: &str = "harness_inspect_token";

/// The shortest token accepted, in bytes.
const MIN_TOKEN: usize = 16;

/// Who may read the inspector: the tokens it accepts (none: open) and whether it listens on
/// loopback only (then foreign `Host` values are refused).
#[derive(Clone)]
pub struct Access {
    tokens: Arc<[Vec<u8>]>,
    loopback: bool,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access")
            .field("tokens", &self.tokens.len())
            .field("loopback", &self.loopback)
            .finish()
    }
}

impl Default for Access {
    /// Open (no token) and loopback: the `Host` and `Origin` checks only.
    fn default() -> Self {
        Self {
            tokens: Arc::from(Vec::new()),
            loopback: true,
        }
    }
}

impl Access {
    /// Requests must carry one of `tokens`; `addr` is the listening address (a loopback one
    /// turns the `Host` check on).
    ///
    /// # Errors
    /// [`InspectError::Access`] when `tokens` is empty or a token is shorter than 16 bytes.
    pub fn with_tokens(tokens: Vec<String>, addr: SocketAddr) -> Result<Self, InspectError> {
        if tokens.is_empty() {
            return Err(InspectError::Access("no token to require".to_owned()));
        }
        if tokens.iter().any(|t| t.len() < MIN_TOKEN) {
            return Err(InspectError::Access(format!(
                "a token is at least {MIN_TOKEN} characters"
            )));
        }
        Ok(Self {
            tokens: tokens.into_iter().map(String::into_bytes).collect(),
            loopback: addr.ip().is_loopback(),
        })
    }

    /// No token: only for a loopback `addr` (every local user can then read every session).
    ///
    /// # Errors
    /// [`InspectError::Access`] for a non-loopback address.
    pub fn open(addr: SocketAddr) -> Result<Self, InspectError> {
        if !addr.ip().is_loopback() {
            return Err(InspectError::Access(format!(
                "{addr} is not a loopback address: serving it without a token would show every \
                 session to anyone who reaches it; drop --no-auth (a token is generated) or give \
                 --token-file"
            )));
        }
        Ok(Self::default())
    }

    /// A new random token: 32 bytes from the operating system, as 64 hex digits.
    ///
    /// # Errors
    /// [`InspectError::Access`] when the operating system gives no random bytes.
    pub fn generate_token() -> Result<String, InspectError> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes)
            .map_err(|e| InspectError::Access(format!("no random bytes for a token: {e}")))?;
        Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// Whether requests need a token.
    #[must_use]
    pub fn requires_token(&self) -> bool {
        !self.tokens.is_empty()
    }

    fn knows(&self, presented: &[u8]) -> bool {
        let mut found = false;
        for token in self.tokens.iter() {
            found |= bool::from(token.as_slice().ct_eq(presented));
        }
        found
    }
}

fn refuse(status: StatusCode, message: &'static str) -> Response {
    (status, [(header::CACHE_CONTROL, "no-store")], message).into_response()
}

fn host_of(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::HOST).and_then(|h| h.to_str().ok())
}

fn loopback_host(host: &str) -> bool {
    host.parse::<axum::http::uri::Authority>()
        .is_ok_and(|a| matches!(a.host(), "localhost" | "127.0.0.1" | "[::1]"))
}

fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let (Ok(origin), Some(host)) = (origin.to_str(), host_of(headers)) else {
        return false;
    };
    let authority = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    authority.is_some_and(|a| a.eq_ignore_ascii_case(host))
}

fn cookie_token(headers: &HeaderMap) -> Option<&[u8]> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .find_map(|pair| {
            let (name, value) = pair.trim().split_once('=')?;
            (name == TOKEN_COOKIE).then_some(value.as_bytes())
        })
}

fn bearer_token(headers: &HeaderMap) -> Option<&[u8]> {
    let value = headers.get(header::AUTHORIZATION)?.as_bytes();
    let (scheme, token) = value.split_at_checked(7)?;
    scheme.eq_ignore_ascii_case(b"bearer ").then_some(token)
}

/// The `token` query parameter and the rest of the query without it.
fn query_token(query: &str) -> (Option<&str>, String) {
    let mut token = None;
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.strip_prefix("token=") {
            Some(value) => token = Some(value),
            None => rest.push(pair),
        }
    }
    (token, rest.join("&"))
}

/// The middleware of [`Inspector::router`](crate::Inspector::router): the checks of the
/// module documentation.
pub(crate) async fn guard(State(access): State<Access>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    if access.loopback && !host_of(headers).is_some_and(loopback_host) {
        return refuse(
            StatusCode::FORBIDDEN,
            "this inspector answers requests for localhost, 127.0.0.1 or [::1] only\n",
        );
    }
    if !same_origin(headers) {
        return refuse(
            StatusCode::FORBIDDEN,
            "requests from another site's page are refused\n",
        );
    }
    if !access.requires_token() {
        return next.run(request).await;
    }
    let (query_token, rest) = query_token(request.uri().query().unwrap_or(""));
    if let Some(presented) = query_token {
        if !access.knows(presented.as_bytes()) {
            return refuse(StatusCode::UNAUTHORIZED, "wrong token\n");
        }
        let mut location = request.uri().path().to_owned();
        if !rest.is_empty() {
            location.push('?');
            location.push_str(&rest);
        }
        let cookie = format!("{TOKEN_COOKIE}={presented}; HttpOnly; SameSite=Strict; Path=/");
        let (Ok(location), Ok(cookie)) = (
            HeaderValue::from_str(&location),
            HeaderValue::from_str(&cookie),
        ) else {
            return refuse(StatusCode::BAD_REQUEST, "malformed token\n");
        };
        return (
            StatusCode::SEE_OTHER,
            [
                (header::LOCATION, location),
                (header::SET_COOKIE, cookie),
                (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
            ],
        )
            .into_response();
    }
    let presented = cookie_token(headers).or_else(|| bearer_token(headers));
    if presented.is_some_and(|p| access.knows(p)) {
        return next.run(request).await;
    }
    refuse(
        StatusCode::UNAUTHORIZED,
        "a token is required: open the URL `harness inspect` printed (it carries ?token=…)\n",
    )
}
