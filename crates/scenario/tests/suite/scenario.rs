use pretty_assertions::assert_eq;
use turnkit_scenario::run_scenario;

const FOUNDATION: &str = r#"# foundation steps only
{"do":"config","clock":{"mode":"manual","start":"2026-08-05T12:00:00.000Z"}}
{"do":"session","id":"s1","timeZone":"Europe/Paris"}
{"do":"user","session":"s1","text":"hello"}

{"do":"turn","session":"s1","phase":"start"}
{"do":"user","session":"s1","text":"while running"}
{"do":"turn","session":"s1","phase":"end"}
{"do":"advance","ms":1500}
{"do":"fault","session":"s1","append":"fail"}
{"do":"user","session":"s1","text":"lost turn events"}
{"do":"fault","session":"s1","append":"ok"}
{"do":"projection","session":"s1","key":"nope"}
{"do":"log","session":"s1","type":"turn/start"}
"#;

#[test]
fn foundation_scenario_transcript_is_exact_and_stable() {
    let first = run_scenario(FOUNDATION);
    let second = run_scenario(FOUNDATION);
    assert_eq!(first.to_text(), second.to_text());
    assert!(!first.failed);
    assert_eq!(
        first.lines,
        [
            r#"{"kind":"turn","session":"s1","phase":"start"}"#,
            r#"{"kind":"claimed","session":"s1","source":"user","text":"hello"}"#,
            r#"{"kind":"turn","session":"s1","phase":"end"}"#,
            r#"{"kind":"turn","session":"s1","phase":"start"}"#,
            r#"{"kind":"turn","session":"s1","phase":"end"}"#,
            r#"{"kind":"turn","session":"s1","phase":"start"}"#,
            r#"{"kind":"claimed","session":"s1","source":"user","text":"while running"}"#,
            r#"{"kind":"turn","session":"s1","phase":"end"}"#,
            r#"{"kind":"turn","session":"s1","phase":"start"}"#,
            r#"{"kind":"claimed","session":"s1","source":"user","text":"lost turn events"}"#,
            r#"{"kind":"turn","session":"s1","phase":"end"}"#,
            r#"{"kind":"projection","session":"s1","key":"nope","value":null}"#,
            r#"{"kind":"log","session":"s1","events":[{"seq":1,"type":"turn/start","data":{"turn":1}},{"seq":3,"type":"turn/start","data":{"turn":2}},{"seq":5,"type":"turn/start","data":{"turn":3}}]}"#,
        ]
    );
}

#[test]
fn scenario_errors_name_the_physical_line() {
    let cases = [
        (
            "{\"do\":\"nope\"}",
            r#"{"kind":"error","line":1,"message":"unknown step \"nope\""}"#,
        ),
        (
            "# c\n\n{\"do\":\"session\"}",
            r#"{"kind":"error","line":3,"message":"session: missing field `id`"}"#,
        ),
        (
            "{\"do\":\"session\",\"id\":5}",
            r#"{"kind":"error","line":1,"message":"session: invalid type: integer `5`, expected a string"}"#,
        ),
        (
            "{\"do\":\"session\",\"id\":\"s\"}\n{\"do\":\"config\"}",
            r#"{"kind":"error","line":2,"message":"config must be the first step"}"#,
        ),
        (
            "{\"do\":\"user\",\"session\":\"ghost\",\"text\":\"x\"}",
            r#"{"kind":"error","line":1,"message":"no live agent for session ghost"}"#,
        ),
        (
            "not json",
            r#"{"kind":"error","line":1,"message":"invalid JSON: expected ident at line 1 column 2"}"#,
        ),
    ];
    for (source, expected) in cases {
        let transcript = run_scenario(source);
        assert!(transcript.failed, "{source}");
        assert_eq!(transcript.lines.last().map(String::as_str), Some(expected));
    }
}

#[test]
fn restart_and_fork_keep_the_log() {
    let transcript = run_scenario(
        r#"{"do":"config","store":"jsonl","autoTurns":false}
{"do":"session","id":"p"}
{"do":"turn","session":"p","phase":"start"}
{"do":"turn","session":"p","phase":"end"}
{"do":"fork","id":"c","from":"p"}
{"do":"restart"}
{"do":"log","session":"c"}
{"do":"dispose","session":"c"}
{"do":"resume","session":"c"}
{"do":"turn","session":"c","phase":"start"}
{"do":"log","session":"c"}
"#,
    );
    assert!(!transcript.failed, "{:?}", transcript.lines);
    assert_eq!(
        transcript.lines,
        [
            r#"{"kind":"turn","session":"p","phase":"start"}"#,
            r#"{"kind":"turn","session":"p","phase":"end"}"#,
            r#"{"kind":"log","session":"c","events":[{"seq":1,"type":"turn/start","data":{"turn":1}},{"seq":2,"type":"turn/end","data":{"turn":1}}]}"#,
            r#"{"kind":"turn","session":"c","phase":"start"}"#,
            r#"{"kind":"log","session":"c","events":[{"seq":1,"type":"turn/start","data":{"turn":1}},{"seq":2,"type":"turn/end","data":{"turn":1}},{"seq":3,"type":"turn/start","data":{"turn":2}}]}"#,
        ]
    );
}

#[test]
fn log_summary_counts_projects_and_flags_problems() {
    use turnkit_core::{MemoryStore, SessionHeader, SessionStore};
    let store = MemoryStore::new(std::sync::Arc::new(
        turnkit_testkit::ManualClock::at_default(),
    ));
    let session = store.create(SessionHeader::new("s1")).unwrap();
    let todos = serde_json::json!({"todos": [{"content": "a", "status": "pending"}]});
    session.append("todo/write", todos).unwrap();
    session
        .append(
            "todo/write",
            serde_json::json!({"todos": [{"content": " b", "status": "pending"}]}),
        )
        .unwrap();
    session
        .append(
            "schedule/change",
            serde_json::json!({"version": 1, "operation": "delete", "id": "schedule-1"}),
        )
        .unwrap();
    let summary: serde_json::Value =
        serde_json::from_str(&turnkit_families::summarize_log(session.as_ref()).unwrap()).unwrap();
    assert_eq!(
        summary,
        serde_json::json!({
            "header": {"id": "s1"},
            "events": 3,
            "counts": {"schedule/change": 1, "todo/write": 2},
            "projections": {"todos": [{"content": " b", "status": "pending"}]},
            "problems": [
                "event 2: todo/write content must be non-empty and already trimmed",
                "schedule/change: corrupt schedule log: transition references inactive id \"schedule-1\""
            ]
        })
    );
}

/// `await_job` waits for the real process, bounded in real time: a job that outlives the
/// limit is a scenario error naming the limit, and a job that finishes in time continues.
#[test]
fn await_job_is_bounded_in_real_time() {
    let scenario = r#"{"do":"session","id":"s1"}
{"do":"call","session":"s1","tool":"bash","args":{"command":"sleep 30","run_in_background":true}}
{"do":"await_job","job":"bash-1","timeoutMs":50}
"#;
    let transcript = run_scenario(scenario);
    assert!(transcript.failed);
    assert_eq!(
        transcript.lines.last().map(String::as_str),
        Some(r#"{"kind":"error","line":3,"message":"job \"bash-1\" did not finish within 50ms"}"#)
    );
    let finished = run_scenario(
        r#"{"do":"session","id":"s1"}
{"do":"call","session":"s1","tool":"bash","args":{"command":"true","run_in_background":true}}
{"do":"await_job","job":"bash-1","timeoutMs":10000}
{"do":"call","session":"s1","tool":"job_list","args":{}}
"#,
    );
    assert!(!finished.failed, "{}", finished.to_text());
}

/// The runner, the catalog and the log summary work from inside a caller's runtime too
/// (each runs its own paused runtime on a thread of its own there), on both runtime flavours.
async fn public_functions_inside_a_runtime() {
    let transcript = run_scenario(
        "{\"do\":\"session\",\"id\":\"s1\"}\n{\"do\":\"user\",\"session\":\"s1\",\"text\":\"hi\"}\n",
    );
    assert_eq!(
        transcript.lines,
        [
            r#"{"kind":"turn","session":"s1","phase":"start"}"#,
            r#"{"kind":"claimed","session":"s1","source":"user","text":"hi"}"#,
            r#"{"kind":"turn","session":"s1","phase":"end"}"#,
        ]
    );
    assert!(!transcript.failed);
    let names: Vec<String> = turnkit_families::catalog(
        &turnkit_families::FamiliesConfig::defaults(),
        turnkit_families::ChildrenMode::Without,
    )
    .unwrap()
    .into_iter()
    .map(|d| d.name)
    .collect();
    assert_eq!(
        names,
        [
            "todo_write",
            "job_output",
            "job_list",
            "job_kill",
            "bash",
            "schedule_create",
            "schedule_list",
            "schedule_delete"
        ]
    );
    use turnkit_core::{MemoryStore, SessionHeader, SessionStore};
    let store = MemoryStore::new(std::sync::Arc::new(
        turnkit_testkit::ManualClock::at_default(),
    ));
    let session = store.create(SessionHeader::new("s1")).unwrap();
    let todos = serde_json::json!({"todos": [{"content": "a", "status": "pending"}]});
    session.append("todo/write", todos).unwrap();
    let summary: serde_json::Value =
        serde_json::from_str(&turnkit_families::summarize_log(session.as_ref()).unwrap()).unwrap();
    assert_eq!(summary["events"], 1);
    assert_eq!(
        summary["projections"]["todos"],
        serde_json::json!([{"content": "a", "status": "pending"}])
    );
}

#[tokio::test]
async fn public_functions_work_inside_a_current_thread_runtime() {
    public_functions_inside_a_runtime().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn public_functions_work_inside_a_multi_thread_runtime() {
    public_functions_inside_a_runtime().await;
}

/// A disposal waiting for a job that hangs on cancel can finish only at a later step (a
/// `settle`) or when the manual clock moves: the `dispose` and `restart` steps and the end of
/// the run stop with an error naming it instead of waiting forever (before, the run hung and
/// printed nothing, not even an earlier step's error).
#[test]
fn a_disposal_that_only_a_later_step_can_finish_is_a_scenario_error() {
    let start = "{\"do\":\"session\",\"id\":\"s1\"}\n{\"do\":\"fake_job\",\"session\":\"s1\",\"kind\":\"fake\",\"label\":\"x\",\"onCancel\":\"hang\"}\n";
    let job = r#"{"kind":"job","id":"fake-1","session":"s1"}"#;
    let hint = r#"settle the jobs that hang on cancel (\"onCancel\":\"hang\")"#;
    let cases = [
        (
            "{\"do\":\"dispose\",\"session\":\"s1\"}\n",
            format!(
                r#"{{"kind":"error","line":3,"message":"dispose of session s1 cannot finish until the manual clock moves or a later step runs; {hint} first"}}"#
            ),
        ),
        (
            "{\"do\":\"restart\"}\n",
            format!(
                r#"{{"kind":"error","line":3,"message":"the restart cannot finish until the manual clock moves or a later step runs; {hint} first"}}"#
            ),
        ),
        (
            "",
            format!(
                r#"{{"kind":"error","line":0,"message":"the end of the run (disposing every agent and plugin) cannot finish until the manual clock moves; {hint} before the scenario ends"}}"#
            ),
        ),
    ];
    for (last, error) in cases {
        let transcript = run_scenario(&format!("{start}{last}"));
        assert!(transcript.failed, "{last}");
        assert_eq!(transcript.lines, [job.to_owned(), error], "{last}");
    }
    // An earlier step's error is the transcript's last line; the stuck cleanup adds none.
    let transcript = run_scenario(&format!("{start}{{\"do\":\"nope\"}}\n"));
    assert_eq!(
        transcript.lines,
        [
            job,
            r#"{"kind":"error","line":3,"message":"unknown step \"nope\""}"#
        ]
    );
    // Settled first, the same scenario ends cleanly.
    let transcript = run_scenario(&format!(
        "{start}{{\"do\":\"settle\",\"job\":\"fake-1\",\"status\":\"killed\"}}\n{{\"do\":\"restart\"}}\n{{\"do\":\"dispose\",\"session\":\"s1\"}}\n"
    ));
    assert!(!transcript.failed, "{}", transcript.to_text());
}

/// Nothing settles a fake job in real time, so `await_job` on a running one is an error at
/// once (before, it waited out the real-time limit, 30 s by default).
#[test]
fn await_job_on_a_running_fake_job_is_an_error_at_once() {
    let transcript = run_scenario(
        r#"{"do":"session","id":"s1"}
{"do":"fake_job","session":"s1","kind":"fake","label":"x"}
{"do":"await_job","job":"fake-1","timeoutMs":600000}
"#,
    );
    assert!(transcript.failed);
    assert_eq!(
        transcript.lines,
        [
            r#"{"kind":"job","id":"fake-1","session":"s1"}"#,
            r#"{"kind":"error","line":3,"message":"job \"fake-1\" is a fake job: only a later \"settle\" step can finish it"}"#,
        ]
    );
    let settled = run_scenario(
        r#"{"do":"session","id":"s1"}
{"do":"fake_job","session":"s1","kind":"fake","label":"x"}
{"do":"settle","job":"fake-1","status":"completed"}
{"do":"await_job","job":"fake-1"}
"#,
    );
    assert!(!settled.failed, "{}", settled.to_text());
}

/// On `{"mode":"system"}` a timer takes real time, although the runner's runtime has a paused
/// clock: before, a 300 ms `job_output` wait returned at once (tokio's paused clock jumped).
#[test]
fn a_system_clock_wait_takes_real_time() {
    let started = std::time::Instant::now();
    let transcript = run_scenario(
        r#"{"do":"config","clock":{"mode":"system"}}
{"do":"session","id":"s1"}
{"do":"fake_job","session":"s1","kind":"fake","label":"x"}
{"do":"call","session":"s1","tool":"job_output","args":{"job_id":"fake-1","wait":true,"timeout_ms":300}}
{"do":"settle","job":"fake-1","status":"completed"}
"#,
    );
    assert!(!transcript.failed, "{}", transcript.to_text());
    assert!(
        transcript.lines[1].ends_with(r#""text":"(no new output)\n[status: running]"}"#),
        "{}",
        transcript.lines[1]
    );
    assert!(started.elapsed() >= std::time::Duration::from_millis(300));
}
