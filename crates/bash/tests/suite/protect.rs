//! Protected paths inside a writable root, with real processes: the job's writes to git's
//! hooks and configuration (and to an operator's `denyWrite`) are refused while the rest of
//! the root stays writable; removed from the list, the same write goes through.

use std::sync::Arc;

use pretty_assertions::assert_eq;
use turnkit_bash::{BashProcess, Sandbox};

use super::support::{finish, options};

fn provided(config: &serde_json::Value) -> Option<Arc<Sandbox>> {
    let sandbox: Sandbox = serde_json::from_value(config.clone()).unwrap();
    match turnkit_bash::probe_sandbox(&sandbox) {
        Ok(_) => Some(Arc::new(sandbox)),
        Err(missing) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "sandbox test cannot run under CI: {missing}"
            );
            turnkit_testkit::skip::skipped(&format!(
                "this host cannot confine jobs ({missing}): run the tests as root on Linux"
            ));
            None
        }
    }
}

/// A writable root holding a repository's `.git/hooks` and `.git/config`, and a `notes` file.
fn repository() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join(".git/hooks")).unwrap();
    std::fs::write(root.path().join(".git/config"), "[core]\n").unwrap();
    std::fs::write(root.path().join("notes"), "").unwrap();
    root
}

async fn run(command: &str, sandbox: Arc<Sandbox>) -> String {
    let mut options = options(command);
    options.sandbox = Some(sandbox);
    let process = BashProcess::spawn(options).unwrap();
    finish(&process).await;
    process.read()
}

const ATTEMPTS: &str = "try() { if eval \"$2\" 2>/dev/null; then echo \"through: $1\"; else echo \"refused: $1\"; fi; }; \
     try hook 'printf \"#!/bin/sh\\ncurl evil\\n\" > .git/hooks/pre-commit'; \
     try config 'echo \"[core] hooksPath = /tmp\" >> .git/config'; \
     try notes 'echo ok > notes'";

#[tokio::test]
async fn a_hook_write_is_refused_by_default_and_allowed_once_removed_from_the_list() {
    let root = repository();
    let Some(sandbox) = provided(&serde_json::json!({"writableRoots": [root.path()]})) else {
        return;
    };
    assert_eq!(
        turnkit_bash::probe_sandbox(&sandbox).unwrap(),
        format!(
            "sandbox: writes only under {} and the job's temporary folder (Landlock); network \
             off (network namespace, loopback only); no Unix sockets (seccomp); read-only: git \
             hooks and config, shell start files, .mcp.json and editor tasks and settings \
             inside the writable roots (mount namespace)",
            root.path().display()
        )
    );
    let output = run(
        &format!("cd {} && {ATTEMPTS}", root.path().display()),
        sandbox,
    )
    .await;
    assert_eq!(output, "refused: hook\nrefused: config\nthrough: notes\n");
    // Nothing reached the protected files.
    assert!(!root.path().join(".git/hooks/pre-commit").exists());
    assert_eq!(
        std::fs::read_to_string(root.path().join(".git/config")).unwrap(),
        "[core]\n"
    );

    let removed = provided(&serde_json::json!({
        "writableRoots": [root.path()],
        "protectedPaths": [".git/config"]
    }))
    .unwrap();
    let output = run(
        &format!("cd {} && {ATTEMPTS}", root.path().display()),
        removed,
    )
    .await;
    assert_eq!(output, "through: hook\nrefused: config\nthrough: notes\n");
    assert_eq!(
        std::fs::read_to_string(root.path().join(".git/hooks/pre-commit")).unwrap(),
        "#!/bin/sh\ncurl evil\n"
    );
}

#[tokio::test]
async fn deny_write_protects_an_operators_path_and_an_empty_list_protects_nothing() {
    let root = repository();
    let Some(sandbox) = provided(&serde_json::json!({
        "writableRoots": [root.path()],
        "protectedPaths": [],
        "denyWrite": [root.path().join("notes")]
    })) else {
        return;
    };
    let output = run(
        &format!("cd {} && {ATTEMPTS}", root.path().display()),
        sandbox,
    )
    .await;
    assert_eq!(output, "through: hook\nthrough: config\nrefused: notes\n");
    assert_eq!(
        std::fs::read_to_string(root.path().join("notes")).unwrap(),
        ""
    );
}

#[test]
fn protected_entries_and_deny_write_paths_are_checked() {
    let bad = |config: serde_json::Value| {
        serde_json::from_value::<Sandbox>(config)
            .unwrap()
            .validate()
            .unwrap_err()
    };
    assert_eq!(
        bad(serde_json::json!({"protectedPaths": ["../x"]})),
        "sandbox.protectedPaths: \"../x\" is not a relative path without .."
    );
    assert_eq!(
        bad(serde_json::json!({"protectedPaths": ["/etc"]})),
        "sandbox.protectedPaths: \"/etc\" is not a relative path without .."
    );
    assert_eq!(
        bad(serde_json::json!({"denyWrite": ["rel"]})),
        "sandbox.denyWrite: \"rel\" is not an absolute path"
    );
}
