//! The "Launches" section of a session page: every launch on due of the session (an agent
//! started for a reminder due while no client held the session), from its `mcp/launchClaimed`
//! to its `mcp/launchEnded` or `mcp/launchUnknown`.

use maud::{Markup, html};
use serde_json::Value;
use turnkit_core::RawEvent;

/// One launch as the log tells it.
#[derive(Debug, PartialEq)]
pub(crate) struct Launch {
    pub(crate) id: String,
    /// The seq of its claim.
    pub(crate) claimed: u64,
    /// `running`, `outcome unknown`, or the ended status (`exit code: 0`, …).
    pub(crate) status: String,
    pub(crate) pid: Option<u64>,
    pub(crate) duration_ms: Option<u64>,
    pub(crate) prompt: String,
}

/// The launches of `events`, in claim order; events that do not decode are left out.
pub(crate) fn launches(events: &[RawEvent]) -> Vec<Launch> {
    let mut out: Vec<Launch> = Vec::new();
    for event in events {
        let kind = event.r#type();
        if !kind.starts_with("mcp/launch") {
            continue;
        }
        let data: Value = event.data();
        let Some(id) = data["launch"].as_str() else {
            continue;
        };
        match kind {
            "mcp/launchClaimed" => out.push(Launch {
                id: id.to_owned(),
                claimed: event.seq(),
                status: "running".to_owned(),
                pid: None,
                duration_ms: None,
                prompt: data["prompt"].as_str().unwrap_or_default().to_owned(),
            }),
            "mcp/launchEnded" => {
                if let Some(launch) = out.iter_mut().find(|l| l.id == id) {
                    let outcome = &data["outcome"];
                    launch.status = outcome["status"].as_str().unwrap_or("ended").to_owned();
                    launch.pid = outcome["pid"].as_u64();
                    launch.duration_ms = outcome["durationMs"].as_u64();
                }
            }
            "mcp/launchUnknown" => {
                if let Some(launch) = out.iter_mut().find(|l| l.id == id) {
                    "outcome unknown".clone_into(&mut launch.status);
                }
            }
            _ => {}
        }
    }
    out
}

/// The section's table (nothing when the session had no launch).
pub(crate) fn section(events: &[RawEvent]) -> Markup {
    let launches = launches(events);
    html! {
        @if !launches.is_empty() {
            h2 { "Launches" }
            table id="launches" {
                thead { tr { th { "claimed at seq" } th { "launch" } th { "status" } th { "pid" } th { "duration" } th { "prompt" } } }
                tbody {
                    @for launch in &launches {
                        tr {
                            td.n { (launch.claimed) }
                            td { code { (launch.id) } }
                            td { (launch.status) }
                            td.n { @if let Some(pid) = launch.pid { (pid) } }
                            td.n { @if let Some(ms) = launch.duration_ms { (ms) " ms" } }
                            td { (launch.prompt.lines().next().unwrap_or_default()) }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use turnkit_core::RawEvent;

    use super::{Launch, launches, section};

    fn event(seq: u64, kind: &str, payload: &str) -> RawEvent {
        RawEvent::new(seq, kind, Utc::now(), payload).unwrap()
    }

    #[test]
    fn each_launch_shows_its_outcome_unknown_or_running() {
        let events = vec![
            event(
                1,
                "mcp/launchClaimed",
                r#"{"launch":"launch-a","seqs":[1],"prompt":"[SCHEDULE REMINDER]\nx"}"#,
            ),
            event(
                2,
                "mcp/launchEnded",
                r#"{"launch":"launch-a","outcome":{"pid":42,"startedAt":"t","durationMs":1500,"status":"exit code: 0","outputTail":"","failedStarts":[]}}"#,
            ),
            event(
                3,
                "mcp/launchClaimed",
                r#"{"launch":"launch-b","seqs":[2],"prompt":"y"}"#,
            ),
            event(4, "mcp/launchUnknown", r#"{"launch":"launch-b"}"#),
            event(
                5,
                "mcp/launchClaimed",
                r#"{"launch":"launch-c","seqs":[3],"prompt":"z"}"#,
            ),
        ];
        let found = launches(&events);
        let row = |id: &str, claimed, status: &str, pid, duration_ms, prompt: &str| Launch {
            id: id.to_owned(),
            claimed,
            status: status.to_owned(),
            pid,
            duration_ms,
            prompt: prompt.to_owned(),
        };
        assert_eq!(
            found,
            [
                row(
                    "launch-a",
                    1,
                    "exit code: 0",
                    Some(42),
                    Some(1500),
                    "[SCHEDULE REMINDER]\nx"
                ),
                row("launch-b", 3, "outcome unknown", None, None, "y"),
                row("launch-c", 5, "running", None, None, "z"),
            ]
        );
        let html = section(&events).into_string();
        assert!(html.contains("<h2>Launches</h2>"), "{html}");
        assert!(html.contains("<td>exit code: 0</td>"), "{html}");
        assert!(html.contains("<td class=\"n\">1500 ms</td>"), "{html}");
        assert!(section(&[]).into_string().is_empty());
    }
}
