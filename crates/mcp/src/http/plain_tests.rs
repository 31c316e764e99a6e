use http::StatusCode;
use pretty_assertions::assert_eq;

use super::classify;

#[test]
fn each_plain_text_refusal_of_the_transport_gets_its_code() {
    let cases = [
        (
            StatusCode::NOT_FOUND,
            "Not Found: Session not found",
            "session_not_found",
        ),
        (
            StatusCode::BAD_REQUEST,
            "Bad Request: Session ID is required",
            "session_id_required",
        ),
        (
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: Client must accept both application/json and text/event-stream",
            "not_acceptable",
        ),
        (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Unsupported Media Type: Content-Type must be application/json",
            "unsupported_media_type",
        ),
        (
            StatusCode::METHOD_NOT_ALLOWED,
            "Method Not Allowed",
            "method_not_allowed",
        ),
        (
            StatusCode::BAD_REQUEST,
            "Bad Request: missing Host header",
            "transport_refused",
        ),
    ];
    for (status, text, code) in cases {
        let refusal = classify(status, text);
        assert_eq!(
            (refusal.status, refusal.body()["error"].as_str()),
            (status, Some(code))
        );
    }
    assert_eq!(
        classify(
            StatusCode::BAD_REQUEST,
            " Bad Request: missing Host header\n"
        )
        .body()["message"],
        "Bad Request: missing Host header"
    );
}
