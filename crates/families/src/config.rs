//! [`FamiliesConfig`]: every family's configuration in one serde object.

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};
use turnkit_core::ConfigError;

/// The configuration of every family, as one JSON object with the optional keys `todo`,
/// `jobs`, `toolJobs`, `schedule`, `bash`, `terminal`, `subagent` and `watch`. Each value is an object
/// in that family's own spec keys (the configuration section of the family's spec, such as
/// docs/spec/todo-jobs.md §4.1 for `jobs`), validated by the family when it is installed; `null` is
/// refused, and a missing object means the family's defaults (`{}`). Unknown top-level keys
/// are refused.
///
/// Two families are installed only on request: `terminal` only when its object is present
/// (a host that has a PTY tool of its own keeps it), `subagent` only when the host gives
/// [`Families::install`](crate::Families::install) a model for the children.
///
/// `todo.allowParallelInProgress` has no default: the todo spec (docs/spec/todo-jobs.md §2.1)
/// makes the host choose it. [`FamiliesConfig::from_json`] refuses a configuration without
/// it; a host that chooses for its users sets it with
/// [`FamiliesConfig::with_parallel_default`].
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FamiliesConfig {
    /// turnkit-todo (`{"allowParallelInProgress": bool}`).
    #[serde(default, deserialize_with = "present")]
    pub todo: Option<Map<String, Value>>,
    /// turnkit-jobs-local (the job registry's limits).
    #[serde(default, deserialize_with = "present")]
    pub jobs: Option<Map<String, Value>>,
    /// turnkit-tool-jobs (`job_output` / `job_list` / `job_kill` and completion notices).
    #[serde(default, deserialize_with = "present")]
    pub tool_jobs: Option<Map<String, Value>>,
    /// turnkit-schedule (durable reminders).
    #[serde(default, deserialize_with = "present")]
    pub schedule: Option<Map<String, Value>>,
    /// turnkit-bash (background shell commands).
    #[serde(default, deserialize_with = "present")]
    pub bash: Option<Map<String, Value>>,
    /// turnkit-terminal (PTY sessions); the family is installed only with this object.
    #[serde(default, deserialize_with = "present")]
    pub terminal: Option<Map<String, Value>>,
    /// turnkit-subagent (the `agent` tool); used only by a host that runs children.
    #[serde(default, deserialize_with = "present")]
    pub subagent: Option<Map<String, Value>>,
    /// turnkit-watch (`watch_create`); the family is installed only with this object.
    #[serde(default, deserialize_with = "present")]
    pub watch: Option<Map<String, Value>>,
}

impl FamiliesConfig {
    /// The top-level keys, in declaration order.
    pub const KEYS: [&'static str; 8] = [
        "todo", "jobs", "toolJobs", "schedule", "bash", "terminal", "subagent", "watch",
    ];

    /// Decodes the configuration object of a host whose user must choose
    /// `todo.allowParallelInProgress` (`harness mcp --config`).
    ///
    /// # Errors
    /// [`ConfigError::Invalid`]: `config: <serde message>` for a value that is not such an
    /// object (``config: unknown field `tooljobs`, expected one of `todo`, …``), and the todo
    /// family's message for a missing choice (`tool-todo: $.allowParallelInProgress missing
    /// required value`). Each family validates the rest of its object when installed.
    pub fn from_json(value: &Value) -> Result<Self, ConfigError> {
        let config =
            Self::deserialize(value).map_err(|e| ConfigError::Invalid(format!("config: {e}")))?;
        turnkit_todo::TodoConfig::from_json(config.family(Family::Todo))?;
        Ok(config)
    }

    /// Every family at its defaults, with `todo.allowParallelInProgress` chosen `false` (the
    /// configuration behind `harness tools` without `--config` and `harness log`).
    pub fn defaults() -> Self {
        Self::default().with_parallel_default(false)
    }

    /// This configuration with `todo.allowParallelInProgress` set to `allow` where it is
    /// missing (a host that chooses for its users: the scenario runner chooses `false`).
    #[must_use]
    pub fn with_parallel_default(mut self, allow: bool) -> Self {
        self.todo
            .get_or_insert_with(Map::new)
            .entry("allowParallelInProgress")
            .or_insert(Value::Bool(allow));
        self
    }

    /// The object of `family` (`{}` when missing).
    pub fn family(&self, family: Family) -> Value {
        let map = match family {
            Family::Todo => &self.todo,
            Family::Jobs => &self.jobs,
            Family::ToolJobs => &self.tool_jobs,
            Family::Schedule => &self.schedule,
            Family::Bash => &self.bash,
            Family::Terminal => &self.terminal,
            Family::Subagent => &self.subagent,
            Family::Watch => &self.watch,
        };
        Value::Object(map.clone().unwrap_or_default())
    }

    /// Checks the folders the configuration names exist before anything is served: a
    /// `bash.cwd` that is not an existing folder would fail every `bash` call.
    ///
    /// # Errors
    /// `bash.cwd <cwd> is not a folder` (for a file), with `: <io error>` appended when it
    /// cannot be read.
    pub fn check_folders(&self) -> Result<(), String> {
        let Some(cwd) = self
            .bash
            .as_ref()
            .and_then(|bash| bash.get("cwd"))
            .and_then(Value::as_str)
        else {
            return Ok(());
        };
        match std::fs::metadata(cwd) {
            Ok(meta) if meta.is_dir() => Ok(()),
            Ok(_) => Err(format!("bash.cwd {cwd} is not a folder")),
            Err(error) => Err(format!("bash.cwd {cwd} is not a folder: {error}")),
        }
    }
}

/// One family of [`FamiliesConfig`], named by its top-level key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// `todo`.
    Todo,
    /// `jobs`.
    Jobs,
    /// `toolJobs`.
    ToolJobs,
    /// `schedule`.
    Schedule,
    /// `bash`.
    Bash,
    /// `terminal`.
    Terminal,
    /// `subagent`.
    Subagent,
    /// `watch`.
    Watch,
}

/// A serde `deserialize_with` helper for a field that may be absent but, when present, must
/// hold a `T`: `null` is refused (`invalid type: null, expected …`) instead of read as absent.
/// Use it with `#[serde(default, deserialize_with = "…")]`.
///
/// # Errors
/// `T`'s error for anything that is not a `T`, `null` included.
pub fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(deserializer).map(Some)
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    #[test]
    fn the_parallel_choice_is_required_and_unknown_keys_are_refused() {
        let missing = FamiliesConfig::from_json(&json!({"bash": {}})).unwrap_err();
        assert_eq!(
            missing.to_string(),
            "tool-todo: $.allowParallelInProgress missing required value"
        );
        let unknown = FamiliesConfig::from_json(&json!({
            "todo": {"allowParallelInProgress": true},
            "tooljobs": {},
        }))
        .unwrap_err();
        assert_eq!(
            unknown.to_string(),
            "config: unknown field `tooljobs`, expected one of `todo`, `jobs`, `toolJobs`, \
             `schedule`, `bash`, `terminal`, `subagent`, `watch`"
        );
        let null = FamiliesConfig::from_json(&json!({"terminal": null})).unwrap_err();
        assert_eq!(
            null.to_string(),
            "config: invalid type: null, expected a map"
        );
        let config = FamiliesConfig::from_json(&json!({
            "todo": {"allowParallelInProgress": true},
            "toolJobs": {"completionDelivery": "quiet"},
        }))
        .unwrap();
        assert_eq!(
            config.family(Family::ToolJobs),
            json!({"completionDelivery": "quiet"})
        );
        assert_eq!(config.family(Family::Bash), json!({}));
        assert_eq!(config.terminal, None);
    }

    #[test]
    fn the_parallel_default_fills_only_a_missing_choice() {
        let chosen = FamiliesConfig {
            todo: Some(Map::from_iter([(
                "allowParallelInProgress".to_owned(),
                Value::Bool(true),
            )])),
            ..FamiliesConfig::default()
        };
        assert_eq!(
            chosen.with_parallel_default(false).family(Family::Todo),
            json!({"allowParallelInProgress": true})
        );
        assert_eq!(
            FamiliesConfig::default()
                .with_parallel_default(false)
                .family(Family::Todo),
            json!({"allowParallelInProgress": false})
        );
    }
}
