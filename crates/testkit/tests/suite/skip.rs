//! The skip summary a test binary prints at exit, seen from outside: this test runs its own
//! binary again with only the ignored `skipping_child` selected.

const CHILD: &str = "suite::skip::skipping_child";

/// The child: three skips for two reasons, then a normal return (ignored in a normal run,
/// where it would only count skips that did not happen).
#[test]
#[ignore = "the child process of summary_at_exit_counts_the_skips_by_reason"]
fn skipping_child() {
    if std::env::var_os("HARNESS_SKIP_CHILD").is_none() {
        return;
    }
    assert_eq!(turnkit_testkit::skip::skipped("reason a"), 1);
    assert_eq!(turnkit_testkit::skip::skipped("reason b"), 2);
    assert_eq!(turnkit_testkit::skip::skipped("reason a"), 3);
}

#[test]
fn summary_at_exit_counts_the_skips_by_reason() {
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", CHILD, "--ignored"])
        .env("HARNESS_SKIP_CHILD", "1")
        .env_remove(turnkit_testkit::skip::SKIP_LOG)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stderr = String::from_utf8(output.stderr).unwrap();
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("SKIPPED"))
        .collect();
    // The parent is this test, not cargo: no run tally.
    assert_eq!(
        lines,
        [
            format!("SKIPPED #1 of this test binary: {CHILD}: reason a"),
            format!("SKIPPED #2 of this test binary: {CHILD}: reason b"),
            format!("SKIPPED #3 of this test binary: {CHILD}: reason a"),
            "SKIPPED in total: 3 tests of this test binary: 2 × reason a; 1 × reason b".to_owned(),
        ]
    );
}
