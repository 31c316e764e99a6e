use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

#[test]
fn status_lines() {
    // C-097
    assert_eq!(status_line("running", None), "[status: running]");
    assert_eq!(
        status_line("completed", Some("exit code: 0")),
        "[status: completed, exit code: 0]"
    );
}

#[test]
fn output_renderings() {
    assert_eq!(
        render_output("line one\n", "[status: running]"),
        "line one\n[status: running]"
    );
    assert_eq!(
        render_output("", "[status: running]"),
        "(no new output)\n[status: running]"
    );
    assert_eq!(
        render_output("the answer", "[status: completed, completed]"),
        "the answer\n[status: completed, completed]"
    );
    assert_eq!(
        render_output("two\n\n", "[status: running]"),
        "two\n\n[status: running]"
    );
}

#[test]
fn list_and_kill_renderings() {
    assert_eq!(
        list_line("bash-1", "bash", "running", "sleep 60"),
        "bash-1 [bash] running — sleep 60"
    );
    assert_eq!(
        render_kill_requested("bash-1"),
        "requested cancellation of job bash-1"
    );
    assert_eq!(
        render_kill_finished("bash-1", "[status: completed, exit code: 0]"),
        "job bash-1 had already finished [status: completed, exit code: 0]"
    );
}

#[test]
fn summaries_count_scalar_values() {
    assert_eq!(
        notice_summary("bash", "pnpm test", "[status: completed, exit code: 0]"),
        "bash pnpm test [status: completed, exit code: 0]"
    );
    // C-121: `subagent ` + x×110 + `…`.
    let summary = notice_summary("subagent", &"x".repeat(1000), "[status: completed]");
    assert_eq!(summary, format!("subagent {}…", "x".repeat(110)));
    assert_eq!(summary.chars().count(), 120);
    // Multi-byte characters count as one each and are never split.
    let summary = notice_summary("k", &"界".repeat(200), "[status: running]");
    assert_eq!(summary, format!("k {}…", "界".repeat(117)));
    // Exactly 120 characters stay whole.
    let label = "y".repeat(120 - "k  [status: running]".len());
    let summary = notice_summary("k", &label, "[status: running]");
    assert_eq!(summary, format!("k {label} [status: running]"));
    assert_eq!(summary.chars().count(), 120);
}

#[test]
fn schemas_are_exact() {
    let expected_output: serde_json::Value = serde_json::from_str(
        r#"{
  "type": "object",
  "properties": {
    "job_id": { "type": "string", "description": "Job id returned by the tool that started the background work." },
    "wait": { "type": "boolean", "description": "Block until the job reaches a terminal status or the timeout expires. A timed-out wait returns [status: running] and leaves the job alive." },
    "timeout_ms": { "type": "number", "description": "Max wait in milliseconds (only meaningful with wait: true). Defaults to the configured wait timeout; capped by the configured maximum." }
  },
  "required": ["job_id"]
}"#,
    )
    .unwrap();
    assert_eq!(job_output_schema(), expected_output);
    assert_eq!(
        serde_json::to_string(&job_output_schema()).unwrap(),
        serde_json::to_string(&expected_output).unwrap(),
        "key order"
    );
    let expected_kill: serde_json::Value = serde_json::from_str(
        r#"{
  "type": "object",
  "properties": {
    "job_id": { "type": "string", "description": "Job id returned by the tool that started the background work." },
    "reason": { "type": "string", "description": "Optional short reason, recorded in the log and forwarded to the job." }
  },
  "required": ["job_id"]
}"#,
    )
    .unwrap();
    assert_eq!(
        serde_json::to_string(&job_kill_schema()).unwrap(),
        serde_json::to_string(&expected_kill).unwrap()
    );
    assert_eq!(
        serde_json::to_string(&job_list_schema()).unwrap(),
        r#"{"type":"object","properties":{}}"#
    );
}

#[test]
fn descriptions_and_prompt_are_exact() {
    assert_eq!(
        JOB_OUTPUT_DESCRIPTION,
        "Read a background job. Stream jobs return only output since the previous read; final-output jobs return their result after settlement. Every response ends with `[status: ...]`. Reads are non-blocking unless `wait: true`, which waits up to the configured cap."
    );
    assert_eq!(
        JOB_LIST_DESCRIPTION,
        "List your jobs (running and finished) with their ids, kinds, and statuses. A tool call run in the foreground is a job too: it is listed like one started in the background."
    );
    assert_eq!(
        JOB_KILL_DESCRIPTION,
        "Request cancellation of a running background job by job id. Returns immediately; the job settles as killed once its work actually stops."
    );
    assert_eq!(PROMPT_SECTION_NAME, "tool:jobs");
    assert_eq!(PROMPT_SECTION_ORDER, 106);
    assert_eq!(
        PROMPT_SECTION_TEXT,
        "Track every background job id you start. You are notified in-session when a job finishes \u{2014} do not busy-poll or sleep on one; keep working on independent steps and do not duplicate a running job's work. Before giving a final answer, collect every still-relevant job with job_output (set wait: true only when you are genuinely blocked on it), and job_kill jobs that stopped mattering."
    );
}

#[test]
fn present_call_cards() {
    // C-118
    assert_eq!(
        present_call("job_output", &json!({"job_id": "bash-1"})),
        Some(
            json!({"card":"generic","title":"Read output from background job bash-1","kind":"read","rawInput":"bash-1"})
        )
    );
    assert_eq!(
        present_call("job_list", &json!({})),
        Some(json!({"card":"generic","title":"List background jobs","kind":"read"}))
    );
    assert_eq!(
        present_call("job_kill", &json!({"job_id": "subagent-2"})),
        Some(
            json!({"card":"generic","title":"Kill background job subagent-2","kind":"execute","rawInput":"subagent-2"})
        )
    );
    assert_eq!(present_call("bash", &json!({})), None);
}

#[test]
fn earlier_run_renderings() {
    assert_eq!(
        earlier_list_line("bash-1", "bash", "failed", "sleep 60"),
        "bash-1 [bash] failed — sleep 60 (from before the restart)"
    );
    assert_eq!(
        render_earlier_output("3 notes summarized", "[status: completed, done]"),
        "(from before the restart)\n3 notes summarized\n[status: completed, done]"
    );
    assert_eq!(
        render_earlier_output("", "[status: failed, the host stopped while it ran]"),
        "(from before the restart)\n(no new output)\n[status: failed, the host stopped while it ran]"
    );
    assert_eq!(
        render_kill_earlier("bash-1", "[status: completed, exit code: 0]"),
        "job bash-1 is no longer running (from before the restart) [status: completed, exit code: 0]"
    );
    assert_eq!(
        lost_notice_line(
            "bash-1",
            "bash",
            "sleep 60",
            Some("x"),
            "[status: failed, x]"
        ),
        "background job bash-1 (bash: sleep 60) was lost [status: failed, x]. Its output went with the stopped host."
    );
    assert_eq!(
        lost_notice_line(
            "bash-2",
            "bash",
            "sleep 60",
            Some(turnkit_jobs::SHUTDOWN_DETAIL),
            "[status: killed, stopped by the host's shutdown]"
        ),
        "background job bash-2 (bash: sleep 60) was still running when its host shut down [status: killed, stopped by the host's shutdown]. Read its output with job_output."
    );
    assert_eq!(
        lost_notice_line(
            "bash-3",
            "bash",
            "sleep 60",
            Some(turnkit_jobs::LEFTOVERS_STOPPED_DETAIL),
            "[status: killed, stopped at the restart]"
        ),
        "background job bash-3 (bash: sleep 60) was running when its host stopped; its processes were stopped [status: killed, stopped at the restart]. Its output went with the stopped host."
    );
}
