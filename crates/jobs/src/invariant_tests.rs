//! C-034 / C-035: the invariant companion's checks.

use pretty_assertions::assert_eq;
use turnkit_core::{AgentId, SessionId};

use super::*;
use crate::JobStatus;

fn base() -> JobSnapshot {
    JobSnapshot {
        id: "bash-1".into(),
        kind: "bash".into(),
        label: "compile".into(),
        output_limit_bytes: None,
        owner_session: None,
        status: JobStatus::Completed,
        detail: None,
        started_at: 10,
        finished_at: Some(20),
        reported: false,
    }
}

fn message(snapshot: &JobSnapshot, owner: Option<&str>) -> String {
    let owner = owner.map(AgentId::new);
    match check_snapshot(snapshot, owner.as_ref()) {
        Ok(()) => "ok".to_owned(),
        Err(violation) => violation.to_string(),
    }
}

#[test]
fn c034_coherent_snapshots_pass() {
    let running = JobSnapshot {
        status: JobStatus::Running,
        finished_at: None,
        ..base()
    };
    assert_eq!(message(&running, None), "ok");
    assert_eq!(message(&base(), None), "ok");
    let owned = JobSnapshot {
        id: "subagent-2".into(),
        kind: "subagent".into(),
        owner_session: Some(SessionId::new("owner")),
        ..base()
    };
    assert_eq!(message(&owned, Some("owner")), "ok");
}

#[test]
fn c035_rejections() {
    let ordinal = |id: &str, kind: &str| {
        message(
            &JobSnapshot {
                id: id.into(),
                kind: kind.into(),
                ..base()
            },
            None,
        )
    };
    assert_eq!(
        ordinal("-1", ""),
        r#"job snapshot id "-1" must be "-" followed by a positive ordinal"#
    );
    assert_eq!(
        ordinal("other-1", "bash"),
        r#"job snapshot id "other-1" must be "bash-" followed by a positive ordinal"#
    );
    assert_eq!(
        ordinal("bash-x", "bash"),
        r#"job snapshot id "bash-x" must be "bash-" followed by a positive ordinal"#
    );
    assert_eq!(
        ordinal("bash-0", "bash"),
        r#"job snapshot id "bash-0" must be "bash-" followed by a positive ordinal"#
    );
    assert_eq!(
        ordinal("bash-9007199254740992", "bash"),
        r#"job snapshot id "bash-9007199254740992" must be "bash-" followed by a positive ordinal"#
    );
    assert_eq!(ordinal("pty-send-100", "pty-send"), "ok");

    let empty_label = JobSnapshot {
        label: "".into(),
        ..base()
    };
    assert_eq!(
        message(&empty_label, None),
        r#"job "bash-1" label must be non-empty"#
    );

    let negative_start = JobSnapshot {
        started_at: -1,
        ..base()
    };
    assert_eq!(
        message(&negative_start, None),
        r#"job "bash-1" startedAt must be a non-negative epoch integer"#
    );

    let running_with_finish = JobSnapshot {
        status: JobStatus::Running,
        ..base()
    };
    let completed_without_finish = JobSnapshot {
        finished_at: None,
        ..base()
    };
    for snapshot in [running_with_finish, completed_without_finish] {
        assert_eq!(
            message(&snapshot, None),
            r#"job "bash-1" finishedAt must be present exactly for a terminal status"#
        );
    }

    let early_finish = JobSnapshot {
        finished_at: Some(9),
        ..base()
    };
    assert_eq!(
        message(&early_finish, None),
        r#"job "bash-1" finishedAt must be an epoch integer no earlier than startedAt"#
    );

    let mismatched = JobSnapshot {
        owner_session: Some(SessionId::new("recorded")),
        ..base()
    };
    assert_eq!(
        message(&mismatched, Some("actual")),
        r#"job "bash-1" ownerSession does not match its completion owner"#
    );
}
