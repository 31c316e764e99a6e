//! The job's mount namespace: every mount made private, the hidden paths covered, and (with
//! a PID namespace) a `/proc` and a `/dev/pts` of the job's own.

use std::ffi::{CStr, CString};
use std::io;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

/// The mounts of one job, with every path prepared as a C string in the parent.
pub(crate) struct Mounts {
    /// Folders covered by an empty read-only tmpfs (mode 000).
    pub(crate) folders: Vec<CString>,
    /// Other paths (files, sockets, devices) covered by a read-only bind of `empty`.
    pub(crate) files: Vec<CString>,
    /// Paths bound read-only over themselves (the protected paths), with the flags their
    /// mount already has that a remount must keep (`nosuid`, `nodev`, `noexec`, atime).
    pub(crate) read_only: Vec<(CString, libc::c_ulong)>,
    /// An empty file of this process's (only bound, never written through the cover).
    pub(crate) empty: CString,
    /// The paths as given after resolution (for the summary and the tests).
    pub(crate) hidden: Vec<PathBuf>,
}

fn c_path(path: &Path) -> Result<CString, String> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| format!("sandbox.denyRead: {:?} contains a NUL byte", path.display()))
}

impl Mounts {
    /// Resolves `deny_read` now (links followed, missing paths skipped, paths under another
    /// hidden folder dropped); `empty` is the empty file bound over the hidden non-folders.
    ///
    /// # Errors
    /// A message when a hidden folder would contain `temp` (the job's temporary folder) or
    /// `empty`, or a path is not representable.
    pub(crate) fn prepare(
        deny_read: &[PathBuf],
        read_only: &[PathBuf],
        temp: &Path,
        empty: &Path,
    ) -> Result<Self, String> {
        let mut resolved: Vec<(PathBuf, bool)> = deny_read
            .iter()
            .filter_map(|path| {
                let real = std::fs::canonicalize(path).ok()?;
                let folder = real.is_dir();
                Some((real, folder))
            })
            .collect();
        resolved.sort();
        resolved.dedup();
        let folders_only: Vec<PathBuf> = resolved
            .iter()
            .filter(|(_, folder)| *folder)
            .map(|(path, _)| path.clone())
            .collect();
        resolved.retain(|(path, _)| {
            !folders_only
                .iter()
                .any(|folder| path != folder && path.starts_with(folder))
        });
        for folder in &folders_only {
            if temp.starts_with(folder) || empty.starts_with(folder) {
                return Err(format!(
                    "sandbox.denyRead: {:?} would hide the job's temporary folder",
                    folder.display().to_string()
                ));
            }
        }
        let mut mounts = Self {
            folders: Vec::new(),
            files: Vec::new(),
            read_only: Vec::new(),
            empty: c_path(empty)?,
            hidden: Vec::new(),
        };
        for path in read_only {
            mounts.read_only.push((c_path(path)?, kept_flags(path)));
        }
        for (path, folder) in resolved {
            if folder {
                mounts.folders.push(c_path(&path)?);
            } else {
                mounts.files.push(c_path(&path)?);
            }
            mounts.hidden.push(path);
        }
        Ok(mounts)
    }

    /// In the child: every mount private (nothing propagates either way), the binds over
    /// the hidden non-folders (first, while the empty file is still reachable), the
    /// tmpfs over the hidden folders, `/proc` and `/dev/pts` when `own_proc` (the caller is
    /// in the job's PID namespace), and the working folder entered again through the new mounts (a
    /// working folder inside a hidden one is then refused or empty, not still open).
    pub(crate) fn apply(&self, own_proc: bool) -> io::Result<()> {
        let locked = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
        mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE, None)?;
        for (path, kept) in &self.read_only {
            mount(Some(path), path, None, libc::MS_BIND | libc::MS_REC, None)?;
            let remount = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | kept;
            mount(None, path, None, remount, None)?;
        }
        for file in &self.files {
            mount(Some(&self.empty), file, None, libc::MS_BIND, None)?;
            let remount = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | locked;
            mount(None, file, None, remount, None)?;
        }
        for folder in &self.folders {
            mount(
                Some(c"tmpfs"),
                folder,
                Some(c"tmpfs"),
                libc::MS_RDONLY | locked,
                Some(c"mode=000,size=4k"),
            )?;
        }
        if own_proc {
            mount(Some(c"proc"), c"/proc", Some(c"proc"), locked, None)?;
            // A devpts instance of the job's own: other jobs' terminals are not in it, and
            // the terminals the job opens through /dev/ptmx are made in it.
            mount(
                Some(c"devpts"),
                c"/dev/pts",
                Some(c"devpts"),
                libc::MS_NOSUID | libc::MS_NOEXEC,
                Some(c"newinstance,ptmxmode=0666,mode=0620"),
            )?;
            mount(
                Some(c"/dev/pts/ptmx"),
                c"/dev/ptmx",
                None,
                libc::MS_BIND,
                None,
            )?;
        }
        let mut cwd = [0u8; 4096];
        // SAFETY: the buffer is on the stack and its length is passed.
        let found = unsafe { libc::getcwd(cwd.as_mut_ptr().cast(), cwd.len()) };
        if !found.is_null() {
            // SAFETY: `getcwd` wrote a NUL-terminated path into the buffer.
            if unsafe { libc::chdir(cwd.as_ptr().cast()) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

/// The flags of the mount holding `path` that a read-only remount of a bind must repeat (in
/// a user namespace they are locked, and a remount dropping one is refused).
fn kept_flags(path: &Path) -> libc::c_ulong {
    use rustix::fs::StatVfsMountFlags as F;
    let Ok(stat) = rustix::fs::statvfs(path) else {
        return 0;
    };
    [
        (F::NOSUID, libc::MS_NOSUID),
        (F::NODEV, libc::MS_NODEV),
        (F::NOEXEC, libc::MS_NOEXEC),
        (F::NOATIME, libc::MS_NOATIME),
        (F::NODIRATIME, libc::MS_NODIRATIME),
        (F::RELATIME, libc::MS_RELATIME),
    ]
    .into_iter()
    .filter(|(flag, _)| stat.f_flag.contains(*flag))
    .fold(0, |all, (_, ms)| all | ms)
}

fn mount(
    source: Option<&CStr>,
    target: &CStr,
    kind: Option<&CStr>,
    flags: libc::c_ulong,
    data: Option<&CStr>,
) -> io::Result<()> {
    let ptr = |s: Option<&CStr>| s.map_or(std::ptr::null(), CStr::as_ptr);
    // SAFETY: every pointer is a NUL-terminated string that outlives the call, or null.
    let done = unsafe {
        libc::mount(
            ptr(source),
            target.as_ptr(),
            ptr(kind),
            flags,
            ptr(data).cast(),
        )
    };
    if done == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
