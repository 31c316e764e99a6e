//! [`install`]: mounts tool-todo on a host (todo-jobs §2.1, §2.7).

use std::sync::Arc;

use turnkit_core::{ConfigError, Harness, Registration, RegistrationScope};

use crate::{TodoConfig, TodoWriteTool, TodosProjection};

/// What [`install`] registered. Dropping it, or calling [`Installed::dispose`], removes the
/// `todo_write` tool and the `todos` projection key (todo-jobs §2.7).
#[derive(Debug)]
#[must_use = "dropping Installed unloads tool-todo at once"]
pub struct Installed {
    tool: Registration,
    projection: Option<Registration>,
}

impl Installed {
    /// Whether the host had a projection registry, so the `todos` key is registered.
    pub fn has_projection(&self) -> bool {
        self.projection.is_some()
    }

    /// Unloads the plugin now. Idempotent.
    pub fn dispose(&self) {
        self.tool.unregister();
        if let Some(projection) = &self.projection {
            projection.unregister();
        }
    }
}

/// Loads tool-todo: registers `todo_write` globally (its description and at-most-one check
/// follow `config`) and, when the host has a projection registry, the `todos` projection.
///
/// # Errors
/// [`ConfigError::Register`] when the tool name or the projection key is already taken; in
/// that case nothing stays registered.
pub fn install(harness: &Arc<dyn Harness>, config: TodoConfig) -> Result<Installed, ConfigError> {
    let tool = harness.register_tool(
        Arc::new(TodoWriteTool::new(config.policy())),
        RegistrationScope::Global,
    )?;
    let projection = harness.register_projection(Arc::new(TodosProjection))?;
    Ok(Installed { tool, projection })
}
