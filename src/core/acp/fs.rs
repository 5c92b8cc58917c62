//! The `fs/read_text_file` and `fs/write_text_file` client capability,
//! confined to the agent's working directory.
//!
//! Agents are untrusted, and they can change their working directory while
//! Parley works in it. So a path is never checked first and opened later:
//! every lookup is one `openat2(RESOLVE_BENEATH)` relative to a directory fd
//! held for the root, which the kernel refuses to resolve anywhere outside it
//! (through `..`, an absolute symlink, or a directory swapped for a symlink
//! mid-request). Writes make their temp file and rename it inside a directory
//! fd opened the same way. Only regular files are read or written; reads are
//! capped so that their answer fits in one protocol line.
//!
//! Why one file of some 650 lines: it is one boundary, and every way in
//! (parse, resolve beneath the root, open, check, read, write, limits) must
//! be read together to see that none leads outside.
//!
//! Symlinks that stay inside the root by a relative target are followed;
//! absolute ones are refused (RESOLVE_BENEATH does not know the root's path),
//! even when they point inside.
//!
//! [`FsScope::serve`] runs the work on tokio's blocking pool with a time
//! limit, never on the connection's reader task: a file on a hung network
//! mount costs the agent one request, not its connection.

use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

/// The most a read answers with, counted as the JSON string it becomes
/// (escapes included): one protocol line ([`super::MAX_LINE_BYTES`]) less
/// 64 KiB for the rest of the response around it.
pub const MAX_READ_BYTES: usize = super::MAX_LINE_BYTES - 64 * 1024;

/// How long one `fs/*` request may take before it is answered with an error.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// How many `fs/*` requests of one agent may be under way at once. A request
/// stuck in the kernel (a hung network mount) keeps its blocking thread after
/// it timed out; this bounds how many threads one agent can strand that way.
const MAX_IN_FLIGHT: usize = 16;

/// How many bytes one agent's reads under way may hold at once. With 16
/// requests in flight and 32 MiB each, memory would otherwise reach half a
/// GiB before a single answer is written.
const READ_BUDGET: usize = 64 << 20;

/// Symlinks followed while resolving a write's target, as the kernel does
/// (`MAXSYMLINKS` is 40 on Linux).
const MAX_LINKS: usize = 40;

/// Why a request was refused. The message is the JSON-RPC error the agent
/// gets (and the line in its log), so it stays in the protocol's English.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FsError {
    #[error("{0}: the path must be absolute")]
    NotAbsolute(String),
    #[error("{path}: outside the agent's working directory {root}")]
    Outside { path: String, root: String },
    #[error("{0}: not a regular file")]
    NotRegular(String),
    #[error("{0}: has other hard links and belongs to another user")]
    HardLinked(String),
    #[error(
        "{path}: larger than {cap} bytes, the most one answer carries (counted as JSON text); \
         read it in parts with line and limit"
    )]
    TooLarge { path: String, cap: usize },
    #[error("{0}: not UTF-8 text")]
    NotUtf8(String),
    #[error("{path}: the file operation took longer than {seconds} s and was abandoned")]
    TimedOut { path: String, seconds: u64 },
    #[error("{0}: too many file requests at once")]
    Busy(String),
    #[error("{0}: too much is being read at once; ask again when earlier reads are answered")]
    OverBudget(String),
    #[error("{path}: {message}")]
    Io { path: String, message: String },
}

/// One `fs/*` request, parsed.
#[derive(Debug, Clone)]
pub enum FsRequest {
    Read {
        path: PathBuf,
        line: Option<u32>,
        limit: Option<u32>,
    },
    Write {
        path: PathBuf,
        content: String,
    },
}

impl FsRequest {
    /// Parses the params of `fs/read_text_file` (or, for any other method,
    /// `fs/write_text_file`) with the protocol's own types.
    pub fn parse(method: &str, params: &str) -> Result<Self, serde_json::Error> {
        use agent_client_protocol_schema::v1 as schema;
        if method == "fs/read_text_file" {
            let req: schema::ReadTextFileRequest = serde_json::from_str(params)?;
            Ok(FsRequest::Read {
                path: req.path,
                line: req.line,
                limit: req.limit,
            })
        } else {
            let req: schema::WriteTextFileRequest = serde_json::from_str(params)?;
            Ok(FsRequest::Write {
                path: req.path,
                content: req.content,
            })
        }
    }

    pub fn path(&self) -> &Path {
        match self {
            FsRequest::Read { path, .. } | FsRequest::Write { path, .. } => path,
        }
    }
}

/// The directory an agent may read and write below.
#[derive(Debug, Clone)]
pub struct FsScope {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// The root as the kernel resolved it when it was opened.
    root: PathBuf,
    /// The root as configured (the agent knows its cwd by this name).
    given: PathBuf,
    /// `None` when the root could not be opened: then nothing is inside.
    dir: Option<OwnedFd>,
    in_flight: AtomicUsize,
    /// Bytes the reads under way may hold (see [`READ_BUDGET`]).
    reading: AtomicUsize,
}

/// Holds a share of the [`READ_BUDGET`] until dropped.
struct Reserved<'a>(&'a Inner, usize);

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        self.0.reading.fetch_sub(self.1, Ordering::AcqRel);
    }
}

/// Holds one of the [`MAX_IN_FLIGHT`] places until dropped.
struct Admitted(Arc<Inner>);

impl Drop for Admitted {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

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

fn c_path(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// `openat2(dir, path, flags, mode)` resolving beneath `dir` only. Magic
/// links (/proc/self/fd/N) are refused too: they jump anywhere.
fn open_beneath(dir: RawFd, path: &Path, flags: libc::c_int, mode: u32) -> io::Result<OwnedFd> {
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
fn lstat_at(dir: &OwnedFd, name: &OsStr) -> io::Result<libc::stat> {
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

fn fstat(fd: &impl AsRawFd) -> io::Result<libc::stat> {
    // SAFETY: an all-zero `stat` is a valid value of this plain C struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is valid for the call; the fd is open.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } == 0 {
        Ok(st)
    } else {
        Err(io::Error::last_os_error())
    }
}

fn readlink_at(dir: &OwnedFd, name: &OsStr) -> io::Result<PathBuf> {
    let c = c_path(Path::new(name))?;
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: `buf` is valid for `buf.len()` bytes; `c` is a valid path.
    let n = unsafe { libc::readlinkat(dir.as_raw_fd(), c.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    let n = usize::try_from(n).map_err(|_| io::Error::last_os_error())?;
    buf.truncate(n);
    Ok(PathBuf::from(OsString::from_vec(buf)))
}

fn is_kind(st: &libc::stat, kind: libc::mode_t) -> bool {
    st.st_mode & libc::S_IFMT == kind
}

/// Splits a path below the root into its directory and a final name that
/// is a plain name (not `.`, `..` or nothing).
fn split(rel: &Path) -> Option<(&Path, &OsStr)> {
    match rel.components().next_back() {
        Some(Component::Normal(name)) => Some((rel.parent().unwrap_or(Path::new("")), name)),
        _ => None,
    }
}

/// How long `bytes` are as the inside of a JSON string, as serde_json
/// writes it: `"` `\` and the short escapes take two bytes, other control
/// characters six (`\u001f`), everything else (UTF-8 too) itself.
fn json_len(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .map(|&b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..=0x1f => 6,
            _ => 1,
        })
        .sum()
}

impl FsScope {
    /// Opens `root` once and holds it: what is inside is decided against
    /// that directory, whatever its path later names. A root that cannot be
    /// opened confines to nothing at all.
    pub fn new(root: &Path) -> Self {
        let dir = c_path(root).ok().and_then(|c| {
            // SAFETY: `c` is a valid path; the fd returned is ours alone.
            let fd = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) };
            // SAFETY: as above, a fresh fd owned by nothing else.
            (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
        });
        // The name of the directory actually held, should `root` have changed
        // between the open and now.
        let resolved = dir
            .as_ref()
            .and_then(|d| std::fs::read_link(format!("/proc/self/fd/{}", d.as_raw_fd())).ok())
            .filter(|p| p.is_absolute())
            .or_else(|| root.canonicalize().ok());
        let root_path = resolved.unwrap_or_else(|| PathBuf::from("/nonexistent/parley-no-root"));
        FsScope {
            inner: Arc::new(Inner {
                given: if root.is_absolute() {
                    root.to_path_buf()
                } else {
                    root_path.clone()
                },
                root: root_path,
                dir,
                in_flight: AtomicUsize::new(0),
                reading: AtomicUsize::new(0),
            }),
        }
    }

    fn io(path: &Path, e: io::Error) -> FsError {
        FsError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        }
    }

    fn outside(&self, path: &Path) -> FsError {
        FsError::Outside {
            path: path.display().to_string(),
            root: self.inner.root.display().to_string(),
        }
    }

    /// An error of a lookup beneath the root: EXDEV is the kernel saying
    /// the path led outside.
    fn fail(&self, path: &Path, e: io::Error) -> FsError {
        if e.raw_os_error() == Some(libc::EXDEV) {
            self.outside(path)
        } else {
            Self::io(path, e)
        }
    }

    /// The root's fd and `path` made relative to it. The agent names files
    /// by absolute paths under its cwd (by the configured name or the
    /// resolved one); this only strips that prefix, by whole components. What
    /// is left (`..` included) is resolved by the kernel, beneath the fd.
    fn beneath<'a>(&'a self, path: &Path) -> Result<(&'a OwnedFd, PathBuf), FsError> {
        if !path.is_absolute() {
            return Err(FsError::NotAbsolute(path.display().to_string()));
        }
        let Some(dir) = &self.inner.dir else {
            return Err(self.outside(path));
        };
        [&self.inner.root, &self.inner.given]
            .into_iter()
            .find_map(|root| path.strip_prefix(root).ok())
            .map(|rel| (dir, rel.to_path_buf()))
            .ok_or_else(|| self.outside(path))
    }

    /// Refuses what is not a regular file, and a second name for somebody
    /// else's file: an agent that hard-links a file it may not read into its
    /// cwd (where `protected_hardlinks` is off) must not read it through us.
    fn check_file(path: &Path, st: &libc::stat) -> Result<(), FsError> {
        if !is_kind(st, libc::S_IFREG) {
            return Err(FsError::NotRegular(path.display().to_string()));
        }
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        if st.st_nlink > 1 && st.st_uid != me {
            return Err(FsError::HardLinked(path.display().to_string()));
        }
        Ok(())
    }

    /// Reads a text file; `line` is 1-based, `limit` counts lines. Only the
    /// lines asked for are kept, read as they come; past [`MAX_READ_BYTES`]
    /// of answer the read stops with [`FsError::TooLarge`]. Invalid UTF-8 is
    /// an error, not replaced: an agent that edits what it read must not
    /// write back a file changed in places it never touched.
    pub fn read(&self, path: &Path, line: Option<u32>, limit: Option<u32>) -> Result<String, FsError> {
        let (dir, rel) = self.beneath(path)?;
        // O_NONBLOCK: opening a FIFO (or a device) for reading must not wait
        // for a writer. It changes nothing for the regular files read below.
        let fd = open_beneath(
            dir.as_raw_fd(),
            &rel,
            libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY,
            0,
        )
        .map_err(|e| self.fail(path, e))?;
        let st = fstat(&fd).map_err(|e| Self::io(path, e))?;
        Self::check_file(path, &st)?;
        let too_large = || FsError::TooLarge {
            path: path.display().to_string(),
            cap: MAX_READ_BYTES,
        };
        let fits = usize::try_from(st.st_size).is_ok_and(|s| s <= MAX_READ_BYTES);
        if line.is_none() && limit.is_none() && !fits {
            return Err(too_large());
        }
        let size = usize::try_from(st.st_size).map_or(MAX_READ_BYTES, |s| s.min(MAX_READ_BYTES));
        let _reserved = self.reserve(path, size)?;
        let mut reader = BufReader::with_capacity(64 * 1024, File::from(fd));
        let io = |e| Self::io(path, e);
        let mut skip = line.map_or(0, |l| l.saturating_sub(1));
        while skip > 0 {
            let buf = reader.fill_buf().map_err(io)?;
            if buf.is_empty() {
                break;
            }
            let n = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    skip -= 1;
                    i + 1
                }
                None => buf.len(),
            };
            reader.consume(n);
        }
        let mut take = limit.unwrap_or(u32::MAX);
        let (mut out, mut escaped) = (Vec::new(), 0usize);
        while take > 0 {
            let buf = reader.fill_buf().map_err(io)?;
            if buf.is_empty() {
                break;
            }
            let piece = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    take -= 1;
                    &buf[..=i]
                }
                None => buf,
            };
            escaped += json_len(piece);
            if escaped > MAX_READ_BYTES {
                return Err(too_large());
            }
            out.extend_from_slice(piece);
            let n = piece.len();
            reader.consume(n);
        }
        String::from_utf8(out).map_err(|_| FsError::NotUtf8(path.display().to_string()))
    }

    /// Takes `size` bytes of the [`READ_BUDGET`]; one read alone always fits.
    fn reserve(&self, path: &Path, size: usize) -> Result<Reserved<'_>, FsError> {
        let taken = self.inner.reading.fetch_add(size, Ordering::AcqRel);
        let reserved = Reserved(&self.inner, size);
        if taken > 0 && taken + size > READ_BUDGET {
            return Err(FsError::OverBudget(path.display().to_string()));
        }
        Ok(reserved)
    }

    /// Writes a text file atomically (temp file in the same directory, fsync,
    /// rename), keeping the permissions of a file it replaces. A symlink at
    /// the path is written through (it stays a link) when it stays inside.
    pub fn write(&self, path: &Path, content: &str) -> Result<(), FsError> {
        let (root, mut rel) = self.beneath(path)?;
        for _ in 0..MAX_LINKS {
            let Some((parent, name)) = split(&rel) else {
                // The root itself, or a path ending in `..` or `.`: a
                // directory if it resolves at all.
                open_beneath(root.as_raw_fd(), &rel, libc::O_PATH, 0).map_err(|e| self.fail(path, e))?;
                return Err(FsError::NotRegular(path.display().to_string()));
            };
            // Read access only to fsync it after the rename; a directory we
            // may write but not list is still written into.
            let dir = match open_beneath(root.as_raw_fd(), parent, libc::O_RDONLY | libc::O_DIRECTORY, 0) {
                Err(e) if e.raw_os_error() == Some(libc::EACCES) => {
                    open_beneath(root.as_raw_fd(), parent, libc::O_PATH | libc::O_DIRECTORY, 0)
                }
                other => other,
            }
            .map_err(|e| self.fail(path, e))?;
            let mode = match lstat_at(&dir, name) {
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => None,
                Err(e) => return Err(Self::io(path, e)),
                Ok(st) if is_kind(&st, libc::S_IFLNK) => {
                    let target = readlink_at(&dir, name).map_err(|e| Self::io(path, e))?;
                    if target.is_absolute() {
                        // As RESOLVE_BENEATH refuses them on reads.
                        return Err(self.outside(path));
                    }
                    rel = parent.join(target);
                    continue;
                }
                Ok(st) => {
                    Self::check_file(path, &st)?;
                    Self::check_writable(path, &st)?;
                    Some(st.st_mode & 0o777)
                }
            };
            return Self::replace(&dir, name, mode, content.as_bytes()).map_err(|e| Self::io(path, e));
        }
        Err(Self::io(path, io::Error::from_raw_os_error(libc::ELOOP)))
    }

    /// An atomic replace only needs the directory to be writable, so it would
    /// replace a read-only file without a word. Refuse it as writing into the
    /// file would: EACCES unless the write bit of the class we are in
    /// (owner, group, others) is set. This is a check of the mode bits, not
    /// `access(2)`, so that it holds for root too (root may write anything).
    fn check_writable(path: &Path, st: &libc::stat) -> Result<(), FsError> {
        // SAFETY: geteuid and getegid have no preconditions and cannot fail.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let bit = if st.st_uid == uid {
            libc::S_IWUSR
        } else if st.st_gid == gid || in_groups(st.st_gid) {
            libc::S_IWGRP
        } else {
            libc::S_IWOTH
        };
        if st.st_mode & bit == 0 {
            return Err(Self::io(path, io::Error::from_raw_os_error(libc::EACCES)));
        }
        Ok(())
    }

    /// Writes `bytes` to a new temp file in `dir`, then renames it over
    /// `name`, all relative to `dir`: nothing is looked up by path again.
    /// `mode` is that of the file replaced; setuid and setgid are not kept
    /// (writing into such a file clears them too).
    fn replace(dir: &OwnedFd, name: &OsStr, mode: Option<u32>, bytes: &[u8]) -> io::Result<()> {
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
            let r =
                unsafe { libc::renameat(dir.as_raw_fd(), tmp_c.as_ptr(), dir.as_raw_fd(), name_c.as_ptr()) };
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

    /// Does one request here and now (blocking). See [`FsScope::serve`].
    pub fn handle(&self, req: &FsRequest) -> Result<Value, FsError> {
        match req {
            FsRequest::Read { path, line, limit } => {
                let content = self.read(path, *line, *limit)?;
                Ok(serde_json::json!({ "content": content }))
            }
            FsRequest::Write { path, content } => self.write(path, content).map(|()| Value::Null),
        }
    }

    /// Does one request on tokio's blocking pool, answering within `limit`
    /// whatever the file system does. Call it inside a tokio runtime.
    pub async fn serve(&self, req: FsRequest, limit: Duration) -> Result<Value, FsError> {
        let path = req.path().to_path_buf();
        self.off_runtime(&path, limit, move |scope| scope.handle(&req))
            .await
    }

    async fn off_runtime<T: Send + 'static>(
        &self,
        path: &Path,
        limit: Duration,
        work: impl FnOnce(&FsScope) -> Result<T, FsError> + Send + 'static,
    ) -> Result<T, FsError> {
        let admitted = self.admit(path)?;
        let scope = self.clone();
        let task = tokio::task::spawn_blocking(move || {
            let _admitted = admitted;
            work(&scope)
        });
        match tokio::time::timeout(limit, task).await {
            Ok(Ok(result)) => result,
            Ok(Err(e)) => Err(Self::io(path, io::Error::other(e.to_string()))),
            // The thread goes on until the kernel lets go; its place among
            // the MAX_IN_FLIGHT stays taken until then.
            Err(_) => Err(FsError::TimedOut {
                path: path.display().to_string(),
                seconds: limit.as_secs(),
            }),
        }
    }

    fn admit(&self, path: &Path) -> Result<Admitted, FsError> {
        let before = self.inner.in_flight.fetch_add(1, Ordering::AcqRel);
        let admitted = Admitted(self.inner.clone());
        if before >= MAX_IN_FLIGHT {
            return Err(FsError::Busy(path.display().to_string()));
        }
        Ok(admitted)
    }
}

/// Whether `gid` is one of this process's supplementary groups.
fn in_groups(gid: libc::gid_t) -> bool {
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

#[cfg(test)]
#[path = "fs_tests.rs"]
mod tests;
