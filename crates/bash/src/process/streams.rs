//! The two output streams of a process and the readers that copy each pipe into its
//! spill file and bounded buffer.

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt as _};
use turnkit_core::lock;

use super::shared::Shared;
use super::spill::{Spill, SpillFile, SpillWriter};
use crate::buffer::StreamBuffer;

/// Size of one read from a pipe.
const CHUNK_BYTES: usize = 64 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Channel {
    Stdout,
    Stderr,
}

impl Channel {
    pub(super) fn extension(self) -> &'static str {
        match self {
            Channel::Stdout => "stdout",
            Channel::Stderr => "stderr",
        }
    }
}

pub(super) struct Streams {
    pub(super) stdout: StreamBuffer,
    pub(super) stderr: StreamBuffer,
    pub(super) stdout_spill: Option<SpillFile>,
    pub(super) stderr_spill: Option<SpillFile>,
}

impl Streams {
    pub(super) fn buffer(&mut self, channel: Channel) -> &mut StreamBuffer {
        match channel {
            Channel::Stdout => &mut self.stdout,
            Channel::Stderr => &mut self.stderr,
        }
    }
}

/// Copies one pipe into its spill file and bounded buffer until end of file.
pub(super) async fn pump(
    mut pipe: impl AsyncRead + Unpin,
    shared: Arc<Shared>,
    channel: Channel,
    spill: Option<Spill>,
) {
    let mut writer = SpillWriter {
        spill,
        file: None,
        written: 0,
    };
    let mut chunk = Vec::with_capacity(CHUNK_BYTES);
    loop {
        match pipe.read_buf(&mut chunk).await {
            Ok(0) => break,
            Ok(_) => {
                writer.write(&shared, channel, &chunk);
                // A well-filled chunk is handed over as is; a small one is copied into the
                // buffer and the chunk reused.
                if chunk.len() * 2 >= chunk.capacity() {
                    let full = std::mem::replace(&mut chunk, Vec::with_capacity(CHUNK_BYTES));
                    lock(&shared.streams).buffer(channel).push_owned(full);
                } else {
                    lock(&shared.streams).buffer(channel).push(&chunk);
                    chunk.clear();
                }
                shared.output_ready.notify_one();
            }
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => {
                tracing::warn!("bash: reading {} failed: {error}", channel.extension());
                break;
            }
        }
    }
    lock(&shared.streams).buffer(channel).close();
    shared.output_ready.notify_one();
}
