//! [`ConfigError`]: the error every plugin's `install` returns for bad configuration.

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
pub fn decode_config<T: serde::de::DeserializeOwned>(
    plugin: &str,
    value: serde_json::Value,
) -> Result<T, ConfigError> {
    serde_json::from_value(value).map_err(|e| ConfigError::Invalid(format!("{plugin}: {e}")))
}
