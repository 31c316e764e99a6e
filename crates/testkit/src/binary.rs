//! A workspace binary for tests that run it as a child process: the test harness has no
//! direct handle on another package's binary (`CARGO_BIN_EXE_*` names only the package's
//! own), so it is built once per test process with the same cargo and profile.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// The path of binary `bin` of workspace package `package`, built (`cargo build --quiet
/// --locked -p PACKAGE --bin BIN`) on the first call for that pair in this process and found
/// beside the running test's profile folder (`target/<profile>/deps/<test>` →
/// `target/<profile>/<bin>`).
///
/// # Panics
/// When cargo cannot run, the build fails, or the binary is not where the build puts it: a
/// test that needs it cannot go on.
#[must_use]
pub fn built(package: &str, bin: &str) -> PathBuf {
    static BUILT: OnceLock<Mutex<BTreeMap<(String, String), PathBuf>>> = OnceLock::new();
    let mut built = turnkit_core::lock(BUILT.get_or_init(Mutex::default));
    let key = (package.to_owned(), bin.to_owned());
    if let Some(path) = built.get(&key) {
        return path.clone();
    }
    let status = std::process::Command::new(env!("CARGO"))
        .args(["build", "--quiet", "--locked", "-p", package, "--bin", bin])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .unwrap_or_else(|error| panic!("cargo could not run: {error}"));
    assert!(status.success(), "building {package}'s {bin} failed");
    let exe = std::env::current_exe()
        .unwrap_or_else(|error| panic!("the test executable's path: {error}"));
    let Some(profile) = exe.parent().and_then(Path::parent) else {
        panic!("{} is not in a target folder", exe.display());
    };
    let path = profile.join(format!("{bin}{}", std::env::consts::EXE_SUFFIX));
    assert!(path.exists(), "{} missing", path.display());
    built.insert(key, path.clone());
    path
}
