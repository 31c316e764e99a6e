//! Shared fixtures: a host (testkit agents, a directory the test controls, a registry with a
//! global controller), log capture and recording listeners.

use std::sync::{Arc, Mutex};

use turnkit_core::{
    Agent, AgentDirectory, AgentId, Registration, RegistrationScope, ScopeKey, SessionHeader,
};
use turnkit_jobs::{JobDoneListener, JobError, JobId, JobRegistry, JobSnapshot};
use turnkit_jobs_local::{JobLimits, LocalJobRegistry};
use turnkit_testkit::{ManualClock, MemoryAgent, MemoryHarness};

pub(crate) use turnkit_testkit::settle as tick;
pub(crate) use turnkit_testkit::{FakeJob, FakeProducer, OnCancel};

/// Registry + agents + a controller. The registry checks owners against `directory`, which
/// the test publishes agents into (or removes them from) explicitly.
pub(crate) struct Host {
    pub(crate) clock: ManualClock,
    pub(crate) harness: Arc<MemoryHarness>,
    pub(crate) directory: AgentDirectory,
    pub(crate) registry: LocalJobRegistry,
    pub(crate) controller: Option<Registration>,
}

impl Host {
    /// Default limits, a global controller attached.
    pub(crate) fn new() -> Self {
        Self::with_limit(10)
    }

    pub(crate) fn with_limit(limit: u64) -> Self {
        let mut host = Self::bare(limit);
        host.controller = Some(
            host.registry
                .attach_controller(RegistrationScope::Global, "test-controller"),
        );
        host
    }

    /// No controller attached.
    pub(crate) fn bare(limit: u64) -> Self {
        let clock = ManualClock::at_default();
        let harness = MemoryHarness::new(Arc::new(clock.clone()));
        let directory = AgentDirectory::new();
        let registry = LocalJobRegistry::new(
            JobLimits::default().with_max_concurrent_jobs_per_owner(limit),
            Arc::new(clock.clone()),
            Some(Arc::new(directory.clone())),
        );
        Self {
            clock,
            harness,
            directory,
            registry,
            controller: None,
        }
    }

    /// A new session's agent, not published in the directory.
    pub(crate) fn unregistered_agent(&self, id: &str) -> Arc<MemoryAgent> {
        match self.harness.memory_agent(&id.into()) {
            Some(_) => self.harness.resume(&id.into()),
            None => self.harness.create_session(SessionHeader::new(id)),
        }
        .expect("agent")
    }

    /// A new agent for session `id` (a second call makes a same-id replacement), published.
    pub(crate) fn agent(&self, id: &str) -> Arc<MemoryAgent> {
        let agent = self.unregistered_agent(id);
        self.directory.publish(agent.as_dyn());
        agent
    }

    /// An agent with scope chain `[id, parents…]`, published.
    pub(crate) fn scoped_agent(&self, id: &str, parents: &[&str]) -> Arc<ScopedAgent> {
        let inner = self.unregistered_agent(id);
        let mut chain = vec![ScopeKey::new(id)];
        chain.extend(parents.iter().map(|p| ScopeKey::new(*p)));
        let agent = Arc::new(ScopedAgent {
            inner,
            chain,
            hooks_added: Mutex::new(0),
        });
        self.directory.publish(agent.clone());
        agent
    }

    pub(crate) fn start(&self, producer: FakeProducer) -> (Result<JobId, JobError>, FakeJob) {
        let (start, job) = producer.build();
        (self.registry.start(start), job)
    }

    pub(crate) fn start_ok(&self, producer: FakeProducer) -> (JobId, FakeJob) {
        let (id, job) = self.start(producer);
        (id.expect("start"), job)
    }

    /// The clock's current epoch milliseconds.
    pub(crate) fn clock_millis(&self) -> i64 {
        turnkit_core::Clock::now(&self.clock).timestamp_millis()
    }

    pub(crate) fn list_ids(&self, caller: Option<&AgentId>) -> Vec<String> {
        self.registry
            .list(caller)
            .into_iter()
            .map(|s| s.id.to_string())
            .collect()
    }
}

/// `P` with kind `bash` and label `sleep 60`.
pub(crate) fn bash() -> FakeProducer {
    FakeProducer::new("bash", "sleep 60")
}

pub(crate) fn id_of(agent: &Arc<impl Agent + ?Sized>) -> Option<&AgentId> {
    Some(agent.id())
}

/// The error's message.
pub(crate) fn message<T: std::fmt::Debug>(result: Result<T, JobError>) -> String {
    match result {
        Ok(value) => panic!("expected an error, got {value:?}"),
        Err(error) => error.to_string(),
    }
}

/// Snapshots received by a completion listener.
pub(crate) type Seen = Arc<Mutex<Vec<JobSnapshot>>>;

pub(crate) fn record_done(registry: &dyn JobRegistry) -> (Seen, Registration) {
    let seen: Seen = Arc::default();
    let sink = seen.clone();
    let listener: JobDoneListener = Arc::new(move |snapshot, _owner| {
        sink.lock().unwrap().push(snapshot.clone());
        Ok(None)
    });
    (
        seen,
        registry.on_job_done(RegistrationScope::Global, listener),
    )
}

/// Owner ids (`None` for unowned) received by a change observer.
pub(crate) type Changes = Arc<Mutex<Vec<Option<String>>>>;

pub(crate) fn record_changes(registry: &dyn JobRegistry) -> (Changes, Registration) {
    let seen: Changes = Arc::default();
    let sink = seen.clone();
    let registration = registry.on_jobs_changed(
        RegistrationScope::Global,
        Arc::new(move |owner| {
            sink.lock().unwrap().push(owner.map(|o| o.id().to_string()));
            Ok(())
        }),
    );
    (seen, registration)
}

pub(crate) fn owners(ids: &[Option<&str>]) -> Vec<Option<String>> {
    ids.iter().map(|i| i.map(str::to_owned)).collect()
}

pub(crate) use turnkit_testkit::LogCapture;

/// A testkit agent reporting a custom scope chain (the testkit's agents report only their
/// own key), counting its dispose-hook registrations.
pub(crate) struct ScopedAgent {
    pub(crate) inner: Arc<MemoryAgent>,
    chain: Vec<ScopeKey>,
    pub(crate) hooks_added: Mutex<usize>,
}

#[async_trait::async_trait]
impl Agent for ScopedAgent {
    fn id(&self) -> &AgentId {
        self.inner.id()
    }

    fn session(&self) -> Arc<dyn turnkit_core::Session> {
        self.inner.session()
    }

    fn scope_chain(&self) -> Vec<ScopeKey> {
        self.chain.clone()
    }

    fn status(&self) -> turnkit_core::AgentStatus {
        self.inner.status()
    }

    fn followup(&self, message: turnkit_core::UserMessage) -> Result<(), turnkit_core::AgentError> {
        self.inner.followup(message)
    }

    fn inject(&self, message: turnkit_core::UserMessage) -> Result<(), turnkit_core::AgentError> {
        self.inner.inject(message)
    }

    fn try_begin_maintenance(&self) -> Result<turnkit_core::MaintenanceGuard, turnkit_core::Busy> {
        self.inner.try_begin_maintenance()
    }

    async fn when_idle(&self) {
        self.inner.when_idle().await;
    }

    fn add_dispose_hook(
        &self,
        hook: turnkit_core::DisposeHook,
    ) -> Result<turnkit_core::HookId, turnkit_core::AgentError> {
        *self.hooks_added.lock().unwrap() += 1;
        self.inner.add_dispose_hook(hook)
    }

    fn remove_dispose_hook(&self, id: turnkit_core::HookId) -> Option<turnkit_core::DisposeHook> {
        self.inner.remove_dispose_hook(id)
    }

    fn subscribe(&self, listener: turnkit_core::AgentListener) -> Registration {
        self.inner.subscribe(listener)
    }

    fn is_disposed(&self) -> bool {
        self.inner.is_disposed()
    }
}

/// Something whose drop calls back into the registry: dropped under the registry's lock, it
/// would deadlock.
pub(crate) struct CallsBack(pub(crate) LocalJobRegistry);

impl Drop for CallsBack {
    fn drop(&mut self) {
        let _ = self.0.record_count();
    }
}

/// Runs `test` on its own thread and paused runtime, failing (instead of hanging) if it
/// deadlocks. The bound only catches a failure; success arrives at once.
pub(crate) fn without_deadlock<F>(test: impl FnOnce() -> F + Send + 'static)
where
    F: std::future::Future<Output = ()>,
{
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .expect("a runtime");
        runtime.block_on(test());
        let _ = done.send(());
    });
    assert!(
        finished
            .recv_timeout(std::time::Duration::from_secs(30))
            .is_ok(),
        "the registry deadlocked"
    );
}
