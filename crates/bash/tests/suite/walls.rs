//! The walls between a confined job and everything else, tried by a real attacker (bash and
//! python3 in the job): each attempt is counted, and the same attempts run once without the
//! wall, where they get through (so each count can fail).

use std::os::unix::net::UnixListener;
use std::path::Path;
use std::sync::Arc;

use pretty_assertions::assert_eq;
use turnkit_bash::{BashProcess, EndStatus, Sandbox, bash_outcome};

use super::support::{finish, options, read_until};

/// `sandbox` if this host can provide it; otherwise a loud skip (a failure under CI=true).
fn provided(sandbox: serde_json::Value) -> Option<Arc<Sandbox>> {
    let sandbox: Sandbox = serde_json::from_value(sandbox).unwrap();
    match turnkit_bash::probe_sandbox(&sandbox) {
        Ok(_) => Some(Arc::new(sandbox)),
        Err(missing) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "sandbox test cannot run under CI: {missing}"
            );
            turnkit_testkit::skip::skipped(&format!(
                "this host cannot build the walls ({missing}): run the tests as root on Linux"
            ));
            None
        }
    }
}

/// Runs `script` (confined by `sandbox`, or not) and returns its stdout.
async fn run(script: &str, sandbox: Option<Arc<Sandbox>>) -> String {
    let mut options = options(script);
    options.sandbox = sandbox;
    let process = BashProcess::spawn(options).unwrap();
    finish(&process).await;
    let output = process.read();
    output
        .split_once("[stderr]\n")
        .map_or(output.clone(), |(out, _)| out.to_owned())
}

/// Lines `through: <name>` / `refused: <name>` for each attempt.
const TRY: &str = "try() { if eval \"$2\" >/dev/null 2>&1; then echo \"through: $1\"; \
                   else echo \"refused: $1\"; fi; }";

fn count(output: &str, verdict: &str) -> usize {
    output
        .lines()
        .filter(|l| l.starts_with(&format!("{verdict}: ")))
        .count()
}

/// A python3 one-liner connecting to the Unix socket `path` (exit 0 when connected).
fn connect_unix(path: &Path) -> String {
    format!(
        "python3 -c \"import socket, sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])\" {}",
        path.display()
    )
}

#[tokio::test]
async fn hidden_paths_cannot_be_read_listed_written_or_connected_to() {
    let base = tempfile::tempdir().unwrap();
    let hidden = base.path().join("hidden");
    std::fs::create_dir(&hidden).unwrap();
    std::fs::write(hidden.join("token"), "s3cret").unwrap();
    let alone = base.path().join("alone.txt");
    std::fs::write(&alone, "s3cret").unwrap();
    let listener = UnixListener::bind(hidden.join("sock")).unwrap();
    listener.set_nonblocking(true).unwrap();
    let link = base.path().join("link");
    std::os::unix::fs::symlink(&hidden, &link).unwrap();
    let Some(sandbox) = provided(serde_json::json!({
        "network": true,
        "writableRoots": [base.path()],
        "denyRead": [link, alone, base.path().join("missing")],
    })) else {
        return;
    };
    let me = std::process::id();
    let script = format!(
        "{TRY}\n\
         try read-file 'grep -q s3cret {hidden}/token'\n\
         try list-folder 'ls {hidden} | grep -q token'\n\
         try read-hidden-file 'grep -q s3cret {alone}'\n\
         try write-hidden-file 'echo x >> {alone}'\n\
         try create-in-folder 'echo x > {hidden}/new'\n\
         try connect-socket '{connect}'\n\
         try via-proc-root 'grep -q s3cret /proc/{me}/root{hidden}/token'\n\
         try via-link 'grep -q s3cret {link}/token'\n",
        hidden = hidden.display(),
        alone = alone.display(),
        link = link.display(),
        connect = connect_unix(&hidden.join("sock")),
    );
    let walled = run(&script, Some(sandbox)).await;
    assert_eq!(count(&walled, "through"), 0, "{walled}");
    assert_eq!(count(&walled, "refused"), 8, "{walled}");
    assert_eq!(
        listener.accept().map_err(|e| e.kind()).err(),
        Some(std::io::ErrorKind::WouldBlock)
    );
    assert_eq!(
        std::fs::read_to_string(base.path().join("alone.txt")).unwrap(),
        "s3cret"
    );
    assert!(!hidden.join("new").exists());
    // Without the wall every attempt gets through.
    let open = run(&script, None).await;
    assert_eq!(count(&open, "through"), 8, "{open}");
    assert!(listener.accept().is_ok());
}

#[tokio::test]
async fn an_isolated_job_sees_and_signals_only_its_own_processes() {
    let Some(sandbox) = provided(serde_json::json!({"isolateProcesses": true})) else {
        return;
    };
    // The "server" the job must not reach: a real process of the host (this test's child).
    let mut victim = std::process::Command::new("sleep")
        .arg("300")
        .env("VICTIM_SECRET", "s3cret")
        .spawn()
        .unwrap();
    let pid = victim.id();
    let me = std::process::id();
    // Reads 64 bytes of pid 1's first writable mapping (a copy of the host's memory if pid 1
    // were the host's fork) through /proc/1/mem.
    let attacker = tempfile::tempdir().unwrap();
    let mem = attacker.path().join("mem.py");
    std::fs::write(
        &mem,
        "m = [l for l in open('/proc/1/maps') if l.split()[1].startswith('rw')][0]\n\
         f = open('/proc/1/mem', 'rb')\n\
         f.seek(int(m.split('-')[0], 16))\n\
         assert len(f.read(64)) == 64\n",
    )
    .unwrap();
    let script = format!(
        "{TRY}\n\
         try environ 'grep -q VICTIM_SECRET /proc/{pid}/environ'\n\
         try cmdline 'grep -q 300 /proc/{pid}/cmdline'\n\
         try server-cmdline 'grep -qa deps /proc/{me}/cmdline'\n\
         try stop 'kill -STOP {pid}'\n\
         try signal-zero 'kill -0 {me}'\n\
         try init-cmdline 'tr -d \"\\\\0\" </proc/1/cmdline | grep -q .'\n\
         try init-environ 'tr -d \"\\\\0\" </proc/1/environ | grep -q .'\n\
         try init-memory 'python3 {mem}'\n\
         try list-pids 'ls /proc | grep -qx {pid}'\n\
         echo \"shell: $$ parent: $PPID\"\n",
        mem = mem.display(),
    );
    let walled = run(&script, Some(sandbox)).await;
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let state = state
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    assert_eq!(state, "S", "the victim was not stopped");
    assert_eq!(count(&walled, "through"), 0, "{walled}");
    assert_eq!(count(&walled, "refused"), 9, "{walled}");
    assert!(walled.ends_with("shell: 2 parent: 1\n"), "{walled}");
    // Without the wall the host's processes are there to read and signal.
    let open = run(&script, None).await;
    let expected_through = [
        "environ",
        "cmdline",
        "server-cmdline",
        "stop",
        "signal-zero",
        "list-pids",
    ];
    for name in expected_through {
        assert!(
            open.contains(&format!("through: {name}\n")),
            "{name}: {open}"
        );
    }
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid as i32).unwrap(),
        rustix::process::Signal::CONT,
    )
    .unwrap();
    victim.kill().unwrap();
    victim.wait().unwrap();
}

/// The job's exit code and signal, its stop (SIGTERM, SIGKILL after the grace for a job
/// that ignores it) and its leftovers behave as without the namespace.
#[tokio::test]
async fn an_isolated_job_ends_and_stops_as_without_the_namespace() {
    let Some(sandbox) = provided(serde_json::json!({"isolateProcesses": true})) else {
        return;
    };
    let start = |command: &str| {
        let mut options = options(command);
        options.sandbox = Some(sandbox.clone());
        BashProcess::spawn(options).unwrap()
    };
    let exits = start("exit 7");
    let end = finish(&exits).await;
    assert_eq!(end.status, EndStatus::Exited(7));
    assert_eq!(bash_outcome(&end).detail.as_deref(), Some("exit code: 7"));

    let killed = start("kill -TERM $$");
    let end = finish(&killed).await;
    assert_eq!(
        bash_outcome(&end).detail.as_deref(),
        Some("signal: SIGTERM")
    );

    let stopped = start("echo started; sleep 300");
    read_until(&stopped, "started").await;
    stopped.cancel();
    let end = finish(&stopped).await;
    assert_eq!(
        bash_outcome(&end).detail.as_deref(),
        Some("signal: SIGTERM")
    );

    let stubborn = start("trap '' TERM; echo started; while :; do sleep 1; done");
    read_until(&stubborn, "started").await;
    stubborn.cancel();
    let end = finish(&stubborn).await;
    assert_eq!(
        bash_outcome(&end).detail.as_deref(),
        Some("signal: SIGKILL")
    );

    // A finished job's background process lives on until the last handle goes.
    let leaves = start("sleep 300 >/dev/null 2>&1 & echo $!");
    let end = finish(&leaves).await;
    assert_eq!(end.status, EndStatus::Exited(0));
    let group = leaves.pid();
    assert!(
        !super::support::live_group_members(group).is_empty(),
        "the leftover is still alive"
    );
    drop(leaves);
    let deadline = std::time::Instant::now() + super::support::LIMIT;
    while !super::support::live_group_members(group).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the leftover was stopped"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[test]
fn the_summary_names_each_wall() {
    let Some(sandbox) = provided(serde_json::json!({
        "writableRoots": ["/tmp"],
        "readableRoots": ["/usr"],
        "denyRead": ["/a", "/b"],
        "isolateProcesses": true,
        "inheritEnv": ["PATH", "LC_*"],
    })) else {
        return;
    };
    assert_eq!(
        turnkit_bash::probe_sandbox(&sandbox).unwrap(),
        "sandbox: writes only under /tmp and the job's temporary folder (Landlock); reads only \
         under /usr, the writable roots, the job's temporary folder and the devices (Landlock); \
         network off (network namespace, loopback only); no Unix sockets (seccomp); read-only: \
         git hooks and config, shell start files, .mcp.json and editor tasks and settings \
         inside the writable roots (mount namespace); hidden: /a, /b (mount namespace); processes isolated (PID namespace, own /proc and /dev/pts); no \
         signals or abstract Unix sockets outside the job (Landlock scopes); environment: only \
         PATH, LC_* of the host's"
    );
}

#[test]
fn the_wall_keys_are_checked_at_startup() {
    let error = |sandbox: serde_json::Value| {
        turnkit_bash::BashConfig::from_json(serde_json::json!({ "sandbox": sandbox }))
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        error(serde_json::json!({"denyRead": ["rel"]})),
        "tool-bash: sandbox.denyRead: \"rel\" is not an absolute path"
    );
    assert_eq!(
        error(serde_json::json!({"denyRead": ["/tmp"], "writableRoots": ["/tmp"]})),
        "tool-bash: sandbox.denyRead: \"/tmp\" would hide the writable root \"/tmp\""
    );
}

#[test]
fn hiding_the_jobs_temporary_folder_is_refused_at_startup() {
    let temp = std::fs::canonicalize(std::env::temp_dir()).unwrap();
    let sandbox: Sandbox = serde_json::from_value(serde_json::json!({"denyRead": [temp]})).unwrap();
    if provided(serde_json::json!({"denyRead": ["/nonexistent-harness-path"]})).is_none() {
        return;
    }
    assert_eq!(
        turnkit_bash::probe_sandbox(&sandbox)
            .unwrap_err()
            .to_string(),
        format!(
            "sandbox.denyRead: {:?} would hide the job's temporary folder",
            temp.display().to_string()
        )
    );
}

/// Set in the copy of this test binary that runs without `CAP_SYS_ADMIN`.
const WITHOUT_SYS_ADMIN: &str = "BASH_TEST_WITHOUT_SYS_ADMIN";

/// Root without `CAP_SYS_ADMIN` (a container's default) cannot make namespaces: the probe
/// tries them, refuses at startup, and under `bestEffort` lists them as not in force while
/// jobs still run. The test runs itself again under `setpriv --bounding-set -sys_admin`.
#[tokio::test]
async fn without_cap_sys_admin_the_walls_are_refused_at_startup() {
    const NAME: &str = "suite::walls::without_cap_sys_admin_the_walls_are_refused_at_startup";
    if std::env::var_os(WITHOUT_SYS_ADMIN).is_none() {
        if !rustix::process::geteuid().is_root() {
            turnkit_testkit::skip::skipped("dropping CAP_SYS_ADMIN needs root");
            return;
        }
        let output = std::process::Command::new("setpriv")
            .args(["--bounding-set", "-sys_admin", "--"])
            .arg(std::env::current_exe().unwrap())
            .args(["--exact", NAME, "--nocapture"])
            .env(WITHOUT_SYS_ADMIN, "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("1 passed"),
            "{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        return;
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let effective = status
        .lines()
        .find_map(|line| line.strip_prefix("CapEff:"))
        .map(|mask| u64::from_str_radix(mask.trim(), 16).unwrap())
        .unwrap();
    assert_eq!(
        effective & (1 << 21),
        0,
        "CAP_SYS_ADMIN (21) is dropped in this copy"
    );
    let walls = serde_json::json!({"denyRead": ["/srv"], "isolateProcesses": true});
    let strict: Sandbox = serde_json::from_value(walls.clone()).unwrap();
    assert_eq!(
        turnkit_bash::probe_sandbox(&strict)
            .unwrap_err()
            .to_string(),
        "sandbox: network off needs a network namespace of the job's own, and a confined \
         process could not start with one here: Operation not permitted (os error 1)"
    );
    let mut best = walls;
    best["bestEffort"] = serde_json::json!(true);
    let best: Sandbox = serde_json::from_value(best).unwrap();
    assert_eq!(
        turnkit_bash::probe_sandbox(&best).unwrap(),
        "sandbox: writes only in the job's temporary folder (Landlock); no signals or abstract \
         Unix sockets outside the job (Landlock scopes); not in force: network off (no network \
         namespace), hidden: /srv (no mount namespace), processes isolated (no PID namespace)"
    );
    // What is in force still confines the jobs, and they run.
    let ran = run(
        "echo ran; echo x > /srv-harness-probe || echo refused",
        Some(Arc::new(best)),
    )
    .await;
    assert_eq!(ran, "ran\nrefused\n");
}

#[tokio::test]
async fn network_off_reaches_no_unix_socket_anywhere() {
    let base = tempfile::tempdir().unwrap();
    let path = base.path().join("service.sock");
    let listener = UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    // An abstract socket of the host (no file), like D-Bus or X11 ones.
    let name = format!("harness-test-{}", std::process::id());
    let addr =
        <std::os::unix::net::SocketAddr as std::os::linux::net::SocketAddrExt>::from_abstract_name(
            name.as_bytes(),
        )
        .unwrap();
    let abstract_listener = UnixListener::bind_addr(&addr).unwrap();
    abstract_listener.set_nonblocking(true).unwrap();
    let Some(off) = provided(serde_json::json!({})) else {
        return;
    };
    let Some(isolated) = provided(serde_json::json!({"network": true, "isolateProcesses": true}))
    else {
        return;
    };
    let script = format!(
        "{TRY}\n\
         try filesystem-socket '{connect}'\n\
         try abstract-socket 'python3 -c \"import socket, sys; socket.socket(socket.AF_UNIX).connect(chr(0) + sys.argv[1])\" {name}'\n",
        connect = connect_unix(&path),
    );
    let walled = run(&script, Some(off)).await;
    assert_eq!(count(&walled, "through"), 0, "{walled}");
    assert_eq!(count(&walled, "refused"), 2, "{walled}");
    // The job's own socket pairs still work (the trade-off: they reach nothing outside).
    let pair = run(
        "python3 -c 'import socket; a, b = socket.socketpair(); a.send(b\"x\"); print(b.recv(1))'",
        provided(serde_json::json!({})),
    )
    .await;
    assert_eq!(pair, "b'x'\n");
    assert_eq!(
        listener.accept().map_err(|e| e.kind()).err(),
        Some(std::io::ErrorKind::WouldBlock)
    );
    // With the network on, the Landlock scope still keeps the abstract socket out of reach.
    let scoped = run(&script, Some(isolated)).await;
    assert_eq!(
        scoped, "through: filesystem-socket\nrefused: abstract-socket\n",
        "{scoped}"
    );
    assert!(listener.accept().is_ok());
    let open = run(&script, None).await;
    assert_eq!(count(&open, "through"), 2, "{open}");
    assert!(listener.accept().is_ok());
    assert!(abstract_listener.accept().is_ok());
}

#[tokio::test]
async fn inherit_env_keeps_only_the_named_variables() {
    // Variables cargo gives this test process (no variable of this process is changed).
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    let Some(sandbox) = provided(serde_json::json!({"inheritEnv": ["PATH", "CARGO_PKG_*"]})) else {
        return;
    };
    let script = "env | cut -d= -f1 | sort";
    let mut options = options(script);
    options.env.insert("GIVEN".to_owned(), "1".to_owned());
    options.sandbox = Some(sandbox);
    let process = BashProcess::spawn(options).unwrap();
    finish(&process).await;
    let walled = process.read();
    let names: Vec<&str> = walled.lines().collect();
    // Allowed: the kept ones, what the job is given, and what bash sets itself.
    let own = [
        "GIVEN",
        "HARNESS_BASH_JOB",
        "TMPDIR",
        "PATH",
        "PWD",
        "SHLVL",
        "_",
    ];
    let through: Vec<&&str> = names
        .iter()
        .filter(|n| !own.contains(n) && !n.starts_with("CARGO_PKG_"))
        .collect();
    assert_eq!(through, Vec::<&&str>::new(), "{walled}");
    for name in [
        "PATH",
        "GIVEN",
        "HARNESS_BASH_JOB",
        "TMPDIR",
        "CARGO_PKG_NAME",
    ] {
        assert!(names.contains(&name), "{name} missing: {walled}");
    }
    let open = run(script, None).await;
    assert!(open.lines().any(|n| n == "CARGO_MANIFEST_DIR"), "{open}");
}

#[tokio::test]
async fn readable_roots_keep_every_other_file_unread() {
    let base = tempfile::tempdir().unwrap();
    std::fs::write(base.path().join("secret"), "s3cret").unwrap();
    let system: Vec<&str> = ["/usr", "/lib", "/lib64", "/bin", "/etc"]
        .into_iter()
        .filter(|p| Path::new(p).exists())
        .collect();
    let Some(sandbox) = provided(serde_json::json!({"readableRoots": system})) else {
        return;
    };
    let script = format!(
        "{TRY}\n\
         try read 'grep -q s3cret {base}/secret'\n\
         try list 'ls {base} | grep -q secret'\n\
         try run-copy 'cp /bin/true {base}/t 2>/dev/null; {base}/t'\n\
         try own-temp 'echo ok > \"$TMPDIR/x\" && grep -q ok \"$TMPDIR/x\"'\n\
         try system 'grep -q . /etc/passwd'\n",
        base = base.path().display(),
    );
    let walled = run(&script, Some(sandbox)).await;
    assert_eq!(
        walled,
        "refused: read\nrefused: list\nrefused: run-copy\nthrough: own-temp\nthrough: system\n"
    );
    let open = run(&script, None).await;
    assert_eq!(count(&open, "through"), 5, "{open}");
}
