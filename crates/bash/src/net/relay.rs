//! The proxy's byte copy between a job's connection and its upstream: `splice(2)` through a
//! pipe per direction, so the bytes move between the two sockets inside the kernel (no copy
//! into the server's memory and back), each direction ending with a half-close of the other
//! side's writing.

use std::io;

use rustix::pipe::{PipeFlags, SpliceFlags};
use tokio::io::Interest;
use tokio::net::TcpStream;

/// The most moved by one `splice` (bytes); the pipe is asked to hold as much.
const CHUNK: usize = 1024 * 1024;

/// Copies both ways until both directions reached their end (or one failed).
///
/// # Errors
/// The first I/O error of either direction.
pub(super) async fn relay(a: &TcpStream, b: &TcpStream) -> io::Result<()> {
    tokio::try_join!(one_way(a, b), one_way(b, a)).map(drop)
}

async fn one_way(from: &TcpStream, to: &TcpStream) -> io::Result<()> {
    let (read, write) = rustix::pipe::pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)?;
    // A larger pipe means fewer rounds; a refusal (over pipe-max-size) keeps the default.
    let _ = rustix::pipe::fcntl_setpipe_size(&write, CHUNK);
    let flags = SpliceFlags::MOVE | SpliceFlags::NONBLOCK;
    loop {
        let moved = loop {
            from.readable().await?;
            match from.try_io(Interest::READABLE, || {
                rustix::pipe::splice(from, None, &write, None, CHUNK, flags)
                    .map_err(io::Error::from)
            }) {
                Ok(moved) => break moved,
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
                Err(error) => return Err(error),
            }
        };
        if moved == 0 {
            // End of this direction: pass the half-close on.
            let _ = rustix::net::shutdown(to, rustix::net::Shutdown::Write);
            return Ok(());
        }
        let mut left = moved;
        while left > 0 {
            to.writable().await?;
            match to.try_io(Interest::WRITABLE, || {
                rustix::pipe::splice(&read, None, to, None, left, flags).map_err(io::Error::from)
            }) {
                Ok(sent) => left -= sent,
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
                Err(error) => return Err(error),
            }
        }
    }
}
