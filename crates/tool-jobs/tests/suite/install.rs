//! Mounting: configuration, controller lifetime, prompt section, double mounts.

use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_core::{ConfigError, PromptSection, RegistrationScope, ScopeKey};
use turnkit_tool_jobs::{ToolJobsConfig, install, install_scoped};

use super::fixture::{FakeProducer, Fx};

const NO_CONTROLLER: &str = "background jobs unavailable: no job controller serves this agent (load @deepseek-ai/dsh-tool-jobs in its composition)";

#[tokio::test(start_paused = true)]
async fn controller_follows_the_plugin_lifetime() {
    // C-095
    let mut fx = Fx::default_config();
    fx.start(FakeProducer::new("bash", "sleep 60"), None);
    let mounted = fx.tool_jobs.take().unwrap();
    drop(mounted);
    let (start, job) = FakeProducer::new("bash", "sleep 60").build();
    let error = fx.registry.start(start).unwrap_err();
    assert_eq!(error.to_string(), NO_CONTROLLER);
    assert!(!job.was_run());
    // Unmounting also removed the tools and the prompt section.
    assert!(fx.host.tools().find("job_output", None).is_none());
    assert_eq!(
        fx.host.prompts().sections(None),
        Vec::<PromptSection>::new()
    );
}

#[tokio::test(start_paused = true)]
async fn a_bare_config_uses_the_fallbacks() {
    // C-098
    let fx = Fx::without_tool_jobs();
    let mounted = install(&fx.harness, ToolJobsConfig::from_json(json!({})).unwrap()).unwrap();
    let names: Vec<String> = fx
        .host
        .tools()
        .all_definitions()
        .into_iter()
        .map(|d| d.name)
        .collect();
    assert_eq!(names, ["job_output", "job_list", "job_kill"]);
    fx.start(FakeProducer::new("bash", "sleep 60"), None);
    assert_eq!(mounted.scope(), &RegistrationScope::Global);
}

#[tokio::test(start_paused = true)]
async fn the_prompt_section_is_exact() {
    // C-099
    let fx = Fx::default_config();
    assert_eq!(
        fx.host.prompts().sections(None),
        [PromptSection {
            name: "tool:jobs".to_owned(),
            order: 106,
            text: "Track every background job id you start. You are notified in-session when a job finishes — do not busy-poll or sleep on one; keep working on independent steps and do not duplicate a running job's work. Before giving a final answer, collect every still-relevant job with job_output (set wait: true only when you are genuinely blocked on it), and job_kill jobs that stopped mattering.".to_owned(),
            scope: RegistrationScope::Global,
        }]
    );
}

#[tokio::test(start_paused = true)]
async fn the_catalog_shows_the_exact_definitions() {
    let fx = Fx::default_config();
    let definitions = fx.host.tools().all_definitions();
    assert_eq!(
        definitions[0].description,
        turnkit_tool_jobs::JOB_OUTPUT_DESCRIPTION
    );
    assert_eq!(
        definitions[0].input_schema,
        turnkit_tool_jobs::job_output_schema()
    );
    assert_eq!(
        definitions[1].description,
        turnkit_tool_jobs::JOB_LIST_DESCRIPTION
    );
    assert_eq!(
        definitions[1].input_schema,
        json!({"type": "object", "properties": {}})
    );
    assert_eq!(
        definitions[2].description,
        turnkit_tool_jobs::JOB_KILL_DESCRIPTION
    );
    assert_eq!(
        definitions[2].input_schema,
        turnkit_tool_jobs::job_kill_schema()
    );
}

#[tokio::test(start_paused = true)]
async fn invalid_configs_register_nothing() {
    let fx = Fx::without_tool_jobs();
    let config = ToolJobsConfig::default()
        .with_wait_timeout_ms(100.0)
        .with_max_wait_timeout_ms(50.0);
    let error = install(&fx.harness, config).unwrap_err();
    assert_eq!(
        error.to_string(),
        "tool-jobs: waitTimeoutMs (100) exceeds maxWaitTimeoutMs (50)"
    );
    assert!(fx.host.tools().all_definitions().is_empty());
    assert!(fx.host.prompts().sections(None).is_empty());
    let (start, _) = FakeProducer::new("bash", "sleep 60").build();
    assert_eq!(
        fx.registry.start(start).unwrap_err().to_string(),
        NO_CONTROLLER
    );
}

#[tokio::test(start_paused = true)]
async fn a_global_and_a_scoped_mount_over_one_agent_are_rejected() {
    // Decision 1 / §5.7 "Multiple mounts": rejected at install, and the refused mount leaves
    // nothing behind.
    let fx = Fx::default_config();
    let agent = fx.agent("s1");
    let scope = RegistrationScope::Scoped(ScopeKey::from("s1"));
    let error = install_scoped(&fx.harness, ToolJobsConfig::default(), scope).unwrap_err();
    assert!(matches!(error, ConfigError::Invalid(_)));
    assert_eq!(
        error.to_string(),
        "tool-jobs: another tool-jobs mount already serves these agents (tool \"job_output\" is already registered)"
    );
    assert_eq!(fx.host.prompts().sections(None).len(), 1);
    fx.start(FakeProducer::new("bash", "sleep 60"), Some(&agent));
}

#[tokio::test(start_paused = true)]
async fn a_scoped_mount_serves_only_its_agents() {
    let fx = Fx::without_tool_jobs();
    let inside = fx.agent("s1");
    let outside = fx.agent("s2");
    let _mount = install_scoped(
        &fx.harness,
        ToolJobsConfig::default(),
        RegistrationScope::Scoped(ScopeKey::from("s1")),
    )
    .unwrap();
    fx.start(FakeProducer::new("bash", "sleep 60"), Some(&inside));
    let (start, _) = FakeProducer::new("bash", "sleep 60")
        .owner(outside.as_dyn())
        .build();
    assert_eq!(
        fx.registry.start(start).unwrap_err().to_string(),
        NO_CONTROLLER
    );
    let (start, _) = FakeProducer::new("bash", "sleep 60").build();
    assert_eq!(
        fx.registry.start(start).unwrap_err().to_string(),
        NO_CONTROLLER,
        "unowned jobs need a global controller"
    );
    let chain = [ScopeKey::from("s1")];
    assert_eq!(fx.host.prompts().sections(Some(&chain)).len(), 1);
    assert_eq!(fx.host.prompts().sections(None).len(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_host_without_a_job_registry_is_refused_and_keeps_nothing() {
    // §5.2 step 1: the registry is found in the host's service slot.
    let host = turnkit_testkit::MemoryHarness::new(std::sync::Arc::new(
        turnkit_testkit::ManualClock::at_default(),
    ));
    let error = install(&host.as_dyn(), ToolJobsConfig::default()).unwrap_err();
    assert!(matches!(error, ConfigError::Invalid(_)));
    assert_eq!(
        error.to_string(),
        "tool-jobs: no job registry on this host (install turnkit-jobs-local first)"
    );
    assert!(host.tools().find("job_output", None).is_none());
    assert_eq!(host.prompts().sections(None), Vec::<PromptSection>::new());
}
