use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_core::{ConfigError, SystemClock};

use super::*;

fn invalid(message: &str) -> Result<BashConfig, ConfigError> {
    Err(ConfigError::Invalid(message.to_owned()))
}

#[test]
fn defaults() {
    let config = BashConfig::from_json(json!({})).unwrap();
    assert_eq!(config, BashConfig::default());
    assert_eq!(config.max_output_bytes, 1_048_576);
    assert_eq!(config.max_spill_bytes, 64 * 1_048_576);
    assert_eq!(config.kill_grace(), Duration::from_secs(2));
    assert_eq!(config.default_timeout_ms, 120_000.0);
    assert_eq!(config.max_timeout_ms, 600_000.0);
}

#[test]
fn camel_case_keys() {
    let config = BashConfig::from_json(json!({
        "maxOutputBytes": 100,
        "maxSpillBytes": 0,
        "spillDir": "/tmp/spill",
        "killGraceMs": 50,
        "cwd": "/tmp",
        "env": {"A": "1"},
        "defaultTimeoutMs": 10,
        "maxTimeoutMs": 20.5
    }))
    .unwrap();
    let options = config.process_options("echo hi", Arc::new(SystemClock));
    assert_eq!(options.command, "echo hi");
    assert_eq!(options.max_output_bytes, 100);
    assert_eq!(options.spill, None);
    assert_eq!(options.kill_grace, Duration::from_millis(50));
    assert_eq!(options.cwd, Some(PathBuf::from("/tmp")));
    assert_eq!(options.env.get("A").map(String::as_str), Some("1"));
    assert_eq!(config.max_timeout_ms, 20.5);
}

#[test]
fn spill_options_follow_the_folder_and_cap() {
    let config = BashConfig::from_json(json!({"spillDir": "/x", "maxSpillBytes": 7})).unwrap();
    let options = config.process_options("true", Arc::new(SystemClock));
    assert_eq!(options.spill, Some(crate::SpillOptions::new("/x", 7)));
    let keep = BashConfig::from_json(json!({"spillDir": "/x", "keepSpillFiles": true})).unwrap();
    assert_eq!(
        keep.process_options("true", Arc::new(SystemClock)).spill,
        Some(crate::SpillOptions {
            dir: PathBuf::from("/x"),
            max_bytes: crate::DEFAULT_MAX_SPILL_BYTES,
            retention: crate::SpillRetention::Keep,
        })
    );
}

#[test]
fn the_default_spill_folder_is_private_to_this_user() {
    use std::os::unix::fs::MetadataExt as _;
    let folder = BashConfig::default().spill_folder();
    let uid = rustix::process::geteuid().as_raw();
    let name = folder.file_name().unwrap().to_str().unwrap().to_owned();
    assert!(name.starts_with(&format!("harness-bash-{uid}")), "{name}");
    let metadata = std::fs::symlink_metadata(&folder).unwrap();
    assert!(metadata.is_dir());
    assert_eq!(metadata.uid(), uid);
    assert_eq!(metadata.mode() & 0o077, 0, "{:o}", metadata.mode());
}

#[test]
fn rejections() {
    assert_eq!(
        BashConfig::from_json(json!({"maxOutputBytes": 0})),
        invalid("tool-bash: maxOutputBytes (0) must be at least 1")
    );
    assert_eq!(
        BashConfig::from_json(json!({"defaultTimeoutMs": 0})),
        invalid("tool-bash: defaultTimeoutMs (0) must be a positive number of milliseconds")
    );
    assert_eq!(
        BashConfig::from_json(json!({"defaultTimeoutMs": 700000})),
        invalid("tool-bash: defaultTimeoutMs (700000) exceeds maxTimeoutMs (600000)")
    );
    assert_eq!(
        BashConfig::from_json(json!({"keepSpillFiles": true})),
        invalid(
            "tool-bash: keepSpillFiles needs spillDir (files in the default folder are always removed)"
        )
    );
    let Err(ConfigError::Invalid(message)) = BashConfig::from_json(json!({"maxOutputByte": 1}))
    else {
        panic!("an unknown key is rejected");
    };
    assert!(
        message.starts_with("tool-bash: unknown field `maxOutputByte`"),
        "{message}"
    );
    let Err(ConfigError::Invalid(message)) = BashConfig::from_json(json!({"maxOutputBytes": -1}))
    else {
        panic!("a negative size is rejected");
    };
    assert!(message.starts_with("tool-bash: invalid value"), "{message}");
}

#[test]
fn an_unsafe_default_folder_is_replaced_by_a_fresh_private_one() {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let uid = rustix::process::geteuid().as_raw();
    let temp = tempfile::tempdir().unwrap();
    let shared = temp.path().join(format!("harness-bash-{uid}"));
    // Missing: created 0700 and used.
    assert_eq!(super::choose_default_folder(temp.path()), shared);
    let mode = std::fs::metadata(&shared).unwrap().mode() & 0o777;
    assert_eq!(mode, 0o700);
    // World writable (someone could have swapped files in it): replaced.
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let fresh = super::choose_default_folder(temp.path());
    assert_ne!(fresh, shared);
    let name = fresh.file_name().unwrap().to_str().unwrap().to_owned();
    assert!(name.starts_with(&format!("harness-bash-{uid}-")), "{name}");
    let metadata = std::fs::metadata(&fresh).unwrap();
    assert_eq!((metadata.uid(), metadata.mode() & 0o777), (uid, 0o700));
    // Another user's folder (only root can make one; CI runs as root).
    if rustix::process::geteuid().is_root() {
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(&shared, Some(65534), Some(65534)).unwrap();
        assert_ne!(super::choose_default_folder(temp.path()), shared);
    }
    // A link where the folder should be is refused too.
    std::fs::remove_dir(&shared).unwrap();
    std::os::unix::fs::symlink(temp.path(), &shared).unwrap();
    assert_ne!(super::choose_default_folder(temp.path()), shared);
}

/// `BashConfig` can grow without breaking callers (`#[non_exhaustive]`): each key has a
/// builder, and the builders give what the JSON keys give.
#[test]
fn builders_match_the_json_keys() {
    let built = BashConfig::default()
        .with_max_output_bytes(10)
        .with_max_spill_bytes(20)
        .with_spill_dir("/tmp/spill")
        .with_keep_spill_files(true)
        .with_kill_grace_ms(30)
        .with_containment(Containment::ProcessTree)
        .with_cwd("/srv")
        .with_env(BTreeMap::from([("A".to_owned(), "1".to_owned())]))
        .with_default_timeout_ms(40.0)
        .with_max_timeout_ms(50.0);
    let decoded = BashConfig::from_json(serde_json::json!({
        "maxOutputBytes": 10, "maxSpillBytes": 20, "spillDir": "/tmp/spill",
        "keepSpillFiles": true, "killGraceMs": 30, "containment": "processTree", "cwd": "/srv",
        "env": {"A": "1"}, "defaultTimeoutMs": 40, "maxTimeoutMs": 50
    }))
    .unwrap();
    assert_eq!(built, decoded);
}
