//! [`GeneratedToken`]: the token a server started without a token file makes for itself, kept
//! in a file only its user can read.

use std::fs::{DirBuilder, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use super::auth::Tokens;
use crate::ServeError;

/// How many random bytes a generated token carries (256 bits; written as 64 hex digits).
pub const GENERATED_TOKEN_BYTES: usize = 32;

/// A random bearer token written to a file of its own: mode `0600`, created exclusively in a
/// folder of mode `0700` owned by the server's user.
#[derive(Clone)]
pub struct GeneratedToken {
    secret: String,
    path: PathBuf,
}

impl std::fmt::Debug for GeneratedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeneratedToken")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl GeneratedToken {
    /// Draws [`GENERATED_TOKEN_BYTES`] bytes from the operating system's random source and
    /// writes them as hex, with a newline, to `dir/name`. `dir` is created (mode `0700`, its
    /// missing parents too) if absent; an existing `dir` must belong to the effective user and
    /// is set to `0700`. A file already at `dir/name` (a previous run's, left by a crash) is
    /// replaced: it is removed, and the new one created exclusively (`O_CREAT | O_EXCL`, mode
    /// `0600`), so nothing else can have it open.
    ///
    /// # Errors
    /// [`ServeError::Unusable`], naming the path: no random bytes, a folder that cannot be
    /// made or belongs to another user, a file that cannot be written.
    pub fn create(dir: &Path, name: &str) -> Result<Self, ServeError> {
        let mut bytes = [0u8; GENERATED_TOKEN_BYTES];
        getrandom::fill(&mut bytes).map_err(|error| {
            ServeError::Unusable(format!("generating a token: no random bytes: {error}"))
        })?;
        let secret: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let unusable = |what: &str, path: &Path, error: &dyn std::fmt::Display| {
            ServeError::Unusable(format!("{what} {}: {error}", path.display()))
        };
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| unusable("creating the token folder", dir, &e))?;
        let meta = std::fs::symlink_metadata(dir)
            .map_err(|e| unusable("reading the token folder", dir, &e))?;
        let euid = rustix::process::geteuid().as_raw();
        if !meta.is_dir() || meta.uid() != euid {
            return Err(ServeError::Unusable(format!(
                "the token folder {} is not a folder of user {euid}; choose another with \
                 --token-dir",
                dir.display()
            )));
        }
        if meta.mode() & 0o777 != 0o700 {
            std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))
                .map_err(|e| unusable("restricting the token folder", dir, &e))?;
        }
        let path = dir.join(name);
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(unusable("removing the old token file", &path, &error)),
        }
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| unusable("creating the token file", &path, &e))?;
        file.write_all(format!("{secret}\n").as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|e| unusable("writing the token file", &path, &e))?;
        Ok(Self { secret, path })
    }

    /// The token: [`GENERATED_TOKEN_BYTES`] bytes as lowercase hex.
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// The file holding it.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The token as the one token of a server's [`Tokens`], reaching every session.
    ///
    /// # Errors
    /// None in practice (a generated token is long enough); [`ServeError::Config`] as
    /// [`Tokens::parse`].
    pub fn tokens(&self) -> Result<Tokens, ServeError> {
        Tokens::parse(&self.secret)
    }

    /// Removes the file (the server stopped; its token is worthless). A file already gone is
    /// not an error.
    ///
    /// # Errors
    /// The removal's I/O error.
    pub fn remove(&self) -> std::io::Result<()> {
        match std::fs::remove_file(&self.path) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }
}
