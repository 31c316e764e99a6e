//! Spill files (decisions 11 and 17): the private folder check, file creation up to the
//! cap, and removal with the process handle.

use std::fs::File;
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use turnkit_core::lock;

use super::options::{SpillOptions, SpillRetention};
use super::shared::Shared;
use super::streams::Channel;

/// A spill file's path; removes the file when dropped unless it is kept.
pub(super) struct SpillFile {
    pub(super) path: PathBuf,
    pub(super) retention: SpillRetention,
}

impl Drop for SpillFile {
    fn drop(&mut self) {
        if self.retention == SpillRetention::Keep {
            return;
        }
        if let Err(error) = std::fs::remove_file(&self.path) {
            tracing::debug!(
                "bash: removing spill file {} failed: {error}",
                self.path.display()
            );
        }
    }
}

pub(super) fn spill_path(file: &Option<SpillFile>) -> Option<PathBuf> {
    file.as_ref().map(|f| f.path.clone())
}

/// Why a spill folder was refused (decision 17).
#[derive(Debug, thiserror::Error)]
pub(crate) enum FolderRefused {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("it is not a directory")]
    NotADirectory,
    #[error("it is owned by uid {0}, not by this user")]
    Owner(u32),
    #[error("it is group or world writable (mode {0:o})")]
    Writable(u32),
}

/// Makes sure `dir` is a private folder of this user: creates it with mode 0700 if it is
/// missing (its parents with the default mode), and refuses one that is a link, not a
/// directory, owned by another user, or group or world writable.
pub(crate) fn private_folder(dir: &Path) -> Result<(), FolderRefused> {
    let metadata = match std::fs::symlink_metadata(dir) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            if let Some(parent) = dir.parent() {
                std::fs::create_dir_all(parent)?;
            }
            match std::fs::DirBuilder::new().mode(0o700).create(dir) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(error.into()),
            }
            std::fs::symlink_metadata(dir)?
        }
        Err(error) => return Err(error.into()),
    };
    if !metadata.is_dir() {
        return Err(FolderRefused::NotADirectory);
    }
    let me = rustix::process::geteuid().as_raw();
    if metadata.uid() != me {
        return Err(FolderRefused::Owner(metadata.uid()));
    }
    let mode = metadata.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(FolderRefused::Writable(mode));
    }
    Ok(())
}

#[derive(Clone)]
pub(super) struct Spill {
    pub(super) options: SpillOptions,
    pub(super) stem: String,
}

/// The spill file of one stream: created on the first byte, written up to the cap, given
/// up (with a warning) on the first error.
pub(super) struct SpillWriter {
    pub(super) spill: Option<Spill>,
    pub(super) file: Option<File>,
    pub(super) written: u64,
}

impl SpillWriter {
    pub(super) fn write(&mut self, shared: &Shared, channel: Channel, bytes: &[u8]) {
        let Some(spill) = &self.spill else { return };
        let room = spill.options.max_bytes.saturating_sub(self.written);
        if room == 0 {
            return;
        }
        if self.file.is_none() {
            let dir = &spill.options.dir;
            if let Err(refused) = private_folder(dir) {
                tracing::warn!(
                    "bash: refusing spill folder {}: {refused}; output is not spilled",
                    dir.display(),
                );
                self.spill = None;
                return;
            }
            let path = dir.join(format!("{}.{}", spill.stem, channel.extension()));
            // `create_new` never follows a link planted at the name.
            let created = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path);
            match created {
                Ok(file) => {
                    let spilled = SpillFile {
                        path,
                        retention: spill.options.retention,
                    };
                    let mut streams = lock(&shared.streams);
                    match channel {
                        Channel::Stdout => streams.stdout_spill = Some(spilled),
                        Channel::Stderr => streams.stderr_spill = Some(spilled),
                    }
                    self.file = Some(file);
                }
                Err(error) => {
                    tracing::warn!("bash: cannot create spill file {}: {error}", path.display());
                    self.spill = None;
                    return;
                }
            }
        }
        let take = usize::try_from(room).map_or(bytes.len(), |room| room.min(bytes.len()));
        if let Some(file) = &mut self.file {
            // A page-cache write of at most one chunk; short enough to do on the runtime.
            if let Err(error) = file.write_all(&bytes[..take]) {
                tracing::warn!("bash: writing a spill file failed: {error}");
                self.spill = None;
                self.file = None;
                return;
            }
            self.written += take as u64;
        }
    }
}
