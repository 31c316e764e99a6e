//! The confinement steps run in the child between `fork` and `exec` (`pre_exec`): with
//! `mounts` and `init`, the one place of the library code that may use `unsafe` (the
//! workspace's other is test support, turnkit-testkit's skip summary). One topic per file: this one (the steps and
//! their order), `bridge` (the proxy's listener in the job's network namespace), `mounts` (the hidden paths and the job's own `/proc`), `init` (the PID
//! namespace's two extra processes).
//!
//! Why `unsafe` is sound here: `pre_exec` is unsafe because the closure runs in a forked
//! copy of a multi-threaded process, where only async-signal-safe work is allowed (another
//! thread may have held the allocator's or any other lock at the fork). [`ChildSetup::run`]
//! therefore only makes system calls through `rustix` and `landlock` with values prepared in
//! the parent before the fork: `setrlimit`, `unshare`, `open`/`write` of preformatted bytes
//! to `/proc/self/{setgroups,uid_map,gid_map}`, `socket` + `ioctl(SIOCSIFFLAGS)` to bring up
//! the loopback, `socket`/`bind`/`listen`/`sendmsg` of the proxy's listener (`bridge`), `mount` of paths prepared as C strings, `getcwd` into a buffer on the
//! stack and `chdir`, `sigaction`, `pipe2`, `clone` (the raw system call, so no `atfork`
//! handler of the C library runs), `close_range`, `read`/`write` of four bytes, `wait4`,
//! `kill`, `_exit`, `prctl(PR_SET_NO_NEW_PRIVS)`, `landlock_restrict_self` on a ruleset
//! descriptor opened in the parent and `seccomp` with a filter compiled in the parent. It allocates nothing, takes no lock and formats
//! nothing; an error is returned as a raw `errno` (`std` reports it to the parent, and the
//! spawn fails). The ruleset is moved out of an `Option` (a move, not an allocation), and
//! the rules' path descriptors were all closed in the parent when the ruleset was built.
//! [`default_signals_pty`] only calls `sigaction` (through `libc::signal`), which is
//! async-signal-safe.
#![expect(
    unsafe_code,
    reason = "Command::pre_exec is unsafe; the closure only makes system calls on values \
              prepared before the fork (see the module documentation)"
)]

use std::io;

use rustix::process::{Resource, Rlimit};

mod bridge;
mod init;
mod mounts;

pub(crate) use bridge::Bridge;
pub(crate) use init::{Init, own_strings};
pub(crate) use mounts::Mounts;

/// Everything the child does before `exec`, prepared in the parent.
pub(crate) struct ChildSetup {
    /// `(resource, value)` pairs for `setrlimit` (soft and hard).
    pub(crate) rlimits: Vec<(Resource, u64)>,
    /// Unshare the network namespace (and bring its loopback up).
    pub(crate) network_off: bool,
    /// With the network by name: the proxy's listener, made in the job's namespace and sent
    /// to the server.
    pub(crate) bridge: Option<Bridge>,
    /// For a host that is not root: the user namespace that makes the other namespaces
    /// possible, with the user and group mapped to themselves (preformatted lines).
    pub(crate) user_maps: Option<UserMaps>,
    /// A mount namespace of the job's own: the hidden paths (and `/proc`, with `init`).
    pub(crate) mounts: Option<Mounts>,
    /// A PID namespace of the job's own (the shell is forked twice after the `unshare`).
    pub(crate) init: Option<Init>,
    /// The Landlock ruleset, applied after the mounts.
    #[cfg(target_os = "linux")]
    pub(crate) ruleset: Option<landlock::RulesetCreated>,
    /// The seccomp filter (compiled in the parent), installed last.
    #[cfg(target_os = "linux")]
    pub(crate) seccomp: Option<seccompiler::BpfProgram>,
}

/// The lines written to `uid_map` and `gid_map` (`<id> <id> 1\n`).
pub(crate) struct UserMaps {
    pub(crate) uid_map: Vec<u8>,
    pub(crate) gid_map: Vec<u8>,
}

impl ChildSetup {
    /// A setup that does nothing (the probe adds one wall at a time).
    pub(crate) fn nothing() -> Self {
        Self {
            rlimits: Vec::new(),
            network_off: false,
            bridge: None,
            user_maps: None,
            mounts: None,
            init: None,
            #[cfg(target_os = "linux")]
            ruleset: None,
            #[cfg(target_os = "linux")]
            seccomp: None,
        }
    }
}

impl UserMaps {
    /// The maps of this process's user and group onto themselves.
    pub(crate) fn own() -> Self {
        let uid = rustix::process::geteuid().as_raw();
        let gid = rustix::process::getegid().as_raw();
        Self {
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        }
    }
}

pub(crate) fn errno(error: rustix::io::Errno) -> io::Error {
    io::Error::from_raw_os_error(error.raw_os_error())
}

/// `struct ifreq` with the `ifr_flags` member (40 bytes on Linux).
#[repr(C)]
struct IfreqFlags {
    name: [u8; 16],
    flags: i16,
    pad: [u8; 22],
}

/// `SIOCSIFFLAGS`.
const SET_FLAGS: rustix::ioctl::Opcode = 0x8914;
/// `IFF_UP | IFF_LOOPBACK | IFF_RUNNING`.
const LOOPBACK_UP: i16 = 0x1 | 0x8 | 0x40;

impl ChildSetup {
    /// The steps, in order: limits, namespaces, loopback, mounts (with a PID namespace: in
    /// its first process, and the rest in the job's shell, see `init`), Landlock (last, so
    /// the writes to `/proc/self/*_map` and the mounts are not refused).
    fn run(&mut self) -> io::Result<()> {
        for (resource, value) in &self.rlimits {
            let limit = Rlimit {
                current: Some(*value),
                maximum: Some(*value),
            };
            rustix::process::setrlimit(*resource, limit).map_err(errno)?;
        }
        self.unshare()?;
        if self.network_off {
            loopback_up()?;
        }
        if let Some(bridge) = &self.bridge {
            bridge.send_listener()?;
        }
        match &self.init {
            // Returns only in the job's shell, pid 2 of the namespace.
            Some(init) => init.start(self.mounts.as_ref())?,
            None => {
                if let Some(mounts) = &self.mounts {
                    mounts.apply(false)?;
                }
            }
        }
        #[cfg(target_os = "linux")]
        if let Some(ruleset) = self.ruleset.take() {
            // Not `io::Error::other`: that would allocate.
            ruleset.restrict_self().map_err(|_| {
                io::Error::from_raw_os_error(rustix::io::Errno::PERM.raw_os_error())
            })?;
        }
        #[cfg(target_os = "linux")]
        if let Some(program) = &self.seccomp {
            // Sets `PR_SET_NO_NEW_PRIVS`, then `seccomp(SECCOMP_SET_MODE_FILTER)` on the
            // program's instructions (no allocation).
            seccompiler::apply_filter(program).map_err(|_| {
                io::Error::from_raw_os_error(rustix::io::Errno::PERM.raw_os_error())
            })?;
        }
        Ok(())
    }

    /// One `unshare` for every namespace asked for (the user namespace with them, so it owns
    /// them), then the user and group maps.
    fn unshare(&self) -> io::Result<()> {
        use rustix::thread::UnshareFlags;
        let mut flags = UnshareFlags::empty();
        if self.network_off {
            flags |= UnshareFlags::NEWNET;
        }
        if self.mounts.is_some() {
            flags |= UnshareFlags::NEWNS;
        }
        if self.init.is_some() {
            flags |= UnshareFlags::NEWPID;
        }
        if flags.is_empty() {
            return Ok(());
        }
        if self.user_maps.is_some() {
            flags |= UnshareFlags::NEWUSER;
        }
        // SAFETY: the flags create namespaces only (no CLONE_FILES/CLONE_FS/CLONE_VM
        // changes that could invalidate state the process relies on).
        unsafe { rustix::thread::unshare_unsafe(flags) }.map_err(errno)?;
        if let Some(maps) = &self.user_maps {
            write_file(c"/proc/self/setgroups", b"deny")?;
            write_file(c"/proc/self/uid_map", &maps.uid_map)?;
            write_file(c"/proc/self/gid_map", &maps.gid_map)?;
        }
        Ok(())
    }
}

/// Brings up the loopback of the job's fresh network namespace.
fn loopback_up() -> io::Result<()> {
    let socket = rustix::net::socket(
        rustix::net::AddressFamily::INET,
        rustix::net::SocketType::DGRAM,
        None,
    )
    .map_err(errno)?;
    let mut request = IfreqFlags {
        name: [0; 16],
        flags: LOOPBACK_UP,
        pad: [0; 22],
    };
    request.name[..2].copy_from_slice(b"lo");
    // SAFETY: SIOCSIFFLAGS reads a `struct ifreq` whose first 16 bytes are the interface
    // name and whose `ifr_flags` (a short) follows; `IfreqFlags` has that layout and
    // the full size of the union.
    unsafe {
        let setter = rustix::ioctl::Setter::<SET_FLAGS, IfreqFlags>::new(request);
        rustix::ioctl::ioctl(&socket, setter)
    }
    .map_err(errno)?;
    Ok(())
}

pub(crate) fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> io::Result<()> {
    let fd = rustix::fs::open(path, rustix::fs::OFlags::WRONLY, rustix::fs::Mode::empty())
        .map_err(errno)?;
    rustix::io::write(&fd, bytes).map_err(errno)?;
    Ok(())
}

/// Runs `setup` in the child of the standard `command` before `exec` (the probe).
pub(crate) fn install_std(command: &mut std::process::Command, mut setup: ChildSetup) {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: see the module documentation: the closure only makes system calls.
    unsafe {
        command.pre_exec(move || setup.run());
    }
}

/// Runs `setup` in the child of `command` before `exec`.
pub(crate) fn install_tokio(command: &mut tokio::process::Command, mut setup: ChildSetup) {
    // SAFETY: see the module documentation: the closure only makes system calls.
    unsafe {
        command.pre_exec(move || setup.run());
    }
}

/// Runs `setup` in the child of the PTY `command` before `exec` (after it became the leader
/// of its session), after giving every signal its default disposition like
/// [`default_signals_pty`]: a `pty_process::Command` keeps only its last `pre_exec` closure,
/// so this one does both.
pub(crate) fn install_pty(
    command: pty_process::Command,
    mut setup: ChildSetup,
) -> pty_process::Command {
    // SAFETY: see the module documentation: the closure only makes system calls.
    unsafe {
        command.pre_exec(move || {
            default_signals();
            setup.run()
        })
    }
}

/// Gives every signal its default disposition in the child of the PTY `command` before
/// `exec`: a signal the host ignores (`SIG_IGN` survives `exec`; a host started in the
/// background by a non-interactive shell ignores `SIGINT` and `SIGQUIT`) is not ignored by
/// the terminal's program, so Ctrl-C interrupts it. Handlers are reset by `exec` anyway and
/// `std` already clears the signal mask; `SIGKILL` and `SIGSTOP` cannot be changed and the
/// numbers the C library reserves are refused — both are skipped. A `pty_process::Command`
/// keeps only its last `pre_exec` closure: [`crate::JobSandbox::confine_pty`] (which does
/// the same) replaces this one.
pub fn default_signals_pty(command: pty_process::Command) -> pty_process::Command {
    // SAFETY: see the module documentation: the closure only calls `sigaction`.
    unsafe {
        command.pre_exec(|| {
            default_signals();
            Ok(())
        })
    }
}

fn default_signals() {
    for signal in 1..=64 {
        if signal != libc::SIGKILL && signal != libc::SIGSTOP {
            // SAFETY: `signal` only changes a disposition.
            unsafe {
                libc::signal(signal, libc::SIG_DFL);
            }
        }
    }
}
