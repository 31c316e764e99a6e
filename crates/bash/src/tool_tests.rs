use pretty_assertions::assert_eq;

use super::*;
use turnkit_jobs::JobStatus;

fn snapshot(status: JobStatus, detail: Option<&str>) -> JobSnapshot {
    JobSnapshot {
        id: "bash-1".into(),
        kind: "bash".into(),
        label: "echo hi".into(),
        output_limit_bytes: None,
        owner_session: None,
        status,
        detail: detail.map(Into::into),
        started_at: 0,
        finished_at: None,
        reported: true,
    }
}

#[test]
fn foreground_rendering() {
    let done = snapshot(JobStatus::Completed, Some("exit code: 0"));
    let out = render_foreground("hi\n", &done, None);
    assert_eq!(out.text(), "hi\n[status: completed, exit code: 0]");
    assert_eq!(
        out.value,
        json!({"kind":"foreground","jobId":"bash-1","output":"hi\n","status":"completed","detail":"exit code: 0","timedOut":false})
    );
    assert_eq!(
        render_foreground("", &done, None).text(),
        "(no output)\n[status: completed, exit code: 0]"
    );
    assert_eq!(
        render_foreground("abc", &done, None).text(),
        "abc\n[status: completed, exit code: 0]"
    );
    let killed = snapshot(JobStatus::Killed, Some("signal: SIGTERM"));
    let out = render_foreground("partial\n", &killed, Some(100.0));
    assert_eq!(
        out.text(),
        "partial\n[timed out after 100ms]\n[status: killed, signal: SIGTERM]"
    );
    assert_eq!(out.value["timedOut"], json!(true));
}

#[test]
fn definition_shape() {
    let definition = &*DEFINITION;
    assert_eq!(definition.name, "bash");
    assert_eq!(definition.input_schema["required"], json!(["command"]));
    assert_eq!(
        definition.input_schema["properties"]["run_in_background"]["type"],
        json!("boolean")
    );
    assert_eq!(
        definition.input_schema["properties"]["timeout_ms"]["type"],
        json!("number")
    );
}
