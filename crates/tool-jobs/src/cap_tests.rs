use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_core::{ContentBlock, ToolOutput};

use super::*;

fn running_value(id: &str, text: &str) -> Value {
    json!({
        "text": text,
        "job": {"id": id, "kind": "bash", "label": "sleep 60", "status": "running", "startedAt": 0}
    })
}

/// C-106, adapted: this host has no policy layers, so the outcomes they would produce are fed
/// to the finalize step directly, as a host with such layers does.
#[test]
fn policy_outcomes_are_all_bounded() {
    let limit = Some(64);
    // bash-1: a pre-execute denial with reason d×1000.
    let denied = cap_result(JOB_OUTPUT, ToolOutput::error("d".repeat(1000)), limit);
    assert_eq!(denied.is_error, true);
    assert_eq!(
        denied.text(),
        format!("{}\n[result truncated]", "d".repeat(45))
    );
    // bash-2: an around-wrapper's success value, re-rendered by the tool's render.
    let value = running_value("bash-2", &"a".repeat(1000));
    let rendered = render_output(&"a".repeat(1000), "[status: running]");
    let wrapped = cap_result(
        JOB_OUTPUT,
        ToolOutput::success(value.clone(), rendered),
        limit,
    );
    assert_eq!(wrapped.is_error, false);
    assert_eq!(wrapped.value, value, "the canonical value is never capped");
    assert_eq!(
        wrapped.text(),
        format!("{}\n[output truncated]\n[status: running]", "a".repeat(27))
    );
    // bash-3, bash-4, bash-5: thrown errors from pre, around and post layers.
    for prefix in ["pre failed: ", "around failed: ", "post failed: "] {
        let thrown = cap_result(
            JOB_OUTPUT,
            ToolOutput::error(format!("{prefix}{}", "p".repeat(1000))),
            limit,
        );
        assert_eq!(thrown.is_error, true);
        assert_eq!(
            thrown.text(),
            format!("{}\n[result truncated]", "p".repeat(45))
        );
        assert!(thrown.text().len() <= 64);
    }
}

#[test]
fn customized_success_rendering_uses_rule_b() {
    let value = running_value("bash-1", &"a".repeat(100));
    let custom = ToolOutput::success(value, format!("custom {}", "z".repeat(100)));
    assert_eq!(
        cap_result(JOB_OUTPUT, custom, Some(40)).text(),
        format!("{}\n[result truncated]", "z".repeat(21))
    );
}

#[test]
fn job_kill_results_use_rule_b() {
    let ack = ToolOutput::success(json!({}), "requested cancellation of job bash-1");
    assert_eq!(cap_result(JOB_KILL, ack, Some(8)).text(), "uncated]");
    let finished = ToolOutput::success(
        json!({}),
        "job bash-1 had already finished [status: completed, exit code: 0]",
    );
    assert_eq!(
        cap_result(JOB_KILL, finished, Some(40)).text(),
        "pleted, exit code: 0]\n[result truncated]"
    );
}

#[test]
fn rule_c_and_uncapped_cases_are_unchanged() {
    let two_blocks = ToolOutput {
        value: Value::Null,
        content: vec![
            ContentBlock::text("x".repeat(100)),
            ContentBlock::text("y".repeat(100)),
        ],
        is_error: false,
    };
    assert_eq!(
        cap_result(JOB_OUTPUT, two_blocks.clone(), Some(10)),
        two_blocks
    );
    let long = ToolOutput::error("e".repeat(100));
    assert_eq!(cap_result(JOB_OUTPUT, long.clone(), None), long);
    assert_eq!(cap_result("job_list", long.clone(), Some(10)), long);
}

#[test]
fn detail_is_part_of_the_rule_a_suffix() {
    let value = json!({
        "text": "界".repeat(50),
        "job": {"id": "bash-1", "kind": "bash", "label": "x", "status": "completed",
                "detail": "exit code: 0", "startedAt": 0, "finishedAt": 1}
    });
    let rendered = render_output(&"界".repeat(50), "[status: completed, exit code: 0]");
    let got = cap_result(JOB_OUTPUT, ToolOutput::success(value, rendered), Some(70));
    // fixed = 19 + 34 = 53 bytes; 17 bytes of tail → 5 whole characters.
    assert_eq!(
        got.text(),
        format!(
            "{}\n[output truncated]\n[status: completed, exit code: 0]",
            "界".repeat(5)
        )
    );
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    fn text() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop_oneof![
                Just("x".to_owned()),
                Just("\n".to_owned()),
                Just("ß".to_owned()),
                Just("界".to_owned()),
                Just("🦀".to_owned()),
                Just("[output truncated]".to_owned()),
                any::<char>().prop_map(String::from),
            ],
            0..200,
        )
        .prop_map(|parts| parts.concat())
    }

    proptest! {
        #[test]
        fn every_capped_result_fits(
            body in text(),
            detail in prop::option::of(text()),
            limit in 1u64..200,
            is_error in any::<bool>(),
            kill in any::<bool>(),
        ) {
            let tool = if kill { JOB_KILL } else { JOB_OUTPUT };
            let output = if is_error {
                ToolOutput::error(&body)
            } else {
                let mut job = json!({"id": "bash-1", "kind": "bash", "label": "l", "status": "completed", "startedAt": 0});
                if let Some(detail) = &detail {
                    job["detail"] = json!(detail);
                }
                let line = status_line("completed", detail.as_deref());
                ToolOutput::success(json!({"text": body, "job": job}), render_output(&body, &line))
            };
            let capped = cap_result(tool, output.clone(), Some(limit));
            let text = capped.text();
            prop_assert!(text.len() as u64 <= limit);
            prop_assert_eq!(capped.is_error, output.is_error);
            prop_assert_eq!(&capped.value, &output.value);
            if output.text().len() as u64 <= limit {
                prop_assert_eq!(text, output.text());
            }
        }
    }
}
