//! The server's own word on refused credentials: a client that sends no token, a wrong one or
//! one limited to other sessions (or from an origin or host name the server does not admit)
//! gets a `401`/`403` whose JSON message says what to do, but some clients never show it
//! (Codex reports only "Auth required"). So the person who started the server also reads it on
//! its standard error, as a `WARN` line of target `turnkit_mcp::http::request`: the first
//! refusal of each code at once, then at most one line per [`QUIET`] per code, counting the
//! refusals left unsaid in between, so a flood of bad requests costs one line per window.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use super::Refusal;

/// The shortest time between two lines of one refusal code.
pub(crate) const QUIET: Duration = Duration::from_secs(10);

/// Per refusal code: when its last line was written, and how many refusals went unsaid since.
#[derive(Debug, Default)]
pub(crate) struct RefusedLog {
    codes: Mutex<HashMap<&'static str, (Instant, u64)>>,
}

impl RefusedLog {
    /// Notes `refusal` of a request for session `session` (`None`: before the path named one)
    /// at `now`; returns the line to write, if any. Only `401` and `403` refusals are told;
    /// every other refusal is the client's own malformed request and its body says so.
    pub(crate) fn note(
        &self,
        refusal: &Refusal,
        session: Option<&str>,
        now: Instant,
    ) -> Option<String> {
        if !matches!(refusal.status.as_u16(), 401 | 403) {
            return None;
        }
        let mut codes = turnkit_core::lock(&self.codes);
        let unsaid = match codes.get_mut(refusal.error) {
            Some((last, unsaid)) if now.duration_since(*last) < QUIET => {
                *unsaid += 1;
                return None;
            }
            Some((_, unsaid)) => std::mem::take(unsaid),
            None => 0,
        };
        codes.insert(refusal.error, (now, 0));
        let target = session.map_or_else(String::new, |id| format!(" for session {id}"));
        let more = match unsaid {
            0 => String::new(),
            1 => " (1 more such refusal since the last line)".to_owned(),
            n => format!(" ({n} more such refusals since the last line)"),
        };
        Some(format!(
            "refused a request{target}: {} {}: {}{more}",
            refusal.status.as_u16(),
            refusal.error,
            refusal.message
        ))
    }
}

#[cfg(test)]
mod tests {
    use http::StatusCode;
    use pretty_assertions::assert_eq;

    use super::*;

    fn wrong() -> Refusal {
        Refusal::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "the token is wrong",
        )
    }

    #[tokio::test(start_paused = true)]
    async fn the_first_refusal_is_told_then_one_line_per_quiet_window_with_the_count() {
        let log = RefusedLog::default();
        let start = Instant::now();
        assert_eq!(
            log.note(&wrong(), Some("tok"), start).as_deref(),
            Some("refused a request for session tok: 401 unauthorized: the token is wrong")
        );
        for i in 1..=5 {
            assert_eq!(
                log.note(&wrong(), Some("tok"), start + QUIET / 10 * i),
                None
            );
        }
        assert_eq!(
            log.note(&wrong(), None, start + QUIET).as_deref(),
            Some(
                "refused a request: 401 unauthorized: the token is wrong (5 more such refusals \
                 since the last line)"
            )
        );
        assert_eq!(
            log.note(&wrong(), None, start + QUIET * 2 - Duration::from_millis(1)),
            None
        );
        assert_eq!(
            log.note(&wrong(), None, start + QUIET * 3).as_deref(),
            Some(
                "refused a request: 401 unauthorized: the token is wrong (1 more such refusal \
                 since the last line)"
            )
        );
    }

    #[tokio::test(start_paused = true)]
    async fn each_code_has_its_own_window_and_other_refusals_are_not_told() {
        let log = RefusedLog::default();
        let now = Instant::now();
        let forbidden = Refusal::new(StatusCode::FORBIDDEN, "forbidden", "not this session");
        let missing = Refusal::new(StatusCode::NOT_FOUND, "not_found", "no such path");
        assert!(log.note(&wrong(), Some("a"), now).is_some());
        assert_eq!(
            log.note(&forbidden, Some("b"), now).as_deref(),
            Some("refused a request for session b: 403 forbidden: not this session")
        );
        assert_eq!(log.note(&missing, None, now), None);
    }
}
