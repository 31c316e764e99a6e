//! Stress: 10 owners × 10 jobs plus 100 unowned jobs, settled, read, killed and observed
//! concurrently from several tasks on a multi-threaded runtime.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use pretty_assertions::assert_eq;
use turnkit_core::{Agent, RegistrationScope};
use turnkit_jobs::{JobOutcome, JobRegistry};

use super::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_settlement_finishes_every_job_without_deadlock() {
    // 100 live unowned jobs share one bucket, so the cap is raised to fit them.
    let host = Arc::new(Host::with_limit(100));
    let owners: Vec<_> = (0..10).map(|n| host.agent(&format!("owner-{n}"))).collect();

    // Re-entrant listeners and observers on every path.
    let done = Arc::new(AtomicUsize::new(0));
    let _listener = {
        let (registry, done) = (host.registry.clone(), done.clone());
        host.registry.on_job_done(
            RegistrationScope::Global,
            Arc::new(move |snapshot, owner| {
                let caller = owner.map(|o| o.id().clone());
                registry.get(&snapshot.id, caller.as_ref())?;
                done.fetch_add(1, Ordering::SeqCst);
                Ok(None)
            }),
        )
    };
    let _observer = {
        let registry = host.registry.clone();
        host.registry.on_jobs_changed(
            RegistrationScope::Global,
            Arc::new(move |owner| {
                let caller = owner.map(|o| o.id().clone());
                let _ = registry.list(caller.as_ref());
                Ok(())
            }),
        )
    };

    let mut jobs = Vec::new();
    for owner in &owners {
        for _ in 0..10 {
            let (id, job) = host.start_ok(bash().owner(owner.as_dyn()));
            jobs.push((id, Some(owner.id().clone()), job));
        }
    }
    for _ in 0..100 {
        let (id, job) = host.start_ok(bash());
        jobs.push((id, None, job));
    }
    assert_eq!(jobs.len(), 200);

    let jobs = Arc::new(jobs);
    let mut tasks = Vec::new();
    for worker in 0..4usize {
        let (jobs, registry) = (jobs.clone(), host.registry.clone());
        tasks.push(tokio::spawn(async move {
            for (n, (id, owner, job)) in jobs.iter().enumerate() {
                match (n + worker) % 4 {
                    0 => {
                        job.emit("x");
                        job.settle(JobOutcome::completed());
                    }
                    1 => {
                        let _ = registry.kill(id, owner.as_ref(), Some("stress"));
                    }
                    2 => {
                        let _ = registry.read(id, owner.as_ref());
                    }
                    _ => {
                        let _ = registry
                            .wait(
                                id,
                                std::time::Duration::from_millis(1),
                                owner.as_ref(),
                                None,
                            )
                            .await;
                    }
                }
                if n % 16 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        }));
    }
    tokio::time::timeout(Duration::from_secs(30), async {
        for task in tasks {
            task.await.expect("worker");
        }
        // Every job ends terminal: wait on each (a job only killed settles `killed` at once).
        for (id, owner, _) in jobs.iter() {
            let snapshot = host
                .registry
                .wait(
                    id,
                    std::time::Duration::from_millis(10_000),
                    owner.as_ref(),
                    None,
                )
                .await
                .expect("wait");
            assert!(snapshot.status.is_terminal(), "{id} is {}", snapshot.status);
        }
    })
    .await
    .expect("no deadlock");

    // The listener ran exactly once per job (settlement is asynchronous, so give it time).
    tokio::time::timeout(Duration::from_secs(30), async {
        while done.load(Ordering::SeqCst) < 200 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("every completion listener ran");
    assert_eq!(done.load(Ordering::SeqCst), 200);

    // Tear down concurrently: owners and the service at once.
    let mut teardown = Vec::new();
    for owner in owners {
        teardown.push(tokio::spawn(async move { owner.dispose().await }));
    }
    let registry = host.registry.clone();
    teardown.push(tokio::spawn(async move { registry.dispose().await }));
    tokio::time::timeout(Duration::from_secs(30), async {
        for task in teardown {
            task.await.expect("teardown");
        }
    })
    .await
    .expect("teardown finishes");
    assert_eq!(host.registry.record_count(), 0);
}
