//! The store's password kept off the command line: [`PgPassword`] (a secret whose `Debug`
//! shows nothing), [`PassFile`] (libpq's password file, `~/.pgpass`) and [`PassKey`] (what a
//! connection looks a password up by).
//!
//! The file's format is libpq's: one `host:port:database:user:password` a line; each of the
//! first four fields is a literal or `*` (any value); `\` escapes a `:` or a `\` in any
//! field; lines starting with `#` and lines with fewer than five fields are skipped; the
//! first matching line wins. `localhost` matches a connection over a Unix socket in the
//! default socket folder (`/var/run/postgresql` or `/tmp`) as libpq's does; a socket elsewhere
//! is matched by its folder's path. A file that group or others may read or write is
//! ignored, with a warning, as libpq ignores it.

use std::fmt;
use std::path::Path;

/// A password for the store (`PgOptions::password`), used when the URL carries none.
/// `Debug` prints `PgPassword(…)`, never the text.
#[derive(Clone, PartialEq, Eq)]
pub struct PgPassword(String);

impl PgPassword {
    /// The password `text` as given (no trimming).
    #[must_use]
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    /// The password file of `--store-password-file`: its first line, without the line
    /// ending. `None` for an empty first line.
    ///
    /// # Errors
    /// The file cannot be read (the I/O error).
    pub fn read_file(path: &Path) -> std::io::Result<Option<Self>> {
        let text = std::fs::read_to_string(path)?;
        let line = text.lines().next().unwrap_or("");
        Ok((!line.is_empty()).then(|| Self(line.to_owned())))
    }

    /// The password's text.
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for PgPassword {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PgPassword(…)")
    }
}

/// What a password-file line is matched against: the connection's first host (a name, an
/// address, or a Unix socket folder), port, database and user, with libpq's defaults filled
/// in (port 5432, user the process's user, database the user).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassKey {
    /// The host as the line's first field must spell it (`localhost` for the default socket
    /// folder).
    pub host: String,
    /// The port.
    pub port: u16,
    /// The database name.
    pub database: String,
    /// The user name.
    pub user: String,
}

/// The socket folders libpq treats as `localhost` in a password file (Debian's build uses
/// `/var/run/postgresql`, upstream's `/tmp`).
const DEFAULT_SOCKET_FOLDERS: [&str; 3] = ["/var/run/postgresql", "/run/postgresql", "/tmp"];

impl PassKey {
    /// The key of a connection string or URL (parsed as [`PgStore::connect`] parses it).
    /// `None` when it does not parse (connecting will say why).
    ///
    /// [`PgStore::connect`]: crate::PgStore::connect
    #[must_use]
    pub fn of_url(url: &str) -> Option<Self> {
        let config: tokio_postgres::Config = url.parse().ok()?;
        let host = match config.get_hosts().first() {
            Some(tokio_postgres::config::Host::Tcp(name)) => name.clone(),
            Some(tokio_postgres::config::Host::Unix(folder)) => {
                let folder = folder.display().to_string();
                let trimmed = folder.trim_end_matches('/');
                if DEFAULT_SOCKET_FOLDERS.contains(&trimmed) {
                    "localhost".to_owned()
                } else {
                    folder
                }
            }
            None => "localhost".to_owned(),
        };
        let user = match config.get_user() {
            Some(user) => user.to_owned(),
            None => whoami::username().ok()?,
        };
        Some(Self {
            host,
            port: config.get_ports().first().copied().unwrap_or(5432),
            database: config.get_dbname().unwrap_or(&user).to_owned(),
            user,
        })
    }
}

/// Whether the connection string or URL `url` carries a password itself (`user:pw@` or
/// `password=`). `false` for one that does not parse.
#[must_use]
pub fn url_has_password(url: &str) -> bool {
    url.parse::<tokio_postgres::Config>()
        .is_ok_and(|config| config.get_password().is_some())
}

/// The Unix socket folders the connection string or URL `url` connects through (`host=/path`
/// or a `%2F`-encoded host); empty for TCP hosts or one that does not parse.
#[must_use]
pub fn url_socket_folders(url: &str) -> Vec<std::path::PathBuf> {
    let Ok(config) = url.parse::<tokio_postgres::Config>() else {
        return Vec::new();
    };
    config
        .get_hosts()
        .iter()
        .filter_map(|host| match host {
            tokio_postgres::config::Host::Unix(folder) => Some(folder.clone()),
            tokio_postgres::config::Host::Tcp(_) => None,
        })
        .collect()
}

/// A parsed password file.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct PassFile {
    /// Each usable line's five fields, unescaped; `None` for `*`.
    lines: Vec<[Option<String>; 4]>,
    passwords: Vec<String>,
}

impl fmt::Debug for PassFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PassFile({} lines)", self.lines.len())
    }
}

impl PassFile {
    /// Parses the file's text (see the module's rules).
    #[must_use]
    pub fn parse(text: &str) -> Self {
        let mut file = Self::default();
        for line in text.lines() {
            let line = line.strip_suffix('\r').unwrap_or(line);
            if line.starts_with('#') {
                continue;
            }
            let fields = split_fields(line);
            let Ok([host, port, database, user, password]) = <[_; 5]>::try_from(fields) else {
                continue;
            };
            file.lines
                .push([host, port, database, user].map(|(text, any)| {
                    // A lone unescaped `*` matches anything.
                    (!any).then_some(text)
                }));
            file.passwords.push(password.0);
        }
        file
    }

    /// Reads and parses the file at `path`. `Ok(None)` when it does not exist, is not a
    /// regular file, or may be read or written by group or others (then a warning is
    /// logged, as libpq prints one, and the file is not used).
    ///
    /// # Errors
    /// The file exists but cannot be read.
    pub fn read(path: &Path) -> std::io::Result<Option<Self>> {
        use std::os::unix::fs::PermissionsExt as _;
        let metadata = match std::fs::metadata(path) {
            Ok(metadata) => metadata,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(error),
        };
        if !metadata.is_file() {
            tracing::warn!(
                "password file {} is not a plain file; it is not used",
                path.display()
            );
            return Ok(None);
        }
        if metadata.permissions().mode() & 0o077 != 0 {
            tracing::warn!(
                "password file {} has group or world access; it is not used (permissions \
                 should be u=rw, 0600, or less)",
                path.display()
            );
            return Ok(None);
        }
        Ok(Some(Self::parse(&std::fs::read_to_string(path)?)))
    }

    /// The password of the first line matching `key`, if any.
    #[must_use]
    pub fn lookup(&self, key: &PassKey) -> Option<PgPassword> {
        let port = key.port.to_string();
        let wanted = [&key.host, &port, &key.database, &key.user];
        self.lines
            .iter()
            .position(|fields| {
                fields
                    .iter()
                    .zip(wanted)
                    .all(|(field, value)| field.as_ref().is_none_or(|f| f == value))
            })
            .map(|at| PgPassword(self.passwords[at].clone()))
    }
}

/// A line's `:`-separated fields, unescaped, each with whether it was a lone unescaped `*`;
/// an unescaped `:` after the fifth field (the password) ends it, the rest is ignored.
fn split_fields(line: &str) -> Vec<(String, bool)> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut escaped_any = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                escaped_any = true;
                if let Some(next) = chars.next() {
                    field.push(next);
                }
            }
            ':' if fields.len() < 4 => {
                let any = field == "*" && !escaped_any;
                fields.push((std::mem::take(&mut field), any));
                escaped_any = false;
            }
            ':' => break,
            c => field.push(c),
        }
    }
    if fields.len() == 4 {
        fields.push((field, false));
    }
    fields
}

#[cfg(test)]
#[path = "password_tests.rs"]
mod tests;
