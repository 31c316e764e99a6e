//! The transport's own refusals in the documented shape: rmcp's streamable HTTP service
//! answers some requests with a plain-text body (`Not Found: Session not found`,
//! `Bad Request: Session ID is required`, `Not Acceptable: …`); [`json_refusal`] turns each
//! into a [`Refusal`] (`{"error": CODE, "message": TEXT}`) whose text says what to do. Its
//! JSON-RPC error bodies and every success pass unchanged.

use axum::response::{IntoResponse, Response};
use http::{StatusCode, header};
use http_body_util::{BodyExt as _, Limited};

use super::Refusal;

/// The most of a plain-text refusal read to classify it.
const MOST: usize = 4096;

/// The refusal of a plain-text transport answer with `status` and `text`.
pub(crate) fn classify(status: StatusCode, text: &str) -> Refusal {
    let text = text.trim();
    let (code, message) = match status {
        StatusCode::NOT_FOUND if text.contains("Session not found") => (
            "session_not_found",
            "the Mcp-Session-Id is not a session this server has open (it restarted, or \
             released the session when idle): open a new one with initialize"
                .to_owned(),
        ),
        StatusCode::BAD_REQUEST if text.contains("Session ID is required") => (
            "session_id_required",
            "a request after initialize carries the Mcp-Session-Id header its initialize \
             answer gave"
                .to_owned(),
        ),
        StatusCode::NOT_ACCEPTABLE => (
            "not_acceptable",
            "the Accept header must list both application/json and text/event-stream (a GET \
             stream: text/event-stream)"
                .to_owned(),
        ),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => (
            "unsupported_media_type",
            "a POST body is JSON: send Content-Type: application/json".to_owned(),
        ),
        StatusCode::METHOD_NOT_ALLOWED => (
            "method_not_allowed",
            "a session's URL takes POST, GET and DELETE".to_owned(),
        ),
        _ => ("transport_refused", text.to_owned()),
    };
    Refusal::new(status, code, message)
}

/// `response` as is, unless it is an error status with a body that is neither JSON nor an
/// event stream: then the [`Refusal`] [`classify`] makes of it.
pub(crate) async fn json_refusal(response: Response) -> Response {
    let status = response.status();
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let structured = content_type.starts_with("application/json")
        || content_type.starts_with("text/event-stream");
    if !(status.is_client_error() || status.is_server_error()) || structured {
        return response;
    }
    let body = Limited::new(response.into_body(), MOST).collect().await;
    let text = body
        .map(|collected| String::from_utf8_lossy(&collected.to_bytes()).into_owned())
        .unwrap_or_default();
    classify(status, &text).into_response()
}

#[cfg(test)]
#[path = "plain_tests.rs"]
mod tests;
