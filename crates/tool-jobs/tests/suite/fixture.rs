//! The tool-jobs harness of cases-todo-jobs ("Harness H(cfg)"): the testkit host, the local
//! job registry and tool-jobs, with a record of what the host did.

use std::sync::{Arc, Mutex};

use serde_json::Value;
use turnkit_core::{Harness, SessionHeader, SessionId, ToolOutput};
use turnkit_jobs::{JobId, JobRegistry, JobSnapshot};
use turnkit_testkit::{HostRecord, ManualClock, MemoryAgent, MemoryHarness};

pub(crate) use turnkit_testkit::{FakeJob, FakeProducer, OnCancel};

/// `2026-08-05T12:00:00.000Z`, the manual clock's start, in epoch milliseconds.
pub(crate) const T0: i64 = 1_785_931_200_000;

pub(crate) struct Fx {
    pub(crate) host: Arc<MemoryHarness>,
    pub(crate) harness: Arc<dyn Harness>,
    pub(crate) clock: ManualClock,
    pub(crate) jobs: turnkit_jobs_local::Installed,
    pub(crate) registry: Arc<dyn JobRegistry>,
    pub(crate) tool_jobs: Option<turnkit_tool_jobs::Installed>,
    records: Arc<Mutex<Vec<HostRecord>>>,
}

impl Fx {
    /// H with tool-jobs configured by `config` (a JSON object with the spec's keys).
    pub(crate) fn new(config: Value) -> Self {
        let mut fx = Self::without_tool_jobs();
        let config = turnkit_tool_jobs::ToolJobsConfig::from_json(config).unwrap();
        fx.tool_jobs = Some(turnkit_tool_jobs::install(&fx.harness, config).unwrap());
        fx
    }

    /// H with the default configuration.
    pub(crate) fn default_config() -> Self {
        Self::new(serde_json::json!({}))
    }

    /// The host and the registry, without tool-jobs (so without a controller).
    pub(crate) fn without_tool_jobs() -> Self {
        let clock = ManualClock::at_default();
        let host = MemoryHarness::new(Arc::new(clock.clone()));
        let harness = host.as_dyn();
        let records = Arc::new(Mutex::new(Vec::new()));
        let sink = records.clone();
        host.set_recorder(Arc::new(move |record| sink.lock().unwrap().push(record)));
        let jobs = turnkit_jobs_local::install(&harness, turnkit_jobs_local::JobsConfig::default())
            .unwrap();
        let registry = jobs.registry();
        Self {
            host,
            harness,
            clock,
            jobs,
            registry,
            tool_jobs: None,
            records,
        }
    }

    pub(crate) fn agent(&self, id: &str) -> Arc<MemoryAgent> {
        self.host.create_session(SessionHeader::new(id)).unwrap()
    }

    /// Starts `producer` (owned by `owner`, if any) and returns its id and handle.
    pub(crate) fn start(
        &self,
        producer: FakeProducer,
        owner: Option<&Arc<MemoryAgent>>,
    ) -> (JobId, FakeJob) {
        let producer = match owner {
            Some(owner) => producer.owner(owner.as_dyn()),
            None => producer,
        };
        let (start, job) = producer.build();
        let id = self.registry.start(start).unwrap();
        (id, job)
    }

    pub(crate) async fn call(&self, tool: &str, args: Value, caller: Option<&str>) -> ToolOutput {
        let caller = caller.map(SessionId::from);
        self.host.execute(tool, args, caller.as_ref()).await
    }

    pub(crate) fn get(&self, id: &str) -> JobSnapshot {
        self.registry.get(&JobId::new(id), None).unwrap()
    }

    /// What the host did since the last call, one line per record.
    pub(crate) fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.records.lock().unwrap())
            .into_iter()
            .map(|record| describe(&record))
            .collect()
    }

    /// Only the `followup` / `inject` lines since the last call.
    pub(crate) fn notices(&self) -> Vec<String> {
        self.take()
            .into_iter()
            .filter(|line| line.starts_with("followup") || line.starts_with("inject"))
            .collect()
    }
}

pub(crate) fn describe(record: &HostRecord) -> String {
    match record {
        HostRecord::Followup { session, text } => format!("followup {session}: {text}"),
        HostRecord::Inject { session, text } => format!("inject {session}: {text}"),
        HostRecord::Claimed {
            session,
            source,
            text,
        } => format!("claimed {session} ({source}): {text}"),
        HostRecord::Turn { session, phase } => format!("turn {session} {phase}"),
    }
}

/// The complete notice text for a job.
pub(crate) fn notice(id: &str, kind: &str, label: &str, status_line: &str) -> String {
    format!(
        "background job {id} ({kind}: {label}) finished {status_line}. Read its output with job_output."
    )
}
