//! Installing the families into a scenario host from the `config` step, through
//! turnkit-families.

use std::sync::Arc;

use turnkit_families::{Children, Families, FamiliesConfig};
use turnkit_testkit::MemoryHarness;

/// What the `config` step set up for the families; kept over restarts.
#[derive(Clone)]
pub(crate) struct FamilySetup {
    /// Every family's configuration (`todo.allowParallelInProgress` defaults to false).
    pub(crate) config: FamiliesConfig,
    /// The children's scripted model (`child_script` steps add scripts).
    pub(crate) children: Arc<turnkit_subagent::ScriptedChild>,
}

impl FamilySetup {
    pub(crate) fn new(config: FamiliesConfig) -> Self {
        Self {
            config: config.with_parallel_default(false),
            children: turnkit_subagent::ScriptedChild::new(),
        }
    }

    /// Installs every family into `host`; children run on the scripted model.
    pub(crate) fn install(&self, host: &Arc<MemoryHarness>) -> Result<Families, String> {
        let children = Children {
            kit: host.kit().clone(),
            store: host.store().clone(),
            model: self.children.clone(),
        };
        Families::install(&host.as_dyn(), &self.config, Some(&children)).map_err(|e| e.to_string())
    }
}
