//! [`Families::dispose`] leaves no task of a family alive: after the job registry settled
//! every job, the process tasks of bash (and terminal) are joined, and what a stopped job
//! left running is killed at once instead of after the grace.

use std::sync::Arc;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_core::{SessionHeader, SystemClock};
use turnkit_families::{Families, FamiliesConfig};
use turnkit_testkit::MemoryHarness;

/// A bound for real processes; nothing here waits for it unless something hangs.
const LIMIT: Duration = Duration::from_secs(30);

/// Whether process `pid` is alive (present and not a zombie: PID 1 of a sandbox may not
/// reap).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rfind(')')
            .and_then(|close| stat[close + 1..].split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

#[tokio::test]
async fn dispose_joins_the_bash_tasks_and_kills_a_leftover_at_once() {
    let harness = MemoryHarness::new(Arc::new(SystemClock));
    let config = FamiliesConfig::from_json(&json!({
        "todo": {"allowParallelInProgress": false},
        "bash": {"killGraceMs": 600_000},
    }))
    .expect("config");
    let families = Families::install(&harness.as_dyn(), &config, None).expect("install");
    let agent = harness
        .create_session(SessionHeader::new("s1"))
        .expect("session");
    let pid_file = tempfile::NamedTempFile::new().expect("temp file");
    let path = pid_file.path().display().to_string();
    // The leftover ignores SIGTERM and holds no pipe: the job settles when the shell dies.
    let command =
        format!("(trap '' TERM; echo $BASHPID > {path}; exec sleep 1000) >/dev/null 2>&1 & wait");
    families
        .bash()
        .expect("bash")
        .jobs()
        .start_saved(Some(agent.as_dyn()), &command, None)
        .await
        .expect("start");
    let pid = tokio::time::timeout(LIMIT, async {
        loop {
            if let Some(pid) = std::fs::read_to_string(&path)
                .ok()
                .and_then(|text| text.trim().parse::<u32>().ok())
            {
                return pid;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the leftover started");
    assert_eq!(families.bash().expect("bash").running_tasks(), 1);
    tokio::time::timeout(LIMIT, families.dispose())
        .await
        .expect("the disposal finished without waiting out the grace");
    assert_eq!(families.bash().expect("bash").running_tasks(), 0);
    let gone = tokio::time::timeout(Duration::from_secs(5), async {
        while alive(pid) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(gone.is_ok(), "the leftover {pid} is still alive");
}
