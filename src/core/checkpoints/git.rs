//! Runs the `git` program on a shadow repository: its own `GIT_DIR`, the
//! user's directory as the work tree, and none of the user's settings that
//! would change what git writes or prints (hooks, fsmonitor, colour, line
//! endings). Every run has a time limit.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long one git command may take before it is killed.
pub const TIMEOUT: Duration = Duration::from_secs(120);

/// What a git command left behind when it failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GitError {
    Spawn(String),
    TimedOut {
        command: String,
        seconds: u64,
    },
    Failed {
        command: String,
        code: Option<i32>,
        message: String,
    },
}

impl std::fmt::Display for GitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::i18n::gettext_f;
        let text = match self {
            GitError::Spawn(why) => gettext_f("git could not be started: {error}", &[("error", why)]),
            GitError::TimedOut { command, seconds } => gettext_f(
                "git {command} took longer than {seconds} s and was stopped",
                &[("command", command), ("seconds", &seconds.to_string())],
            ),
            // Git's own words, in the language it speaks here (C).
            GitError::Failed { command, message, .. } => gettext_f(
                "git {command} failed: {error}",
                &[("command", command), ("error", message)],
            ),
        };
        f.write_str(&text)
    }
}

impl std::error::Error for GitError {}

/// A finished command: its exit code (`None`: killed by a signal),
/// standard output and standard error.
pub type Output = (Option<i32>, Vec<u8>, Vec<u8>);

/// One shadow repository and the tree it records.
#[derive(Debug, Clone)]
pub struct Git {
    /// The shadow repository (`GIT_DIR`).
    pub dir: PathBuf,
    /// The work tree: the top of the user's repository, or the root itself.
    pub work: PathBuf,
}

/// Settings that keep git's output as parsed here whatever the user's
/// global configuration says, and keep it from running anything of theirs.
const SETTINGS: &[&str] = &[
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.quotePath=false",
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.symlinks=true",
    "core.untrackedCache=false",
    "core.splitIndex=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "status.relativePaths=false",
    "diff.noprefix=false",
    "diff.mnemonicPrefix=false",
    "diff.suppressBlankEmpty=false",
    "color.ui=false",
];

/// `git`, without whatever `GIT_*` the user's session has: it would point
/// elsewhere (`GIT_DIR`, `GIT_INDEX_FILE`, …).
pub fn bare_command() -> Command {
    let mut cmd = Command::new("git");
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("GIT_") && k != "GIT_EXEC_PATH" {
            cmd.env_remove(&k);
        }
    }
    cmd
}

impl Git {
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = bare_command();
        for s in SETTINGS {
            cmd.args(["-c", s]);
        }
        cmd.args(args)
            .current_dir(&self.work)
            .env("GIT_DIR", &self.dir)
            .env("GIT_WORK_TREE", &self.work)
            .env("GIT_LITERAL_PATHSPECS", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_AUTHOR_NAME", "Parley")
            .env("GIT_AUTHOR_EMAIL", "parley@localhost")
            .env("GIT_COMMITTER_NAME", "Parley")
            .env("GIT_COMMITTER_EMAIL", "parley@localhost")
            .env("LC_ALL", "C");
        cmd
    }

    /// Runs git with `input` on its standard input and answers its output.
    pub fn run(&self, args: &[&str], input: Option<&[u8]>) -> Result<Vec<u8>, GitError> {
        self.run_code(args, input)
            .and_then(|(code, out, err)| match code {
                Some(0) => Ok(out),
                code => Err(failed(args, code, &err)),
            })
    }

    /// Runs git and answers its exit code (`None`: killed by a signal),
    /// standard output and standard error, whatever the code.
    pub fn run_code(&self, args: &[&str], input: Option<&[u8]>) -> Result<Output, GitError> {
        run_with_timeout(self.command(args), args, input, TIMEOUT)
    }

    /// The object id of `rev`, or `None` when it does not exist.
    pub fn resolve(&self, rev: &str) -> Option<String> {
        let out = self
            .run(
                &["rev-parse", "--verify", "--quiet", &format!("{rev}^{{commit}}")],
                None,
            )
            .ok()?;
        let id = String::from_utf8(out).ok()?.trim().to_owned();
        (!id.is_empty()).then_some(id)
    }

    /// The tree of `commit`.
    pub fn resolve_tree(&self, commit: &str) -> Option<String> {
        let out = self
            .run(
                &["rev-parse", "--verify", "--quiet", &format!("{commit}^{{tree}}")],
                None,
            )
            .ok()?;
        let id = String::from_utf8(out).ok()?.trim().to_owned();
        (!id.is_empty()).then_some(id)
    }

    /// The bytes of the blob at `path` in `commit`, or `None` when absent.
    pub fn blob(&self, commit: &str, path: &str) -> Result<Option<Vec<u8>>, GitError> {
        let spec = format!("{commit}:{path}");
        match self.run_code(&["cat-file", "blob", &spec], None)? {
            (Some(0), out, _) => Ok(Some(out)),
            (Some(128), _, _) => Ok(None),
            (code, _, err) => Err(failed(&["cat-file", "blob"], code, &err)),
        }
    }

    /// [`Git::blob`] of a path given as bytes (not necessarily UTF-8).
    pub fn blob_raw(&self, commit: &str, path: &[u8]) -> Result<Option<Vec<u8>>, GitError> {
        use std::os::unix::ffi::OsStringExt;
        let mut spec = format!("{commit}:").into_bytes();
        spec.extend_from_slice(path);
        let mut cmd = self.command(&["cat-file", "blob"]);
        cmd.arg(std::ffi::OsString::from_vec(spec));
        match run_with_timeout(cmd, &["cat-file"], None, TIMEOUT)? {
            (Some(0), out, _) => Ok(Some(out)),
            (Some(128), _, _) => Ok(None),
            (code, _, err) => Err(failed(&["cat-file", "blob"], code, &err)),
        }
    }

    /// Stores what was written to `files` (path, bytes) as blobs and
    /// answers their ids in order: through one process that reads the
    /// files (no filter), or, for a name git's line-reading would change
    /// (a newline, a carriage return), from the bytes themselves.
    pub fn hash_files(&self, files: &[(PathBuf, &[u8])]) -> Result<Vec<String>, GitError> {
        use std::os::unix::ffi::OsStrExt;
        let odd = |p: &PathBuf| {
            p.as_os_str()
                .as_bytes()
                .iter()
                .any(|b| *b == b'\n' || *b == b'\r')
        };
        if files.iter().any(|(p, _)| odd(p)) {
            return files.iter().map(|(_, bytes)| self.hash(bytes)).collect();
        }
        let mut input = Vec::new();
        for (p, _) in files {
            input.extend_from_slice(p.as_os_str().as_bytes());
            input.push(b'\n');
        }
        let out = self.run(
            &["hash-object", "-w", "--no-filters", "--stdin-paths"],
            Some(&input),
        )?;
        Ok(String::from_utf8_lossy(&out).lines().map(str::to_owned).collect())
    }

    /// Stores `bytes` as a blob and answers its id.
    pub fn hash(&self, bytes: &[u8]) -> Result<String, GitError> {
        let out = self.run(&["hash-object", "-w", "--stdin"], Some(bytes))?;
        Ok(String::from_utf8_lossy(&out).trim().to_owned())
    }
}

fn failed(args: &[&str], code: Option<i32>, err: &[u8]) -> GitError {
    let message = String::from_utf8_lossy(err);
    let message = message.trim();
    GitError::Failed {
        command: args.first().copied().unwrap_or("").to_owned(),
        code,
        message: if message.is_empty() {
            format!("exit code {}", code.map_or("none".into(), |c| c.to_string()))
        } else {
            // Git's first line says it; the rest is advice.
            message.lines().take(3).collect::<Vec<_>>().join(" ")
        },
    }
}

/// Runs `cmd`, killing it when it takes longer than `limit`.
pub fn run_with_timeout(
    mut cmd: Command,
    args: &[&str],
    input: Option<&[u8]>,
    limit: Duration,
) -> Result<Output, GitError> {
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| GitError::Spawn(e.to_string()))?;
    let pid = child.id();
    let (done, watch) = mpsc::channel::<()>();
    // The watchdog kills a command that outlives its limit; it stops as
    // soon as `done` is dropped (the command was reaped).
    let (timed_out_tx, timed_out) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        if let Err(mpsc::RecvTimeoutError::Timeout) = watch.recv_timeout(limit) {
            let _ = timed_out_tx.send(());
            // SAFETY: kill(2) on the pid of our child, not yet reaped (the
            // channel would be closed otherwise).
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        }
    });
    let stdin = child.stdin.take();
    let input = input.map(<[u8]>::to_vec);
    let writer = stdin.map(|mut stdin| {
        std::thread::spawn(move || {
            if let Some(bytes) = input {
                let _ = stdin.write_all(&bytes);
            }
        })
    });
    let mut err = Vec::new();
    let mut stderr = child.stderr.take();
    let err_reader = std::thread::spawn(move || {
        if let Some(s) = stderr.as_mut() {
            let _ = s.read_to_end(&mut err);
        }
        err
    });
    let mut out = Vec::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_end(&mut out);
    }
    let status = child.wait().map_err(|e| GitError::Spawn(e.to_string()))?;
    drop(done);
    if let Some(w) = writer {
        let _ = w.join();
    }
    let err = err_reader.join().unwrap_or_default();
    if timed_out.try_recv().is_ok() {
        return Err(GitError::TimedOut {
            command: args.first().copied().unwrap_or("").to_owned(),
            seconds: limit.as_secs(),
        });
    }
    Ok((status.code(), out, err))
}

/// [`available`], asked once.
pub fn available_cached() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(available)
}

/// Whether a `git` program can be run at all.
pub fn available() -> bool {
    Command::new("git")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The most of a repository's own metadata file (`.git` as a file,
/// `commondir`, `info/exclude`) that is read: they are a line or a few
/// hundred, and an agent may have put a FIFO or a 1 GiB sparse file there.
pub const MAX_METADATA_BYTES: u64 = 1 << 20;

/// Reads a small regular file without following a link, without waiting
/// on a FIFO or a device, and only up to `max` bytes; `None` for anything
/// else (absent, not a regular file, larger).
pub fn read_bounded(path: &Path, max: u64) -> Option<Vec<u8>> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > max {
        return None;
    }
    let mut out = Vec::with_capacity(meta.len() as usize);
    (&mut file).take(max + 1).read_to_end(&mut out).ok()?;
    (out.len() as u64 <= max).then_some(out)
}

fn read_text_bounded(path: &Path) -> Option<String> {
    read_bounded(path, MAX_METADATA_BYTES).map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// The top of the git repository `root` is in (the directory holding its
/// `.git`), and where that repository keeps its `info/exclude`.
pub fn enclosing_repository(root: &Path) -> Option<(PathBuf, Option<PathBuf>)> {
    let mut dir = Some(root);
    while let Some(d) = dir {
        let dot = d.join(".git");
        match std::fs::symlink_metadata(&dot) {
            Ok(m) if m.is_dir() => return Some((d.to_owned(), Some(dot.join("info/exclude")))),
            Ok(m) if m.is_file() => {
                // A worktree or submodule: `gitdir: PATH`, and a worktree's
                // `commondir` names the repository that holds `info/`.
                // Both read bounded: the agent may have made them.
                let gitdir = read_text_bounded(&dot).and_then(|t| {
                    let p = PathBuf::from(t.trim().strip_prefix("gitdir:")?.trim());
                    Some(if p.is_absolute() { p } else { d.join(p) })
                });
                let common = gitdir.map(|g| match read_text_bounded(&g.join("commondir")) {
                    Some(c) => {
                        let c = PathBuf::from(c.trim());
                        if c.is_absolute() {
                            c
                        } else {
                            g.join(c)
                        }
                    }
                    None => g,
                });
                return Some((d.to_owned(), common.map(|c| c.join("info/exclude"))));
            }
            _ => dir = d.parent(),
        }
    }
    None
}

/// Many blobs read through one `git cat-file --batch`, rather than a
/// process each (undoing a turn that deleted 5,000 files reads 5,000).
pub struct BlobReader {
    child: std::process::Child,
    /// Dropped once the child is reaped: the watchdog then stops.
    _done: mpsc::Sender<()>,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl BlobReader {
    pub fn new(git: &Git) -> Result<BlobReader, GitError> {
        let mut cmd = git.command(&["cat-file", "--batch"]);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().map_err(|e| GitError::Spawn(e.to_string()))?;
        // As every git command here, it has a time limit: killed after it,
        // a read fails instead of waiting for good.
        let pid = child.id();
        let (done, watch) = mpsc::channel::<()>();
        std::thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = watch.recv_timeout(TIMEOUT) {
                // SAFETY: kill(2) of our child, not yet reaped (`done`
                // is dropped only after it is).
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            }
        });
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(GitError::Spawn("no pipes".into()));
        };
        Ok(BlobReader {
            child,
            _done: done,
            stdin,
            stdout: std::io::BufReader::new(stdout),
        })
    }

    /// The blob at `path` (bytes below the work tree) in `commit`; `None`
    /// when absent or not a file. A name with a newline cannot go through
    /// the batch: it is read on its own.
    pub fn blob(&mut self, git: &Git, commit: &str, path: &[u8]) -> Result<Option<Vec<u8>>, GitError> {
        use std::io::BufRead;
        // The batch reads a line and strips a CR before its newline.
        if path.contains(&b'\n') || path.contains(&b'\r') {
            return git.blob_raw(commit, path);
        }
        let broken = |e: std::io::Error| GitError::Failed {
            command: "cat-file".into(),
            code: None,
            message: e.to_string(),
        };
        let mut spec = format!("{commit}:").into_bytes();
        spec.extend_from_slice(path);
        spec.push(b'\n');
        self.stdin.write_all(&spec).map_err(broken)?;
        self.stdin.flush().map_err(broken)?;
        let mut header = Vec::new();
        self.stdout.read_until(b'\n', &mut header).map_err(broken)?;
        let header = String::from_utf8_lossy(&header);
        let fields: Vec<&str> = header.trim_end().rsplitn(3, ' ').collect();
        // `OID TYPE SIZE`, or `SPEC missing` (and `ambiguous`); anything
        // else (git gone: nothing at all) is an error, never "absent".
        let header = header.trim_end();
        if header.ends_with(" missing") || header.ends_with(" ambiguous") {
            return Ok(None);
        }
        let bad = || GitError::Failed {
            command: "cat-file".into(),
            code: None,
            message: format!("unexpected answer: {header}"),
        };
        let [size, kind, _oid] = fields.as_slice() else {
            return Err(bad());
        };
        let size = size.parse::<usize>().map_err(|_| bad())?;
        let mut body = vec![0; size + 1];
        self.stdout.read_exact(&mut body).map_err(broken)?;
        body.truncate(size);
        Ok((*kind == "blob").then_some(body))
    }
}

impl Drop for BlobReader {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
