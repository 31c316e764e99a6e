//! The exclusive advisory lock a session handle holds on its file.

use std::fs::{File, TryLockError};
use std::path::Path;
use std::time::Duration;

use super::fault::io_error;
use crate::store::error::StoreError;

/// How long [`lock`] waits for a lock that is held, in total.
const LOCK_PATIENCE: Duration = Duration::from_millis(100);

/// Takes the exclusive advisory lock of a session file, waiting at most [`LOCK_PATIENCE`].
///
/// The wait is for one case: a lock whose last holder was just dropped can stay held for a
/// moment by a process this one is starting (between `fork` and `exec` a child shares every
/// open descriptor, and with it the lock), which any thread spawning a command — a bash job —
/// can cause at any time. A handle that really holds the lock, in this process or another,
/// still gets [`StoreError::Locked`], after the wait.
pub(super) fn lock(file: &File, path: &Path) -> Result<(), StoreError> {
    let started = std::time::Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(()),
            Err(TryLockError::WouldBlock) if started.elapsed() < LOCK_PATIENCE => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(20));
            }
            Err(TryLockError::WouldBlock) => {
                return Err(StoreError::Locked {
                    path: path.display().to_string(),
                });
            }
            Err(TryLockError::Error(source)) => return Err(io_error(path, source)),
        }
    }
}
