//! Installing the families into a scenario host from the `config` step.

use std::sync::Arc;

use serde_json::{Map, Value};

use turnkit_testkit::MemoryHarness;

/// The `config` step's family objects (spec key names), each defaulting to `{}`.
#[derive(Clone, Debug, Default)]
pub(crate) struct FamilyConfigs {
    pub(crate) todo: Option<Value>,
    pub(crate) jobs: Option<Value>,
    pub(crate) tool_jobs: Option<Value>,
    pub(crate) schedule: Option<Value>,
    pub(crate) bash: Option<Value>,
    pub(crate) terminal: Option<Value>,
    pub(crate) subagent: Option<Value>,
    /// The children's scripted model (`child_script` steps add scripts; kept over restarts).
    pub(crate) children: Arc<turnkit_subagent::ScriptedChild>,
}

impl FamilyConfigs {
    fn todo_config(&self) -> Value {
        let mut config = match &self.todo {
            Some(Value::Object(map)) => map.clone(),
            _ => Map::new(),
        };
        config
            .entry("allowParallelInProgress")
            .or_insert(Value::Bool(false));
        Value::Object(config)
    }
}

/// What the families installed; disposed on restart and at the end, in reverse order.
pub(crate) struct Installed {
    subagent: turnkit_subagent::Installed,
    pub(crate) bash: turnkit_bash::Installed,
    /// Only when the `config` step has a `terminal` object: the default catalog stays the
    /// families every host gets.
    pub(crate) terminal: Option<turnkit_terminal::Installed>,
    pub(crate) jobs: turnkit_jobs_local::Installed,
    tool_jobs: turnkit_tool_jobs::Installed,
    schedule: turnkit_schedule::Installed,
    todo: turnkit_todo::Installed,
}

impl Installed {
    /// The job registry the `fake_job` and `bash` steps start jobs in.
    pub(crate) fn registry(&self) -> Arc<dyn turnkit_jobs::JobRegistry> {
        self.jobs.registry()
    }

    pub(crate) async fn dispose(self) {
        if let Some(terminal) = &self.terminal {
            terminal.dispose();
        }
        self.subagent.dispose();
        self.bash.dispose();
        self.schedule.dispose().await;
        self.tool_jobs.dispose();
        self.jobs.dispose().await;
        self.todo.dispose();
    }
}

fn object_or_empty(value: Option<&Value>) -> Value {
    value.cloned().unwrap_or_else(|| Value::Object(Map::new()))
}

/// Installs every family with its configuration.
pub(crate) fn install(
    host: &Arc<MemoryHarness>,
    configs: &FamilyConfigs,
) -> Result<Installed, String> {
    let harness = host.as_dyn();
    let todo = turnkit_todo::TodoConfig::from_json(configs.todo_config())
        .and_then(|config| turnkit_todo::install(&harness, config))
        .map_err(|e| e.to_string())?;
    let jobs = turnkit_core::decode_config::<turnkit_jobs_local::JobsConfig>(
        "jobs-local",
        object_or_empty(configs.jobs.as_ref()),
    )
    .and_then(|config| turnkit_jobs_local::install(&harness, config))
    .map_err(|e| e.to_string())?;
    let tool_jobs =
        turnkit_tool_jobs::ToolJobsConfig::from_json(object_or_empty(configs.tool_jobs.as_ref()))
            .and_then(|config| turnkit_tool_jobs::install(&harness, config))
            .map_err(|e| e.to_string())?;
    let schedule = turnkit_core::decode_config::<turnkit_schedule::ScheduleConfig>(
        "schedule",
        object_or_empty(configs.schedule.as_ref()),
    )
    .and_then(|config| turnkit_schedule::install(&harness, config))
    .map_err(|e| e.to_string())?;
    let bash = turnkit_bash::BashConfig::from_json(object_or_empty(configs.bash.as_ref()))
        .and_then(|config| turnkit_bash::install(&harness, config))
        .map_err(|e| e.to_string())?;
    let terminal = match &configs.terminal {
        None => None,
        Some(config) => Some(
            turnkit_terminal::TerminalConfig::from_json(config)
                .and_then(|config| turnkit_terminal::install(&harness, config))
                .map_err(|e| e.to_string())?,
        ),
    };
    let subagent =
        turnkit_subagent::SubagentConfig::from_json(object_or_empty(configs.subagent.as_ref()))
            .and_then(|config| {
                harness.services().insert(turnkit_subagent::ChildHost::new(
                    host.kit(),
                    host.store().clone(),
                    configs.children.clone(),
                ));
                turnkit_subagent::install(&harness, config)
            })
            .map_err(|e| e.to_string())?;
    Ok(Installed {
        subagent,
        bash,
        terminal,
        jobs,
        tool_jobs,
        schedule,
        todo,
    })
}
