//! Tokens granted at run time, each reaching exactly one session: what the server hands to a
//! process it starts for a session (a launched agent), so that process can call back into its
//! own session and no other. A grant lives as long as its [`SessionGrant`] value.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use http::{HeaderMap, StatusCode, header};
use subtle::ConstantTimeEq;
use turnkit_core::lock;

use super::auth::{Refusal, bearer};
use crate::ServeError;

/// The bytes of a granted token (hex-encoded: twice as many characters).
pub const GRANT_BYTES: usize = 32;

/// The token indices of grants start here, far above any token file's line count, so a
/// grant's connections and sessions are counted apart from every file token's.
const GRANT_INDEX_BASE: usize = 1 << 40;

/// One live grant: its id, secret and session.
struct Grant {
    id: u64,
    secret: Vec<u8>,
    session: String,
}

/// The grants of one server.
#[derive(Default)]
pub(crate) struct Grants {
    next: AtomicU64,
    live: Mutex<Vec<Grant>>,
}

impl Grants {
    /// A new grant for `session`, live until the returned value is dropped.
    pub(crate) fn grant(self: &Arc<Self>, session: &str) -> Result<SessionGrant, ServeError> {
        let mut bytes = [0u8; GRANT_BYTES];
        getrandom::fill(&mut bytes).map_err(|error| {
            ServeError::Unusable(format!(
                "granting a session token: no random bytes: {error}"
            ))
        })?;
        let secret: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        lock(&self.live).push(Grant {
            id,
            secret: secret.as_bytes().to_vec(),
            session: session.to_owned(),
        });
        Ok(SessionGrant {
            id,
            secret,
            session: session.to_owned(),
            grants: self.clone(),
        })
    }

    /// `None` when the request's bearer token is no grant (the token file decides); else
    /// `Ok(index)` for a grant of `session` and `403 forbidden` for a grant of another one.
    /// Every grant is compared, in constant time per grant.
    pub(crate) fn check(
        &self,
        headers: &HeaderMap,
        session: &str,
    ) -> Option<Result<usize, Refusal>> {
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| bearer(value.as_bytes()))?;
        let live = lock(&self.live);
        let mut found = None;
        for grant in live.iter() {
            if bool::from(grant.secret.as_slice().ct_eq(presented)) {
                found = Some(grant);
            }
        }
        let grant = found?;
        if grant.session == session {
            let index = usize::try_from(grant.id).unwrap_or(usize::MAX - GRANT_INDEX_BASE);
            return Some(Ok(GRANT_INDEX_BASE.saturating_add(index)));
        }
        Some(Err(Refusal::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "this token may not reach this session",
        )))
    }

    fn revoke(&self, id: u64) {
        lock(&self.live).retain(|grant| grant.id != id);
    }
}

/// A token that reaches one session of its server, and only while this value lives
/// (dropping it revokes the token; requests already admitted go on). Its secret is
/// [`GRANT_BYTES`] random bytes from the operating system, as 64 hex digits.
pub struct SessionGrant {
    id: u64,
    secret: String,
    session: String,
    grants: Arc<Grants>,
}

impl SessionGrant {
    /// The token, to send as `Authorization: Bearer <token>`.
    #[must_use]
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// The one session it reaches.
    #[must_use]
    pub fn session(&self) -> &str {
        &self.session
    }
}

impl std::fmt::Debug for SessionGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionGrant")
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

impl Drop for SessionGrant {
    fn drop(&mut self) {
        self.grants.revoke(self.id);
    }
}
