//! The PostgreSQL store's password reaches a real server that asks for it (SCRAM on a cluster
//! started here) from `--store-password-file`, `PGPASSWORD` or a 0600 password file, never
//! from the command line; a password file others may read is ignored.

#![expect(clippy::unwrap_used, reason = "a test stops on failure")]

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A cluster whose role `postgres` needs a password, stopped on drop.
struct ScramCluster {
    dir: PathBuf,
    url: String,
    password: String,
}

impl ScramCluster {
    fn script() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.ci/postgres")
    }

    /// `None` (after a skip line) where no PostgreSQL server binaries are installed outside CI.
    fn start() -> Option<Self> {
        let installed = Path::new("/usr/lib/postgresql").exists();
        if !installed {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true but no PostgreSQL server binaries under /usr/lib/postgresql"
            );
            turnkit_testkit::skip::skipped(
                "no PostgreSQL server binaries (apt-get install postgresql-15) for the SCRAM \
                 cluster of the password tests",
            );
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let output = Command::new("bash")
            .arg(Self::script())
            .args(["start-scram", &port.to_string()])
            .stderr(Stdio::inherit())
            .output()
            .unwrap();
        assert!(output.status.success(), "start-scram failed");
        let dir = PathBuf::from(String::from_utf8(output.stdout).unwrap().trim());
        let read = |name: &str| {
            std::fs::read_to_string(dir.join(name))
                .unwrap()
                .trim()
                .to_owned()
        };
        Some(Self {
            url: read("url"),
            password: read("password"),
            dir,
        })
    }
}

impl Drop for ScramCluster {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(Self::script())
            .arg("stop")
            .arg(&self.dir)
            .status();
    }
}

/// Runs `harness mcp` on session `s` of `url` with nothing on stdin (once connected it serves
/// and ends at the closed input); returns whether it connected to the store and its standard
/// error. The environment is
/// cleared of libpq's variables except the ones in `env`, and `HOME` is `home`.
fn serve(url: &str, home: &Path, args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let config = home.join("config.json");
    std::fs::write(&config, r#"{"todo":{"allowParallelInProgress":false}}"#).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_harness"));
    command
        .args(["mcp", "--session", "s", "--store", url, "--config"])
        .arg(&config)
        .args(args)
        .env_remove("PGPASSWORD")
        .env_remove("PGPASSFILE")
        .env("HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().unwrap();
    drop(child.stdin.take());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    (
        !stderr.contains("connecting to the PostgreSQL store"),
        stderr,
    )
}

fn write_mode(path: &Path, text: &str, mode: u32) {
    let mut file = std::fs::File::create(path).unwrap();
    file.write_all(text.as_bytes()).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn the_password_comes_from_a_file_the_environment_or_pgpass() {
    let Some(cluster) = ScramCluster::start() else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let url = cluster.url.as_str();
    let port = url
        .rsplit_once(':')
        .and_then(|(_, rest)| rest.split_once('/'))
        .map(|(port, _)| port.to_owned())
        .unwrap();
    let refused = "password authentication failed";

    // No password anywhere: the server refuses.
    let (ok, stderr) = serve(url, home.path(), &[], &[]);
    assert!(!ok && stderr.contains("password"), "{stderr}");

    // --store-password-file.
    let file = home.path().join("store-password");
    write_mode(&file, &format!("{}\n", cluster.password), 0o600);
    let (ok, stderr) = serve(
        url,
        home.path(),
        &["--store-password-file", file.to_str().unwrap()],
        &[],
    );
    assert!(ok, "{stderr}");
    assert!(!stderr.contains("WARN"), "{stderr}");

    // PGPASSWORD, and a wrong one.
    let (ok, stderr) = serve(url, home.path(), &[], &[("PGPASSWORD", &cluster.password)]);
    assert!(ok, "{stderr}");
    let (ok, stderr) = serve(url, home.path(), &[], &[("PGPASSWORD", "wrong")]);
    assert!(!ok && stderr.contains(refused), "{stderr}");

    // ~/.pgpass: the first matching line wins; a line for another port does not match.
    let pgpass = home.path().join(".pgpass");
    let lines = format!(
        "127.0.0.1:1:*:*:wrong\n127.0.0.1:{port}:postgres:postgres:{}\n*:*:*:*:wrong\n",
        cluster.password
    );
    write_mode(&pgpass, &lines, 0o600);
    let (ok, stderr) = serve(url, home.path(), &[], &[]);
    assert!(ok, "{stderr}");

    // Readable by others: ignored with a warning, so the server refuses.
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (ok, stderr) = serve(url, home.path(), &[], &[]);
    assert!(!ok, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "password file {} has group or world access; it is not used",
            pgpass.display()
        )),
        "{stderr}"
    );

    // PGPASSFILE names another file.
    let elsewhere = home.path().join("elsewhere");
    write_mode(
        &elsewhere,
        &format!("*:*:*:*:{}\n", cluster.password),
        0o600,
    );
    let (ok, stderr) = serve(
        url,
        home.path(),
        &[],
        &[("PGPASSFILE", elsewhere.to_str().unwrap())],
    );
    assert!(ok, "{stderr}");

    // In the URL: still works, with the warning.
    let inline = url.replace("postgres@", &format!("postgres:{}@", cluster.password));
    let (ok, stderr) = serve(&inline, home.path(), &[], &[]);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("the --store URL carries a password: every local user can read it"),
        "{stderr}"
    );
}

/// Served over HTTP from PostgreSQL, the store's password file and its Unix socket folder are
/// hidden from every job: the startup line that names the walls lists both.
#[test]
fn a_served_jobs_walls_hide_the_password_file_and_the_socket_folder() {
    let url = match std::env::var("HARNESS_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "HARNESS_TEST_POSTGRES_URL is not set and CI=true"
            );
            turnkit_testkit::skip::skipped(
                "HARNESS_TEST_POSTGRES_URL is not set; start a server with .ci/postgres",
            );
            return;
        }
    };
    let socket = url
        .split_once('@')
        .and_then(|(_, rest)| rest.split_once('/'))
        .map(|(host, _)| host.replace("%2F", "/"))
        .unwrap();
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config.json");
    std::fs::write(&config, r#"{"todo":{"allowParallelInProgress":false}}"#).unwrap();
    let password = home.path().join("store-password");
    write_mode(&password, "unused-with-trust-auth\n", 0o600);
    let mut child = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["mcp", "--http", "127.0.0.1:0", "--no-auth", "--store", &url])
        .arg("--store-password-file")
        .arg(&password)
        .arg("--config")
        .arg(&config)
        .env("HOME", home.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stderr.take().unwrap()));
    let mut walls = None;
    for line in lines.by_ref() {
        let line = line.unwrap();
        if line.starts_with("harness mcp: walls of every bash job: ") {
            walls = Some(line);
        } else if line.starts_with("harness mcp: serving ") {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let walls = walls.expect("a walls line");
    let password = std::fs::canonicalize(&password).unwrap();
    let socket = std::fs::canonicalize(&socket).unwrap();
    for hidden in [&password, &socket] {
        assert!(
            walls.contains(&hidden.display().to_string()),
            "{} not in {walls}",
            hidden.display()
        );
    }
}
