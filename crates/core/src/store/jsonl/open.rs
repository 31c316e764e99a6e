//! Opening a session file: lock, read, check the header, cut a torn tail away.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use super::fault::{io_error, malformed, not_found_or_io};
use super::lock::lock;
use super::parse::parse_bytes;
use super::session::{JsonlSession, LogFile};
use crate::store::error::StoreError;
use crate::{Clock, SessionId};

/// Opens, locks, validates and (for a torn tail) truncates a session file, then starts its
/// session handle. `expect` is the id the caller asked for; the header must name it.
/// `wrap` turns the locked file into the flush's [`LogFile`] (the real file, or a test seam).
pub(super) fn open_file(
    path: &Path,
    expect: Option<&SessionId>,
    clock: Arc<dyn Clock>,
    wrap: impl FnOnce(File) -> Box<dyn LogFile>,
) -> Result<JsonlSession, StoreError> {
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|source| not_found_or_io(path, source))?;
    lock(&file, path)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|source| io_error(path, source))?;
    let file_len = bytes.len() as u64;
    let parsed = parse_bytes(path, bytes)?;
    if let Some(id) = expect
        && parsed.header.id != *id
    {
        return Err(malformed(
            path,
            1,
            format!(
                "the header names session {:?}, but this is the file of session {:?}",
                parsed.header.id.as_str(),
                id.as_str()
            ),
        ));
    }
    let mut durable_len = file_len;
    if let Some(torn) = &parsed.torn {
        tracing::warn!(
            file = %path.display(),
            line = torn.line,
            "truncating torn last line of session file: {}",
            torn.reason
        );
        file.set_len(torn.offset)
            .and_then(|()| file.sync_data())
            .map_err(|source| io_error(path, source))?;
        durable_len = torn.offset;
    }
    Ok(JsonlSession::start(
        parsed.header,
        parsed.events,
        clock,
        path,
        wrap(file),
        durable_len,
    ))
}
