//! The system calls the `fs/*` boundary ([`super::fs`]) is made of, so that
//! no path is looked up twice: `openat2` resolving beneath a directory fd,
//! `fstatat` and `readlinkat` relative to one, `fstat`, the atomic replace
//! of a file inside a directory fd (a temp file, then `renameat`), and this
//! process's groups. What is inside the root, and what may be read or
//! written, is decided in `fs`, not here.

use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Retries `f` while it fails with EINTR, or with EAGAIN, which openat2 with
/// RESOLVE_BENEATH returns when a rename raced a `..` in the lookup (the
/// kernel then cannot prove the result is beneath). A few tries, not forever:
/// an agent renaming in a loop must not pin a thread.
fn retrying<T>(mut f: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    let mut last = io::Error::from_raw_os_error(libc::EAGAIN);
    for _ in 0..64 {
        match f() {
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EAGAIN)) => last = e,
            other => return other,
        }
    }
    Err(last)
}

pub(super) fn c_path(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// `openat2(dir, path, flags, mode)` resolving beneath `dir` only. Magic
/// links (/proc/self/fd/N) are refused too: they jump anywhere.
pub(super) fn open_beneath(dir: RawFd, path: &Path, flags: libc::c_int, mode: u32) -> io::Result<OwnedFd> {
    let path = if path.as_os_str().is_empty() {
        Path::new(".")
    } else {
        path
    };
    let c = c_path(path)?;
    // SAFETY: `open_how` is a plain C struct (libc marks it non-exhaustive);
    // all zeroes is its default, and unknown fields must stay zero.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_CLOEXEC) as u64;
    how.mode = u64::from(mode);
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;
    retrying(|| {
        // SAFETY: `c` and `how` are valid for the call and the size passed is
        // that of `how`; the kernel writes nothing back.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                dir,
                c.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        if fd < 0 {
            let e = io::Error::last_os_error();
            // Fail closed on a kernel (or a sandbox) without openat2: there
            // is no other race-free way to stay below the root.
            return Err(match e.raw_os_error() {
                Some(libc::ENOSYS) => io::Error::other("openat2 is not available (Linux 5.6 or later)"),
                _ => e,
            });
        }
        // SAFETY: the kernel just returned this fd to us; nothing else owns it.
        Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
    })
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`.
pub(super) fn lstat_at(dir: &OwnedFd, name: &OsStr) -> io::Result<libc::stat> {
    let c = c_path(Path::new(name))?;
    // SAFETY: an all-zero `stat` is a valid value of this plain C struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    retrying(|| {
        // SAFETY: `c` and `st` are valid for the call; `dir` is an open fd.
        let r = unsafe { libc::fstatat(dir.as_raw_fd(), c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    })?;
    Ok(st)
}

pub(super) fn fstat(fd: &impl AsRawFd) -> io::Result<libc::stat> {
    // SAFETY: an all-zero `stat` is a valid value of this plain C struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is valid for the call; the fd is open.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } == 0 {
        Ok(st)
    } else {
        Err(io::Error::last_os_error())
    }
}

pub(super) fn readlink_at(dir: &OwnedFd, name: &OsStr) -> io::Result<PathBuf> {
    let c = c_path(Path::new(name))?;
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: `buf` is valid for `buf.len()` bytes; `c` is a valid path.
    let n = unsafe { libc::readlinkat(dir.as_raw_fd(), c.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    let n = usize::try_from(n).map_err(|_| io::Error::last_os_error())?;
    buf.truncate(n);
    Ok(PathBuf::from(OsString::from_vec(buf)))
}

/// `unlinkat` of a name (not a directory) in a directory fd.
pub(super) fn unlink_at(dir: &OwnedFd, name: &OsStr) -> io::Result<()> {
    let name = c_path(Path::new(name))?;
    // SAFETY: `name` is a valid path; `dir` is an open directory fd.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `unlinkat(AT_REMOVEDIR)`: an empty directory in a directory fd.
pub(super) fn remove_dir_at(dir: &OwnedFd, name: &OsStr) -> io::Result<()> {
    let name = c_path(Path::new(name))?;
    // SAFETY: `name` is a valid path; `dir` is an open directory fd.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), libc::AT_REMOVEDIR) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `fchmod` of an open file.
pub(super) fn chmod_fd(fd: &impl AsRawFd, mode: u32) -> io::Result<()> {
    // SAFETY: the fd is open; fchmod has no other precondition.
    if unsafe { libc::fchmod(fd.as_raw_fd(), mode as libc::mode_t) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `mkdirat` of a name in a directory fd, mode 0o777 under the umask.
pub(super) fn make_dir_at(dir: &OwnedFd, name: &OsStr) -> io::Result<()> {
    let name = c_path(Path::new(name))?;
    // SAFETY: `name` is a valid path; `dir` is an open directory fd.
    if unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), 0o777) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

pub(super) fn is_kind(st: &libc::stat, kind: libc::mode_t) -> bool {
    st.st_mode & libc::S_IFMT == kind
}

/// Writes `bytes` to a new temp file in `dir`, then renames it over
/// `name`, all relative to `dir`: nothing is looked up by path again.
/// `mode` is that of the file replaced; setuid and setgid are not kept
/// (writing into such a file clears them too).
pub(super) fn replace(dir: &OwnedFd, name: &OsStr, mode: Option<u32>, bytes: &[u8]) -> io::Result<()> {
    // Two writes at once (two requests, two agents) must not share a temp
    // file, so the name carries a counter besides the process id.
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    let tmp = PathBuf::from(format!(
        ".parley-{}-{}.tmp",
        std::process::id(),
        SEQUENCE.fetch_add(1, Ordering::Relaxed)
    ));
    let tmp_c = c_path(&tmp)?;
    let name_c = c_path(Path::new(name))?;
    // O_EXCL never opens what is already there (a link planted at the
    // temp name). Replacing a file, the temp file is owner-only until it
    // has that file's mode; a new one gets 0o666 under the umask.
    let create_mode: libc::c_uint = if mode.is_some() { 0o600 } else { 0o666 };
    let fd = retrying(|| {
        // SAFETY: `tmp_c` is a valid path; `dir` is an open directory fd.
        let fd = unsafe {
            libc::openat(
                dir.as_raw_fd(),
                tmp_c.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                create_mode,
            )
        };
        if fd < 0 {
            Err(io::Error::last_os_error())
        } else {
            // SAFETY: a fresh fd owned by nothing else.
            Ok(unsafe { OwnedFd::from_raw_fd(fd) })
        }
    })?;
    let mut file = File::from(fd);
    let written = (|| {
        file.write_all(bytes)?;
        if let Some(mode) = mode {
            file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        file.sync_all()?;
        // SAFETY: both names are valid paths; `dir` is an open directory fd.
        let r = unsafe { libc::renameat(dir.as_raw_fd(), tmp_c.as_ptr(), dir.as_raw_fd(), name_c.as_ptr()) };
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    })();
    match written {
        Ok(()) => {
            // The rename is durable once the directory is; a failure here
            // leaves a written file, so it is not worth an error.
            // SAFETY: `dir` is an open fd.
            unsafe { libc::fsync(dir.as_raw_fd()) };
            Ok(())
        }
        Err(e) => {
            // SAFETY: `tmp_c` is a valid path; `dir` is an open directory fd.
            unsafe { libc::unlinkat(dir.as_raw_fd(), tmp_c.as_ptr(), 0) };
            Err(e)
        }
    }
}

/// Whether `gid` is one of this process's supplementary groups.
pub(super) fn in_groups(gid: libc::gid_t) -> bool {
    // SAFETY: with a size of 0, getgroups only counts and writes nothing.
    let n = unsafe { libc::getgroups(0, std::ptr::null_mut()) };
    let Ok(len) = usize::try_from(n) else {
        return false;
    };
    let mut groups = vec![0 as libc::gid_t; len];
    // SAFETY: `groups` has room for `n` entries.
    let n = unsafe { libc::getgroups(n, groups.as_mut_ptr()) };
    let Ok(len) = usize::try_from(n) else {
        return false;
    };
    groups[..len.min(groups.len())].contains(&gid)
}
