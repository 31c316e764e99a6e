//! Installing the families into a scenario host from the `config` step.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::MemoryHarness;

/// The `config` step's family objects (spec key names), each defaulting to `{}`.
#[derive(Clone, Debug, Default)]
pub(crate) struct FamilyConfigs {
    pub(crate) todo: Option<Value>,
    pub(crate) jobs: Option<Value>,
    pub(crate) tool_jobs: Option<Value>,
    pub(crate) schedule: Option<Value>,
    pub(crate) bash: Option<Value>,
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

/// What the families installed; dropped (or disposed) on restart and at the end.
#[derive(Default)]
pub(crate) struct Installed {
    keep: Vec<Box<dyn std::any::Any + Send>>,
}

impl Installed {
    pub(crate) async fn dispose(self) {
        drop(self.keep);
    }
}

/// Installs every family with its configuration.
pub(crate) fn install(
    host: &Arc<MemoryHarness>,
    configs: &FamilyConfigs,
) -> Result<Installed, String> {
    let harness = host.as_dyn();
    let mut installed = Installed::default();
    let todo = harness_todo::TodoConfig::from_json(&configs.todo_config())
        .and_then(|config| harness_todo::install(&harness, config))
        .map_err(|e| e.to_string())?;
    installed.keep.push(Box::new(todo));
    Ok(installed)
}

/// Problems the families' invariant checks find in a session log (empty when it is sound).
pub(crate) fn check_log(session: &dyn harness_core::Session) -> Vec<String> {
    let events = session.events();
    harness_todo::find_violations(&events)
        .into_iter()
        .map(|v| v.to_string())
        .collect()
}
