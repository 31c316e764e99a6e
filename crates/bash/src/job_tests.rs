use pretty_assertions::assert_eq;

use super::*;

fn end(status: EndStatus, cancel_requested: bool) -> ProcessEnd {
    ProcessEnd {
        status,
        cancel_requested,
    }
}

#[test]
fn outcome_mapping() {
    let cases = [
        (
            end(EndStatus::Exited(0), false),
            JobOutcome::completed().with_detail("exit code: 0"),
        ),
        (
            end(EndStatus::Exited(3), false),
            JobOutcome::completed().with_detail("exit code: 3"),
        ),
        (
            end(EndStatus::Exited(127), false),
            JobOutcome::completed().with_detail("exit code: 127"),
        ),
        (
            end(EndStatus::Signaled(15), true),
            JobOutcome::killed().with_detail("signal: SIGTERM"),
        ),
        (
            end(EndStatus::Signaled(9), true),
            JobOutcome::killed().with_detail("signal: SIGKILL"),
        ),
        // A self-signalled exit is killed too.
        (
            end(EndStatus::Signaled(6), false),
            JobOutcome::killed().with_detail("signal: SIGABRT"),
        ),
        (
            end(EndStatus::Exited(0), true),
            JobOutcome::killed().with_detail("killed before exit"),
        ),
        (
            end(EndStatus::Lost("gone".into()), true),
            JobOutcome::killed().with_detail("killed before exit"),
        ),
        (
            end(EndStatus::Lost("gone".into()), false),
            JobOutcome::failed().with_detail("gone"),
        ),
    ];
    for (end, outcome) in cases {
        assert_eq!(bash_outcome(&end), outcome, "{end:?}");
    }
}
