//! Confined jobs with real processes: each test counts what got through the confinement
//! (writes outside the roots, connects, forks, memory, CPU time).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use turnkit_bash::{BashProcess, EndStatus, LimitHits, Sandbox, bash_outcome_with};
use turnkit_jobs::{JobOutcome, TerminalStatus};

use super::support::{finish, options, read_until};

/// `sandbox` if this host can provide it; otherwise a loud skip (a failure under CI=true).
fn provided(sandbox: Sandbox) -> Option<Arc<Sandbox>> {
    match turnkit_bash::probe_sandbox(&sandbox) {
        Ok(_) => Some(Arc::new(sandbox)),
        Err(missing) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "sandbox test cannot run under CI: {missing}"
            );
            turnkit_testkit::skip::skipped(&format!(
                "this host cannot confine jobs ({missing}): run the tests as root on Linux with \
                 Landlock and cgroups"
            ));
            None
        }
    }
}

fn sandbox(roots: &[&Path]) -> Sandbox {
    serde_json::from_value(serde_json::json!({
        "writableRoots": roots,
    }))
    .unwrap()
}

async fn run(command: &str, sandbox: Arc<Sandbox>) -> (String, BashProcess) {
    let mut options = options(command);
    options.sandbox = Some(sandbox);
    let process = BashProcess::spawn(options).unwrap();
    finish(&process).await;
    (process.read(), process)
}

/// Lines `through: <name>` / `refused: <name>` for each attempt.
const TRY: &str =
    "try() { if eval \"$2\"; then echo \"through: $1\"; else echo \"refused: $1\"; fi; }";

#[tokio::test]
async fn writes_outside_the_roots_are_refused_every_way() {
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("root");
    let out = base.path().join("out");
    std::fs::create_dir(&root).unwrap();
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("existing"), "original").unwrap();
    let Some(sandbox) = provided(sandbox(&[&root])) else {
        return;
    };
    let script = format!(
        "{TRY}\n\
         cd {root}\n\
         try plain 'echo x > {out}/plain'\n\
         ln -s {out} {root}/link\n\
         try symlink 'echo x > {root}/link/via-symlink'\n\
         try dotdot 'echo x > {root}/../out/via-dotdot'\n\
         try hardlink 'ln {out}/existing {root}/hard'\n\
         try append-existing 'echo x >> {out}/existing'\n\
         try rename-out 'echo y > {root}/mine && mv {root}/mine {out}/moved'\n\
         try setsid 'setsid -w bash -c \"echo x > {out}/via-setsid\"'\n\
         try grandchild '( ( echo x > {out}/via-grandchild ) & wait ); test -e {out}/via-grandchild'\n\
         try inside 'echo ok > {root}/inside'\n\
         try temp 'echo ok > \"$TMPDIR/t\"'\n\
         try devnull 'echo ok > /dev/null'\n",
        root = root.display(),
        out = out.display(),
    );
    let (output, process) = run(&script, sandbox).await;
    let (stdout, stderr) = output.split_once("[stderr]\n").unwrap_or((&output, ""));
    assert_eq!(
        stdout,
        "refused: plain\nrefused: symlink\nrefused: dotdot\nrefused: hardlink\n\
         refused: append-existing\nrefused: rename-out\nrefused: setsid\nrefused: grandchild\n\
         through: inside\nthrough: temp\nthrough: devnull\n"
    );
    // The program's own errors: EACCES for the writes, EXDEV for the links across.
    assert_eq!(stderr.matches("Permission denied").count(), 7, "{stderr}");
    assert_eq!(
        stderr.matches("Invalid cross-device link").count(),
        1,
        "{stderr}"
    );
    // Nothing got through: the outside folder holds what it held.
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["existing"]);
    assert_eq!(
        std::fs::read_to_string(out.join("existing")).unwrap(),
        "original"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("inside")).unwrap(),
        "ok\n"
    );
    drop(process);
}

/// Attempts a TCP connect with bash's `/dev/tcp` and says whether it connected.
fn connect(host: &str, port: u16) -> String {
    format!(
        "if exec 3<>/dev/tcp/{host}/{port}; then echo 'connected {host}'; exec 3>&-; \
         else echo 'refused {host}'; fi"
    )
}

#[tokio::test]
async fn network_off_refuses_loopback_and_public_connects() {
    let Some(sandbox) = provided(sandbox(&[])) else {
        return;
    };
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    // 192.0.2.1 is TEST-NET-1 (documentation only): nothing is sent anywhere real.
    let script = format!(
        "{}; {}",
        connect("127.0.0.1", port),
        connect("192.0.2.1", 80)
    );
    let (output, _process) = run(&script, sandbox).await;
    let (stdout, stderr) = output.split_once("[stderr]\n").unwrap_or((&output, ""));
    assert_eq!(stdout, "refused 127.0.0.1\nrefused 192.0.2.1\n");
    // In the job's own namespace nothing listens on its loopback; no route leads outside.
    assert!(stderr.contains("Connection refused"), "{stderr}");
    assert!(stderr.contains("Network is unreachable"), "{stderr}");
    // Nothing reached the host's listener.
    assert_eq!(
        listener.accept().map_err(|e| e.kind()).err(),
        Some(std::io::ErrorKind::WouldBlock)
    );
}

#[tokio::test]
async fn network_on_reaches_the_hosts_loopback() {
    let mut on = sandbox(&[]);
    on.network = turnkit_bash::Network::On;
    let Some(sandbox) = provided(on) else {
        return;
    };
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (output, _process) = run(&connect("127.0.0.1", port), sandbox).await;
    assert_eq!(output, "connected 127.0.0.1\n");
    listener.set_nonblocking(true).unwrap();
    assert!(
        listener.accept().is_ok(),
        "the connect reached the listener"
    );
}

/// Polls a kernel counter (there is no notification for it), bounded.
async fn until_hit(process: &BashProcess, hit: impl Fn(LimitHits) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !hit(process.limit_hits()) {
        assert!(Instant::now() < deadline, "the limit was never reached");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_fork_bomb_stops_at_pids_max_and_the_host_stays_responsive() {
    let mut limited = sandbox(&[]);
    limited.pids_max = Some(32);
    let Some(sandbox) = provided(limited) else {
        return;
    };
    let mut options = options("bomb() { bomb | bomb & }; bomb; wait");
    options.sandbox = Some(sandbox);
    let process = BashProcess::spawn(options).unwrap();
    until_hit(&process, |hits| hits.pids).await;
    // The host can still start processes while the bomb pushes at its limit.
    let host = std::process::Command::new("true").status().unwrap();
    assert!(host.success());
    process.cancel();
    let end = finish(&process).await;
    let outcome = bash_outcome_with(&end, process.limit_hits());
    assert_eq!(outcome.status, TerminalStatus::Killed);
    let detail = outcome.detail.unwrap_or_default();
    assert!(detail.ends_with(", pids limit reached"), "{detail}");
}

#[tokio::test]
async fn a_memory_hog_is_killed_at_memory_max_and_says_so() {
    let mut limited = sandbox(&[]);
    limited.memory_max_bytes = Some(64 * 1024 * 1024);
    let Some(sandbox) = provided(limited) else {
        return;
    };
    // The shell itself holds 400 MB of `a`s (a command substitution is read by the shell).
    let (_output, process) = run(
        "x=$(head -c 400000000 /dev/zero | tr '\\0' a); echo survived ${#x}",
        sandbox,
    )
    .await;
    let end = process.try_end().unwrap();
    assert_eq!(end.status, EndStatus::Signaled(9));
    assert_eq!(
        bash_outcome_with(&end, process.limit_hits()),
        JobOutcome::killed().with_detail("memory limit")
    );
}

/// The job's cgroup v2 folder, from `/proc/<pid>/cgroup` and the cgroup2 mount.
fn cgroup_of(pid: u32) -> Option<PathBuf> {
    let own = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let own = own
        .lines()
        .find_map(|l| l.strip_prefix("0::"))?
        .trim()
        .to_owned();
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mount = mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        (right.split_whitespace().next() == Some("cgroup2"))
            .then(|| left.split_whitespace().nth(4).map(str::to_owned))?
    })?;
    Some(Path::new(&mount).join(own.trim_start_matches('/')))
}

fn usage_usec(dir: &Path) -> u64 {
    let stat = std::fs::read_to_string(dir.join("cpu.stat")).unwrap();
    stat.lines()
        .find_map(|l| l.strip_prefix("usage_usec "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}

#[tokio::test]
async fn a_busy_loop_gets_its_cpu_share() {
    let mut limited = sandbox(&[]);
    limited.cpu_max = Some(0.25);
    let Some(sandbox) = provided(limited) else {
        return;
    };
    let mut options = options("echo started; while :; do :; done");
    options.sandbox = Some(sandbox);
    let process = BashProcess::spawn(options).unwrap();
    read_until(&process, "started").await;
    let Some(dir) = cgroup_of(process.pid()).filter(|d| d.join("cpu.stat").exists()) else {
        process.cancel();
        panic!("the job has no cgroup v2 with cpu.stat to measure");
    };
    // A measurement over a bounded window (not a synchronisation).
    let (start, used_before) = (Instant::now(), usage_usec(&dir));
    tokio::time::sleep(Duration::from_secs(2)).await;
    let used = usage_usec(&dir) - used_before;
    let share = used as f64 / start.elapsed().as_micros() as f64;
    process.cancel();
    finish(&process).await;
    assert!(
        (0.12..=0.40).contains(&share),
        "share {share:.3} of one CPU, limit 0.25"
    );
}

#[test]
fn sandbox_keys_are_checked_at_startup() {
    let error = |sandbox: serde_json::Value| {
        turnkit_bash::BashConfig::from_json(serde_json::json!({ "sandbox": sandbox }))
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        error(serde_json::json!({"writableRoots": ["rel"]})),
        "tool-bash: sandbox.writableRoots: \"rel\" is not an absolute path"
    );
    assert_eq!(
        error(serde_json::json!({"pidsMax": 0})),
        "tool-bash: sandbox.pidsMax (0) must be at least 1"
    );
    assert_eq!(
        error(serde_json::json!({"cpuMax": -1})),
        "tool-bash: sandbox.cpuMax (-1) must be a number of CPUs greater than 0"
    );
    assert!(
        error(serde_json::json!({"network": false, "readRoots": []}))
            .contains("unknown field `readRoots`")
    );
}

#[test]
fn the_tool_description_says_what_is_enforced() {
    use turnkit_core::Tool as _;
    let mut limited = sandbox(&[Path::new("/tmp")]);
    limited.pids_max = Some(64);
    if provided(limited.clone()).is_none() {
        return;
    }
    let clock: Arc<dyn turnkit_core::Clock> = Arc::new(turnkit_core::SystemClock);
    let plain = turnkit_bash::BashTool::new(turnkit_bash::BashJobs::new(
        turnkit_bash::BashConfig::default(),
        clock.clone(),
        None,
    ));
    let config = turnkit_bash::BashConfig::from_json(serde_json::json!({
        "sandbox": {"writableRoots": ["/tmp"], "pidsMax": 64}
    }))
    .unwrap();
    let confined = turnkit_bash::BashTool::new(turnkit_bash::BashJobs::new(config, clock, None));
    let extra = confined
        .definition()
        .description
        .strip_prefix(plain.definition().description.as_str())
        .unwrap();
    let summary = turnkit_bash::probe_sandbox(&limited).unwrap();
    assert_eq!(extra, format!("\n\nCommands run confined: {summary}."));
    assert!(
        summary.starts_with(
            "sandbox: writes only under /tmp and the job's temporary folder (Landlock); \
             network off (network namespace, loopback only); no Unix sockets (seccomp); \
             read-only: git hooks and config, shell start files, .mcp.json and editor tasks and \
             settings inside the writable roots (mount namespace); pids ≤ 64 (cgroup"
        ),
        "{summary}"
    );
}
