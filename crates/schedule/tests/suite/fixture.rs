//! Small wiring shared by the suites (the host itself is turnkit-testkit's).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use turnkit_core::{Harness, Registration, SessionHeader, SessionId, ToolOutput};
use turnkit_schedule::{Installed, Notify, ScheduleConfig, ScheduleTools, install};
use turnkit_testkit::{HostRecord, ManualClock, MemoryAgent, MemoryHarness, settle};

pub(crate) const T0: &str = "2026-08-05T12:00:00.000Z";
pub(crate) const ERR_INTERNAL: &str = "The schedule operation failed.";
pub(crate) const ERR_UNCERTAIN: &str =
    "Schedule persistence is uncertain; retry with schedule_list before relying on this result.";
pub(crate) const ERR_CORRUPT: &str = "The session schedule log is corrupt.";

pub(crate) fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .expect("valid instant")
        .with_timezone(&Utc)
}

/// `{"version":1,"operation":"create","schedule":{…}}` for an after record.
pub(crate) fn create_after(id: &str, prompt: &str, seconds: i64, scheduled_at: &str) -> Value {
    json!({"version":1,"operation":"create","schedule":{"id":id,"kind":"after","prompt":prompt,"afterSeconds":seconds,"scheduledAt":scheduled_at}})
}

pub(crate) fn create_at(id: &str, prompt: &str, scheduled_at: &str) -> Value {
    json!({"version":1,"operation":"create","schedule":{"id":id,"kind":"at","prompt":prompt,"scheduledAt":scheduled_at}})
}

pub(crate) fn create_every(id: &str, prompt: &str, seconds: i64, scheduled_at: &str) -> Value {
    json!({"version":1,"operation":"create","schedule":{"id":id,"kind":"every","prompt":prompt,"everySeconds":seconds,"scheduledAt":scheduled_at}})
}

/// A host on a manual clock at T0 with a transcript of what the host did.
pub(crate) struct Host {
    pub(crate) clock: ManualClock,
    pub(crate) host: Arc<MemoryHarness>,
    pub(crate) records: Arc<Mutex<Vec<HostRecord>>>,
}

impl Host {
    pub(crate) fn new() -> Self {
        Self::at(T0)
    }

    pub(crate) fn at(start: &str) -> Self {
        let clock = ManualClock::new(at(start));
        let host = MemoryHarness::new(Arc::new(clock.clone()));
        Self::wrap(clock, host)
    }

    pub(crate) fn wrap(clock: ManualClock, host: Arc<MemoryHarness>) -> Self {
        let records = Arc::new(Mutex::new(Vec::new()));
        let sink = records.clone();
        host.set_recorder(Arc::new(move |record| sink.lock().unwrap().push(record)));
        Self {
            clock,
            host,
            records,
        }
    }

    pub(crate) fn dyn_host(&self) -> Arc<dyn Harness> {
        self.host.as_dyn()
    }

    pub(crate) fn install(&self) -> Installed {
        install(&self.dyn_host(), ScheduleConfig::default()).expect("install")
    }

    /// The plugin with calendar recurrence on (`{"cron": true}`).
    pub(crate) fn install_cron(&self) -> Installed {
        let config = ScheduleConfig::from_json(json!({"cron": true})).expect("config");
        install(&self.dyn_host(), config).expect("install")
    }

    /// Creates a stored session holding `payloads` as `schedule/change` events, without an
    /// agent.
    pub(crate) fn seed(&self, id: &str, payloads: &[Value]) {
        let session = self
            .host
            .store()
            .create(SessionHeader::new(id))
            .expect("create");
        for payload in payloads {
            session
                .append("schedule/change", payload.clone())
                .expect("append");
        }
    }

    pub(crate) fn resume(&self, id: &str) -> Arc<MemoryAgent> {
        self.host.resume(&SessionId::from(id)).expect("resume")
    }

    pub(crate) fn session(&self, id: &str) -> Arc<MemoryAgent> {
        self.host
            .create_session(SessionHeader::new(id))
            .expect("session")
    }

    pub(crate) async fn call(&self, session: &str, tool: &str, args: Value) -> ToolOutput {
        self.host
            .execute(tool, args, Some(&SessionId::from(session)))
            .await
    }

    pub(crate) fn flushes(&self, session: &str) -> u64 {
        self.host.faults(&SessionId::from(session)).flush_count()
    }

    /// Texts of followups queued so far, in order.
    pub(crate) fn followups(&self) -> Vec<String> {
        self.records
            .lock()
            .unwrap()
            .iter()
            .filter_map(|r| match r {
                HostRecord::Followup { text, .. } => Some(text.clone()),
                _ => None,
            })
            .collect()
    }

    /// Payloads of the session's `schedule/change` events.
    pub(crate) fn changes(&self, session: &str) -> Vec<Value> {
        // The live agent's log when there is one: a durable store lets only one handle open it.
        let id = SessionId::from(session);
        let log = match self.host.memory_agent(&id) {
            Some(agent) => turnkit_core::Agent::session(agent.as_ref()),
            None => self.host.store().open(&id).expect("open"),
        };
        log.events()
            .into_iter()
            .filter(|e| e.r#type == "schedule/change")
            .map(|e| e.data)
            .collect()
    }

    pub(crate) fn dispatches(&self, session: &str) -> Vec<Value> {
        self.changes(session)
            .into_iter()
            .filter(|c| c["operation"] == "dispatch")
            .collect()
    }

    pub(crate) async fn advance_secs(&self, secs: u64) {
        self.clock
            .advance(std::time::Duration::from_secs(secs))
            .await;
    }

    pub(crate) fn set_clock(&self, text: &str) {
        self.clock.set(at(text));
    }
}

/// Tools of one agent registered without a delivery runtime, counting notifies.
pub(crate) struct ToolsOnly {
    pub(crate) host: Host,
    pub(crate) agent: Arc<MemoryAgent>,
    pub(crate) notifies: Arc<AtomicUsize>,
    _registration: Registration,
}

impl ToolsOnly {
    pub(crate) fn new() -> Self {
        Self::with_header(SessionHeader::new("s1"))
    }

    pub(crate) fn with_header(header: SessionHeader) -> Self {
        let host = Host::new();
        let agent = host.host.create_session(header).expect("session");
        let notifies = Arc::new(AtomicUsize::new(0));
        let counter = notifies.clone();
        let notify: Notify = Arc::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        });
        let tools = ScheduleTools::new(agent.as_dyn(), Arc::new(host.clock.clone()), notify);
        let registration = tools.register(host.host.as_ref()).expect("register");
        Self {
            host,
            agent,
            notifies,
            _registration: registration,
        }
    }

    pub(crate) async fn call(&self, tool: &str, args: Value) -> ToolOutput {
        self.host.call("s1", tool, args).await
    }

    pub(crate) async fn create(&self, args: Value) -> Value {
        let out = self.call("schedule_create", args).await;
        assert!(!out.is_error, "{}", out.text());
        out.value
    }

    pub(crate) fn flushes(&self) -> u64 {
        self.host.flushes("s1")
    }

    pub(crate) fn notifies(&self) -> usize {
        self.notifies.load(Ordering::SeqCst)
    }

    pub(crate) fn changes(&self) -> Vec<Value> {
        self.host.changes("s1")
    }

    pub(crate) fn faults(&self) -> Arc<turnkit_testkit::SessionFaults> {
        self.host.host.faults(&SessionId::from("s1"))
    }
}

pub(crate) async fn settled() {
    settle().await;
}
