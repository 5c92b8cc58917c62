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
//! Every way in (parse, resolve beneath the root, open, check, read, write,
//! limits) is in this file, to be read together to see that none leads
//! outside; the system calls it is made of are in `fs_syscalls`.
//!
//! Symlinks that stay inside the root by a relative target are followed;
//! absolute ones are refused (RESOLVE_BENEATH does not know the root's path),
//! even when they point inside.
//!
//! [`FsScope::serve`] runs the work on tokio's blocking pool with a time
//! limit, never on the connection's reader task: a file on a hung network
//! mount costs the agent one request, not its connection.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::fs_syscalls::{
    c_path, chmod_fd, fstat, in_groups, is_kind, lstat_at, make_dir_at, open_beneath, readlink_at,
    remove_dir_at, replace, unlink_at,
};

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
        self.write_bytes(path, content.as_bytes())
    }

    /// [`FsScope::write`] of any bytes (a checkpoint's revert writes back
    /// what a file held, text or not).
    pub fn write_bytes(&self, path: &Path, content: &[u8]) -> Result<(), FsError> {
        self.write_bytes_mode(path, content, None)
    }

    /// [`FsScope::write_bytes`]; a file made anew gets `new_mode` (else
    /// 0o666 under the umask). A file replaced keeps its own.
    pub fn write_bytes_mode(
        &self,
        path: &Path,
        content: &[u8],
        new_mode: Option<u32>,
    ) -> Result<(), FsError> {
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
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => new_mode,
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
            return replace(&dir, name, mode, content).map_err(|e| Self::io(path, e));
        }
        Err(Self::io(path, io::Error::from_raw_os_error(libc::ELOOP)))
    }

    /// Removes a file (or a link: never what it points to) beneath the
    /// root; one that is not there already is no error.
    pub fn remove(&self, path: &Path) -> Result<(), FsError> {
        let (root, rel) = self.beneath(path)?;
        let Some((parent, name)) = split(&rel) else {
            return Err(FsError::NotRegular(path.display().to_string()));
        };
        let dir = match open_beneath(root.as_raw_fd(), parent, libc::O_PATH | libc::O_DIRECTORY, 0) {
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(()),
            other => other.map_err(|e| self.fail(path, e))?,
        };
        match lstat_at(&dir, name) {
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(()),
            Err(e) => return Err(Self::io(path, e)),
            Ok(st) if is_kind(&st, libc::S_IFDIR) => {
                return Err(FsError::NotRegular(path.display().to_string()))
            }
            Ok(_) => {}
        }
        unlink_at(&dir, name).map_err(|e| Self::io(path, e))
    }

    /// Removes an empty directory beneath the root (a revert that puts a
    /// file back where the turn made a folder); one that is not there is
    /// no error, one that is not empty is.
    pub fn remove_empty_dir(&self, path: &Path) -> Result<(), FsError> {
        let (root, rel) = self.beneath(path)?;
        let Some((parent, name)) = split(&rel) else {
            return Err(FsError::NotRegular(path.display().to_string()));
        };
        let dir = match open_beneath(root.as_raw_fd(), parent, libc::O_PATH | libc::O_DIRECTORY, 0) {
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(()),
            other => other.map_err(|e| self.fail(path, e))?,
        };
        match lstat_at(&dir, name) {
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(()),
            Err(e) => Err(Self::io(path, e)),
            Ok(st) if !is_kind(&st, libc::S_IFDIR) => Err(FsError::NotRegular(path.display().to_string())),
            Ok(_) => remove_dir_at(&dir, name).map_err(|e| Self::io(path, e)),
        }
    }

    /// Sets a regular file's permission bits, beneath the root and never
    /// through a link (a revert of a mode-only change).
    pub fn set_mode(&self, path: &Path, mode: u32) -> Result<(), FsError> {
        let (root, rel) = self.beneath(path)?;
        let fd = open_beneath(
            root.as_raw_fd(),
            &rel,
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK,
            0,
        )
        .map_err(|e| self.fail(path, e))?;
        let st = fstat(&fd).map_err(|e| Self::io(path, e))?;
        Self::check_file(path, &st)?;
        chmod_fd(&fd, mode & 0o7777).map_err(|e| Self::io(path, e))
    }

    /// Makes the directories leading to `path` that are missing, each
    /// beneath the root.
    pub fn make_parents(&self, path: &Path) -> Result<(), FsError> {
        let (root, rel) = self.beneath(path)?;
        let Some(parent) = rel.parent() else { return Ok(()) };
        let mut sofar = PathBuf::new();
        for part in parent.components() {
            let Component::Normal(name) = part else {
                return Err(self.outside(path));
            };
            let dir = open_beneath(root.as_raw_fd(), &sofar, libc::O_PATH | libc::O_DIRECTORY, 0)
                .map_err(|e| self.fail(path, e))?;
            match make_dir_at(&dir, name) {
                Err(e) if e.raw_os_error() != Some(libc::EEXIST) => return Err(Self::io(path, e)),
                _ => {}
            }
            sofar.push(name);
        }
        Ok(())
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

#[cfg(test)]
#[path = "fs_tests.rs"]
mod tests;
