//! The demo agent's start-up modes that act before it reads anything:
//! `stderr:K` and `stderr-line:N` (what it writes on stderr), `exit-at-start`,
//! `ignore-term`, and the children Parley's guardian must still end
//! (`child-ignores-term`, `setsid-child`, `double-fork`). The start-up modes
//! that bend a method live with it (`handshake`, `program` for `ignore-eof`).

use std::io::Write;

use super::state::Agent;

/// Does what the start-up modes ask, before the agent reads its input.
pub(super) fn start(agent: &Agent) {
    if let Some(k) = agent.mode("stderr").and_then(|k| k.parse::<usize>().ok()) {
        for i in 1..=k {
            eprintln!("demo: stderr line {i}");
        }
    }
    if let Some(mib) = agent.mode("stderr-line").and_then(|k| k.parse::<usize>().ok()) {
        // One line of `mib` MiB, written in pieces, with no newline until
        // the end.
        let piece = vec![b'x'; 1 << 20];
        let mut err = std::io::stderr().lock();
        for _ in 0..mib {
            let _ = err.write_all(&piece);
        }
        let _ = writeln!(err);
        let _ = writeln!(err, "demo: after the long line");
    }
    if agent.mode("exit-at-start").is_some() {
        eprintln!("demo: exiting at start, as asked (exit-at-start)");
        std::process::exit(3);
    }
    if agent.mode("ignore-term").is_some() {
        // SAFETY: setting a signal disposition to ignore is always sound.
        unsafe {
            libc::signal(libc::SIGTERM, libc::SIG_IGN);
        }
    }
    if agent.mode("child-ignores-term").is_some() {
        let spawned = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg("trap '' TERM; exec sleep 1000000")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn();
        match spawned {
            Ok(c) => eprintln!("demo: started child {} that ignores SIGTERM", c.id()),
            Err(e) => eprintln!("demo: could not start a child: {e}"),
        }
    }
    escape_the_group(agent);
}

/// The escapes from the process group that Parley's guardian must still end:
/// a child in a new session, and a daemon whose parent is gone.
fn escape_the_group(agent: &Agent) {
    let quiet = || {
        let mut c = std::process::Command::new("setsid");
        c.stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        c
    };
    if agent.mode("setsid-child").is_some() {
        let spawned = quiet()
            .args(["/bin/sh", "-c", "trap '' TERM; exec sleep 1000000"])
            .spawn();
        match spawned {
            Ok(c) => eprintln!("demo: started child {} in a session of its own", c.id()),
            Err(e) => eprintln!("demo: could not start a child: {e}"),
        }
    }
    if agent.mode("double-fork").is_some() {
        // setsid forks (its caller leads a group), and the first child exits.
        let status = quiet()
            .args(["/bin/sh", "-c", "setsid sleep 1000000 & exit 0"])
            .status();
        match status {
            Ok(_) => eprintln!("demo: started a daemon by a double fork"),
            Err(e) => eprintln!("demo: could not start a daemon: {e}"),
        }
    }
}
