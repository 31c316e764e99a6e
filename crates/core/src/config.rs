//! [`PluginConfig`]: the one way a plugin decodes its configuration object, and
//! [`ConfigError`], the error every plugin's `install` returns for bad configuration.

use std::borrow::Borrow;
use std::fmt::Display;

use serde::de::DeserializeOwned;
use serde_json::Value;

/// A plugin refused its configuration or could not install.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The configuration is invalid; the message is the plugin's own, exact text.
    #[error("{0}")]
    Invalid(String),
    /// Registering with the host failed (a name conflict, a double mount).
    #[error(transparent)]
    Register(#[from] crate::RegisterError),
}

/// Decodes a plugin configuration from JSON, mapping serde's message into
/// [`ConfigError::Invalid`] prefixed with the plugin name: `<plugin>: <serde message>`.
///
/// # Errors
/// [`ConfigError::Invalid`].
pub fn decode_config<T: DeserializeOwned>(plugin: &str, value: Value) -> Result<T, ConfigError> {
    serde_json::from_value(value).map_err(|e| ConfigError::Invalid(format!("{plugin}: {e}")))
}

/// A plugin's configuration: a JSON object decoded through serde (unknown keys and wrong
/// types are refused by the type's own `Deserialize`), then checked by
/// [`PluginConfig::validate`]. Every error is [`ConfigError::Invalid`] with the text
/// `<plugin>: <message>` ([`PluginConfig::invalid`]).
///
/// ```
/// use turnkit_core::{ConfigError, PluginConfig};
///
/// #[derive(serde::Deserialize)]
/// #[serde(deny_unknown_fields)]
/// struct Limits {
///     max: u64,
/// }
///
/// impl PluginConfig for Limits {
///     const PLUGIN: &'static str = "limits";
///
///     fn validate(&self) -> Result<(), ConfigError> {
///         if self.max == 0 {
///             return Err(Self::invalid("max must be at least 1"));
///         }
///         Ok(())
///     }
/// }
///
/// let bad = Limits::decode(&serde_json::json!({"max": 0})).err().unwrap();
/// assert_eq!(bad.to_string(), "limits: max must be at least 1");
/// let unknown = Limits::decode(&serde_json::json!({"min": 1})).err().unwrap();
/// assert!(unknown.to_string().starts_with("limits: unknown field `min`"));
/// ```
pub trait PluginConfig: DeserializeOwned {
    /// The plugin name, the prefix of every configuration error (e.g. `tool-bash`).
    const PLUGIN: &'static str;

    /// Checks the raw JSON before serde sees it, for refusals whose exact text a spec fixes
    /// (default: none).
    ///
    /// # Errors
    /// [`ConfigError::Invalid`], built with [`PluginConfig::invalid`].
    fn precheck(value: &Value) -> Result<(), ConfigError> {
        let _ = value;
        Ok(())
    }

    /// Checks what serde cannot state: ranges and combinations of keys (default: none).
    ///
    /// # Errors
    /// [`ConfigError::Invalid`], built with [`PluginConfig::invalid`].
    fn validate(&self) -> Result<(), ConfigError> {
        Ok(())
    }

    /// The refusal `<plugin>: <message>`.
    fn invalid(message: impl Display) -> ConfigError {
        ConfigError::Invalid(format!("{}: {message}", Self::PLUGIN))
    }

    /// Decodes `value` ([`PluginConfig::precheck`], serde, then
    /// [`PluginConfig::validate`]).
    ///
    /// # Errors
    /// [`ConfigError::Invalid`]: `<plugin>: <serde message>` for a decode failure, or the
    /// first failed check's text.
    fn decode(value: impl Borrow<Value>) -> Result<Self, ConfigError> {
        let value = value.borrow();
        Self::precheck(value)?;
        let config: Self = decode_config(Self::PLUGIN, value.clone())?;
        config.validate()?;
        Ok(config)
    }
}
