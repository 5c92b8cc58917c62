//! The far side: Parley's helper, run by one of Parley's own programs when
//! given [`FLAG`] (a copy of it, on another machine or in a container).
//!
//! - `FLAG agent`: reads one line of JSON ([`Launch`]) from stdin, finds
//!   the command there (the launch doctor's search, on the far side), and
//!   starts it in a session of its own with the rest of stdin, stdout and
//!   stderr as its own. Then it watches: when the agent exits, what it left
//!   in its group gets SIGTERM and, after the grace, SIGKILL; when the
//!   channel closes (Parley stopped it, or ssh dropped, or Parley was
//!   killed: its stdout's reader is gone), the whole group gets the same.
//! - `FLAG term FILE`: the same for a terminal's command on the terminal
//!   ssh made (`-tt`); its [`Launch`] is read from FILE (left by `stash`,
//!   deleted at once), since whatever goes through a terminal is echoed.
//! - `FLAG stash`: keeps stdin in a new private file and prints its path.
//! - `FLAG fs`: answers `fs/*` requests, one JSON line each (see
//!   `link::FsClient`), with [`FsScope`]'s confinement, until stdin ends.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::core::acp::fs::{FsRequest, FsScope};

pub const FLAG: &str = "--parley-remote-helper";

/// What to start, and how.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct Launch {
    pub cwd: String,
    pub program: String,
    pub args: Vec<String>,
    /// Added to the far side's own environment.
    pub env: BTreeMap<String, String>,
    /// Between SIGTERM and SIGKILL.
    pub grace_ms: u64,
}

/// Runs the helper when the program was started as one; otherwise returns.
/// Call it first thing in `main`.
pub fn run_if_asked() {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() != Some(FLAG) {
        return;
    }
    let mode = args.next().unwrap_or_default();
    let code = match mode.as_str() {
        "agent" => read_header().map_or_else(fail, |l| run(&l, false)),
        "term" => args
            .next()
            .ok_or_else(|| "term: no file".to_owned())
            .and_then(|f| take_stashed(Path::new(&f)))
            .map_or_else(fail, |l| run(&l, true)),
        "stash" => stash().map_or_else(fail, |()| 0),
        "fs" => serve_fs(),
        other => fail(format!("unknown mode {other}")),
    };
    std::process::exit(code);
}

fn fail(why: String) -> i32 {
    eprintln!("parley: {why}");
    126
}

/// The first line of stdin, read a byte at a time from the descriptor
/// itself (std's stdin would buffer ahead): the rest is the agent's.
fn read_header() -> Result<Launch, String> {
    let mut line = Vec::new();
    let mut byte = 0u8;
    loop {
        // SAFETY: one byte into a byte of ours, from fd 0.
        let n = unsafe { libc::read(0, (&raw mut byte).cast(), 1) };
        match n {
            1 if byte == b'\n' => break,
            1 if line.len() < (1 << 20) => line.push(byte),
            1 => return Err("the launch line is over 1 MiB".into()),
            0 => return Err("no launch line".into()),
            _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            _ => return Err(std::io::Error::last_os_error().to_string()),
        }
    }
    serde_json::from_slice(&line).map_err(|e| format!("bad launch line: {e}"))
}

/// Where the helper keeps its files: beside its own program.
fn own_dir() -> Result<PathBuf, String> {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .ok_or_else(|| "the helper cannot find itself".to_owned())
}

fn stash() -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut data = Vec::new();
    std::io::stdin()
        .read_to_end(&mut data)
        .map_err(|e| e.to_string())?;
    let dir = own_dir()?;
    remove_stale_launches(&dir);
    for n in 0..100u32 {
        let path = dir.join(format!("launch-{}-{n}", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(mut f) => {
                f.write_all(&data).map_err(|e| e.to_string())?;
                println!("{}", path.display());
                return Ok(());
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    Err("no file name left".into())
}

/// Launch files no `term` took within a minute (it never started): they
/// hold saved keys, so they do not stay.
fn remove_stale_launches(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > Duration::from_secs(60));
        if old && e.file_name().to_string_lossy().starts_with("launch-") {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

fn take_stashed(path: &Path) -> Result<Launch, String> {
    // Only the helper's own files.
    if path.parent() != Some(own_dir()?.as_path()) {
        return Err("not a launch file of the helper's".into());
    }
    let data = std::fs::read(path).map_err(|e| e.to_string());
    let _ = std::fs::remove_file(path);
    serde_json::from_slice(&data?).map_err(|e| format!("bad launch file: {e}"))
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "the far side".into())
}

/// The program the launch names, found as Parley finds it locally.
fn find_program(l: &Launch, cwd: &Path) -> Result<(PathBuf, Vec<String>), String> {
    if let Some((program, mut lead)) = crate::core::launch::bundled(&l.program) {
        lead.extend(l.args.iter().cloned());
        return Ok((program, lead));
    }
    use crate::core::launch::{read_login_shell_path, resolve_program, search_dirs};
    let env_path = l.env.get("PATH").map(String::as_str);
    // The login shell (and its rc files) only when the usual places lack
    // it: on the far side each start pays for its shell anew.
    let dirs = search_dirs(env_path, None);
    if let Some(p) = resolve_program(&l.program, cwd, &dirs) {
        return Ok((p, l.args.clone()));
    }
    let dirs = search_dirs(env_path, read_login_shell_path().as_deref());
    match resolve_program(&l.program, cwd, &dirs) {
        Some(p) => Ok((p, l.args.clone())),
        None => Err(format!(
            "{} (on {})",
            crate::core::launch::not_found(&l.program, &dirs),
            hostname()
        )),
    }
}

/// Starts the launch's command and watches it and the channel; the exit
/// code is the command's (128 + signal when a signal ended it).
fn run(l: &Launch, tty: bool) -> i32 {
    let cwd = PathBuf::from(&l.cwd);
    if !cwd.is_dir() {
        eprintln!(
            "parley: the working directory {} does not exist on {}",
            cwd.display(),
            hostname()
        );
        return 126;
    }
    let (program, args) = match find_program(l, &cwd) {
        Ok(p) => p,
        Err(why) => {
            eprintln!("parley: {why}");
            return 127;
        }
    };
    // The helper outlives a hang-up of its terminal or channel, to end
    // what it started; the command gets the usual dispositions back.
    // SAFETY: setting dispositions of two signals, before any thread.
    unsafe {
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    let mut cmd = std::process::Command::new(&program);
    cmd.args(&args).envs(&l.env).current_dir(&cwd);
    // SAFETY: async-signal-safe calls only, in the child before exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::signal(libc::SIGHUP, libc::SIG_DFL);
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            if tty {
                // A group of its own in the foreground of the terminal, so
                // it may read it and /dev/tty is its own.
                libc::signal(libc::SIGTTOU, libc::SIG_IGN);
                libc::setpgid(0, 0);
                libc::tcsetpgrp(0, libc::getpid());
                libc::signal(libc::SIGTTOU, libc::SIG_DFL);
            } else if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("parley: could not start {}: {e}", program.display());
            return 126;
        }
    };
    let pid = child.id() as libc::pid_t;
    let grace = Duration::from_millis(if l.grace_ms == 0 { 3000 } else { l.grace_ms });
    watch(pid, grace)
}

/// Waits until the child may have exited (its pidfd is readable) or the
/// reader of our stdout is gone (poll reports POLLERR on a pipe, POLLHUP
/// on a socket or a hung-up terminal); true for the latter. Without a
/// pidfd (Linux before 5.3) it looks again every 100 ms.
fn channel_closed(pidfd: Option<&std::os::fd::OwnedFd>) -> bool {
    use std::os::fd::AsRawFd;
    let mut fds = [
        libc::pollfd {
            fd: 1,
            events: 0,
            revents: 0,
        },
        libc::pollfd {
            fd: pidfd.map_or(-1, AsRawFd::as_raw_fd),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    let wait = if pidfd.is_some() { -1 } else { 100 };
    // SAFETY: two pollfds of ours (a negative fd is ignored).
    let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, wait) };
    n > 0 && fds[0].revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0
}

/// A descriptor that becomes readable when `pid` exits.
fn pidfd(pid: libc::pid_t) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: pidfd_open on our own child; the fd returned is ours alone.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let fd = i32::try_from(fd).ok().filter(|fd| *fd >= 0)?;
    // SAFETY: a fresh descriptor, owned by nothing else.
    Some(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// The child's status if it has exited (reaped).
fn reap(pid: libc::pid_t) -> Option<i32> {
    let mut status = 0;
    // SAFETY: waitpid on our own child.
    let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    if r != pid {
        return None;
    }
    Some(if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    })
}

fn group_alive(pgid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only asks.
    unsafe { libc::kill(-pgid, 0) == 0 }
}

/// SIGTERM to the group, the grace, then SIGKILL; reaps the leader.
fn end_group(pgid: libc::pid_t, grace: Duration, mut status: Option<i32>) -> Option<i32> {
    if !group_alive(pgid) {
        return status;
    }
    // SAFETY: signals to the group this helper made.
    unsafe { libc::kill(-pgid, libc::SIGTERM) };
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        status = status.or_else(|| reap(pgid));
        if !group_alive(pgid) {
            return status;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    // SAFETY: as above.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline && group_alive(pgid) {
        status = status.or_else(|| reap(pgid));
        std::thread::sleep(Duration::from_millis(10));
    }
    status.or_else(|| reap(pgid))
}

/// Sleeps (no wake-up at rest) until the child exits or the channel closes.
fn watch(pid: libc::pid_t, grace: Duration) -> i32 {
    let pidfd = pidfd(pid);
    loop {
        if let Some(code) = reap(pid) {
            // What it left behind goes too.
            end_group(pid, grace, Some(code));
            return code;
        }
        if channel_closed(pidfd.as_ref()) {
            return end_group(pid, grace, None).unwrap_or(128 + libc::SIGKILL);
        }
    }
}

/// One `fs` request.
#[derive(Deserialize)]
struct FsLine {
    id: u64,
    root: String,
    method: String,
    params: Box<serde_json::value::RawValue>,
}

/// At most this many requests at once; more are refused at once.
const FS_THREADS: usize = 64;

fn serve_fs() -> i32 {
    let out = Arc::new(Mutex::new(std::io::stdout()));
    let scopes: Arc<Mutex<HashMap<String, FsScope>>> = Arc::default();
    let busy = Arc::new(AtomicUsize::new(0));
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let Ok(req) = serde_json::from_str::<FsLine>(&line) else {
            continue;
        };
        let answer = |out: &Mutex<std::io::Stdout>, id: u64, result: Result<serde_json::Value, String>| {
            let line = match result {
                Ok(v) => serde_json::json!({"id": id, "ok": v}),
                Err(e) => serde_json::json!({"id": id, "err": e}),
            };
            let mut out = out.lock().unwrap_or_else(|e| e.into_inner());
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        };
        if busy.fetch_add(1, Ordering::AcqRel) >= FS_THREADS {
            busy.fetch_sub(1, Ordering::AcqRel);
            answer(&out, req.id, Err("too many file requests at once".into()));
            continue;
        }
        let scope = scopes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(req.root.clone())
            .or_insert_with(|| FsScope::new(Path::new(&req.root)))
            .clone();
        let (out, busy) = (out.clone(), busy.clone());
        let spawned = std::thread::Builder::new()
            .name("parley-fs".into())
            .spawn(move || {
                let result = FsRequest::parse(&req.method, req.params.get())
                    .map_err(|e| e.to_string())
                    .and_then(|r| scope.handle(&r).map_err(|e| e.to_string()));
                answer(&out, req.id, result);
                busy.fetch_sub(1, Ordering::AcqRel);
            });
        if spawned.is_err() {
            break;
        }
    }
    0
}
