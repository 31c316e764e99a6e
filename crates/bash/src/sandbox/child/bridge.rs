//! The proxy's door into the job's network namespace: in the child, after the namespace is
//! made and its loopback is up, a TCP listener is bound on the job's `127.0.0.1` and sent to
//! the server over a Unix socket pair (`SCM_RIGHTS`), so the server accepts, on its own
//! side, the connections the job makes to its own loopback. No process of the job's and no
//! bridge process stands in between.

use std::io::{self, IoSlice};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd as _, OwnedFd};

use rustix::net::{
    AddressFamily, SendAncillaryBuffer, SendAncillaryMessage, SendFlags, SocketAddrV4, SocketFlags,
    SocketType,
};

use super::errno;

/// The child's end of the socket pair and the port to listen on (prepared in the parent).
pub(crate) struct Bridge {
    pub(crate) channel: OwnedFd,
    pub(crate) port: u16,
}

impl Bridge {
    /// Binds and listens on `127.0.0.1:port` of the current (the job's) network namespace
    /// and sends the listener to the server. System calls only, on values prepared before the
    /// fork; the control buffer is on the stack. The listener is closed here (the server's
    /// copy travels in the message) and the channel at `exec` (`CLOEXEC`).
    pub(crate) fn send_listener(&self) -> io::Result<()> {
        let listener = rustix::net::socket_with(
            AddressFamily::INET,
            SocketType::STREAM,
            SocketFlags::CLOEXEC,
            None,
        )
        .map_err(errno)?;
        rustix::net::sockopt::set_socket_reuseaddr(&listener, true).map_err(errno)?;
        let address = SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, self.port);
        rustix::net::bind(&listener, &address).map_err(errno)?;
        rustix::net::listen(&listener, 128).map_err(errno)?;
        let fds = [listener.as_fd()];
        let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
            return Err(io::Error::from_raw_os_error(
                rustix::io::Errno::NOBUFS.raw_os_error(),
            ));
        }
        rustix::net::sendmsg(
            &self.channel,
            &[IoSlice::new(b"L")],
            &mut control,
            SendFlags::NOSIGNAL,
        )
        .map_err(errno)?;
        Ok(())
    }
}
