//! [`FamilyConfigs`]: every family's configuration, with the keys of the scenario `config`
//! step (`docs/scenarios.md`).

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::ServeError;

/// The configuration of every family, as one JSON object with the optional keys `todo`,
/// `jobs`, `toolJobs`, `schedule` and `bash` (each an object in the family's own spec keys;
/// a missing family object is `{}`). Unknown keys are refused.
///
/// `todo.allowParallelInProgress` has no default: the spec requires the host to choose it,
/// so a configuration without it is refused by [`FamilyConfigs::from_json`].
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FamilyConfigs {
    /// `turnkit-todo` (`{"allowParallelInProgress": bool}`).
    #[serde(default)]
    pub todo: Option<Map<String, Value>>,
    /// `turnkit-jobs-local`.
    #[serde(default)]
    pub jobs: Option<Map<String, Value>>,
    /// `turnkit-tool-jobs`.
    #[serde(default)]
    pub tool_jobs: Option<Map<String, Value>>,
    /// `turnkit-schedule`.
    #[serde(default)]
    pub schedule: Option<Map<String, Value>>,
    /// `turnkit-bash`.
    #[serde(default)]
    pub bash: Option<Map<String, Value>>,
}

impl FamilyConfigs {
    /// Decodes the configuration object.
    ///
    /// # Errors
    /// [`ServeError::Config`] for a value that is not such an object, and for a missing
    /// `todo.allowParallelInProgress` (`tool-todo: $.allowParallelInProgress missing required
    /// value`); each family validates the rest of its own object when it is installed.
    pub fn from_json(value: &Value) -> Result<Self, ServeError> {
        let configs: FamilyConfigs = serde_json::from_value(value.clone())
            .map_err(|e| ServeError::Config(format!("config: {e}")))?;
        turnkit_todo::TodoConfig::from_json(configs.todo_value())
            .map_err(|e| ServeError::Config(e.to_string()))?;
        Ok(configs)
    }

    pub(crate) fn todo_value(&self) -> Value {
        object(self.todo.as_ref())
    }

    /// The `jobs` object, with the job journal on unless it says `"journal": false`:
    /// served jobs survive a restart of the server (todo-jobs §5.9).
    pub(crate) fn jobs_value(&self) -> Value {
        let mut jobs = self.jobs.clone().unwrap_or_default();
        jobs.entry("journal").or_insert(Value::Bool(true));
        Value::Object(jobs)
    }

    pub(crate) fn tool_jobs_value(&self) -> Value {
        object(self.tool_jobs.as_ref())
    }

    pub(crate) fn schedule_value(&self) -> Value {
        object(self.schedule.as_ref())
    }

    pub(crate) fn bash_value(&self) -> Value {
        object(self.bash.as_ref())
    }
}

fn object(map: Option<&Map<String, Value>>) -> Value {
    Value::Object(map.cloned().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    #[test]
    fn the_parallel_choice_is_required_and_unknown_keys_are_refused() {
        let missing = FamilyConfigs::from_json(&json!({"bash": {}})).unwrap_err();
        assert_eq!(
            missing.to_string(),
            "tool-todo: $.allowParallelInProgress missing required value"
        );
        let unknown = FamilyConfigs::from_json(&json!({
            "todo": {"allowParallelInProgress": true},
            "tooljobs": {},
        }))
        .unwrap_err();
        assert_eq!(
            unknown.to_string(),
            "config: unknown field `tooljobs`, expected one of `todo`, `jobs`, `toolJobs`, `schedule`, `bash`"
        );
        let configs = FamilyConfigs::from_json(&json!({
            "todo": {"allowParallelInProgress": true},
            "toolJobs": {"completionDelivery": "quiet"},
        }))
        .unwrap();
        assert_eq!(
            configs.tool_jobs_value(),
            json!({"completionDelivery": "quiet"})
        );
        assert_eq!(configs.bash_value(), json!({}));
        assert_eq!(configs.jobs_value(), json!({"journal": true}));
        let off = FamilyConfigs::from_json(&json!({
            "todo": {"allowParallelInProgress": true},
            "jobs": {"journal": false, "maxConcurrentJobsPerOwner": 2},
        }))
        .unwrap();
        assert_eq!(
            off.jobs_value(),
            json!({"journal": false, "maxConcurrentJobsPerOwner": 2})
        );
    }
}
