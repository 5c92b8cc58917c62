//! The `git` program in the user's own repository, for worktrees: with a
//! time limit, in C, and with nothing of the repository's run by it
//! (hooks, fsmonitor, external diff drivers and text conversion), as the
//! checkpoints run it on their shadow repositories.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::core::checkpoints::git::{run_with_timeout, GitError, Output, TIMEOUT};

const SETTINGS: &[&str] = &[
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.quotePath=false",
    "color.ui=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "advice.detachedHead=false",
];

/// Git in one directory (a checkout or a worktree of the repository).
#[derive(Debug, Clone)]
pub struct RepoGit {
    pub dir: PathBuf,
}

impl RepoGit {
    pub fn new(dir: &Path) -> Self {
        RepoGit { dir: dir.to_owned() }
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = crate::core::checkpoints::git::bare_command();
        for s in SETTINGS {
            cmd.args(["-c", s]);
        }
        cmd.args(args)
            .current_dir(&self.dir)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("LC_ALL", "C");
        cmd
    }

    /// A command that makes a commit (commit, merge): with the user's git
    /// identity, else Parley's (git refuses to commit without one).
    pub fn committing(&self, args: &[&str]) -> Command {
        let mut cmd = self.command(args);
        if self
            .text(&["config", "user.email"])
            .unwrap_or_default()
            .is_empty()
        {
            cmd.env("GIT_AUTHOR_NAME", "Parley")
                .env("GIT_AUTHOR_EMAIL", "parley@localhost")
                .env("GIT_COMMITTER_NAME", "Parley")
                .env("GIT_COMMITTER_EMAIL", "parley@localhost");
        }
        cmd
    }

    /// Runs git; its exit code, standard output and standard error.
    pub fn run_code(&self, args: &[&str], input: Option<&[u8]>) -> Result<Output, GitError> {
        run_with_timeout(self.command(args), args, input, TIMEOUT)
    }

    /// Runs git; its standard output, or the failure in git's words.
    pub fn run(&self, args: &[&str], input: Option<&[u8]>) -> Result<Vec<u8>, GitError> {
        let (code, out, err) = self.run_code(args, input)?;
        if code == Some(0) {
            return Ok(out);
        }
        let message = String::from_utf8_lossy(&err);
        Err(GitError::Failed {
            command: args.first().copied().unwrap_or("").to_owned(),
            code,
            message: message
                .lines()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
                .trim()
                .to_owned(),
        })
    }

    /// `run`, as trimmed text.
    pub fn text(&self, args: &[&str]) -> Result<String, GitError> {
        self.run(args, None)
            .map(|o| String::from_utf8_lossy(&o).trim().to_owned())
    }

    /// The bytes of `path` in `rev`, `None` when absent.
    pub fn blob(&self, rev: &str, path: &[u8]) -> Result<Option<Vec<u8>>, GitError> {
        use std::os::unix::ffi::OsStringExt;
        let mut spec = format!("{rev}:").into_bytes();
        spec.extend_from_slice(path);
        let mut cmd = self.command(&["cat-file", "blob"]);
        cmd.arg(std::ffi::OsString::from_vec(spec));
        match run_with_timeout(cmd, &["cat-file"], None, TIMEOUT)? {
            (Some(0), out, _) => Ok(Some(out)),
            (Some(128), _, _) => Ok(None),
            (code, _, err) => Err(GitError::Failed {
                command: "cat-file".into(),
                code,
                message: String::from_utf8_lossy(&err).trim().to_owned(),
            }),
        }
    }
}
