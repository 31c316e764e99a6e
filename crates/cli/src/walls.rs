//! The walls of `harness mcp --http`: every job and terminal of a served session runs
//! confined, with the server's own files hidden from it (`--no-walls` turns this off, loudly).

use std::path::{Path, PathBuf};

use turnkit_families::{FamiliesConfig, Walls};

/// The server's files a served job must not reach: the store's (`store`: its folder, or its
/// password files and Unix socket folders), the configuration file, the token files. Each as
/// an absolute path (symbolic links resolved where the path exists).
pub(crate) fn server_files(store: Vec<PathBuf>, config: &Path, token_files: &[&Path]) -> Walls {
    let mut paths = store;
    paths.push(config.to_owned());
    paths.extend(token_files.iter().map(|p| p.to_path_buf()));
    let deny_read = paths.iter().map(|path| absolute(path)).collect();
    Walls { deny_read }
}

fn absolute(path: &Path) -> PathBuf {
    std::fs::canonicalize(path)
        .or_else(|_| std::path::absolute(path))
        .unwrap_or_else(|_| path.to_owned())
}

/// Whether served jobs are walled (`--no-walls`: off).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Switch {
    /// The default.
    On,
    /// `--no-walls`.
    Off,
}

/// `configs` with the walls around its command-running families, and the startup lines that
/// name them (one per family: `harness mcp: walls of every bash job: sandbox: …`). With
/// [`Switch::Off`] (`--no-walls`) the configuration as given and a warning line.
///
/// # Errors
/// A wall this host cannot build (unless the operator's `sandbox` says `bestEffort`), or a
/// configuration the walls cannot be added to.
pub(crate) fn wall(
    configs: FamiliesConfig,
    walls: &Walls,
    switch: Switch,
) -> anyhow::Result<(FamiliesConfig, Vec<String>)> {
    if switch == Switch::Off {
        return Ok((
            configs,
            vec![
                "harness mcp: WARNING: --no-walls: every job and terminal runs as this server's \
                 user, unconfined: it can read and change every session's log, the token file, \
                 the configuration and the store's credentials, and signal the server"
                    .to_owned(),
            ],
        ));
    }
    let walled = configs.with_walls(walls)?;
    let lines = walled
        .sandbox_summaries()?
        .into_iter()
        .map(|(family, summary)| format!("harness mcp: walls of every {family} job: {summary}"))
        .collect();
    Ok((walled, lines))
}
