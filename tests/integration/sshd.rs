//! A real `sshd` (Debian's openssh-server) on 127.0.0.1 for the remote
//! agents' tests: a throw-away host key and user key in the test's own
//! directory, in a mount namespace of its own (`unshare -m`) with a tmpfs
//! over `far/` that only it (and what it starts) can see.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Sshd {
    pub dir: tempfile::TempDir,

    child: Child,
}

/// Why sshd cannot run here, if it cannot.
pub fn unavailable() -> Option<String> {
    if !Path::new("/usr/sbin/sshd").exists() {
        return Some("/usr/sbin/sshd is not installed (Debian: openssh-server)".into());
    }
    // sshd's privilege separation directory (made as root).
    if let Err(e) = std::fs::create_dir_all("/run/sshd") {
        return Some(format!("/run/sshd cannot be made: {e}"));
    }
    let ok = Command::new("unshare")
        .args(["-m", "true"])
        .status()
        .is_ok_and(|s| s.success());
    (!ok).then(|| "unshare -m is not allowed here".into())
}

fn run(cmd: &mut Command) {
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn keygen(path: &Path) -> String {
    run(Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", ""])
        .arg("-f")
        .arg(path));
    std::fs::read_to_string(path.with_extension("pub")).expect("public key")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl Sshd {
    /// Starts it; `far/secret.txt` exists only inside its namespace.
    pub fn start() -> Sshd {
        Self::start_with_env("")
    }

    /// As [`Sshd::start`], its sessions getting `env` too (`NAME=VALUE`
    /// words, sshd's `SetEnv`).
    pub fn start_with_env(env: &str) -> Sshd {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        std::fs::create_dir_all(d.join("far")).expect("far");
        std::fs::create_dir_all(d.join("cache")).expect("cache");
        std::fs::create_dir_all("/run/sshd").expect("privilege separation directory");
        let host_pub = keygen(&d.join("host_key"));
        let user_pub = keygen(&d.join("id"));
        keygen(&d.join("stranger"));
        std::fs::write(d.join("authorized_keys"), &user_pub).expect("authorized_keys");
        let port = free_port();
        std::fs::write(
            d.join("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {hk}\nAuthorizedKeysFile {ak}\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n\
                 PermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\nPidFile none\n\
                 MaxSessions 100\nMaxStartups 100\nLogLevel QUIET\nSetEnv XDG_CACHE_HOME={cache} {env}\n",
                hk = d.join("host_key").display(),
                ak = d.join("authorized_keys").display(),
                cache = d.join("cache").display(),
            ),
        )
        .expect("sshd_config");
        let far = d.join("far");
        let script = format!(
            "mount -t tmpfs tmpfs {far} && echo 'only on the far side' > {far}/secret.txt && exec /usr/sbin/sshd -D -e -f {cfg}",
            far = far.display(),
            cfg = d.join("sshd_config").display(),
        );
        let child = Command::new("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .process_group(0)
            .spawn()
            .expect("sshd");
        let user = String::from_utf8(Command::new("id").arg("-un").output().expect("id").stdout)
            .expect("user")
            .trim()
            .to_owned();
        let host_key = host_pub.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
        std::fs::write(d.join("known_hosts"), format!("[127.0.0.1]:{port} {host_key}\n"))
            .expect("known_hosts");
        std::fs::write(d.join("empty_known_hosts"), "").expect("known_hosts");
        let block = |alias: &str, port: u16, key: &str, known: &str| {
            format!(
                "Host {alias}\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  IdentityFile {key}\n  IdentitiesOnly yes\n  \
                 UserKnownHostsFile {known}\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n",
                key = d.join(key).display(),
                known = d.join(known).display(),
            )
        };
        // devbox: the real thing; the others, one fault each.
        let config = [
            block("devbox", port, "id", "known_hosts"),
            block("stranger", port, "stranger", "known_hosts"),
            block("unknown-key", port, "id", "empty_known_hosts"),
            block("nowhere", free_port(), "id", "known_hosts"),
        ]
        .concat();
        std::fs::write(d.join("ssh_config"), config).expect("ssh_config");
        // The ssh Parley runs: the system's, reading this configuration as a
        // user's ~/.ssh/config would be read.
        let wrapper = d.join("ssh");
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\nexec ssh -F {} \"$@\"\n",
                d.join("ssh_config").display()
            ),
        )
        .expect("wrapper");
        run(Command::new("chmod").arg("755").arg(&wrapper));
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "sshd did not listen on {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        Sshd { dir, child }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// The environment `parley-cli serve` gets: the ssh to use.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![("PARLEY_SSH".into(), self.path("ssh").display().to_string())]
    }

    #[allow(dead_code)] // not every test binary uses it
    /// Runs `script` on the far side with the test's own ssh; its output.
    pub fn far(&self, script: &str) -> String {
        let out = Command::new(self.path("ssh"))
            .args(["-o", "BatchMode=yes", "devbox", script])
            .output()
            .expect("ssh");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        // sshd and the sessions it forked: its whole group.
        let pgid = self.child.id() as i32;
        // SAFETY: a signal to the group this fixture started.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        let _ = self.child.wait();
        // sshd's sessions make sessions of their own: whatever still runs
        // from this fixture's directory (a failed test's helpers) goes too.
        for pid in processes_running(&self.dir.path().display().to_string()) {
            // SAFETY: a signal to a process started from this fixture.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

#[allow(dead_code)] // not every test binary uses it
/// Processes whose command line holds `needle`.
pub fn processes_running(needle: &str) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) {
            if cmdline.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                out.push(pid);
            }
        }
    }
    out
}
