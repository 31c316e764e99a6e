//! Reminders across host processes: a killed owner's overdue reminder is delivered once by
//! another host, and 1,000 reminders spread over three hosts are each delivered once.
//!
//! The test binary doubles as the host: run as `scanner_host_process` with
//! `HARNESS_PG_SCAN_CHILD` set, it is a real host (a `HostKit`, the schedule plugin, one
//! `LoopAgent` per live session and a turn driver) on the PostgreSQL store. Its mode:
//!
//! * `owner`: creates session `HARNESS_PG_SESSION`, calls `schedule_create` with
//!   `after_seconds = 1` through the kit and opens a turn it never finishes (a long model
//!   step, so the reminder cannot be delivered); once the reminder is due, calls
//!   `schedule_list` and says `overdue <session> <id> <scheduledAt> <state>`, then waits on
//!   stdin (the test kills it);
//! * `scanner`: says `ready`, runs a `ReminderScanner` whose `Resume` says `resumed
//!   <session>`, starts an agent on the claimed session and drives its turns: each reminder a turn claims is said as `delivered
//!   <session> <schedule id>` (the delivery's effect, before anything is durable) and
//!   appended as `test/delivered` (a turn flush refused as fenced, the lease having ended
//!   before it, is said as `fenced <session>`, and a session let go with events its flushes
//!   could not write as `unsaved <session>`); the session is closed (`closed <session>`) once no turn
//!   opened for a while. Commands: `passes N` waits for N more scanner passes and answers
//!   `passes <sessions resumed so far>`; `exit` stops the scanner, waits for the resumed
//!   sessions to close and says `done <sessions resumed> open <sessions still open>`.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of the tests below, where a failure is a test failure"
)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use futures::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio::io::AsyncBufReadExt;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use turnkit_core::{
    Harness, PersistenceError, Session, SessionHeader, SessionId, SessionStore, SystemClock,
};
use turnkit_host::{HostKit, LoopAgent};
use turnkit_schedule::ScheduleConfig;
use turnkit_store_pg::{PgOptions, PgSession, PgStore, ReminderScanner, Resume, ScanOptions};

use super::processes::{Host, say};

const CHILD: &str = "suite::scanner_processes::scanner_host_process";

/// The host process body, started by the tests below (ignored in a normal run, where it
/// could only return at once and count as a pass).
#[test]
#[ignore = "the child host process of the other tests in this file, which start it"]
fn scanner_host_process() {
    let Ok(url) = std::env::var("HARNESS_PG_SCAN_CHILD") else {
        return;
    };
    let var = |name: &str| std::env::var(name).unwrap();
    let ms = |name: &str| Duration::from_millis(var(name).parse().unwrap());
    let store = PgStore::connect(
        &url,
        Arc::new(SystemClock),
        PgOptions {
            schema: var("HARNESS_PG_SCHEMA"),
            host: var("HARNESS_PG_HOST"),
            lease_ttl: ms("HARNESS_PG_TTL_MS"),
            pool_size: 8,
            index: Some(Arc::new(turnkit_schedule::ReminderIndex)),
            ..PgOptions::default()
        },
    )
    .unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let kit = Arc::new(HostKit::new(Arc::new(SystemClock)));
        let harness: Arc<dyn Harness> = kit.clone();
        let installed = turnkit_schedule::install(&harness, ScheduleConfig::default()).unwrap();
        match var("HARNESS_PG_MODE").as_str() {
            "owner" => owner(&store, &kit, &var("HARNESS_PG_SESSION")).await,
            _ => scanner(&store, &kit, ms("HARNESS_PG_INTERVAL_MS")).await,
        }
        installed.dispose().await;
    });
}

async fn owner(store: &PgStore, kit: &Arc<HostKit>, id: &str) {
    let session = store.create_session(SessionHeader::new(id)).await.unwrap();
    let agent = kit.start_agent(session.clone());
    let call = async |tool: &str, arguments: serde_json::Value| {
        kit.call(
            tool,
            arguments,
            Some(agent.as_dyn()),
            CancellationToken::new(),
        )
        .await
        .value
    };
    let created = call(
        "schedule_create",
        json!({"prompt": "water the plants", "after_seconds": 1}),
    )
    .await;
    let due: DateTime<Utc> = created["scheduledAt"].as_str().unwrap().parse().unwrap();
    // A long model step: the turn stays open, so the reminder cannot be delivered here.
    let turn = agent.open_turn().unwrap();
    let wait = (due - Utc::now()).to_std().unwrap_or_default();
    tokio::time::sleep(wait + Duration::from_millis(50)).await;
    let listed = call("schedule_list", json!({})).await;
    say(&format!(
        "overdue {id} {} {} {}",
        listed[0]["id"].as_str().unwrap(),
        listed[0]["scheduledAt"].as_str().unwrap(),
        listed[0]["state"].as_str().unwrap()
    ));
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(_)) = stdin.next_line().await {}
    drop(turn);
}

/// Starts an agent on each claimed session and drives it.
struct Resumer {
    kit: Arc<HostKit>,
    crash: Arc<Crash>,
    /// How many resumed sessions the drivers let go so far.
    closed: Arc<watch::Sender<u64>>,
}

impl Resume for Resumer {
    fn resume(&self, session: Arc<PgSession>) {
        say(&format!("resumed {}", session.id()));
        let agent = self.kit.start_agent(session.clone());
        tokio::spawn(drive(
            agent,
            session,
            self.crash.clone(),
            self.closed.clone(),
        ));
    }
}

/// `HARNESS_PG_DIE_AT=N`: the host dies at its N-th delivery, right after its effect (the
/// `delivered` line), as `kill -9` would: no destructor, no flush, no lease release.
struct Crash {
    at: Option<usize>,
    delivered: std::sync::atomic::AtomicUsize,
}

impl Crash {
    fn delivered(&self) {
        let n = self
            .delivered
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1;
        if self.at == Some(n) {
            std::process::abort();
        }
    }
}

/// Runs turns until none opened for a while (5 s for the first, which the delivery runtime's
/// first pass opens, 200 ms after a turn), then disposes the agent (which flushes) and lets
/// the session go (which releases the lease).
async fn drive(
    agent: Arc<LoopAgent>,
    session: Arc<PgSession>,
    crash: Arc<Crash>,
    closed: Arc<watch::Sender<u64>>,
) {
    let turns = agent.turns();
    let mut wait = Duration::from_secs(5);
    while let Ok(Some(mut turn)) = tokio::time::timeout(wait, turns.next_turn()).await {
        wait = Duration::from_millis(200);
        for message in turn.take_input() {
            let text = message.joined_text();
            let schedule = text
                .lines()
                .find_map(|line| line.strip_prefix("schedule_id_json: "))
                .and_then(|id| serde_json::from_str::<String>(id).ok())
                .unwrap_or_default();
            say(&format!("delivered {} {schedule}", session.id()));
            crash.delivered();
            session
                .append(
                    "test/delivered",
                    json!({"host": session.lease().host(), "scheduleId": schedule}),
                )
                .unwrap();
        }
        turn.finish();
        match session.flush().await {
            Ok(()) => {}
            // Its lease ended before this flush (renewals starved past the TTL under load):
            // another host may deliver the session again, which the tests allow only then.
            Err(PersistenceError::Fenced(_)) => say(&format!("fenced {}", session.id())),
            Err(error) => tracing::warn!(%error, "turn flush failed"),
        }
    }
    agent.dispose().await;
    let id = session.id().clone();
    if !session.lease().is_lost() && session.durable_len() < session.len() {
        // The disposal's flush failed too: the session is let go with its turn unsaved.
        say(&format!("unsaved {id}"));
    }
    drop((turns, agent, session));
    say(&format!("closed {id}"));
    closed.send_modify(|n| *n += 1);
}

async fn scanner(store: &PgStore, kit: &Arc<HostKit>, interval: Duration) {
    let (closed, mut closings) = watch::channel(0_u64);
    let scan = Arc::new(ReminderScanner::new(
        store.clone(),
        Arc::new(Resumer {
            closed: Arc::new(closed),
            kit: kit.clone(),
            crash: Arc::new(Crash {
                at: std::env::var("HARNESS_PG_DIE_AT")
                    .ok()
                    .map(|n| n.parse().unwrap()),
                delivered: 0.into(),
            }),
        }),
        ScanOptions {
            interval,
            batch: 32,
            max_resumed: 256,
            ..ScanOptions::default()
        },
    ));
    let stop = CancellationToken::new();
    say("ready");
    let running = tokio::spawn({
        let (scan, stop) = (scan.clone(), stop.clone());
        async move { scan.run(stop).await }
    });
    let mut stats = scan.stats();
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = stdin.next_line().await {
        if line == "exit" {
            break;
        }
        if let Some(n) = line.strip_prefix("passes ") {
            let until = stats.borrow().passes + n.parse::<u64>().unwrap();
            let reached = stats.wait_for(|s| s.passes >= until).await.unwrap();
            say(&format!("passes {}", reached.resumed));
        }
    }
    stop.cancel();
    running.await.unwrap();
    // The drivers close their sessions after the linger, each announcing it; bounded (what
    // is still open after 10 s is reported below).
    let _ = tokio::time::timeout(Duration::from_secs(10), async {
        while scan.open_resumed() > 0 && closings.changed().await.is_ok() {}
    })
    .await;
    say(&format!(
        "done {} open {}",
        scan.stats().borrow().resumed,
        scan.open_resumed()
    ));
}

fn env(
    url: &str,
    schema: &str,
    host: &str,
    mode: &str,
    ttl_ms: u64,
) -> Vec<(&'static str, String)> {
    vec![
        ("HARNESS_PG_SCAN_CHILD", url.to_owned()),
        ("HARNESS_PG_SCHEMA", schema.to_owned()),
        ("HARNESS_PG_HOST", host.to_owned()),
        ("HARNESS_PG_MODE", mode.to_owned()),
        ("HARNESS_PG_TTL_MS", ttl_ms.to_string()),
        ("HARNESS_PG_INTERVAL_MS", "50".to_owned()),
        ("HARNESS_PG_SESSION", "s".to_owned()),
    ]
}

/// A scanner host whose leases live `ttl_ms`.
fn scanner_host(url: &str, schema: &str, host: &str, ttl_ms: u64) -> Host {
    Host::spawn(CHILD, &env(url, schema, host, "scanner", ttl_ms))
}

/// A scanner host that dies at its `n`-th delivery.
fn crashing_scanner_host(url: &str, schema: &str, host: &str, ttl_ms: u64, n: usize) -> Host {
    let mut env = env(url, schema, host, "scanner", ttl_ms);
    env.push(("HARNESS_PG_DIE_AT", n.to_string()));
    Host::spawn(CHILD, &env)
}

fn log(session: &dyn Session) -> Vec<(String, String)> {
    session
        .events()
        .iter()
        .map(|e| (e.r#type.clone(), e.data.to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_owners_overdue_reminder_is_delivered_once_by_another_host() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("scankill");
    drop(super::store(
        &url,
        &schema,
        "setup",
        Duration::from_secs(30),
    ));
    let mut a = Host::spawn(CHILD, &env(&url, &schema, "host-a", "owner", 1500));
    let overdue = a.answer().await;
    let words: Vec<&str> = overdue.split(' ').collect();
    assert_eq!(
        [words[0], words[1], words[2], words[4]],
        ["overdue", "s", "schedule-1", "overdue"]
    );
    let due: DateTime<Utc> = words[3].parse().unwrap();
    // The owner dies holding the lease of a session with an overdue reminder.
    a.signal("KILL");
    a.child.wait().await.unwrap();
    let sql = super::client(&url).await;
    let lease_end: DateTime<Utc> = sql
        .query_one(
            &format!("SELECT lease_expires FROM \"{schema}\".sessions WHERE id = 's'"),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(
        lease_end > due,
        "the lease ended at {lease_end}, before {due}"
    );

    let mut b = scanner_host(&url, &schema, "host-b", 2000);
    assert_eq!(b.answer().await, "ready");
    assert_eq!(b.answer().await, "resumed s");
    assert_eq!(b.answer().await, "delivered s schedule-1");
    assert_eq!(b.answer().await, "closed s");
    // A third host starts; neither it nor B claims the session again.
    let mut c = scanner_host(&url, &schema, "host-c", 2000);
    assert_eq!(c.answer().await, "ready");
    assert_eq!(c.send("passes 5").await, "passes 0");
    assert_eq!(b.send("passes 5").await, "passes 1");
    assert_eq!(b.send("exit").await, "done 1 open 0");
    assert_eq!(c.send("exit").await, "done 0 open 0");

    let row = sql
        .query_one(
            &format!(
                "SELECT owner, epoch, (SELECT count(*) FROM \"{schema}\".reminders) \
                 FROM \"{schema}\".sessions WHERE id = 's'"
            ),
            &[],
        )
        .await
        .unwrap();
    // Released; owned by A (epoch 1), then B (epoch 2) only; the index row is gone.
    assert_eq!(
        (
            row.get::<_, Option<String>>(0),
            row.get::<_, i64>(1),
            row.get::<_, i64>(2)
        ),
        (None, 2, 0)
    );
    let reader = super::store(&url, &schema, "reader", Duration::from_secs(30));
    let session = reader.open(&SessionId::from("s")).unwrap();
    let events = session.events();
    let types: Vec<&str> = events.iter().map(|e| e.r#type.as_str()).collect();
    // A's open turn (made durable by schedule_list's barrier), then B's delivery and turn.
    assert_eq!(
        types,
        [
            "schedule/change",
            "turn/start",
            "schedule/change",
            "turn/start",
            "test/delivered",
            "turn/end"
        ]
    );
    assert_eq!(
        log(&*session)[1..],
        [
            ("turn/start".to_owned(), r#"{"turn":1}"#.to_owned()),
            (
                "schedule/change".to_owned(),
                r#"{"version":1,"operation":"dispatch","id":"schedule-1"}"#.to_owned()
            ),
            ("turn/start".to_owned(), r#"{"turn":2}"#.to_owned()),
            (
                "test/delivered".to_owned(),
                r#"{"host":"host-b","scheduleId":"schedule-1"}"#.to_owned()
            ),
            ("turn/end".to_owned(), r#"{"turn":2}"#.to_owned()),
        ]
    );
    let delivered = events[4].time;
    assert!(delivered >= due, "delivered at {delivered}, due at {due}");
    assert!(
        delivered >= lease_end,
        "delivered at {delivered}, before the dead owner's lease ended at {lease_end}"
    );
    report_latency(
        "killed owner, from the reminder's due time (TTL 1.5 s, scan every 50 ms)",
        &[delivered - due],
    );
    report_latency(
        "killed owner, from the end of the dead owner's lease",
        &[delivered - lease_end],
    );
}

#[allow(
    clippy::print_stderr,
    reason = "the measured latency is reported in the test log"
)]
fn report_latency(what: &str, latencies: &[chrono::TimeDelta]) {
    let mut ms: Vec<i64> = latencies
        .iter()
        .map(chrono::TimeDelta::num_milliseconds)
        .collect();
    ms.sort_unstable();
    let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
    eprintln!(
        "scanner latency from due to delivery, {what}: n={} p50={} ms p90={} ms max={} ms",
        ms.len(),
        at(0.5),
        at(0.9),
        at(1.0)
    );
}

/// Scanner hosts `host-1`, `host-2`, … and what they said so far.
struct Fleet {
    hosts: Vec<Host>,
    /// Whether each host's output ended (it was killed, or it said `done` and exited).
    ended: Vec<bool>,
    /// For each session, the index of the host of each delivery, in the order said.
    delivered: BTreeMap<String, Vec<usize>>,
    /// Every delivery said: the host's index and the session, in the order read.
    order: Vec<(usize, String)>,
    /// For each session, the index of the host of each resume, in the order said.
    resumed: BTreeMap<String, Vec<usize>>,
    /// For each session, the index of each host whose turn never became durable on it: its
    /// flush was fenced (`fenced`) or it let the session go unsaved (`unsaved`).
    fenced: BTreeMap<String, Vec<usize>>,
    /// The `done` line of each host that said it.
    done: BTreeMap<usize, String>,
    count: usize,
}

impl Fleet {
    /// `n` hosts with leases of `ttl_ms`; `host-1` dies at its `die_at`-th delivery when
    /// given.
    async fn start(url: &str, schema: &str, n: usize, ttl_ms: u64, die_at: Option<usize>) -> Self {
        let mut hosts: Vec<Host> = (1..=n)
            .map(|i| match die_at {
                Some(at) if i == 1 => crashing_scanner_host(url, schema, "host-1", ttl_ms, at),
                _ => scanner_host(url, schema, &format!("host-{i}"), ttl_ms),
            })
            .collect();
        for host in &mut hosts {
            assert_eq!(host.answer().await, "ready");
        }
        Self {
            ended: vec![false; n],
            hosts,
            delivered: BTreeMap::new(),
            order: Vec::new(),
            resumed: BTreeMap::new(),
            fenced: BTreeMap::new(),
            done: BTreeMap::new(),
            count: 0,
        }
    }

    /// Reads the next line any live host says, for up to `patience`; false if none came.
    async fn read(&mut self, patience: Duration) -> bool {
        let ended = &self.ended;
        let reads: Vec<_> = self
            .hosts
            .iter_mut()
            .enumerate()
            .filter(|(i, _)| !ended[*i])
            .map(|(i, host)| Box::pin(async move { (i, host.next_answer().await) }))
            .collect();
        assert!(!reads.is_empty(), "every host's output ended");
        let Ok(((index, line), _, _)) =
            tokio::time::timeout(patience, futures::future::select_all(reads)).await
        else {
            return false;
        };
        match line {
            None => self.ended[index] = true,
            Some(line) => {
                if let Some(rest) = line.strip_prefix("delivered ") {
                    let session = rest.split(' ').next().unwrap().to_owned();
                    self.delivered
                        .entry(session.clone())
                        .or_default()
                        .push(index);
                    self.order.push((index, session));
                    self.count += 1;
                } else if let Some(session) = line.strip_prefix("resumed ") {
                    self.resumed
                        .entry(session.to_owned())
                        .or_default()
                        .push(index);
                } else if let Some(session) = line
                    .strip_prefix("fenced ")
                    .or_else(|| line.strip_prefix("unsaved "))
                {
                    self.fenced
                        .entry(session.to_owned())
                        .or_default()
                        .push(index);
                } else if line.starts_with("done ") {
                    self.done.insert(index, line);
                }
            }
        }
        true
    }

    /// A session delivered more than once (`said`, the hosts in order) was delivered twice,
    /// the second time by a live host, and the first by `dead` (the host that died) or by a
    /// host whose turn on it never became durable (fenced, or let go unsaved).
    fn assert_repeat_after_fence(&self, session: &str, said: &[usize], dead: Option<usize>) {
        let fenced = self.fenced.get(session).cloned().unwrap_or_default();
        assert_eq!(
            said.len(),
            2,
            "{session}: delivered by {said:?}, fenced {fenced:?}"
        );
        assert!(
            Some(said[0]) == dead || fenced.contains(&said[0]),
            "{session}: delivered by {said:?}, but the first host's turn was neither fenced \
             nor unsaved (those hosts: {fenced:?})"
        );
        assert_ne!(Some(said[1]), dead, "{session}: {said:?}");
        assert!(
            !fenced.contains(&said[1]),
            "{session}: {said:?}, fenced {fenced:?}"
        );
    }

    /// Deliveries said by host `index`.
    fn by(&self, index: usize) -> usize {
        self.delivered
            .values()
            .flatten()
            .filter(|i| **i == index)
            .count()
    }

    /// Tells every live host to exit and reads until each said `done`.
    async fn finish(&mut self) {
        for (i, host) in self.hosts.iter_mut().enumerate() {
            if !self.ended[i] {
                host.tell("exit").await;
            }
        }
        let guard = tokio::time::Instant::now() + Duration::from_secs(30);
        while (0..self.hosts.len()).any(|i| !self.ended[i]) {
            assert!(
                tokio::time::Instant::now() < guard,
                "the hosts did not exit"
            );
            self.read(Duration::from_secs(1)).await;
        }
    }
}

/// Creates sessions `r0000`, `r0001`, … with one `after` reminder each, due `start` plus
/// `spacing` per session, eight at a time.
async fn create_reminders(store: &PgStore, n: usize, start: DateTime<Utc>, spacing_ms: i64) {
    futures::stream::iter(0..n)
        .map(|i| {
            let store = store.clone();
            async move {
                let due = start + chrono::TimeDelta::milliseconds(spacing_ms * i as i64);
                let session = store
                    .create_session(SessionHeader::new(format!("r{i:04}")))
                    .await
                    .unwrap();
                session
                    .append(
                        "schedule/change",
                        json!({"version":1,"operation":"create","schedule":{"id":"schedule-1","kind":"after","prompt":format!("reminder {i}"),"afterSeconds":2,"scheduledAt":due.to_rfc3339_opts(SecondsFormat::Millis, true)}}),
                    )
                    .unwrap();
                session.flush().await.unwrap();
            }
        })
        .buffer_unordered(8)
        .collect::<Vec<()>>()
        .await;
}

/// Per session: durable dispatches, and the hosts of the durable `test/delivered` events.
async fn durable(
    sql: &tokio_postgres::Client,
    schema: &str,
) -> BTreeMap<String, (i64, Vec<String>)> {
    let s = schema;
    sql.query(
        &format!(
            "SELECT session_id, \
                    count(*) FILTER (WHERE type = 'schedule/change' AND data->>'operation' = 'dispatch'), \
                    coalesce(array_agg(data->>'host' ORDER BY seq) FILTER (WHERE type = 'test/delivered'), '{{}}') \
             FROM \"{s}\".events GROUP BY session_id"
        ),
        &[],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| (r.get(0), (r.get(1), r.get(2))))
    .collect()
}

async fn index_rows(sql: &tokio_postgres::Client, schema: &str) -> i64 {
    sql.query_one(&format!("SELECT count(*) FROM \"{schema}\".reminders"), &[])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_reminders_over_three_hosts_are_each_delivered_once() {
    let Some(url) = super::server_url() else {
        return;
    };
    const SESSIONS: usize = 1000;
    let schema = super::fresh_schema("scan1000");
    let store = super::store(&url, &schema, "setup", Duration::from_secs(30));
    let mut fleet = Fleet::start(&url, &schema, 3, 5000, None).await;
    // Due 2 s to 4 s from now, 2 ms apart, while the hosts scan.
    create_reminders(
        &store,
        SESSIONS,
        Utc::now() + chrono::TimeDelta::seconds(2),
        2,
    )
    .await;
    let guard = tokio::time::Instant::now() + Duration::from_secs(90);
    while fleet.count < SESSIONS {
        assert!(
            tokio::time::Instant::now() < guard,
            "only {} of {SESSIONS} reminders delivered",
            fleet.count
        );
        fleet.read(Duration::from_secs(1)).await;
    }
    fleet.finish().await;
    let per_host: Vec<usize> = (0..3).map(|h| fleet.by(h)).collect();
    let twice = fleet
        .delivered
        .values()
        .filter(|hosts| hosts.len() > 1)
        .count();
    report_counts("1,000 reminders over 3 hosts", &per_host, twice);
    assert_eq!(fleet.delivered.len(), SESSIONS);
    // Delivered again only after the first host's lease ended before its dispatch was
    // durable (its turn flush was fenced); with no host dying that takes renewals starved
    // for a whole TTL, so it is rare, and never silent.
    for (session, said) in &fleet.delivered {
        if said.len() > 1 {
            fleet.assert_repeat_after_fence(session, said, None);
        }
    }
    for (h, n) in per_host.iter().enumerate() {
        assert!(*n > 0, "host-{} delivered nothing", h + 1);
        assert_eq!(fleet.done[&h], format!("done {n} open 0"));
    }

    // The durable logs agree: one dispatch and one delivered turn per session, no index row.
    let sql = super::client(&url).await;
    let logs = durable(&sql, &schema).await;
    assert_eq!(logs.len(), SESSIONS);
    for (session, (dispatches, hosts)) in &logs {
        let said = &fleet.delivered[session];
        assert_eq!((*dispatches, hosts.len()), (1, 1), "{session}");
        // The durable delivery is the last one said (an earlier one was fenced).
        assert_eq!(
            hosts[0],
            format!("host-{}", said[said.len() - 1] + 1),
            "{session}"
        );
    }
    assert_eq!(index_rows(&sql, &schema).await, 0);
    let s = &schema;
    let latencies: Vec<chrono::TimeDelta> = sql
        .query(
            &format!(
                "SELECT d.time, greatest((c.data->'schedule'->>'scheduledAt')::timestamptz, c.time) \
                 FROM \"{s}\".events d JOIN \"{s}\".events c ON c.session_id = d.session_id AND c.seq = 1 \
                 WHERE d.type = 'test/delivered'"
            ),
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get::<_, DateTime<Utc>>(0) - r.get::<_, DateTime<Utc>>(1))
        .collect();
    report_latency(
        "1,000 sessions over 3 hosts, from the later of due time and creation (scan every 50 ms)",
        &latencies,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_dying_mid_run_repeats_a_delivery_only_inside_the_crash_window() {
    let Some(url) = super::server_url() else {
        return;
    };
    const SESSIONS: usize = 300;
    let schema = super::fresh_schema("scancrash");
    let store = super::store(&url, &schema, "setup", Duration::from_secs(30));
    // host-1 dies at its 30th delivery, right after the delivery's effect.
    let mut fleet = Fleet::start(&url, &schema, 3, 2000, Some(30)).await;
    create_reminders(
        &store,
        SESSIONS,
        Utc::now() + chrono::TimeDelta::seconds(1),
        3,
    )
    .await;
    let sql = super::client(&url).await;
    let guard = tokio::time::Instant::now() + Duration::from_secs(90);
    // Until every session was delivered at least once, the dead host's output has ended
    // and the index is empty (its sessions pass to the others after its TTL).
    loop {
        assert!(
            tokio::time::Instant::now() < guard,
            "{} of {SESSIONS} sessions delivered",
            fleet.delivered.len()
        );
        let said = fleet.read(Duration::from_millis(50)).await;
        let settled = fleet.ended[0] && fleet.delivered.len() == SESSIONS;
        if settled && !said && index_rows(&sql, &schema).await == 0 {
            break;
        }
    }
    fleet.finish().await;
    let per_host: Vec<usize> = (0..3).map(|h| fleet.by(h)).collect();
    let logs = durable(&sql, &schema).await;
    let (mut twice, mut unrecorded) = (0, 0);
    for (session, said) in &fleet.delivered {
        let (dispatches, hosts) = &logs[session];
        // The dispatch is durable exactly once, whoever delivered.
        assert_eq!(*dispatches, 1, "{session}");
        if said.len() > 1 {
            // Only a delivery whose dispatch never became durable is repeated: the dead
            // host's, or a live host's whose lease ended first (its flush was fenced). Its
            // effect happened, its record did not survive.
            twice += 1;
            fleet.assert_repeat_after_fence(session, said, Some(0));
            assert_eq!(hosts, &[format!("host-{}", said[1] + 1)], "{session}");
        } else if said[0] == 0 {
            // The dead host's delivery: durable, or lost after its dispatch was durable.
            assert!(
                hosts.is_empty() || hosts == &["host-1"],
                "{session}: {hosts:?}"
            );
            unrecorded += usize::from(hosts.is_empty());
        } else {
            assert_eq!(hosts, &[format!("host-{}", said[0] + 1)], "{session}");
        }
    }
    report_counts(
        "300 reminders over 3 hosts, host-1 dying at its 30th delivery",
        &per_host,
        twice,
    );
    // The delivery host-1 died in: its effect happened and its turn is lost; it was
    // delivered again exactly when its dispatch had not become durable.
    assert_eq!(fleet.by(0), 30);
    let (_, died_in) = fleet
        .order
        .iter()
        .filter(|(host, _)| *host == 0)
        .nth(29)
        .unwrap();
    let again = &fleet.delivered[died_in];
    assert!(
        again.len() == 2 || logs[died_in].1.is_empty(),
        "{died_in}: delivered by {again:?}, durable {:?}",
        logs[died_in]
    );
    // Sessions the dead host had claimed but not delivered: taken over after its TTL.
    let taken_over = fleet
        .resumed
        .values()
        .filter(|hosts| hosts.len() > 1 && hosts[0] == 0)
        .count();
    report_crash(unrecorded, taken_over, fleet.fenced.len());
    assert_eq!(fleet.delivered.len(), SESSIONS);
    assert_eq!(fleet.done.get(&0), None);
    for h in [1, 2] {
        assert_eq!(fleet.done[&h], format!("done {} open 0", fleet.by(h)));
    }
}

#[allow(
    clippy::print_stderr,
    reason = "the counts are reported in the test log"
)]
fn report_counts(what: &str, per_host: &[usize], twice: usize) {
    eprintln!("{what}: delivered per host {per_host:?}, delivered more than once: {twice}");
}

#[allow(
    clippy::print_stderr,
    reason = "the counts are reported in the test log"
)]
fn report_crash(unrecorded: usize, taken_over: usize, fenced: usize) {
    eprintln!(
        "dead host: deliveries whose dispatch was durable but whose turn was lost: \
         {unrecorded}; sessions it held that another host took over: {taken_over}; sessions \
         whose turn of a live host was fenced or unsaved: {fenced}"
    );
}
