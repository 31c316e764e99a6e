//! [`FamiliesConfig`]: every family's configuration in one serde object.

use std::collections::BTreeMap;

use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};
use turnkit_core::ConfigError;

use crate::entry::Entry;
use crate::members::BUILTIN;

/// The configuration of every family, as one JSON object with one optional key per family:
/// the keys of the built-in list ([`FamiliesConfig::KEYS`]: `todo`, `jobs`, `toolJobs`,
/// `schedule`, `bash`, `terminal`, `subagent` and `watch`), then those of the entries a host
/// added ([`FamiliesConfig::from_json_with`]). Each value is an object in that family's own
/// spec keys (the configuration section of the family's spec, such as
/// docs/spec/todo-jobs.md §4.1 for `jobs`), validated by the family when it is installed;
/// `null` is refused, and a missing object means the family's defaults (`{}`). Unknown
/// top-level keys are refused.
///
/// Two families are installed only on request: `terminal` only when its object is present
/// (a host that has a PTY tool of its own keeps it), `subagent` only when the host gives
/// [`Families::install`](crate::Families::install) a model for the children.
///
/// `todo.allowParallelInProgress` has no default: the todo spec (docs/spec/todo-jobs.md §2.1)
/// makes the host choose it. [`FamiliesConfig::from_json`] refuses a configuration without
/// it; a host that chooses for its users sets it with
/// [`FamiliesConfig::with_parallel_default`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FamiliesConfig {
    /// Each family's object, by key; a family without one is absent.
    objects: BTreeMap<String, Map<String, Value>>,
    /// The entries added after the built-in ones, in installation order.
    added: Vec<Entry>,
}

impl FamiliesConfig {
    /// The top-level keys of the built-in families, in installation order (each declared
    /// once, by its entry).
    pub const KEYS: [&'static str; BUILTIN.len()] = {
        let mut keys = [""; BUILTIN.len()];
        let mut i = 0;
        while i < BUILTIN.len() {
            keys[i] = BUILTIN[i].key;
            i += 1;
        }
        keys
    };

    /// Decodes the configuration object of a host whose user must choose
    /// `todo.allowParallelInProgress` (`harness mcp --config`).
    ///
    /// # Errors
    /// [`ConfigError::Invalid`]: `config: <serde message>` for a value that is not such an
    /// object (``config: unknown field `tooljobs`, expected one of `todo`, …``), and the todo
    /// family's message for a missing choice (`tool-todo: $.allowParallelInProgress missing
    /// required value`). Each family validates the rest of its object when installed.
    pub fn from_json(value: &Value) -> Result<Self, ConfigError> {
        Self::from_json_with(value, &[])
    }

    /// [`FamiliesConfig::from_json`] for a host that adds families of its own: each entry of
    /// `added` is installed after the built-in ones (and disposed before them), and its key
    /// is one more accepted top-level key.
    ///
    /// # Errors
    /// As [`FamiliesConfig::from_json`]; an added key that is already a family's is refused
    /// (`config: family key `bash` is declared twice`).
    pub fn from_json_with(value: &Value, added: &[Entry]) -> Result<Self, ConfigError> {
        let invalid = |e: String| ConfigError::Invalid(format!("config: {e}"));
        let mut keys: Vec<&'static str> = Self::KEYS.to_vec();
        for entry in added {
            if keys.contains(&entry.key) {
                return Err(invalid(format!(
                    "family key `{}` is declared twice",
                    entry.key
                )));
            }
            keys.push(entry.key);
        }
        let objects = Objects { keys: &keys }
            .deserialize(value)
            .map_err(|e| invalid(e.to_string()))?;
        let config = Self {
            objects,
            added: added.to_vec(),
        };
        turnkit_todo::TodoConfig::from_json(config.family("todo"))?;
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
        self.object_mut("todo")
            .entry("allowParallelInProgress")
            .or_insert(Value::Bool(allow));
        self
    }

    /// Every entry this configuration installs, in installation order: the built-in ones,
    /// then the added ones.
    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        BUILTIN.iter().chain(&self.added)
    }

    /// The object of the family with key `key` (`{}` when missing).
    pub fn family(&self, key: &str) -> Value {
        Value::Object(self.object(key).cloned().unwrap_or_default())
    }

    /// The object of the family with key `key`, `None` when the configuration has none.
    pub fn object(&self, key: &str) -> Option<&Map<String, Value>> {
        self.objects.get(key)
    }

    /// The object of the family with key `key` to change, created empty when missing.
    pub fn object_mut(&mut self, key: &str) -> &mut Map<String, Value> {
        self.objects.entry(key.to_owned()).or_default()
    }

    /// Checks the folders the configuration names exist before anything is served: a
    /// `bash.cwd` that is not an existing folder would fail every `bash` call.
    ///
    /// # Errors
    /// `bash.cwd <cwd> is not a folder` (for a file), with `: <io error>` appended when it
    /// cannot be read.
    pub fn check_folders(&self) -> Result<(), String> {
        let Some(cwd) = self
            .object("bash")
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

/// Decodes the built-in families' keys only (a configuration without added entries); the
/// messages are serde's (``unknown field `tooljobs`, expected one of `todo`, …``,
/// `invalid type: null, expected a map`).
impl<'de> Deserialize<'de> for FamiliesConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let objects = Objects { keys: &Self::KEYS }.deserialize(deserializer)?;
        Ok(Self {
            objects,
            added: Vec::new(),
        })
    }
}

/// Reads the configuration object: each key one of `keys`, each value an object.
struct Objects<'k> {
    keys: &'k [&'static str],
}

impl<'de> DeserializeSeed<'de> for Objects<'_> {
    type Value = BTreeMap<String, Map<String, Value>>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Objects<'_> {
    type Value = BTreeMap<String, Map<String, Value>>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("struct FamiliesConfig")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut objects = BTreeMap::new();
        while let Some(key) = map.next_key::<String>()? {
            if !self.keys.contains(&key.as_str()) {
                let expected: Vec<String> = self.keys.iter().map(|k| format!("`{k}`")).collect();
                return Err(de::Error::custom(format_args!(
                    "unknown field `{key}`, expected one of {}",
                    expected.join(", ")
                )));
            }
            if objects.contains_key(&key) {
                return Err(de::Error::custom(format_args!("duplicate field `{key}`")));
            }
            let object = map.next_value::<Map<String, Value>>()?;
            objects.insert(key, object);
        }
        Ok(objects)
    }
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
            config.family("toolJobs"),
            json!({"completionDelivery": "quiet"})
        );
        assert_eq!(config.family("bash"), json!({}));
        assert_eq!(config.object("terminal"), None);
    }

    #[test]
    fn the_parallel_default_fills_only_a_missing_choice() {
        let mut chosen = FamiliesConfig::default();
        chosen
            .object_mut("todo")
            .insert("allowParallelInProgress".to_owned(), Value::Bool(true));
        assert_eq!(
            chosen.with_parallel_default(false).family("todo"),
            json!({"allowParallelInProgress": true})
        );
        assert_eq!(
            FamiliesConfig::default()
                .with_parallel_default(false)
                .family("todo"),
            json!({"allowParallelInProgress": false})
        );
    }
}
