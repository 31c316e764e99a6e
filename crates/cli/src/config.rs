//! The `--config` file: the families' configuration and the `launch` entry beside it.

use std::path::Path;

use anyhow::Context as _;
use turnkit_families::FamiliesConfig;
use turnkit_launch::LaunchConfig;

/// Reads the JSON of a `--config` file.
fn read_json(path: &Path) -> anyhow::Result<serde_json::Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{}: not JSON", path.display()))
}

/// Reads the families' configuration file of `--config` (its `launch` entry, read by
/// [`read_launch`], is not a family's).
pub(crate) fn read_config(path: &Path) -> anyhow::Result<FamiliesConfig> {
    let mut value = read_json(path)?;
    if let Some(map) = value.as_object_mut() {
        map.remove("launch");
    }
    FamiliesConfig::from_json(&value)
        .with_context(|| format!("{}: invalid configuration", path.display()))
}

/// The `launch` entry of the `--config` file at `path`, if it has one.
pub(crate) fn read_launch(path: &Path) -> anyhow::Result<Option<LaunchConfig>> {
    let value = read_json(path)?;
    match value.get("launch") {
        None => Ok(None),
        Some(launch) => Ok(Some(
            LaunchConfig::from_json(launch)
                .with_context(|| format!("{}: invalid configuration", path.display()))?,
        )),
    }
}
