//! The PID namespace of a job. `unshare(CLONE_NEWPID)` puts only the caller's *children*
//! in the new namespace, so the process `std` started (the *outer* one, the pid the host
//! knows) forks twice without returning from `pre_exec`:
//!
//! - the outer process stays in the host's namespace: it closes every descriptor (the exec
//!   error pipe of `std` included, so the spawn completes when the shell is executed),
//!   ignores the signals a stop sends (so it does not end before the shell), waits for the
//!   shell's status and then ends the same way (same exit code, or raises the same signal),
//!   so the host sees exactly what it would see of the shell itself;
//! - pid 1 of the namespace (the *init*) joins the job's cgroups, mounts the job's `/proc`,
//!   forks the shell, closes every descriptor, reports the shell's status to the outer
//!   process and reaps whatever the job leaves behind until nothing is left, then ends
//!   (which is also when the kernel would kill what is left, so a finished job's background
//!   processes live on until the host stops them). It has no signal handler, so the kernel
//!   delivers it only `SIGKILL` and `SIGSTOP` from outside and nothing from inside;
//!   `SIGKILL` ends the whole namespace;
//! - pid 2, the job's shell, returns from `pre_exec` and goes on like a job without the
//!   namespace (Landlock there, so the init, outside its Landlock domain, cannot be traced
//!   or read through `/proc/1/{mem,environ,root}`).
//!
//! The init and the outer process never `exec`: they are copies of the host. The init
//! clears its copy of the host's command line and environment strings (they are what
//! `/proc/1/cmdline` and `environ` show) and makes itself non-dumpable.

use std::ffi::CString;
use std::io;

use super::{Mounts, write_file};

/// What the two extra processes need, prepared in the parent.
pub(crate) struct Init {
    /// `cgroup.procs` files the init writes `0` to (itself): the job's cgroup v2, then
    /// its v1 limit folders, so everything of the job is born inside them.
    pub(crate) cgroup_procs: Vec<CString>,
    /// The host's command line and environment strings (`arg_start..arg_end`,
    /// `env_start..env_end` of `/proc/self/stat`), cleared in the init's copy.
    pub(crate) strings: [(usize, usize); 2],
}

/// The ranges of this process's command line and environment strings (fields 48 to 51 of
/// `/proc/self/stat`); empty ranges when unknown.
pub(crate) fn own_strings() -> [(usize, usize); 2] {
    static STRINGS: std::sync::OnceLock<[(usize, usize); 2]> = std::sync::OnceLock::new();
    *STRINGS.get_or_init(|| {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let fields: Vec<usize> = after
            .split_whitespace()
            // Field 3 (the state) is the first after the name; fields 48..=51 follow.
            .skip(45)
            .take(4)
            .filter_map(|f| f.parse().ok())
            .collect();
        match fields[..] {
            [a, b, c, d] if a <= b && c <= d => [(a, b), (c, d)],
            _ => [(0, 0), (0, 0)],
        }
    })
}

const MAX_SIGNAL: usize = 64;

impl Init {
    /// In the outer process, after the `unshare`: returns only in the job's shell (pid 2),
    /// or with an error before anything was forked (reported by `std` to the spawn). A
    /// failure in the init before the shell exists is reported the same way (the init is a
    /// copy of the `std` child with the exec error pipe still open).
    pub(crate) fn start(&self, mounts: Option<&Mounts>) -> io::Result<()> {
        let ignored = ignore_signals();
        let (read, write) = status_pipe()?;
        match fork()? {
            0 => {}
            init => outer(read, init),
        }
        // The init (pid 1).
        restore_signals(&ignored);
        // SAFETY: plain `prctl` calls.
        unsafe {
            libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        }
        for (start, end) in self.strings {
            if start < end {
                // SAFETY: the host's own argument and environment strings, mapped and
                // writable in this copy of it; nothing of this process reads them again.
                unsafe { std::ptr::write_bytes(start as *mut u8, 0, end - start) };
            }
        }
        for procs in &self.cgroup_procs {
            write_file(procs, b"0")?;
        }
        if let Some(mounts) = mounts {
            mounts.apply(true)?;
        }
        match fork()? {
            0 => {
                // The shell (pid 2): the status pipe closes at `exec`.
                close(read);
                Ok(())
            }
            shell => reap(write, shell),
        }
    }
}

/// Ignores every signal that can be ignored, except `SIGCHLD` (set to its default, so
/// `wait4` keeps working); returns which ones the host ignored.
fn ignore_signals() -> [bool; MAX_SIGNAL + 1] {
    let mut ignored = [false; MAX_SIGNAL + 1];
    for (signal, was) in ignored.iter_mut().enumerate().skip(1) {
        let signal = signal as libc::c_int;
        if signal == libc::SIGKILL || signal == libc::SIGSTOP {
            continue;
        }
        let set = if signal == libc::SIGCHLD {
            libc::SIG_DFL
        } else {
            libc::SIG_IGN
        };
        // SAFETY: `sigaction` on zeroed structures of the C library's layout.
        unsafe {
            let mut new: libc::sigaction = std::mem::zeroed();
            new.sa_sigaction = set;
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, &new, &mut old) == 0 {
                *was = old.sa_sigaction == libc::SIG_IGN;
            }
        }
    }
    ignored
}

/// Every signal back to its default, except those the host ignored (an ignored signal
/// stays ignored across `exec`, as it would without the namespace); the host's handlers
/// are never run by a copy of it.
fn restore_signals(ignored: &[bool; MAX_SIGNAL + 1]) {
    for (signal, was) in ignored.iter().enumerate().skip(1) {
        let signal = signal as libc::c_int;
        let set = if *was && signal != libc::SIGCHLD {
            libc::SIG_IGN
        } else {
            libc::SIG_DFL
        };
        // SAFETY: `signal` only changes the disposition (numbers it refuses are skipped).
        unsafe {
            libc::signal(signal, set);
        }
    }
}

fn status_pipe() -> io::Result<(libc::c_int, libc::c_int)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `pipe2` writes two descriptors into the array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((fds[0], fds[1]))
}

/// A fork through the raw `clone` system call (no `atfork` handler, no lock of the C
/// library): 0 in the child, the child's pid in the parent.
fn fork() -> io::Result<libc::pid_t> {
    // SAFETY: `clone` with only the exit signal and no new stack behaves like `fork`; the
    // child goes on with a copy of this (single-threaded) process.
    let pid = unsafe { libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_long, 0, 0, 0, 0) };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(pid as libc::pid_t)
}

fn close(fd: libc::c_int) {
    // SAFETY: closes a descriptor this process owns.
    unsafe {
        libc::close(fd);
    }
}

/// Closes every descriptor but `keep`.
fn close_all_but(keep: libc::c_int) {
    let keep = keep as libc::c_uint;
    // SAFETY: `close_range` only closes this process's descriptors; none is used again.
    unsafe {
        if keep > 0 {
            libc::syscall(libc::SYS_close_range, 0, keep - 1, 0);
        }
        libc::syscall(libc::SYS_close_range, keep + 1, libc::c_uint::MAX, 0);
    }
}

/// The outer process: waits for the shell's status from the init and ends the same way
/// (after the init, when the init says it ends too, so no process of the job outlives the
/// status the host sees unless the job left some behind).
fn outer(read: libc::c_int, init: libc::pid_t) -> ! {
    close_all_but(read);
    let mut report = [0u8; 5];
    let mut got = 0;
    while got < report.len() {
        // SAFETY: reads into the rest of a buffer on the stack.
        let n = unsafe { libc::read(read, report[got..].as_mut_ptr().cast(), report.len() - got) };
        if n <= 0 {
            break;
        }
        got += n as usize;
    }
    let mut status = i32::from_ne_bytes([report[0], report[1], report[2], report[3]]);
    if got < report.len() || report[4] == 1 {
        // The init ends now (nothing left), or ended without a report (killed): wait for
        // it; without a report, end as it did.
        let mut init_status = 0;
        // SAFETY: waits for this process's own child.
        unsafe {
            libc::waitpid(init, &mut init_status, 0);
        }
        if got < report.len() {
            status = init_status;
        }
    }
    end_like(status)
}

/// Ends this process the way `status` (a `wait` status) says its process ended.
fn end_like(status: libc::c_int) -> ! {
    // SAFETY: `setrlimit`, `signal`, `kill` and `_exit` on this process only.
    unsafe {
        if libc::WIFSIGNALED(status) {
            let signal = libc::WTERMSIG(status);
            // No core file of this copy of the host.
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            libc::signal(signal, libc::SIG_DFL);
            libc::kill(libc::getpid(), signal);
            libc::_exit(128 + signal);
        }
        if libc::WIFEXITED(status) {
            libc::_exit(libc::WEXITSTATUS(status));
        }
        libc::_exit(255)
    }
}

/// The init after the fork of the shell: reports its status (and whether anything else is
/// left), reaps everything else, ends when the namespace has no other process.
fn reap(write: libc::c_int, shell: libc::pid_t) -> ! {
    close_all_but(write);
    let mut report = Some(write);
    loop {
        let mut status = 0;
        // SAFETY: waits for any child of this process.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid == shell
            && let Some(fd) = report.take()
        {
            let last = loop {
                let mut other = 0;
                // SAFETY: reaps children that already ended, without blocking.
                match unsafe { libc::waitpid(-1, &mut other, libc::WNOHANG) } {
                    0 => break false,
                    reaped if reaped > 0 => continue,
                    _ => break true,
                }
            };
            let bytes = status.to_ne_bytes();
            let message = [bytes[0], bytes[1], bytes[2], bytes[3], u8::from(last)];
            // SAFETY: writes five bytes from the stack (a pipe write this small is atomic),
            // then ends or closes the descriptor.
            unsafe {
                libc::write(fd, message.as_ptr().cast(), message.len());
                if last {
                    libc::_exit(0);
                }
            }
            close(fd);
        }
        if pid < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            // SAFETY: ends this process.
            unsafe { libc::_exit(0) }
        }
    }
}
