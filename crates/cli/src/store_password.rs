//! The PostgreSQL store's password, kept off the command line (`/proc/<pid>/cmdline` is
//! readable by every local user): `--store-password-file`, else libpq's `PGPASSWORD`, else
//! libpq's password file (`PGPASSFILE`, default `~/.pgpass`). A password in the `--store`
//! URL itself still works, with a warning.

use std::path::{Path, PathBuf};

use anyhow::Context;
use turnkit_store_pg::{PassFile, PassKey, PgPassword, url_has_password};

/// A PostgreSQL store to connect to: its URL and the password found for it.
#[derive(Clone, Debug)]
pub(crate) struct PgTarget {
    /// The `--store` URL as given.
    pub(crate) url: String,
    /// The password for a URL that carries none, if one was found.
    pub(crate) password: Option<PgPassword>,
    /// The files the password came from or was looked up in (kept out of reach of jobs).
    pub(crate) files: Vec<PathBuf>,
}

/// Where the password is looked for, besides the command line: the process's environment
/// as libpq reads it.
pub(crate) struct PasswordEnv {
    /// `PGPASSWORD`.
    pub(crate) password: Option<String>,
    /// `PGPASSFILE`.
    pub(crate) pass_file: Option<PathBuf>,
    /// `HOME`, for `~/.pgpass`.
    pub(crate) home: Option<PathBuf>,
}

impl PasswordEnv {
    /// This process's environment (empty values count as unset, as for libpq).
    pub(crate) fn current() -> Self {
        let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
        Self {
            password: var("PGPASSWORD").and_then(|v| v.into_string().ok()),
            pass_file: var("PGPASSFILE").map(PathBuf::from),
            home: var("HOME").map(PathBuf::from),
        }
    }
}

impl PgTarget {
    /// Finds the password for `url`, in this order: the URL's own (then a warning says it is
    /// visible to every local user), `password_file` (`--store-password-file`: its first
    /// line), `PGPASSWORD`, the first matching line of the password file.
    ///
    /// # Errors
    /// `--store-password-file` cannot be read or is empty, or the password file exists but
    /// cannot be read.
    pub(crate) fn resolve(
        url: String,
        password_file: Option<&Path>,
        env: &PasswordEnv,
    ) -> anyhow::Result<Self> {
        let mut files = Vec::new();
        if url_has_password(&url) {
            tracing::warn!(
                "the --store URL carries a password: every local user can read it in \
                 /proc/<pid>/cmdline; use --store-password-file, PGPASSWORD or ~/.pgpass \
                 instead"
            );
            return Ok(Self {
                url,
                password: None,
                files,
            });
        }
        if let Some(path) = password_file {
            let password = PgPassword::read_file(path)
                .with_context(|| format!("reading --store-password-file {}", path.display()))?
                .with_context(|| {
                    format!(
                        "--store-password-file {}: the first line is empty",
                        path.display()
                    )
                })?;
            files.push(path.to_owned());
            return Ok(Self {
                url,
                password: Some(password),
                files,
            });
        }
        if let Some(password) = &env.password {
            return Ok(Self {
                url,
                password: Some(PgPassword::new(password.clone())),
                files,
            });
        }
        let pass_file = env
            .pass_file
            .clone()
            .or_else(|| env.home.as_ref().map(|home| home.join(".pgpass")));
        let mut password = None;
        if let Some(path) = pass_file {
            let file = PassFile::read(&path)
                .with_context(|| format!("reading the password file {}", path.display()))?;
            if let (Some(file), Some(key)) = (file, PassKey::of_url(&url)) {
                password = file.lookup(&key);
            }
            files.push(path);
        }
        Ok(Self {
            url,
            password,
            files,
        })
    }

    /// The store's connection options with this target's password.
    pub(crate) fn options(&self) -> turnkit_store_pg::PgOptions {
        turnkit_store_pg::PgOptions {
            index: Some(turnkit_families::Families::batch_index()),
            password: self.password.clone(),
            ..turnkit_store_pg::PgOptions::default()
        }
    }
}
