use std::path::Path;

use pretty_assertions::assert_eq;

use super::*;

#[test]
fn delta_format_examples_of_the_spec() {
    assert_eq!(render_delta("out\n", "err\n"), "out\n[stderr]\nerr\n");
    assert_eq!(render_delta("", "err\n"), "[stderr]\nerr\n");
    assert_eq!(render_delta("out", "err\n"), "out\n[stderr]\nerr\n");
    assert_eq!(render_delta("out", ""), "out");
    assert_eq!(render_delta("", ""), "");
}

#[test]
fn dropped_notice_lists_existing_paths_or_unavailable() {
    assert_eq!(
        dropped_notice(&[]),
        "[some output was dropped from memory; full output: (unavailable)]"
    );
    assert_eq!(
        dropped_notice(&[Path::new("/tmp/a.stdout"), Path::new("/tmp/a.stderr")]),
        "[some output was dropped from memory; full output: /tmp/a.stdout, /tmp/a.stderr]"
    );
}

#[test]
fn notice_separator_only_after_text_without_a_newline() {
    assert_eq!(append_notice(String::new(), "[n]"), "[n]");
    assert_eq!(append_notice("tail\n".to_owned(), "[n]"), "tail\n[n]");
    assert_eq!(append_notice("tail".to_owned(), "[n]"), "tail\n[n]");
}

#[test]
fn signal_names() {
    assert_eq!(signal_name(15), "SIGTERM");
    assert_eq!(signal_name(9), "SIGKILL");
    assert_eq!(signal_name(2), "SIGINT");
    assert_eq!(signal_name(34), "SIGRTMIN+0");
    assert_eq!(signal_name(99), "SIG99");
}
