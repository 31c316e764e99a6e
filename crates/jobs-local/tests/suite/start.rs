//! C-037 … C-047, C-074, C-085, C-086, C-094: controllers, preflight, admission and ids.

use std::sync::Arc;

use pretty_assertions::assert_eq;
use turnkit_core::{RegistrationScope, ScopeKey};
use turnkit_jobs::{JobOutcome, JobRegistry};

use super::common::*;

const NO_CONTROLLER: &str = "background jobs unavailable: no job controller serves this agent (load @deepseek-ai/dsh-tool-jobs in its composition)";
const LIMIT_10: &str = "background job limit reached for this owner (limit: 10); use job_kill to stop an unneeded job, wait for it to finish, then retry";

#[tokio::test(start_paused = true)]
async fn c037_no_controller_no_start() {
    let host = Host::bare(10);
    let (result, job) = host.start(bash());
    assert_eq!(message(result), NO_CONTROLLER);
    assert!(!job.was_run());
}

#[tokio::test(start_paused = true)]
async fn c038_controllers_are_owner_relative() {
    let host = Host::bare(10);
    let _s1 = host
        .registry
        .attach_controller(RegistrationScope::Scoped(ScopeKey::new("S1")), "tool-jobs");
    let served = host.scoped_agent("served", &["S1"]);
    let unserved = host.scoped_agent("unserved", &["S2"]);
    let (ok, _) = host.start(bash().owner(served));
    assert_eq!(ok.unwrap(), "bash-1");
    let (refused, job) = host.start(bash().owner(unserved));
    assert_eq!(message(refused), NO_CONTROLLER);
    assert!(!job.was_run());
    let (unowned, _) = host.start(bash());
    assert_eq!(message(unowned), NO_CONTROLLER);
}

#[tokio::test(start_paused = true)]
async fn c039_a_global_controller_serves_everyone() {
    let host = Host::new();
    let agent = host.scoped_agent("someone", &["preset"]);
    assert_eq!(host.start(bash().owner(agent)).0.unwrap(), "bash-1");
    assert_eq!(host.start(bash()).0.unwrap(), "bash-2");
}

#[tokio::test(start_paused = true)]
async fn c042_default_cap_of_ten() {
    let host = Host::new();
    for n in 1..=10 {
        assert_eq!(host.start_ok(bash()).0, format!("bash-{n}").as_str());
    }
    let (result, job) = host.start(bash());
    assert_eq!(message(result), LIMIT_10);
    assert!(!job.was_run());
}

#[tokio::test(start_paused = true)]
async fn c043_rejection_burns_no_id_and_settlement_frees_the_slot() {
    let host = Host::with_limit(1);
    let (id1, p1) = host.start_ok(bash());
    assert_eq!(id1, "bash-1");
    let (refused, p2) = host.start(bash());
    assert!(
        message(refused)
            .contains("use job_kill to stop an unneeded job, wait for it to finish, then retry")
    );
    assert!(!p2.was_run());
    p1.settle(JobOutcome::completed());
    tick().await;
    assert_eq!(host.start_ok(bash()).0, "bash-2");
}

#[tokio::test(start_paused = true)]
async fn c045_every_terminal_status_frees_the_slot() {
    for outcome in [
        JobOutcome::completed(),
        JobOutcome::killed(),
        JobOutcome::failed(),
    ] {
        let host = Host::with_limit(1);
        let (_, p1) = host.start_ok(bash());
        assert_eq!(
            host.start(bash()).0.unwrap_err().to_string(),
            "background job limit reached for this owner (limit: 1); use job_kill to stop an unneeded job, wait for it to finish, then retry"
        );
        p1.settle(outcome);
        tick().await;
        assert_eq!(host.start_ok(bash()).0, "bash-2");
    }
}

#[tokio::test(start_paused = true)]
async fn c046_buckets_are_per_exact_owner_and_unowned_jobs_share_one() {
    let host = Host::with_limit(1);
    let old = host.agent("shared-session");
    let other = host.agent("other-session");
    host.start_ok(bash().owner(old.as_dyn()));
    host.start_ok(bash().owner(other.as_dyn()));
    let replacement = host.agent("shared-session");
    assert!(!Arc::ptr_eq(&old, &replacement));
    host.start_ok(bash().owner(replacement.as_dyn()));
    host.start_ok(bash());
    assert!(message(host.start(bash()).0).contains("(limit: 1)"));
    let (stale, job) = host.start(bash().owner(old.as_dyn()));
    assert!(message(stale).contains("is not the registered agent instance"));
    assert!(!job.was_run());
}

#[tokio::test(start_paused = true)]
async fn c047_per_kind_id_counters() {
    let host = Host::new();
    let ids: Vec<String> = ["bash", "bash", "subagent", "workflow"]
        .into_iter()
        .map(|kind| host.start_ok(FakeProducer::new(kind, "task")).0.to_string())
        .collect();
    assert_eq!(ids, ["bash-1", "bash-2", "subagent-1", "workflow-1"]);
}

#[tokio::test(start_paused = true)]
async fn field_checks_in_order_and_without_consuming_ids() {
    let host = Host::new();
    let (kind, job) = host.start(FakeProducer::new("", ""));
    assert_eq!(
        message(kind),
        "invalid job kind: expected a non-empty string"
    );
    assert!(!job.was_run());
    let (label, _) = host.start(FakeProducer::new("bash", "").output_limit_bytes(0));
    assert_eq!(
        message(label),
        "invalid job label: expected a non-empty string"
    );
    let (limit, _) = host.start(bash().output_limit_bytes(0));
    assert_eq!(
        message(limit),
        "invalid outputLimitBytes: expected a positive safe integer, got 0"
    );
    let (limit, _) = host.start(bash().output_limit_bytes(9_007_199_254_740_992));
    assert_eq!(
        message(limit),
        "invalid outputLimitBytes: expected a positive safe integer, got 9007199254740992"
    );
    // A whitespace-only label is accepted; a throwing run records nothing.
    let (run, job) = host.start(FakeProducer::new("bash", " ").fail_run("spawn failed"));
    assert_eq!(message(run), "spawn failed");
    assert!(job.was_run());
    assert_eq!(host.registry.list(None), vec![]);
    assert_eq!(host.start_ok(FakeProducer::new("bash", " ")).0, "bash-1");
}

#[tokio::test(start_paused = true)]
async fn a_throwing_run_releases_its_admission_slot() {
    let host = Host::with_limit(1);
    let (run, _) = host.start(bash().fail_run("boom"));
    assert_eq!(message(run), "boom");
    assert_eq!(host.start_ok(bash()).0, "bash-1");
}

#[tokio::test(start_paused = true)]
async fn owned_starts_need_an_agent_registry() {
    let clock = turnkit_testkit::ManualClock::at_default();
    let registry = turnkit_jobs_local::LocalJobRegistry::new(
        turnkit_jobs_local::JobLimits::default(),
        Arc::new(clock.clone()),
        None,
    );
    let _c = registry.attach_controller(RegistrationScope::Global, "c");
    let harness = turnkit_testkit::MemoryHarness::new(Arc::new(clock));
    let agent = harness
        .create_session(turnkit_core::SessionHeader::new("a"))
        .unwrap();
    let (start, job) = bash().owner(agent.as_dyn()).build();
    assert_eq!(
        message(registry.start(start)),
        "background job ownership requires the agent registry (load @deepseek-ai/dsh-agent)"
    );
    assert!(!job.was_run());
    let (start, _) = bash().build();
    assert_eq!(registry.start(start).unwrap(), "bash-1");
}

#[tokio::test(start_paused = true)]
async fn c074_stale_instance_after_id_reuse() {
    let host = Host::new();
    let stale = host.agent("owner");
    let current = host.agent("owner");
    host.start_ok(bash().owner(current.as_dyn()));
    let (result, job) = host.start(bash().owner(stale.as_dyn()));
    assert!(message(result).contains("is not the registered agent instance"));
    assert!(!job.was_run());
    assert_eq!(host.registry.list(id_of(&stale)).len(), 1);
    assert_eq!(host.registry.list(id_of(&current)).len(), 1);
}

#[tokio::test(start_paused = true)]
async fn c085_unloading_a_scoped_mount_removes_its_controller() {
    let host = Host::bare(10);
    let scope = RegistrationScope::Scoped(ScopeKey::new("preset"));
    let mount = vec![
        host.registry.attach_controller(scope.clone(), "tool-jobs"),
        host.registry.on_job_done(scope, Arc::new(|_, _| Ok(None))),
    ];
    let agent = host.scoped_agent("member", &["preset"]);
    assert_eq!(host.start_ok(bash().owner(agent.clone())).0, "bash-1");
    drop(mount);
    assert!(
        message(host.start(bash().owner(agent)).0).contains("no job controller serves this agent")
    );
}

#[tokio::test(start_paused = true)]
async fn c086_controller_disposers_and_duplicate_names() {
    let host = Host::bare(10);
    let a1 = host
        .registry
        .attach_controller(RegistrationScope::Global, "a");
    let a2 = host
        .registry
        .attach_controller(RegistrationScope::Global, "a");
    let plugin_b = vec![
        host.registry
            .attach_controller(RegistrationScope::Global, "b"),
    ];
    a1.unregister();
    a1.unregister();
    assert!(host.start(bash()).0.is_ok());
    a2.unregister();
    assert!(host.start(bash()).0.is_ok());
    drop(plugin_b);
    assert_eq!(message(host.start(bash()).0), NO_CONTROLLER);
}

#[tokio::test(start_paused = true)]
async fn c094_config_row_from_a_composition_file() {
    let clock = turnkit_testkit::ManualClock::at_default();
    let harness = turnkit_testkit::MemoryHarness::new(Arc::new(clock));
    let config: turnkit_jobs_local::JobsConfig =
        serde_json::from_str(r#"{"maxConcurrentJobsPerOwner": 1}"#).unwrap();
    let installed = turnkit_jobs_local::install(&harness.as_dyn(), config).unwrap();
    let jobs = installed.registry();
    let _controller = jobs.attach_controller(RegistrationScope::Global, "tool-jobs");
    assert!(jobs.start(bash().build().0).is_ok());
    assert!(message(jobs.start(bash().build().0)).contains("(limit: 1)"));
}

#[tokio::test(start_paused = true)]
async fn c033_only_one_registry_per_host() {
    let clock = turnkit_testkit::ManualClock::at_default();
    let harness = turnkit_testkit::MemoryHarness::new(Arc::new(clock));
    let host = harness.as_dyn();
    let first = turnkit_jobs_local::install(&host, Default::default()).unwrap();
    let second = turnkit_jobs_local::install(&host, Default::default());
    assert_eq!(
        second.map(|_| ()).map_err(|e| e.to_string()),
        Err("service \"jobs\" is already registered".to_owned())
    );
    first.dispose().await;
    drop(first);
    assert!(turnkit_jobs_local::install(&host, Default::default()).is_ok());
}

#[tokio::test(start_paused = true)]
async fn install_checks_owners_against_the_hosts_agents() {
    let clock = turnkit_testkit::ManualClock::at_default();
    let harness = turnkit_testkit::MemoryHarness::new(Arc::new(clock));
    let installed = turnkit_jobs_local::install(&harness.as_dyn(), Default::default()).unwrap();
    let jobs = installed.registry();
    let _controller = jobs.attach_controller(RegistrationScope::Global, "tool-jobs");
    let old = harness
        .create_session(turnkit_core::SessionHeader::new("s1"))
        .unwrap();
    assert_eq!(
        jobs.start(bash().owner(old.as_dyn()).build().0).unwrap(),
        "bash-1"
    );
    let replacement = harness.resume(&"s1".into()).unwrap();
    assert!(
        message(jobs.start(bash().owner(old.as_dyn()).build().0))
            .contains("is not the registered agent instance")
    );
    assert_eq!(
        jobs.start(bash().owner(replacement.as_dyn()).build().0)
            .unwrap(),
        "bash-2"
    );
    assert_eq!(
        turnkit_jobs_local::install(
            &harness.as_dyn(),
            serde_json::from_str(r#"{"maxConcurrentJobsPerOwner": 0}"#).unwrap()
        )
        .unwrap_err()
        .to_string(),
        "jobs-local: maxConcurrentJobsPerOwner must be an integer from 1 to 9007199254740991, got 0"
    );
}

/// An owner checked once is re-checked after the agent registry changes: removed from the
/// directory (without being disposed), its next start is refused.
#[tokio::test(start_paused = true)]
async fn an_owner_removed_from_the_registry_after_a_start_is_refused() {
    let host = Host::new();
    let owner = host.agent("owner");
    host.start_ok(bash().owner(owner.as_dyn()));
    host.start_ok(bash().owner(owner.as_dyn()));
    host.directory.remove(&owner.as_dyn());
    let (result, job) = host.start(bash().owner(owner.as_dyn()));
    assert_eq!(
        message(result),
        "agent \"owner\" is not the registered agent instance (background job owner must be live)"
    );
    assert!(!job.was_run());
    host.directory.publish(owner.as_dyn());
    assert_eq!(host.start_ok(bash().owner(owner.as_dyn())).0, "bash-3");
}

#[tokio::test(start_paused = true)]
async fn install_provides_the_registry_in_the_host_service_slot_until_dropped() {
    let harness =
        turnkit_testkit::MemoryHarness::new(Arc::new(turnkit_testkit::ManualClock::at_default()));
    let host = harness.as_dyn();
    let installed = turnkit_jobs_local::install(&host, Default::default()).unwrap();
    let found = host.services().get::<Arc<dyn JobRegistry>>().unwrap();
    assert_eq!(found.list(None).len(), 0);
    drop(installed);
    assert!(host.services().get::<Arc<dyn JobRegistry>>().is_none());
}
