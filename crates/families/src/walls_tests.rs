use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

fn config(value: &Value) -> FamiliesConfig {
    FamiliesConfig::from_json(value).unwrap()
}

#[test]
fn secrets_never_pass_the_environment_wall() {
    for name in [
        "HARNESS_TOKEN",
        "harness_x",
        "PGPASSWORD",
        "PGPASSFILE",
        "DATABASE_URL",
        "GITHUB_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "MY_PASSWORD",
        "API_KEY",
        "PG*",
        "P*",
        "*",
        "HARN*",
    ] {
        assert!(secret_env_name(name), "{name}");
    }
    for name in ["PATH", "HOME", "LC_*", "TERM", "CARGO_HOME", "RUST_LOG"] {
        assert!(!secret_env_name(name), "{name}");
    }
    assert!(SAFE_ENV.iter().all(|name| !secret_env_name(name)));
}

#[test]
fn a_family_without_a_sandbox_gets_the_walls_with_writes_and_network_as_before() {
    let spill = tempfile::tempdir().unwrap();
    let walled = config(&json!({
        "todo": {"allowParallelInProgress": false},
        "bash": {"spillDir": spill.path()},
    }))
    .with_walls(&Walls {
        deny_read: vec![
            PathBuf::from("/srv/sessions"),
            PathBuf::from("/etc/harness/tokens"),
        ],
    })
    .unwrap();
    assert_eq!(
        walled.family("bash"),
        json!({
            "spillDir": spill.path(),
            "sandbox": {
                "writableRoots": ["/"],
                "network": true,
                "denyRead": ["/srv/sessions", "/etc/harness/tokens", spill.path()],
                "isolateProcesses": true,
                "inheritEnv": SAFE_ENV,
            },
        })
    );
    // No terminal object: the terminal stays off.
    assert_eq!(walled.object("terminal"), None);
}

#[test]
fn the_operators_sandbox_keys_are_kept_and_the_walls_added() {
    let spill = tempfile::tempdir().unwrap();
    let walled = config(&json!({
        "todo": {"allowParallelInProgress": false},
        "bash": {"spillDir": spill.path(), "sandbox": {
            "network": false, "bestEffort": true,
            "denyRead": ["/home/ops/.ssh", "/srv/sessions"],
            "inheritEnv": ["PATH", "PGHOST", "CI_TOKEN", "LANG"],
            "isolateProcesses": false,
        }},
        "terminal": {},
    }))
    .with_walls(&Walls {
        deny_read: vec![PathBuf::from("/srv/sessions")],
    })
    .unwrap();
    let expected_bash = json!({
        "network": false, "bestEffort": true,
        "denyRead": ["/home/ops/.ssh", "/srv/sessions", spill.path()],
        "inheritEnv": ["PATH", "LANG"],
        "isolateProcesses": true,
    });
    assert_eq!(walled.family("bash")["sandbox"], expected_bash);
    assert_eq!(
        walled.family("terminal"),
        json!({"sandbox": {
            "writableRoots": ["/"],
            "network": true,
            "denyRead": ["/srv/sessions", spill.path()],
            "isolateProcesses": true,
            "inheritEnv": SAFE_ENV,
        }})
    );
}

#[test]
fn a_sandbox_that_is_not_an_object_is_refused() {
    let mut config = config(&json!({"todo": {"allowParallelInProgress": false}}));
    *config.object_mut("terminal") = Map::from_iter([("sandbox".to_owned(), json!(true))]);
    assert_eq!(
        config
            .with_walls(&Walls::default())
            .unwrap_err()
            .to_string(),
        "terminal.sandbox: expected an object"
    );
}
