//! The pages, rendered on the server with `maud` (HTML escaped by construction); a small
//! inline script swaps in a fresh copy of the page's `<main>` when the server announces a
//! change.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use maud::{DOCTYPE, Markup, PreEscaped, html};
use turnkit_core::RawEvent;
use turnkit_jobs::JobStatus;
use turnkit_jobs_local::JournaledJob;
use turnkit_schedule::domain::{ReminderState, Rule};
use turnkit_todo::{TodoItem, TodoStatus};

use crate::session::{SessionLog, open_count};

/// How many timeline events a session page shows at once (newest first; older pages by link).
pub const TIMELINE_PAGE: usize = 200;

/// How a sessions list is ordered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SortKey {
    /// By session id.
    Id,
    /// By the time of the first event.
    Created,
    /// By the time of the last event (the default, newest first).
    #[default]
    Activity,
    /// By open todos.
    Todos,
    /// By running jobs.
    Jobs,
    /// By active reminders.
    Reminders,
}

/// The query of the sessions page: `?sort=activity&desc=true&prefix=abc`.
#[derive(Clone, Debug, Default, serde::Deserialize)]
pub struct ListQuery {
    /// The column to order by.
    #[serde(default)]
    pub sort: SortKey,
    /// Ascending instead of the column's natural order (newest or largest first, ids A–Z).
    #[serde(default)]
    pub asc: Option<bool>,
    /// Only sessions whose id starts with this.
    #[serde(default)]
    pub prefix: String,
}

/// The query of a session page: `?before=SEQ` shows the timeline's events before `SEQ`.
#[derive(Clone, Debug, Default, serde::Deserialize)]
pub struct SessionQuery {
    /// Show timeline events with a smaller `seq` only.
    pub before: Option<u64>,
}

const STYLE: &str = r#"
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d232b;background:#f6f7f9}
header{background:#1d232b;color:#fff;padding:10px 20px;display:flex;gap:16px;align-items:baseline}
header a{color:#9fd0ff;text-decoration:none} header .live{margin-left:auto;font-size:12px;color:#9aa5b1}
main{padding:12px 20px}
h1{font-size:18px;margin:4px 0 8px} h2{font-size:15px;margin:18px 0 6px}
table{border-collapse:collapse;background:#fff;width:100%;margin-bottom:6px}
th,td{border:1px solid #dde1e6;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eef1f4;font-weight:600} th a{color:inherit}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.err{background:#fde8e8;color:#8a1c1c;padding:6px 10px;border:1px solid #f5b5b5;margin:6px 0}
.note{color:#5b6570;font-size:12px}
.s-completed{color:#1a7f37} .s-in_progress{color:#9a6700;font-weight:600} .s-pending{color:#57606a}
.s-running{color:#0969da;font-weight:600} .s-failed,.s-lost{color:#cf222e} .s-killed{color:#8250df}
.overdue{color:#cf222e;font-weight:600}
pre{margin:4px 0;white-space:pre-wrap;word-break:break-all;font-size:12px}
code{font-size:12px} details summary{cursor:pointer}
form{margin:0 0 8px}
"#;

/// Re-fetches the page's `<main>` on a matching server-sent `change` event (the session the
/// page shows, or any session on the list), keeping open `<details>` open.
const SCRIPT: &str = r#"
(function(){
  var main=document.getElementById('live'); if(!main||!window.EventSource) return;
  var watch=main.dataset.watch||null, busy=false, again=false;
  var state=document.getElementById('live-state');
  function refresh(){
    if(busy){again=true;return;} busy=true;
    var open=[].map.call(main.querySelectorAll('details[open]'),function(d){return d.id;});
    fetch(location.href,{headers:{'x-inspect-fragment':'1'}}).then(function(r){return r.text();}).then(function(t){
      main.innerHTML=t;
      open.forEach(function(id){var d=id&&document.getElementById(id); if(d) d.open=true;});
      main.dataset.version=String(Number(main.dataset.version||'0')+1);
    }).finally(function(){busy=false; if(again){again=false;refresh();}});
  }
  var es=new EventSource('/updates');
  es.onopen=function(){ if(state) state.textContent='live'; };
  es.onerror=function(){ if(state) state.textContent='reconnecting…'; };
  es.addEventListener('change',function(e){ if(!watch||!e.data||e.data===watch) refresh(); });
})();
"#;

/// The whole page around `content` (the part the script refreshes).
pub(crate) fn layout(title: &str, watch: Option<&str>, content: &Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { (title) " · harness inspect" }
                style { (PreEscaped(STYLE)) }
            }
            body {
                header {
                    strong { "harness inspect" }
                    a href="/" { "sessions" }
                    span.live id="live-state" { "connecting…" }
                }
                main id="live" data-watch=[watch] { (content) }
                script { (PreEscaped(SCRIPT)) }
            }
        }
    }
}

fn utc(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

fn opt_utc(at: Option<DateTime<Utc>>) -> String {
    at.map_or_else(|| "—".to_owned(), utc)
}

fn millis(at: i64) -> String {
    opt_utc(DateTime::from_timestamp_millis(at))
}

/// `at` in the IANA zone `zone`, or `None` when the zone is unknown.
fn zoned(at: DateTime<Utc>, zone: Option<&str>) -> Option<String> {
    let zone: chrono_tz::Tz = zone?.parse().ok()?;
    Some(
        at.with_timezone(&zone)
            .format("%Y-%m-%d %H:%M:%S %Z")
            .to_string(),
    )
}

fn session_link(id: &str) -> String {
    format!("/session/{}", encode(id))
}

/// Percent-encodes a path segment (ids are file names: anything but `/`, NUL, a leading dot).
fn encode(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The content of the sessions page.
pub(crate) fn sessions(
    sessions: &BTreeMap<String, SessionLog>,
    query: &ListQuery,
    dir: &str,
    owners: bool,
) -> Markup {
    let mut rows: Vec<&SessionLog> = sessions
        .values()
        .filter(|log| log.id.starts_with(&query.prefix))
        .collect();
    match query.sort {
        SortKey::Id => {}
        SortKey::Created => rows.sort_by_key(|log| std::cmp::Reverse(log.created())),
        SortKey::Activity => rows.sort_by_key(|log| std::cmp::Reverse(log.last_activity())),
        SortKey::Todos => rows.sort_by_key(|log| std::cmp::Reverse(log.folds.open_todos())),
        SortKey::Jobs => rows.sort_by_key(|log| std::cmp::Reverse(log.folds.running_jobs())),
        SortKey::Reminders => {
            rows.sort_by_key(|log| std::cmp::Reverse(log.folds.active_reminders()));
        }
    }
    let ascending = query.asc.unwrap_or(query.sort == SortKey::Id);
    if ascending != (query.sort == SortKey::Id) {
        rows.reverse();
    }
    let sort_link = |key: &str, sort: SortKey| {
        let asc = if query.sort == sort {
            !ascending
        } else {
            sort == SortKey::Id
        };
        format!("/?sort={key}&asc={asc}&prefix={}", encode(&query.prefix))
    };
    html! {
        h1 { "Sessions" }
        p.note { (sessions.len()) " sessions in " code { (dir) } "; " (rows.len()) " shown." }
        form method="get" action="/" {
            input type="hidden" name="sort" value=(format!("{:?}", query.sort).to_lowercase());
            label { "id prefix " input type="search" name="prefix" value=(query.prefix) id="prefix"; }
            " " button type="submit" { "filter" }
        }
        table id="sessions" {
            thead { tr {
                th { a href=(sort_link("id", SortKey::Id)) { "session" } }
                th { "parent" }
                @if owners { th { "owner" } }
                th { a href=(sort_link("created", SortKey::Created)) { "created" } }
                th { a href=(sort_link("activity", SortKey::Activity)) { "last activity" } }
                th { a href=(sort_link("todos", SortKey::Todos)) { "open todos" } }
                th { a href=(sort_link("jobs", SortKey::Jobs)) { "running jobs" } }
                th { a href=(sort_link("reminders", SortKey::Reminders)) { "active reminders" } }
                th { "events" }
                th { "state" }
            } }
            tbody {
                @for log in &rows {
                    tr data-session=(log.id) {
                        td { a href=(session_link(&log.id)) { (log.id) } }
                        td { @if let Some(parent) = &log.folds.parent {
                            a href=(session_link(parent)) { (parent) }
                        } @else if let Some(seed) = log.header.as_ref().and_then(|h| h.seed_length) {
                            span.note { "fork (" (seed) " events copied)" }
                        } }
                        @if owners { td.owner { (owner_cell(log)) } }
                        td { (opt_utc(log.created())) }
                        td { (opt_utc(log.last_activity())) }
                        td.n.todos { (log.folds.open_todos()) }
                        td.n.jobs { (log.folds.running_jobs()) }
                        td.n.reminders { (log.folds.active_reminders()) }
                        td.n { (log.events.len()) }
                        td { (state_cell(log)) }
                    }
                }
            }
        }
    }
}

fn owner_cell(log: &SessionLog) -> Markup {
    html! {
        @if let Some((host, expires)) = &log.owner {
            span title=(format!("lease until {}", utc(*expires))) { (host) }
        } @else {
            span.note { "—" }
        }
    }
}

fn state_cell(log: &SessionLog) -> Markup {
    html! {
        @if let Some(error) = &log.error {
            span.s-failed title=(error) { "malformed" }
        } @else if log.torn.is_some() {
            span.note { "ok (last line incomplete)" }
        } @else {
            "ok"
        }
    }
}

/// The content of a session page.
pub(crate) fn session(
    log: &SessionLog,
    children: &[&SessionLog],
    query: &SessionQuery,
    now: DateTime<Utc>,
) -> Markup {
    let zone = log.header.as_ref().and_then(|h| h.time_zone.as_deref());
    let folds = &log.folds;
    html! {
        h1 { "Session " code id="session-id" { (log.id) } }
        p.note {
            "log " code { (log.place) } "; " (log.events.len()) " events; "
            (folds.turns) " turns; zone " (zone.unwrap_or("unknown"))
            @if let Some(parent) = &folds.parent {
                "; subagent of " a href=(session_link(parent)) { (parent) }
            }
            @if let Some((host, expires)) = &log.owner {
                "; owned by " code id="owner" { (host) } " (lease until " (utc(*expires)) ")"
            }
            @if let Some(seed) = log.header.as_ref().and_then(|h| h.seed_length) {
                "; fork: the first " (seed) " events were copied from its parent"
            }
        }
        @if let Some(error) = &log.error {
            div.err id="session-error" { "This log cannot be read past a line: " (error) }
        }
        @if let Some(torn) = log.torn {
            p.note id="torn" { "The last line (" (torn) " bytes) is not complete yet; it is shown once its newline is written." }
        }
        h2 { "Todos" }
        (todos(log))
        h2 { "Jobs" }
        (jobs(folds.jobs.jobs()))
        @if !folds.journal_errors.is_empty() {
            @for error in &folds.journal_errors { div.err { (error) } }
        }
        h2 { "Reminders" }
        (reminders(log, zone, now))
        (crate::launches::section(&log.events))
        @if !children.is_empty() {
            h2 { "Subagents" }
            ul id="children" {
                @for child in children {
                    li { a href=(session_link(&child.id)) { (child.id) } " — "
                        (child.folds.open_todos()) " open todos, " (child.events.len()) " events" }
                }
            }
        }
        h2 { "Timeline" }
        (timeline(log, query))
    }
}

fn status_name(status: TodoStatus) -> &'static str {
    match status {
        TodoStatus::Pending => "pending",
        TodoStatus::InProgress => "in_progress",
        TodoStatus::Completed => "completed",
    }
}

fn todo_table(items: &[TodoItem]) -> Markup {
    html! {
        table id="todos" {
            thead { tr { th { "#" } th { "content" } th { "status" } } }
            tbody {
                @for (i, item) in items.iter().enumerate() {
                    tr {
                        td.n { (i + 1) }
                        td.content { (item.content) }
                        td class=(format!("status s-{}", status_name(item.status))) { (status_name(item.status)) }
                    }
                }
            }
        }
    }
}

fn todos(log: &SessionLog) -> Markup {
    let folds = &log.folds;
    html! {
        @match (folds.todos(), folds.last_plan()) {
            (Some(items), _) => {
                p.note { (open_count(&items)) " open of " (items.len())
                    @if let Some(seq) = folds.last_plan_seq { "; written at seq " (seq) } }
                (todo_table(&items))
            }
            (None, Some(items)) => {
                p.note id="todos-cleared" {
                    "No current plan: the turn that started at seq " (folds.cleared_at.unwrap_or(0))
                    " cleared it. The last plan written"
                    @if let Some(seq) = folds.last_plan_seq { " (seq " (seq) ")" } ":"
                }
                (todo_table(&items))
            }
            (None, None) => { p.note id="todos-none" { "No plan written." } }
        }
    }
}

fn job_status(job: &JournaledJob) -> (String, &'static str) {
    match &job.settlement {
        _ if job.reported_lost && job.settlement.as_ref().is_none_or(|s| s.teardown.is_some()) => {
            ("lost".to_owned(), "lost")
        }
        None => ("running".to_owned(), "running"),
        Some(settlement) => {
            let name = match settlement.status {
                JobStatus::Completed => "completed",
                JobStatus::Killed => "killed",
                _ => "failed",
            };
            (name.to_owned(), name)
        }
    }
}

fn jobs(jobs: &[JournaledJob]) -> Markup {
    let own: Vec<&JournaledJob> = jobs.iter().filter(|job| !job.inherited).collect();
    html! {
        @if own.is_empty() {
            p.note id="jobs-none" { "No journaled jobs (the journal is written by hosts that turn it on, such as " code { "harness mcp" } ")." }
        } @else {
            table id="jobs" {
                thead { tr { th { "id" } th { "kind" } th { "label" } th { "status" } th { "detail" }
                    th { "started" } th { "finished" } th { "output" } } }
                tbody {
                    @for job in own {
                        @let (status, class) = job_status(job);
                        tr data-job=(job.id.as_str()) {
                            td { code { (job.id.as_str()) } }
                            td { (job.kind.as_str()) }
                            td { (job.label.as_str()) }
                            td class=(format!("status s-{class}")) { (status)
                                @if job.from_before_restart() { br; span.note { "from before the restart" } } }
                            td { @if let Some(s) = &job.settlement {
                                (s.detail.as_deref().unwrap_or(""))
                                @if let Some(reason) = &s.teardown { " (" (reason) ")" }
                            } }
                            td { (millis(job.started_at)) }
                            td { (job.settlement.as_ref().map_or_else(|| "—".to_owned(), |s| millis(s.finished_at))) }
                            td { @if let Some(output) = job.settlement.as_ref().and_then(|s| s.output.as_deref()) {
                                pre { (tail(output, 600)) }
                                @if job.settlement.as_ref().is_some_and(|s| s.output_truncated) { span.note { "(cut at 4096 bytes)" } }
                            } }
                        }
                    }
                }
            }
        }
    }
}

/// The last `limit` bytes of `text` (at a character boundary), with an ellipsis when cut.
fn tail(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    let mut start = text.len() - limit;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &text[start..])
}

fn reminders(log: &SessionLog, zone: Option<&str>, now: DateTime<Utc>) -> Markup {
    let folds = &log.folds;
    let now_ms = now.timestamp_millis();
    html! {
        @if let Some(error) = &folds.schedule_error {
            div.err id="schedule-error" { "The schedule log is corrupt: " (error) }
        } @else if folds.schedule.active_len() == 0 {
            p.note id="reminders-none" { "No active reminders." }
        } @else {
            table id="reminders" {
                thead { tr { th { "id" } th { "kind" } th { "prompt" } th { "next due (UTC)" }
                    th { "next due (session zone)" } th { "state" } th { "repeats" } } }
                tbody {
                    @for record in folds.schedule.active() {
                        @let due = record.scheduled_at().to_datetime();
                        @let overdue = record.state_at(now_ms) == ReminderState::Overdue;
                        tr data-reminder=(record.id()) {
                            td { code { (record.id()) } }
                            td { (record.kind().as_str()) }
                            td { (record.prompt()) }
                            td { (utc(due)) }
                            td { (zoned(due, zone).unwrap_or_else(|| "—".to_owned())) }
                            td class=(if overdue { "state overdue" } else { "state" }) {
                                (if overdue { "overdue" } else { "scheduled" }) }
                            td { @match record.rule() {
                                Rule::Every { seconds } => { "every " (seconds) " s" }
                                Rule::Cron(cron) => { "cron " code { (cron.text()) } " in " (cron.zone_name()) }
                                Rule::After { .. } | Rule::At => { "once" }
                            } }
                        }
                    }
                }
            }
        }
    }
}

fn timeline(log: &SessionLog, query: &SessionQuery) -> Markup {
    let end = query.before.map_or(log.events.len(), |before| {
        log.events.partition_point(|event| event.seq() < before)
    });
    let start = end.saturating_sub(TIMELINE_PAGE);
    let shown = &log.events[start..end];
    html! {
        @if shown.is_empty() {
            p.note { "No events." }
        } @else {
            p.note { "seq " (shown[0].seq()) "–" (shown[shown.len() - 1].seq()) " of " (log.events.len()) ", newest first."
                @if start > 0 { " " a href=(format!("{}?before={}", session_link(&log.id), shown[0].seq())) { "older" } }
                @if end < log.events.len() { " " a href=(session_link(&log.id)) { "newest" } }
            }
            table id="timeline" {
                thead { tr { th { "seq" } th { "time (UTC)" } th { "type" } th { "event (click for the raw JSON)" } } }
                tbody {
                    @for event in shown.iter().rev() {
                        (timeline_row(event))
                    }
                }
            }
        }
    }
}

fn timeline_row(event: &RawEvent) -> Markup {
    let payload = event.payload();
    let summary = if payload.len() > 140 {
        let mut cut = 140;
        while !payload.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}…", &payload[..cut])
    } else {
        payload.to_owned()
    };
    html! {
        tr data-seq=(event.seq()) {
            td.n { (event.seq()) }
            td { (event.time().format("%Y-%m-%d %H:%M:%S%.3f")) }
            td { code { (event.r#type()) } }
            td { details id=(format!("ev-{}", event.seq())) {
                summary { code { (summary) } }
                pre { (pretty(payload)) }
            } }
        }
    }
}

fn pretty(payload: &str) -> String {
    serde_json::from_str::<serde_json::Value>(payload)
        .and_then(|value| serde_json::to_string_pretty(&value))
        .unwrap_or_else(|_| payload.to_owned())
}

/// The page for an id that has no session file.
pub(crate) fn missing(id: &str) -> Markup {
    html! {
        h1 { "No session " code { (id) } }
        p { "The folder has no file for it (yet). This page updates when one appears." }
    }
}
