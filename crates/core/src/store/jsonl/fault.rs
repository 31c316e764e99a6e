//! The store's errors for a path: an I/O error, a missing file, a malformed line.

use std::path::Path;

use crate::SessionId;
use crate::store::error::StoreError;

pub(super) fn io_error(path: &Path, source: std::io::Error) -> StoreError {
    StoreError::Io {
        path: path.display().to_string(),
        source,
    }
}

pub(super) fn not_found_or_io(path: &Path, source: std::io::Error) -> StoreError {
    match source.kind() {
        std::io::ErrorKind::NotFound => StoreError::NotFound(SessionId::new(
            path.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
        )),
        _ => io_error(path, source),
    }
}

pub(super) fn malformed(path: &Path, line: usize, message: impl Into<String>) -> StoreError {
    StoreError::Malformed {
        file: path.display().to_string(),
        line,
        message: message.into(),
    }
}
