use pretty_assertions::assert_eq;
use proptest::prelude::*;

use super::*;
use crate::text::{output_body, render_output, status_line};

/// Rule A inputs: the rendered `job_output` split into content and suffix as §5.5 says.
fn rule_a(text: &str, status: &str, limit: usize) -> String {
    // The body with one trailing newline removed; the suffix restores the separator.
    let body = output_body(text);
    let content = body.strip_suffix('\n').unwrap_or(body);
    let got = fit_with_suffix(content, &format!("\n{status}"), limit, OUTPUT_MARKER);
    if got.len() <= limit && content.len() + status.len() < limit {
        assert_eq!(
            got,
            render_output(text, status),
            "fits, so it is the rendering"
        );
    }
    got
}

#[test]
fn fit_with_suffix_worked_examples() {
    let running = status_line("running", None);
    let finished = "job bash-1 had already finished [status: completed, exit code: 0]";
    // (description, result, expected)
    let cases: Vec<(&str, String, String)> = vec![
        (
            "stream 界×100, L=48",
            rule_a(&"界".repeat(100), &running, 48),
            "界界界\n[output truncated]\n[status: running]".to_owned(),
        ),
        (
            "wrapper a×1000, L=64",
            rule_a(&"a".repeat(1000), &running, 64),
            format!("{}\n[output truncated]\n[status: running]", "a".repeat(27)),
        ),
        (
            "empty text, L=64",
            rule_a("", &running, 64),
            "(no new output)\n[status: running]".to_owned(),
        ),
        (
            "line\\n, L=64",
            rule_a("line\n", &running, 64),
            "line\n[status: running]".to_owned(),
        ),
        (
            "abc, L=20",
            rule_a("abc", &running, 20),
            "d]\n[status: running]".to_owned(),
        ),
        (
            "existing marker reused, L=60",
            rule_a(
                &format!("{}\n[output truncated]", "x".repeat(50)),
                &running,
                60,
            ),
            format!("{}\n[output truncated]\n[status: running]", "x".repeat(23)),
        ),
        (
            "deny error, L=64",
            fit_with_suffix(
                &format!("Error: {}", "d".repeat(1000)),
                "",
                64,
                RESULT_MARKER,
            ),
            format!("{}\n[result truncated]", "d".repeat(45)),
        ),
        (
            "kill ack, L=8",
            fit_with_suffix("requested cancellation of job bash-1", "", 8, RESULT_MARKER),
            "uncated]".to_owned(),
        ),
        (
            "already finished, L=40",
            fit_with_suffix(finished, "", 40, RESULT_MARKER),
            "pleted, exit code: 0]\n[result truncated]".to_owned(),
        ),
    ];
    for (name, got, expected) in cases {
        assert_eq!(got, expected, "{name}");
    }
}

#[test]
fn fit_with_suffix_byte_counts_of_examples() {
    let running = status_line("running", None);
    assert_eq!(rule_a(&"界".repeat(100), &running, 48).len(), 46);
    assert_eq!(rule_a(&"a".repeat(1000), &running, 64).len(), 64);
}

#[test]
fn read_failure_error_keeps_the_tail() {
    // C-105: the error text `Error: ` + "read failed: "×100 under limit 64.
    let text = format!("Error: {}", "read failed: ".repeat(100));
    let got = fit_with_suffix(&text, "", 64, RESULT_MARKER);
    assert_eq!(
        got,
        "iled: read failed: read failed: read failed: \n[result truncated]"
    );
    assert_eq!(got.len(), 64);
}

#[test]
fn result_marker_is_reused_too() {
    let text = format!("{}\n[result truncated]", "e".repeat(100));
    assert_eq!(
        fit_with_suffix(&text, "", 30, RESULT_MARKER),
        format!("{}\n[result truncated]", "e".repeat(11))
    );
}

#[test]
fn utf8_boundary_helpers() {
    assert_eq!(tail_utf8("a界", 2), "");
    assert_eq!(tail_utf8("a界", 3), "界");
    assert_eq!(tail_utf8("a界", 9), "a界");
    assert_eq!(head_utf8("界a", 2), "");
    assert_eq!(head_utf8("界a", 3), "界");
    assert_eq!(head_utf8("界a", 99), "界a");
}

#[test]
fn notice_worked_examples() {
    let x1000 = "x".repeat(1000);
    let x100 = "x".repeat(100);
    let d1000 = status_line("completed", Some(&"d".repeat(1000)));
    let plain = status_line("completed", None);
    let exit0 = status_line("completed", Some("exit code: 0"));
    let parts = |id: &'static str, kind: &'static str, label: &str, status: &str| {
        fit_notice(
            &NoticeParts {
                id,
                kind,
                label,
                status_line: status,
            },
            None,
        )
    };
    assert_eq!(
        parts("bash-1", "bash", "pnpm test", &exit0),
        "background job bash-1 (bash: pnpm test) finished [status: completed, exit code: 0]. Read its output with job_output."
    );
    // (id, kind, label, status line, limit, expected)
    let cases: Vec<(&str, &str, &str, &str, u64, &str)> = vec![
        (
            "subagent-1",
            "subagent",
            &x1000,
            &d1000,
            61,
            "background job subagent-1\nDone; job_output.",
        ),
        (
            "subagent-2",
            "subagent",
            &x1000,
            &d1000,
            80,
            "background job subagent-2 (subagent: xxxxxx\n[notice truncated]\nDone; job_output.",
        ),
        ("pty-send-1", "pty-send", &x100, &plain, 8, "_output."),
        (
            "pty-send-2",
            "pty-send",
            &x100,
            &plain,
            32,
            "background job\nDone; job_output.",
        ),
        (
            "bash-1",
            "bash",
            &x100,
            &exit0,
            64,
            "background job bash-1 (bash\n[notice truncated]\nDone; job_output.",
        ),
        (
            "pty-send-100",
            "pty-send",
            &x1000,
            &d1000,
            64,
            "background job pty-send-100\n[notice truncated]\nDone; job_output.",
        ),
    ];
    for (id, kind, label, status, limit, expected) in cases {
        let notice = fit_notice(
            &NoticeParts {
                id,
                kind,
                label,
                status_line: status,
            },
            Some(limit),
        );
        assert_eq!(notice, expected, "{id} at {limit}");
        assert!(notice.len() as u64 <= limit, "{id} at {limit}");
    }
}

#[test]
fn notice_that_fits_is_complete() {
    let parts = NoticeParts {
        id: "bash-1",
        kind: "bash",
        label: "ls",
        status_line: "[status: completed, exit code: 0]",
    };
    let complete = parts.complete();
    assert_eq!(
        fit_notice(&parts, Some(complete.len() as u64)),
        "background job bash-1 (bash: ls) finished [status: completed, exit code: 0]. Read its output with job_output."
    );
    assert_eq!(
        fit_notice(&parts, Some(complete.len() as u64 - 1)),
        "background job bash-1 (bash: ls) finished [status: completed, exit code\n[notice truncated]\nDone; job_output."
    );
}

#[test]
fn notice_detail_cut_drops_partial_code_points() {
    let parts = NoticeParts {
        id: "bash-1",
        kind: "界",
        label: "l",
        status_line: "[status: running]",
    };
    // prefix 21 + marker 19 + action 18 = 58; 4 bytes of detail " (界" is 5 bytes → " (".
    assert_eq!(
        fit_notice(&parts, Some(62)),
        "background job bash-1 (\n[notice truncated]\nDone; job_output."
    );
}

fn text_strategy() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just("a".to_owned()),
            Just("\n".to_owned()),
            Just("é".to_owned()),
            Just("界".to_owned()),
            Just("🦀".to_owned()),
            Just("[output truncated]".to_owned()),
            Just("[result truncated]".to_owned()),
            any::<char>().prop_map(String::from),
        ],
        0..120,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #[test]
    fn fit_with_suffix_is_bounded(
        content in text_strategy(),
        suffix in text_strategy(),
        limit in 0usize..300,
        output in any::<bool>(),
    ) {
        let marker = if output { OUTPUT_MARKER } else { RESULT_MARKER };
        let got = fit_with_suffix(&content, &suffix, limit, marker);
        prop_assert!(got.len() <= limit);
        prop_assert!(std::str::from_utf8(got.as_bytes()).is_ok());
        if content.len() + suffix.len() <= limit {
            prop_assert_eq!(got, format!("{content}{suffix}"));
        } else if limit > marker.len() + suffix.len() {
            // The suffix always survives when there is room for it and the marker.
            prop_assert!(got.ends_with(&suffix));
        }
    }

    #[test]
    fn fit_notice_is_bounded(
        id in text_strategy(),
        kind in text_strategy(),
        label in text_strategy(),
        status in text_strategy(),
        limit in 1u64..400,
    ) {
        let parts = NoticeParts { id: &id, kind: &kind, label: &label, status_line: &status };
        let got = fit_notice(&parts, Some(limit));
        prop_assert!(got.len() as u64 <= limit);
        prop_assert!(std::str::from_utf8(got.as_bytes()).is_ok());
        if parts.complete().len() as u64 <= limit {
            prop_assert_eq!(got, parts.complete());
        }
    }
}
