//! The guardian: the process between Parley and an agent that makes "the
//! agent and its children" hold even for children that leave the agent's
//! process group (`setsid`, a double fork).
//!
//! Parley forks the guardian; the guardian marks itself a *child subreaper*
//! (`PR_SET_CHILD_SUBREAPER`) and forks the agent, which std then execs. So
//! every descendant of the agent that loses its parent is reparented to the
//! guardian, never to init, whatever group or session it moved to. When the
//! agent has exited, the guardian ends every process left beneath it
//! (SIGTERM, then SIGKILL after the grace period) and exits once it has no
//! child left. When Parley goes, however it goes (SIGKILL too), the lifeline
//! pipe only Parley holds reaches end of file, and the guardian kills the
//! agent's group and everything beneath it at once.
//!
//! After forking the agent, the guardian execs one of Parley's own programs
//! with `--agent-guardian` ([`helper`], found before the fork), so that it
//! does not keep a copy-on-write image of Parley's memory for as long as the
//! agent runs. Where there is none (a test binary with no program beside
//! it), it goes on in the forked child. Either way everything it does
//! between the fork and the exec (or its `_exit`) must be async-signal-safe:
//! raw system calls on stack buffers, no allocation, no lock, no panic path.
//!
//! The status pipe tells Parley the agent's pid (4 bytes, at once) and then
//! its raw wait status (4 bytes, when it exits), so Parley learns of the exit
//! at once even while the guardian still waits out the grace period.
//!
//! Why one file of some 500 lines: everything from the fork to the exec is
//! one async-signal-safe piece that must be read (and kept) together; its
//! /proc reader and number writer are here because std's cannot be used.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::RawFd;
use std::sync::OnceLock;

/// The flag that makes Parley's programs run as a guardian.
pub const FLAG: &str = "--agent-guardian";

/// A program of Parley's that runs the guardian when given [`FLAG`]: the
/// bundled demo agent beside Parley's program (the smallest), `parley-cli`
/// or `parley`, or the running program itself when it is one of those.
pub fn helper() -> Option<&'static CStr> {
    static HELPER: OnceLock<Option<CString>> = OnceLock::new();
    HELPER
        .get_or_init(|| {
            use std::os::unix::ffi::OsStrExt;
            let beside = crate::core::launch::own_program_dir()
                .map(|dir| ["parley-demo-agent", "parley-cli", "parley"].map(|name| dir.join(name)));
            let own = std::env::current_exe().ok().filter(|exe| {
                exe.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| ["parley", "parley-cli", "parley-demo-agent"].contains(&n))
            });
            beside
                .into_iter()
                .flatten()
                .chain(own)
                .find(|p| crate::core::launch::is_executable(p))
                .and_then(|p| CString::new(p.as_os_str().as_bytes()).ok())
        })
        .as_deref()
}

/// Runs the guardian when the program was started as one (`FLAG AGENT
/// LIFELINE STATUS GRACE_MS TERMINAL`, by [`split`]); otherwise returns at
/// once.
/// Call it first thing in `main`.
pub fn run_if_asked() {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() != Some(FLAG) {
        return;
    }
    let numbers: Vec<i64> = args.filter_map(|a| a.parse().ok()).collect();
    let &[agent, lifeline, status, grace_ms, terminal] = numbers.as_slice() else {
        eprintln!("{FLAG} AGENT LIFELINE STATUS GRACE_MS TERMINAL");
        std::process::exit(2);
    };
    let (Ok(agent), Ok(lifeline), Ok(status)) = (
        libc::pid_t::try_from(agent),
        RawFd::try_from(lifeline),
        RawFd::try_from(status),
    ) else {
        std::process::exit(2);
    };
    let plan = Plan {
        lifeline,
        status,
        grace_ms: u64::try_from(grace_ms).unwrap_or(0),
        helper: None,
        terminal: terminal == 1,
    };
    // SAFETY: a fresh process whose parent (the forked guardian) made
    // `agent` its child and left it the two descriptors.
    unsafe { guard(agent, plan) }
}

/// What the guardian needs, captured by the `pre_exec` closure (plain values:
/// nothing may be allocated after the fork).
#[derive(Clone, Copy)]
pub struct Plan {
    /// The read end of the lifeline; its end of file means Parley is gone.
    pub lifeline: RawFd,
    /// The write end of the status pipe.
    pub status: RawFd,
    /// How long what the agent left gets after SIGTERM before SIGKILL.
    pub grace_ms: u64,
    /// The program to exec as the guardian ([`helper`]).
    pub helper: Option<&'static CStr>,
    /// The agent's stdin is a terminal (a sign-in command): it gets a
    /// session of its own with that terminal as its controlling one.
    pub terminal: bool,
}

/// Runs in Parley's forked child before exec. Returns `Ok` in the agent,
/// which std then execs; in the guardian it never returns (it execs the
/// helper, or guards in place).
///
/// # Safety
/// Only to be called between fork and exec (from `pre_exec`).
pub unsafe fn split(plan: Plan) -> io::Result<()> {
    unsafe {
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        // SIGCHLD stays blocked in the guardian, so no exit is missed between
        // the fork and its first wait; the agent unblocks it before exec.
        let mut chld: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut chld);
        libc::sigaddset(&mut chld, libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_BLOCK, &chld, std::ptr::null_mut());
        let guardian = libc::getpid();
        let agent = libc::fork();
        if agent < 0 {
            return Err(io::Error::last_os_error());
        }
        if agent == 0 {
            libc::sigprocmask(libc::SIG_UNBLOCK, &chld, std::ptr::null_mut());
            // A group of its own, which the stop sequence signals; the guardian
            // is outside it and so outlives SIGKILL of the group. On a
            // terminal, a session of its own (which is also a group) that
            // the terminal belongs to, so it has job control and a ^C.
            if plan.terminal {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
            } else if libc::setpgid(0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != guardian {
                // The guardian is gone already (no allocation here: errno only).
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            return Ok(());
        }
        if let Some(helper) = plan.helper {
            exec_helper(helper, agent, plan);
        }
        guard(agent, plan)
    }
}

/// Execs `helper` as the guardian of `agent`, keeping exactly the two pipes;
/// returns only if the exec failed (the caller then guards in place).
unsafe fn exec_helper(helper: &CStr, agent: libc::pid_t, plan: Plan) {
    unsafe {
        close_all_but(plan.lifeline, plan.status);
        for fd in [plan.lifeline, plan.status] {
            libc::fcntl(fd, libc::F_SETFD, 0);
        }
        let mut numbers = [[0u8; 24]; 5];
        let values = [
            i64::from(agent),
            i64::from(plan.lifeline),
            i64::from(plan.status),
            i64::try_from(plan.grace_ms).unwrap_or(i64::MAX),
            i64::from(plan.terminal),
        ];
        for (buf, value) in numbers.iter_mut().zip(values) {
            write_number(buf, value);
        }
        let argv: [*const libc::c_char; 8] = [
            helper.as_ptr(),
            c"--agent-guardian".as_ptr(),
            numbers[0].as_ptr().cast(),
            numbers[1].as_ptr().cast(),
            numbers[2].as_ptr().cast(),
            numbers[3].as_ptr().cast(),
            numbers[4].as_ptr().cast(),
            std::ptr::null(),
        ];
        libc::execv(helper.as_ptr(), argv.as_ptr());
    }
}

/// Writes `value` (not negative) as NUL-terminated decimal digits.
fn write_number(buf: &mut [u8; 24], value: i64) {
    let mut digits = [0u8; 20];
    let mut n = 0;
    let mut v = value.max(0);
    loop {
        digits[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 || n == digits.len() {
            break;
        }
    }
    for (i, d) in digits[..n].iter().rev().enumerate() {
        buf[i] = *d;
    }
    buf[n] = 0;
}

unsafe fn guard(agent: libc::pid_t, plan: Plan) -> ! {
    unsafe {
        // Both sides set the group, so Parley can signal it as soon as it knows
        // the pid (the agent may not have run yet). Not on a terminal: there
        // the agent makes a session, which a group of its own would forbid.
        if !plan.terminal {
            libc::setpgid(agent, agent);
        }
        libc::prctl(libc::PR_SET_NAME, c"parley-guard".as_ptr());
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        // Parley's own handlers (tokio's) would write to descriptors closed
        // below: the guardian takes the default actions.
        for signal in 1..=64 {
            if ![libc::SIGPIPE, libc::SIGCHLD, libc::SIGKILL, libc::SIGSTOP].contains(&signal) {
                libc::signal(signal, libc::SIG_DFL);
            }
        }
        // A handler of its own, so that ppoll returns when a child ends (the
        // default action of SIGCHLD would not interrupt it).
        libc::signal(
            libc::SIGCHLD,
            on_sigchld as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
        write_all(plan.status, &agent.to_ne_bytes());
        // Keep nothing of Parley's: not the agent's pipes (Parley must see their
        // end when the agent exits), not std's exec-error pipe.
        close_all_but(plan.lifeline, plan.status);

        let mut parley_gone = false;
        let mut status: libc::c_int = 0;
        'running: loop {
            if lifeline_ended(plan.lifeline, 1000) {
                parley_gone = true;
                break;
            }
            loop {
                let mut st = 0;
                let pid = libc::waitpid(-1, &mut st, libc::WNOHANG);
                if pid == agent {
                    status = st;
                    break 'running;
                }
                if pid <= 0 {
                    break;
                }
                // An orphan reparented here ended: reaped, nothing more.
            }
        }
        if !parley_gone {
            write_all(plan.status, &status.to_ne_bytes());
        }
        libc::close(plan.status);
        end_everything(agent, plan, parley_gone);
        libc::_exit(0)
    }
}

extern "C" fn on_sigchld(_: libc::c_int) {}

/// Waits up to `ms` for the lifeline to end (Parley gone) or a child to end
/// (SIGCHLD, unblocked only while waiting). True when Parley is gone.
unsafe fn lifeline_ended(fd: RawFd, ms: i64) -> bool {
    unsafe {
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let timeout = libc::timespec {
            tv_sec: ms / 1000,
            tv_nsec: (ms % 1000) * 1_000_000,
        };
        let mut open: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut open);
        let n = libc::ppoll(&mut pfd, 1, &timeout, &open);
        // Parley never writes: readable or hung up both mean its end is closed.
        n > 0 && pfd.revents != 0
    }
}

/// Ends the agent's group and every process beneath the guardian, and reaps
/// them until none is left. After the agent's own exit, SIGTERM first and
/// SIGKILL after the grace; when Parley is gone, SIGKILL at once.
unsafe fn end_everything(agent: libc::pid_t, plan: Plan, mut killing: bool) {
    unsafe {
        let start = now_ms();
        let grace = i64::try_from(plan.grace_ms).unwrap_or(i64::MAX);
        // Each pid gets SIGTERM once; the list is bounded, SIGKILL is not.
        let mut termed = [0 as libc::pid_t; 256];
        let mut n_termed = 0;
        let me = libc::getpid();
        libc::kill(-agent, if killing { libc::SIGKILL } else { libc::SIGTERM });
        loop {
            if !killing && (now_ms().saturating_sub(start) >= grace || lifeline_gone_now(plan.lifeline)) {
                killing = true;
                libc::kill(-agent, libc::SIGKILL);
            }
            for_each_child(me, |pid| {
                if killing {
                    libc::kill(pid, libc::SIGKILL);
                    libc::kill(-pid, libc::SIGKILL);
                } else if !termed[..n_termed].contains(&pid) {
                    libc::kill(pid, libc::SIGTERM);
                    libc::kill(-pid, libc::SIGTERM);
                    if n_termed < termed.len() {
                        termed[n_termed] = pid;
                        n_termed += 1;
                    }
                }
            });
            loop {
                let mut st = 0;
                let pid = libc::waitpid(-1, &mut st, libc::WNOHANG);
                if pid > 0 {
                    continue;
                }
                if pid < 0 {
                    // No child at all: nothing is left beneath the guardian,
                    // since every orphan below it would have come here.
                    return;
                }
                break;
            }
            // Each round reads all of /proc: often at first, then rarely
            // (a process stuck in the kernel may take long to go).
            let pause = libc::timespec {
                tv_sec: 0,
                tv_nsec: if now_ms().saturating_sub(start) < 5000 {
                    20_000_000
                } else {
                    250_000_000
                },
            };
            libc::nanosleep(&pause, std::ptr::null_mut());
        }
    }
}

unsafe fn lifeline_gone_now(fd: RawFd) -> bool {
    unsafe {
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        libc::poll(&mut pfd, 1, 0) > 0 && pfd.revents != 0
    }
}

unsafe fn now_ms() -> i64 {
    unsafe {
        let mut ts: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
        ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000
    }
}

unsafe fn write_all(fd: RawFd, mut bytes: &[u8]) {
    unsafe {
        while !bytes.is_empty() {
            let n = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
            if n < 0 && *libc::__errno_location() == libc::EINTR {
                continue;
            }
            if n <= 0 {
                return;
            }
            bytes = bytes.get(n as usize..).unwrap_or_default();
        }
    }
}

/// Closes every descriptor except `a` and `b` (close_range, Linux ≥ 5.9,
/// with a loop as the fallback).
unsafe fn close_all_but(a: RawFd, b: RawFd) {
    unsafe {
        let (lo, hi) = if a < b { (a, b) } else { (b, a) };
        let ranges = [(0, lo - 1), (lo + 1, hi - 1), (hi + 1, libc::c_int::MAX)];
        for (first, last) in ranges {
            if first > last {
                continue;
            }
            let done = libc::syscall(
                libc::SYS_close_range,
                first as libc::c_uint,
                last as libc::c_uint,
                0 as libc::c_uint,
            ) == 0;
            if !done {
                for fd in first..=last.min(65_535) {
                    libc::close(fd);
                }
            }
        }
    }
}

/// Calls `f` with the pid of every process whose parent is `parent`, read
/// from /proc with getdents64 and read(2) on stack buffers.
unsafe fn for_each_child(parent: libc::pid_t, mut f: impl FnMut(libc::pid_t)) {
    unsafe {
        let dir = libc::open(
            c"/proc".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        if dir < 0 {
            return;
        }
        let mut buf = [0u8; 8192];
        loop {
            let n = libc::syscall(libc::SYS_getdents64, dir, buf.as_mut_ptr(), buf.len());
            if n <= 0 {
                break;
            }
            let mut at = 0usize;
            while at + 19 < n as usize {
                // struct linux_dirent64: u64 ino, i64 off, u16 reclen, u8 type,
                // then the name, NUL-terminated.
                let reclen = u16::from_ne_bytes([buf[at + 16], buf[at + 17]]) as usize;
                if reclen == 0 {
                    break;
                }
                let name = &buf[at + 19..(at + reclen).min(n as usize)];
                if let Some(pid) = parse_pid(name) {
                    if parent_of(pid) == Some(parent) {
                        f(pid);
                    }
                }
                at += reclen;
            }
        }
        libc::close(dir);
    }
}

/// The digits of a /proc entry name up to its NUL, as a pid.
fn parse_pid(name: &[u8]) -> Option<libc::pid_t> {
    let mut pid: libc::pid_t = 0;
    let mut any = false;
    for &b in name {
        match b {
            0 => break,
            b'0'..=b'9' => {
                pid = pid.checked_mul(10)?.checked_add(libc::pid_t::from(b - b'0'))?;
                any = true;
            }
            _ => return None,
        }
    }
    any.then_some(pid)
}

/// The parent pid from /proc/PID/stat: the fourth field, counted after the
/// last `)` (the command name may hold anything).
unsafe fn parent_of(pid: libc::pid_t) -> Option<libc::pid_t> {
    unsafe {
        let mut path = [0u8; 32];
        path[..6].copy_from_slice(b"/proc/");
        let mut len = 6;
        let mut digits = [0u8; 12];
        let mut d = 0;
        let mut v = pid;
        loop {
            digits[d] = b'0' + (v % 10) as u8;
            d += 1;
            v /= 10;
            if v == 0 || d == digits.len() {
                break;
            }
        }
        while d > 0 {
            d -= 1;
            path[len] = digits[d];
            len += 1;
        }
        path[len..len + 5].copy_from_slice(b"/stat");
        // path[len + 5] is already 0: the NUL.
        let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return None;
        }
        let mut stat = [0u8; 1024];
        let n = libc::read(fd, stat.as_mut_ptr().cast(), stat.len());
        libc::close(fd);
        if n <= 0 {
            return None;
        }
        let stat = stat.get(..n as usize)?;
        let close = stat.iter().rposition(|&b| b == b')')?;
        // ") S PPID ..."
        let rest = stat.get(close + 1..)?;
        let mut fields = rest.split(|&b| b == b' ').filter(|f| !f.is_empty());
        let _state = fields.next()?;
        parse_pid(fields.next()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_its_own_parent_from_proc() {
        let me = libc::pid_t::try_from(std::process::id()).expect("pid");
        // SAFETY: plain reads of /proc.
        let parent = unsafe { parent_of(me) };
        assert_eq!(parent, Some(unsafe { libc::getppid() }));
        assert_eq!(parse_pid(b"123\0junk"), Some(123));
        assert_eq!(parse_pid(b"self\0"), None);
        assert_eq!(parse_pid(b"\0"), None);
    }

    #[test]
    fn finds_the_children_of_a_process() {
        let child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("sleep");
        let me = libc::pid_t::try_from(std::process::id()).expect("pid");
        let mut seen = Vec::new();
        // SAFETY: plain reads of /proc.
        unsafe { for_each_child(me, |pid| seen.push(pid)) };
        let pid = libc::pid_t::try_from(child.id()).expect("pid");
        let mut child = child;
        let _ = child.kill();
        let _ = child.wait();
        assert!(seen.contains(&pid), "{seen:?} lacks {pid}");
    }
}
