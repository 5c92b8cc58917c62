//! Agent processes: spawning beneath a guardian (see `guardian`) in a new
//! process group, the stop sequence, and reading the group from /proc.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

use super::guardian;
use tokio::sync::watch;

/// What is needed to start one agent process.
pub struct SpawnSpec<'a> {
    pub program: &'a Path,
    pub args: &'a [String],
    pub env: &'a BTreeMap<String, String>,
    pub cwd: &'a Path,
    /// Inside Flatpak: the host-spawn command (`flatpak-spawn --host
    /// --watch-bus`); empty outside, where agents are started directly.
    pub prefix: &'a [String],
    /// How long the agent's leftovers get between SIGTERM and SIGKILL from
    /// the guardian once the agent has exited.
    pub grace: Duration,
    /// A terminal's side for stdin, stdout and stderr instead of pipes (a
    /// sign-in command, see `auth`); the process gets it as its
    /// controlling terminal.
    pub terminal: Option<&'a OwnedFd>,
}

/// Runs on the host, under `flatpak-spawn --host`. What flatpak-spawn
/// forwards (its source, `forward_signals`): SIGHUP, SIGINT, SIGQUIT,
/// SIGTERM, SIGCONT, SIGTSTP, SIGUSR1 and SIGUSR2, to the host process only
/// (SIGINT and SIGCONT to its group); SIGKILL cannot be forwarded. So the
/// agent gets a session and group of its own (`setsid`: shells have no job
/// control without a terminal), found with the login shell's PATH; the
/// forwarded SIGTERM, SIGINT, SIGHUP and SIGQUIT go to the agent's whole
/// group; and a watchdog kills that group if this shell is killed (which
/// `--watch-bus` does when Parley goes, however it goes). Any sh runs it,
/// dash included: hence `kill -s SIG -- -PGID` (dash rejects
/// `kill -SIG -- -PGID`) and stdin kept on fd 3 (dash gives a background
/// job /dev/null before its redirections).
pub const HOST_WRAPPER: &str = r#"if [ -n "${PARLEY_ENV_FD:-}" ]; then
  # The agent's environment, out of band (see `spawn`): never in an argument.
  eval "$(cat <&"$PARLEY_ENV_FD")"
  eval "exec $PARLEY_ENV_FD<&-"
  unset PARLEY_ENV_FD
fi
login_path=$("${SHELL:-/bin/sh}" -l -c 'printf %s "$PATH"' </dev/null 2>/dev/null) && [ -n "$login_path" ] && PATH="$PATH:$login_path"
export PATH
# A background job's stdin is /dev/null; fd 3 keeps the real one.
exec 3<&0
setsid "$@" <&3 3<&- &
exec 3<&-
agent=$!
trap 'kill -s TERM -- -$agent 2>/dev/null' TERM INT HUP QUIT
setsid sh -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; kill -s KILL -- -"$2" 2>/dev/null' watchdog $$ "$agent" </dev/null >/dev/null 2>&1 &
while kill -0 "$agent" 2>/dev/null; do wait "$agent"; status=$?; done
kill -s KILL -- -"$agent" 2>/dev/null
exit ${status:-0}"#;

pub struct Spawned {
    /// The guardian (see `guardian`); its stdin, stdout and stderr are the
    /// agent's.
    pub child: Child,
    /// The agent's pid, which is also its process group.
    pub pgid: i32,
    /// Parley's end of the lifeline: while it is open the guardian waits;
    /// when it closes (Parley gone, or released) the guardian kills
    /// whatever is left beneath it.
    pub lifeline: OwnedFd,
    /// Where the agent's wait status arrives when it exits.
    pub status: std::io::PipeReader,
}

impl Spawned {
    /// For a command whose stdio is a terminal (nothing to take from the
    /// child): its group, Parley's hold on its guardian (which learns when
    /// the guardian exits), and where its wait status arrives.
    pub fn into_guarded(self) -> (i32, Guardian, std::io::PipeReader) {
        let Spawned {
            mut child,
            pgid,
            lifeline,
            status,
        } = self;
        let (gone_tx, gone_rx) = watch::channel(None);
        tokio::spawn(async move {
            let status = child.wait().await.ok();
            gone_tx.send_replace(Some(status));
        });
        (pgid, Guardian::new(lifeline, gone_rx), status)
    }
}

/// A name the host wrapper can `export`.
fn shell_name(k: &str) -> bool {
    let mut chars = k.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `export K='V'` lines for the host wrapper to `eval`.
fn export_script(env: &BTreeMap<String, String>) -> String {
    env.iter()
        .filter(|(k, _)| shell_name(k))
        .map(|(k, v)| format!("export {k}='{}'\n", v.replace('\'', "'\\''")))
        .collect()
}

pub fn spawn(spec: &SpawnSpec<'_>) -> std::io::Result<Spawned> {
    // Both pipes are close-on-exec: the agent never holds them, and the
    // guardian, which never execs, keeps exactly these two.
    let (lifeline_r, lifeline_w) = std::io::pipe()?;
    let (mut status_r, status_w) = std::io::pipe()?;
    // Inside Flatpak the environment goes to the host through a pipe that
    // flatpak-spawn forwards (`--forward-fd`), not as `--env=K=V`: those
    // arguments are in the process list, which every user of the machine
    // can read, and the saved keys are among them.
    let env_pipe = if spec.prefix.is_empty() {
        None
    } else {
        Some(std::io::pipe()?)
    };
    // The number the host wrapper reads it from: dash takes only 0 to 9 in
    // a redirection, so the pipe is moved to one of those: not 3, which
    // the wrapper (and flatpak-spawn's stand-in) keep stdin on, nor one of
    // the guardian's.
    let env_fd = (5..=9)
        .find(|fd| ![lifeline_r.as_raw_fd(), status_w.as_raw_fd()].contains(fd))
        .unwrap_or(9);
    let mut cmd = match (spec.prefix.split_first(), &env_pipe) {
        (Some((first, rest)), Some(_)) => {
            // On the host: its cwd goes as flatpak-spawn's option.
            let mut c = Command::new(first);
            c.args(rest).arg(format!("--directory={}", spec.cwd.display()));
            c.arg(format!("--forward-fd={env_fd}"))
                .arg(format!("--env=PARLEY_ENV_FD={env_fd}"));
            // A name no shell can export still goes as an option (none of
            // Parley's keys is such a name).
            for (k, v) in spec.env.iter().filter(|(k, _)| !shell_name(k)) {
                c.arg(format!("--env={k}={v}"));
            }
            c.args(["/bin/sh", "-c", HOST_WRAPPER, "parley-agent"])
                .arg(spec.program)
                .args(spec.args);
            c
        }
        _ => {
            let mut c = Command::new(spec.program);
            c.args(spec.args).envs(spec.env);
            c
        }
    };
    if let Some((env_r, env_w)) = &env_pipe {
        let (read, write) = (env_r.as_raw_fd(), env_w.as_raw_fd());
        // SAFETY: dup2 and close only (async-signal-safe), on descriptors
        // of this spawn. Before the guardian's split: the reading end, at
        // `env_fd` (dup2 leaves it open across exec), is there for
        // flatpak-spawn to forward, and neither the guardian nor the agent
        // holds the writing end, so the host wrapper sees the end of the
        // script once Parley has written it.
        unsafe {
            cmd.pre_exec(move || {
                // The writing end first: it may sit at `env_fd`.
                if libc::close(write) != 0 || libc::dup2(read, env_fd) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if read == env_fd {
                    // dup2 onto itself keeps close-on-exec: cleared here.
                    if libc::fcntl(env_fd, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                } else {
                    libc::close(read);
                }
                Ok(())
            });
        }
    }
    let plan = guardian::Plan {
        lifeline: lifeline_r.as_raw_fd(),
        status: status_w.as_raw_fd(),
        grace_ms: u64::try_from(spec.grace.as_millis()).unwrap_or(u64::MAX),
        // Found here: nothing may be looked up after the fork.
        helper: guardian::helper(),
        terminal: spec.terminal.is_some(),
    };
    // The guardian gets a group of its own (so no signal for the agent's
    // group or Parley's reaches it); the agent makes its own in `split`.
    match spec.terminal {
        Some(tty) => {
            cmd.stdin(Stdio::from(tty.try_clone()?))
                .stdout(Stdio::from(tty.try_clone()?))
                .stderr(Stdio::from(tty.try_clone()?));
        }
        None => {
            cmd.stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
        }
    }
    cmd.current_dir(spec.cwd).process_group(0).kill_on_drop(false);
    // SAFETY: `split` keeps to async-signal-safe calls (see `guardian`).
    unsafe {
        cmd.pre_exec(move || guardian::split(plan));
    }
    let child = cmd.spawn()?;
    drop(lifeline_r);
    drop(status_w);
    if let Some((env_r, mut env_w)) = env_pipe {
        drop(env_r);
        let script = export_script(spec.env);
        // A thread: a large environment may fill the pipe before the host
        // wrapper starts reading it.
        std::thread::Builder::new()
            .name("parley-host-env".into())
            .spawn(move || {
                let _ = std::io::Write::write_all(&mut env_w, script.as_bytes());
            })?;
    }
    let mut pid = [0u8; 4];
    status_r
        .read_exact(&mut pid)
        .map_err(|_| std::io::Error::other("the agent's guardian ended before it started"))?;
    Ok(Spawned {
        child,
        pgid: i32::from_ne_bytes(pid),
        lifeline: OwnedFd::from(lifeline_w),
        status: status_r,
    })
}

/// How much an agent may write ahead of Parley's reading: 1 MiB, the
/// most Linux lets a user ask for by default (`/proc/sys/fs/pipe-max-size`).
const AGENT_PIPE_BYTES: libc::c_int = 1 << 20;

/// Widens the pipe that `fd` is one end of to `AGENT_PIPE_BYTES`. With the
/// default 64 KiB a fast agent fills the pipe and waits, and each read of
/// Parley's wakes it again; on virtual machines such a wake-up of the other
/// core is costly (a 100,000-chunk flood: about a fifth of its ingest, see
/// docs/benchmarks-history.md). Where the system refuses, the pipe stays as it was.
pub fn widen_pipe(fd: &impl AsRawFd) {
    // SAFETY: F_SETPIPE_SZ on a descriptor the caller holds open; it
    // touches only the pipe's capacity.
    unsafe {
        libc::fcntl(fd.as_raw_fd(), libc::F_SETPIPE_SZ, AGENT_PIPE_BYTES);
    }
}

/// The agent's exit status, as the guardian reports it; `None` when the
/// guardian ended without saying (it was killed).
pub async fn agent_exit(status: std::io::PipeReader) -> Option<ExitStatus> {
    use std::os::unix::process::ExitStatusExt;
    let pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(status)).ok()?;
    let mut raw = [0u8; 4];
    let mut pipe = pipe;
    tokio::io::AsyncReadExt::read_exact(&mut pipe, &mut raw)
        .await
        .ok()?;
    Some(ExitStatus::from_raw(i32::from_ne_bytes(raw)))
}

/// Parley's hold on a guardian, kept while the agent runs.
pub struct Guardian {
    lifeline: OwnedFd,
    gone: watch::Receiver<Option<Option<ExitStatus>>>,
}

impl Guardian {
    /// `gone` is set when the guardian process has exited (with its status
    /// if it could be read).
    pub fn new(lifeline: OwnedFd, gone: watch::Receiver<Option<Option<ExitStatus>>>) -> Self {
        Self { lifeline, gone }
    }

    /// Set when the guardian process has exited.
    pub fn gone(&self) -> watch::Receiver<Option<Option<ExitStatus>>> {
        self.gone.clone()
    }

    /// Gives the guardian up to `limit` to end what the agent left (it
    /// does, after its grace period), then closes the lifeline, which kills
    /// whatever is still there.
    pub async fn release(mut self, limit: Duration) {
        let _ = tokio::time::timeout(limit, self.gone.wait_for(Option::is_some)).await;
        drop(self.lifeline);
    }
}

/// Sends a signal to a whole process group; a group already gone is fine.
pub fn signal_group(pgid: i32, signal: Signal) {
    if pgid > 1 {
        let _ = killpg(Pid::from_raw(pgid), signal);
    }
}

/// The live (non-zombie) processes of a process group, read from /proc.
pub fn group_members(pgid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if let Some((state, pgrp)) = stat_state_and_group(pid) {
            if pgrp == pgid && state != 'Z' && state != 'X' {
                out.push(pid);
            }
        }
    }
    out
}

/// (state, process group) from /proc/PID/stat; the command name may hold
/// spaces and parentheses, so fields are counted after the last `)`.
pub fn stat_state_and_group(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

/// Beyond its grace period, how long the guardian gets to finish ending what
/// an agent left before Parley closes its lifeline.
pub const GUARDIAN_SLACK: Duration = Duration::from_secs(2);

/// The durations of the stop sequence.
#[derive(Debug, Clone, Copy)]
pub struct StopTimings {
    /// After closing stdin, before SIGTERM (spec: 5 s).
    pub eof_grace: Duration,
    /// After SIGTERM, before SIGKILL (spec: 3 s).
    pub term_grace: Duration,
}

/// Waits until the watched exit status is set, or `limit` passes.
async fn wait_exit(exit: &mut watch::Receiver<Option<ExitStatus>>, limit: Duration) -> bool {
    tokio::time::timeout(limit, exit.wait_for(Option::is_some))
        .await
        .map(|r| r.is_ok())
        .unwrap_or(false)
}

async fn wait_group_gone(pgid: i32, limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if group_members(pgid).is_empty() {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The spec's stop sequence, once stdin is closed: wait `eof_grace` for the
/// agent to exit; then SIGTERM to its group; `term_grace` later, SIGKILL.
/// Members of the group that outlive the agent get the same SIGTERM/SIGKILL.
/// Returns when no process of the group is left.
pub async fn stop_group(pgid: i32, mut exit: watch::Receiver<Option<ExitStatus>>, t: StopTimings) {
    if !wait_exit(&mut exit, t.eof_grace).await {
        tracing::debug!(pgid, "agent still running after end of input: SIGTERM");
        signal_group(pgid, Signal::SIGTERM);
        if !wait_exit(&mut exit, t.term_grace).await {
            tracing::debug!(pgid, "agent still running after SIGTERM: SIGKILL");
            signal_group(pgid, Signal::SIGKILL);
            wait_exit(&mut exit, Duration::from_secs(5)).await;
        }
    }
    reap_leftovers(pgid, t.term_grace).await;
}

/// Ends what is left of a group whose leader has exited.
pub async fn reap_leftovers(pgid: i32, term_grace: Duration) {
    if group_members(pgid).is_empty() {
        return;
    }
    signal_group(pgid, Signal::SIGTERM);
    if !wait_group_gone(pgid, term_grace).await {
        signal_group(pgid, Signal::SIGKILL);
        wait_group_gone(pgid, Duration::from_secs(5)).await;
    }
}

/// A new pseudo-terminal: its controlling side and the side a command
/// gets as its terminal (sign-in commands, ACP terminals).
pub fn open_pty() -> std::io::Result<(OwnedFd, OwnedFd)> {
    use std::os::fd::FromRawFd;
    let last = std::io::Error::last_os_error;
    // Close-on-exec from the start: another thread's spawn must not
    // inherit either side (and the slave is not anyone's terminal yet).
    // SAFETY: plain system calls; every descriptor returned is owned at once.
    unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        if master < 0 {
            return Err(last());
        }
        let master = OwnedFd::from_raw_fd(master);
        if libc::grantpt(master.as_raw_fd()) != 0 || libc::unlockpt(master.as_raw_fd()) != 0 {
            return Err(last());
        }
        let mut name = [0 as libc::c_char; 128];
        if libc::ptsname_r(master.as_raw_fd(), name.as_mut_ptr(), name.len()) != 0 {
            return Err(last());
        }
        let slave = libc::open(name.as_ptr(), libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        if slave < 0 {
            return Err(last());
        }
        let slave = OwnedFd::from_raw_fd(slave);
        let size = libc::winsize {
            ws_row: 24,
            ws_col: 80,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        libc::ioctl(master.as_raw_fd(), libc::TIOCSWINSZ, &size);
        Ok((master, slave))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_its_own_process_group() {
        let me = i32::try_from(std::process::id()).expect("pid");
        let (state, pgrp) = stat_state_and_group(me).expect("stat");
        assert_ne!(state, 'Z');
        assert!(group_members(pgrp).contains(&me));
    }
}
