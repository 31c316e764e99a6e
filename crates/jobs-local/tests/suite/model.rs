//! A model-based property test: random interleavings of start / read / kill / wait / settle /
//! owner disposal / service disposal across several owners, checked against a simple model.
//!
//! Checked after every step: `list` for every caller equals the model's visible set (ids and
//! statuses, in order), so foreign jobs are never shown; each job gets at most one
//! completion-listener round, none after service disposal, and a terminal status never
//! changes; live jobs per owner never exceed the cap; foreign calls are refused.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;
use turnkit_core::{Agent, AgentId, RegistrationScope};
use turnkit_jobs::{
    CancellationToken, JobError, JobId, JobOutcome, JobRegistry, JobStatus, KillOutcome,
};

use super::common::*;

const LIMIT: u64 = 2;
const OWNERS: usize = 3;

#[derive(Clone, Debug)]
enum Op {
    Start {
        owner: Option<usize>,
        on_cancel: u8,
    },
    Settle {
        job: usize,
        status: u8,
    },
    Kill {
        job: usize,
        caller: Option<usize>,
    },
    Read {
        job: usize,
        caller: Option<usize>,
    },
    Wait {
        job: usize,
        caller: Option<usize>,
        abort: bool,
    },
    DisposeOwner {
        owner: usize,
    },
    DisposeService,
}

fn op() -> impl Strategy<Value = Op> {
    let owner = proptest::option::of(0..OWNERS);
    prop_oneof![
        4 => (owner.clone(), 0..3u8).prop_map(|(owner, on_cancel)| Op::Start { owner, on_cancel }),
        4 => (0..12usize, 0..3u8).prop_map(|(job, status)| Op::Settle { job, status }),
        3 => (0..12usize, owner.clone()).prop_map(|(job, caller)| Op::Kill { job, caller }),
        2 => (0..12usize, owner.clone()).prop_map(|(job, caller)| Op::Read { job, caller }),
        2 => (0..12usize, owner, any::<bool>())
            .prop_map(|(job, caller, abort)| Op::Wait { job, caller, abort }),
        1 => (0..OWNERS).prop_map(|owner| Op::DisposeOwner { owner }),
        1 => Just(Op::DisposeService),
    ]
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Cancel {
    Settle,
    Hang,
    Throw,
}

struct ModelJob {
    id: JobId,
    owner: Option<usize>,
    cancel: Cancel,
    status: JobStatus,
    reported: bool,
    removed: bool,
    fake: FakeJob,
}

#[derive(Default)]
struct Model {
    jobs: Vec<ModelJob>,
    counter: u64,
    owner_disposed: [bool; OWNERS],
    service_disposed: bool,
}

impl Model {
    fn live(&self, owner: Option<usize>) -> u64 {
        self.jobs
            .iter()
            .filter(|j| j.owner == owner && !j.removed && j.status.is_live())
            .count() as u64
    }

    /// Teardown of `job` (reported first, then cancel): the model's view right after it.
    fn teardown(job: &mut ModelJob) {
        if job.status.is_terminal() {
            return;
        }
        job.reported = true;
        job.status = match job.cancel {
            Cancel::Settle => JobStatus::Killed,
            Cancel::Hang => JobStatus::Stopping,
            Cancel::Throw => JobStatus::Failed,
        };
    }

    /// Removes the records whose teardown has finished.
    fn sweep(&mut self) {
        if self.service_disposed
            && self
                .jobs
                .iter()
                .all(|j| j.removed || j.status.is_terminal())
        {
            for job in &mut self.jobs {
                job.removed = true;
            }
        }
        for owner in 0..OWNERS {
            if !self.owner_disposed[owner] {
                continue;
            }
            let mine = |j: &&mut ModelJob| j.owner == Some(owner) && !j.removed;
            if self
                .jobs
                .iter_mut()
                .filter(mine)
                .all(|j| j.status.is_terminal())
            {
                for job in self.jobs.iter_mut().filter(mine) {
                    job.removed = true;
                }
            }
        }
    }

    /// The expected fence result for `caller` on model job `index`.
    fn fence(&self, index: usize, caller: Option<usize>) -> Result<(), String> {
        let job = &self.jobs[index];
        if job.removed {
            return Err(format!("unknown job {}", job.id));
        }
        if job.owner.is_some() && job.owner != caller {
            return Err(format!("job {} belongs to another session", job.id));
        }
        Ok(())
    }
}

fn status_of(n: u8) -> JobOutcome {
    match n {
        0 => JobOutcome::completed(),
        1 => JobOutcome::killed(),
        _ => JobOutcome::failed(),
    }
}

fn err_text<T>(result: Result<T, JobError>) -> Result<T, String> {
    result.map_err(|e| e.to_string())
}

async fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let host = Host::with_limit(LIMIT);
    let agents: Vec<_> = (0..OWNERS)
        .map(|n| host.agent(&format!("owner-{n}")))
        .collect();
    let ids: Vec<AgentId> = agents.iter().map(|a| a.id().clone()).collect();
    let caller = |c: Option<usize>| c.map(|n| &ids[n]);
    let rounds: Arc<Mutex<HashMap<JobId, u32>>> = Arc::default();
    let closed = Arc::new(Mutex::new(false));
    let late_rounds = Arc::new(Mutex::new(0u32));
    let _listener = {
        let (rounds, closed, late) = (rounds.clone(), closed.clone(), late_rounds.clone());
        host.registry.on_job_done(
            RegistrationScope::Global,
            Arc::new(move |snapshot, _| {
                *rounds
                    .lock()
                    .unwrap()
                    .entry(snapshot.id.clone())
                    .or_default() += 1;
                if *closed.lock().unwrap() {
                    *late.lock().unwrap() += 1;
                }
                Ok(None)
            }),
        )
    };
    let mut model = Model::default();
    let mut disposals = Vec::new();

    for op in ops {
        match op {
            Op::Start { owner, on_cancel } => {
                let cancel = [Cancel::Settle, Cancel::Hang, Cancel::Throw][on_cancel as usize];
                let producer = bash()
                    .owner_opt(owner.map(|o| agents[o].as_dyn()))
                    .on_cancel(match cancel {
                        Cancel::Settle => OnCancel::Settle,
                        Cancel::Hang => OnCancel::Hang,
                        Cancel::Throw => OnCancel::Throw("boom".into()),
                    });
                let (result, fake) = host.start(producer);
                let admitted = !model.service_disposed
                    && !owner.is_some_and(|o| model.owner_disposed[o])
                    && model.live(owner) < LIMIT;
                prop_assert_eq!(result.is_ok(), admitted, "start {:?}: {:?}", owner, result);
                prop_assert_eq!(fake.was_run(), admitted);
                if let Ok(id) = result {
                    model.counter += 1;
                    prop_assert_eq!(id.as_str(), format!("bash-{}", model.counter));
                    model.jobs.push(ModelJob {
                        id,
                        owner,
                        cancel,
                        status: JobStatus::Running,
                        reported: false,
                        removed: false,
                        fake,
                    });
                }
            }
            Op::Settle { job, status } => {
                if let Some(job) = model.jobs.get_mut(job) {
                    let already = job.fake.is_settled();
                    job.fake.settle(status_of(status));
                    // First wins: only a live record takes the producer's outcome.
                    if !already && !job.removed && job.status.is_live() {
                        job.status = status_of(status).status.into();
                    }
                }
            }
            Op::Kill { job, caller: who } => {
                if job >= model.jobs.len() {
                    continue;
                }
                let expected = model.fence(job, who);
                let result = err_text(host.registry.kill(&model.jobs[job].id, caller(who), None));
                match expected {
                    Err(message) => prop_assert_eq!(result, Err(message)),
                    Ok(()) => {
                        let entry = &mut model.jobs[job];
                        if entry.status.is_terminal() {
                            prop_assert_eq!(result, Ok(KillOutcome::AlreadyFinished));
                            entry.reported = true;
                        } else {
                            match entry.cancel {
                                Cancel::Throw => prop_assert_eq!(result, Err("boom".to_owned())),
                                Cancel::Hang => {
                                    prop_assert_eq!(result, Ok(KillOutcome::Requested));
                                    entry.status = JobStatus::Stopping;
                                    entry.reported = true;
                                }
                                Cancel::Settle => {
                                    prop_assert_eq!(result, Ok(KillOutcome::Requested));
                                    entry.status = JobStatus::Killed;
                                    entry.reported = true;
                                }
                            }
                        }
                    }
                }
            }
            Op::Read { job, caller: who } => {
                if job >= model.jobs.len() {
                    continue;
                }
                let expected = model.fence(job, who);
                let result = err_text(host.registry.read(&model.jobs[job].id, caller(who)));
                match expected {
                    Err(message) => prop_assert_eq!(result.map(|_| ()), Err(message)),
                    Ok(()) => {
                        let read = result.map_err(TestCaseError::fail)?;
                        let entry = &mut model.jobs[job];
                        entry.reported |= entry.status.is_terminal();
                        prop_assert_eq!(read.snapshot.status, entry.status);
                        prop_assert_eq!(read.snapshot.reported, entry.reported);
                    }
                }
            }
            Op::Wait {
                job,
                caller: who,
                abort,
            } => {
                if job >= model.jobs.len() {
                    continue;
                }
                let expected = model.fence(job, who);
                let id = model.jobs[job].id.clone();
                let token = CancellationToken::new();
                let registry = host.registry.clone();
                let (wait_caller, wait_token) = (caller(who).cloned(), token.clone());
                let waiting = tokio::spawn(async move {
                    err_text(
                        registry
                            .wait(
                                &id,
                                std::time::Duration::from_millis(50),
                                wait_caller.as_ref(),
                                Some(wait_token),
                            )
                            .await,
                    )
                });
                tick().await;
                if abort {
                    token.cancel();
                } else {
                    host.clock.advance(Duration::from_millis(50)).await;
                }
                tick().await;
                let result = waiting
                    .await
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                let status = model.jobs[job].status;
                match expected {
                    Err(message) => prop_assert_eq!(result.map(|_| ()), Err(message)),
                    Ok(()) if abort && status.is_live() => {
                        prop_assert_eq!(result.map(|_| ()), Err("wait aborted".to_owned()));
                    }
                    Ok(()) => {
                        let snapshot = result.map_err(TestCaseError::fail)?;
                        let entry = &mut model.jobs[job];
                        entry.reported |= status.is_terminal();
                        prop_assert_eq!(snapshot.status, status);
                        prop_assert_eq!(snapshot.reported, entry.reported);
                    }
                }
            }
            Op::DisposeOwner { owner } => {
                if model.owner_disposed[owner] {
                    continue;
                }
                model.owner_disposed[owner] = true;
                if !model.service_disposed {
                    for job in model
                        .jobs
                        .iter_mut()
                        .filter(|j| j.owner == Some(owner) && !j.removed)
                    {
                        Model::teardown(job);
                    }
                }
                let agent = agents[owner].clone();
                disposals.push(tokio::spawn(async move { agent.dispose().await }));
            }
            Op::DisposeService => {
                if model.service_disposed {
                    continue;
                }
                model.service_disposed = true;
                *closed.lock().unwrap() = true;
                for job in model.jobs.iter_mut().filter(|j| !j.removed) {
                    Model::teardown(job);
                }
                let registry = host.registry.clone();
                disposals.push(tokio::spawn(async move { registry.dispose().await }));
            }
        }
        tick().await;
        model.sweep();
        check(&host, &model, &ids, &rounds)?;
    }
    // Settle everything that is left; every disposal then completes.
    for job in &model.jobs {
        job.fake.settle(JobOutcome::completed());
    }
    tick().await;
    for disposal in disposals {
        disposal
            .await
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
    for (id, count) in rounds.lock().unwrap().iter() {
        prop_assert!(*count <= 1, "{} had {} listener rounds", id, count);
    }
    prop_assert_eq!(*late_rounds.lock().unwrap(), 0);
    Ok(())
}

fn check(
    host: &Host,
    model: &Model,
    ids: &[AgentId],
    rounds: &Arc<Mutex<HashMap<JobId, u32>>>,
) -> Result<(), TestCaseError> {
    for caller in std::iter::once(None).chain((0..OWNERS).map(Some)) {
        let listed: Vec<(String, JobStatus, bool)> = host
            .registry
            .list(caller.map(|c| &ids[c]))
            .into_iter()
            .map(|s| (s.id.to_string(), s.status, s.reported))
            .collect();
        let expected: Vec<(String, JobStatus, bool)> = model
            .jobs
            .iter()
            .filter(|j| !j.removed && (j.owner.is_none() || j.owner == caller))
            .map(|j| (j.id.to_string(), j.status, j.reported))
            .collect();
        prop_assert_eq!(listed, expected, "list for {:?}", caller);
    }
    for owner in std::iter::once(None).chain((0..OWNERS).map(Some)) {
        prop_assert!(model.live(owner) <= LIMIT);
    }
    for count in rounds.lock().unwrap().values() {
        prop_assert!(*count <= 1);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn random_interleavings_match_the_model(ops in proptest::collection::vec(op(), 1..40)) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        runtime.block_on(run(ops))?;
    }
}
