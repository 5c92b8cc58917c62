//! Parley's links to other hosts (see `crate::core::remote`): per host, the
//! multiplexed ssh connection Parley holds (`ControlMaster` on a socket in
//! Parley's own runtime directory, beneath a guardian, so it goes when
//! Parley goes however it goes), the helper put on the far side, and the
//! far side's file service (`remote_fs`).

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncBufReadExt;
use tokio::sync::watch;

use super::process::{self, Guardian};
use super::remote_fs::FsClient;
use crate::core::remote::{self, helper, Host};

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Why a host could not be reached: the reason, and the last lines ssh
/// (or the far side) said.
#[derive(Debug)]
pub struct LinkError {
    pub reason: String,
    pub last_lines: Vec<String>,
}

impl LinkError {
    fn plain(reason: impl Into<String>) -> Self {
        LinkError {
            reason: reason.into(),
            last_lines: Vec::new(),
        }
    }
}

impl std::fmt::Display for LinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)?;
        for line in &self.last_lines {
            write!(f, "\n{line}")?;
        }
        Ok(())
    }
}

/// One agent's `fs/*` on its host: the host's file service, held while
/// the agent's connection lives (cheap to clone).
#[derive(Clone)]
pub struct RemoteFs {
    pub link: Arc<Link>,
    /// The agent's directory there.
    pub root: std::path::PathBuf,
    client: Arc<tokio::sync::Mutex<Option<Arc<FsClient>>>>,
}

impl RemoteFs {
    pub fn new(link: Arc<Link>, root: std::path::PathBuf) -> Self {
        RemoteFs {
            link,
            root,
            client: Arc::default(),
        }
    }

    /// One request, answered or refused within `limit` in all (the file
    /// service started first if need be).
    pub async fn request(&self, method: &str, params: &str, limit: Duration) -> Result<Value, String> {
        let deadline = tokio::time::Instant::now() + limit;
        tokio::time::timeout_at(deadline, self.request_within(method, params, limit))
            .await
            .unwrap_or_else(|_| {
                Err(crate::i18n::gettext_f(
                    "{host} did not answer within {seconds} s",
                    &[
                        ("host", &self.link.host.name),
                        ("seconds", &limit.as_secs().to_string()),
                    ],
                ))
            })
    }

    async fn request_within(&self, method: &str, params: &str, limit: Duration) -> Result<Value, String> {
        let client = {
            let mut held = self.client.lock().await;
            match held.as_ref().filter(|c| c.alive()) {
                Some(c) => c.clone(),
                None => {
                    let c = self.link.fs(limit).await?;
                    *held = Some(c.clone());
                    c
                }
            }
        };
        client.request(&self.root, method, params, limit).await
    }
}

/// Every host's link, by its `host` text.
#[derive(Default)]
pub struct Hosts {
    links: Mutex<HashMap<String, Arc<Link>>>,
}

impl Hosts {
    /// The link to `host` (made on first use; nothing is started yet).
    pub fn link(&self, host: &Host) -> Arc<Link> {
        lock(&self.links)
            .entry(host.uri.clone())
            .or_insert_with(|| Arc::new(Link::new(host.clone())))
            .clone()
    }
}

/// The held ssh connection.
struct Master {
    /// Set when the ssh process has exited.
    gone: watch::Receiver<Option<Option<std::process::ExitStatus>>>,
    lines: Arc<Mutex<VecDeque<String>>>,
    // Dropped with the link: the guardian then ends the connection.
    _guardian: Guardian,
}

pub struct Link {
    pub host: Host,
    /// The control socket (ssh only).
    control: Option<PathBuf>,
    master: tokio::sync::Mutex<Option<Master>>,
    /// The helper's path on the far side, once it is known to be there.
    helper: tokio::sync::Mutex<Option<String>>,
    /// Shared by the agents on this host that use it, and ended when the
    /// last of them goes (they hold it, see `remote_fs::RemoteFs`).
    fs: tokio::sync::Mutex<std::sync::Weak<FsClient>>,
}

/// The last lines a process wrote, for an error's reason.
fn last_lines(lines: &Mutex<VecDeque<String>>) -> Vec<String> {
    lock(lines).iter().cloned().collect()
}

/// The sockets' directory and those above it that Parley made must be
/// Parley's user's own and closed to others (in /tmp, another user could
/// have made them first, and put a socket of theirs in the way).
fn private_dirs(dir: &Path) -> Result<(), LinkError> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let stop = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    for d in dir.ancestors().take_while(|d| *d != stop && d.starts_with(&stop)) {
        let m =
            std::fs::symlink_metadata(d).map_err(|e| LinkError::plain(format!("{}: {e}", d.display())))?;
        if !m.is_dir() || m.uid() != uid || m.mode() & 0o077 != 0 {
            return Err(LinkError::plain(crate::i18n::gettext_f(
                "{dir} is not a private directory of yours: Parley keeps no ssh connection there",
                &[("dir", &d.display().to_string())],
            )));
        }
    }
    Ok(())
}

/// Where Parley keeps its control sockets: its runtime directory, private.
fn socket_dir() -> PathBuf {
    let base = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_dir())
        .unwrap_or_else(|| {
            std::env::temp_dir().join(format!(
                "parley-{}", // SAFETY: getuid cannot fail.
                unsafe { libc::getuid() }
            ))
        });
    base.join("parley").join("ssh")
}

/// Sockets left by a Parley that was killed (their pid is gone).
fn remove_stale_sockets(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.rsplit_once('-'))
            .and_then(|(_, p)| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

impl Link {
    fn new(host: Host) -> Self {
        let control = matches!(host.engine, remote::Engine::Ssh { .. }).then(|| {
            // A socket's path must stay under 108 bytes: a short hash names
            // it, and Parley's pid (another Parley holds its own).
            use sha2::Digest;
            let digest = sha2::Sha256::digest(host.uri.as_bytes());
            let name: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
            let dir = socket_dir();
            remove_stale_sockets(&dir);
            dir.join(format!("{name}-{}", std::process::id()))
        });
        Link {
            host,
            control,
            master: tokio::sync::Mutex::new(None),
            helper: tokio::sync::Mutex::new(None),
            fs: tokio::sync::Mutex::new(std::sync::Weak::new()),
        }
    }

    /// The program and arguments that run `argv` on the far side.
    pub fn far_command(&self, tty: bool, argv: &[String]) -> (PathBuf, Vec<String>) {
        self.host.far_command(self.control.as_deref(), tty, argv)
    }

    /// Connects (ssh: once, then the connection is shared) and makes sure
    /// the helper is on the far side; its path there.
    pub async fn ready(&self, limit: Duration) -> Result<String, LinkError> {
        self.ready_as(limit, false).await
    }

    /// [`Self::ready`], checking the helper's hash on the far side again
    /// even when it was checked on this connection: before an agent
    /// starts, a helper replaced there since is never run.
    pub async fn checked(&self, limit: Duration) -> Result<String, LinkError> {
        self.ready_as(limit, true).await
    }

    async fn ready_as(&self, limit: Duration, again: bool) -> Result<String, LinkError> {
        self.connect(limit).await?;
        let mut helper = self.helper.lock().await;
        if let Some(path) = helper.as_ref().filter(|_| !again) {
            return Ok(path.clone());
        }
        let path = tokio::time::timeout(limit * 4, self.install())
            .await
            .unwrap_or_else(|_| {
                Err(LinkError::plain(crate::i18n::gettext_f(
                    "Parley's helper could not be put on {host} in time",
                    &[("host", &self.host.name)],
                )))
            })?;
        *helper = Some(path.clone());
        Ok(path)
    }

    /// The ssh connection, started if it is not up.
    async fn connect(&self, limit: Duration) -> Result<(), LinkError> {
        let (Some(control), Some((program, args))) = (
            self.control.as_ref(),
            self.control
                .as_ref()
                .and_then(|c| remote::master_command(&self.host, c)),
        ) else {
            return Ok(());
        };
        let mut master = self.master.lock().await;
        if let Some(m) = master.as_ref() {
            if m.gone.borrow().is_none() && control.exists() {
                return Ok(());
            }
        }
        *master = None;
        // The helper is checked again on a new connection.
        *self.helper.lock().await = None;
        let dir = control.parent().unwrap_or(Path::new("/"));
        {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| LinkError::plain(format!("{}: {e}", dir.display())))?;
        }
        private_dirs(dir)?;
        let _ = std::fs::remove_file(control);
        let spawned = process::spawn(&process::SpawnSpec {
            program: &program,
            args: &args,
            env: &Default::default(),
            cwd: dir,
            prefix: &[],
            grace: Duration::from_secs(1),
            terminal: None,
        })
        .map_err(|e| {
            LinkError::plain(crate::i18n::gettext_f(
                "could not run ssh: {error}",
                &[("error", &e.to_string())],
            ))
        })?;
        let process::Spawned {
            mut child,
            lifeline,
            status: _,
            ..
        } = spawned;
        let lines: Arc<Mutex<VecDeque<String>>> = Arc::default();
        if let Some(stderr) = child.stderr.take() {
            let lines = lines.clone();
            tokio::spawn(async move {
                let mut reader = tokio::io::BufReader::new(stderr).lines();
                while let Ok(Some(line)) = reader.next_line().await {
                    let mut l = lock(&lines);
                    if l.len() == 8 {
                        l.pop_front();
                    }
                    l.push_back(line);
                }
            });
        }
        drop(child.stdin.take());
        drop(child.stdout.take());
        let (gone_tx, gone_rx) = watch::channel(None);
        tokio::spawn(async move {
            let status = child.wait().await.ok();
            gone_tx.send_replace(Some(status));
        });
        let m = Master {
            gone: gone_rx.clone(),
            lines: lines.clone(),
            _guardian: Guardian::new(lifeline, gone_rx.clone()),
        };
        let deadline = tokio::time::Instant::now() + limit;
        let mut gone = gone_rx;
        loop {
            if control.exists() {
                *master = Some(m);
                return Ok(());
            }
            if gone.borrow().is_some() || tokio::time::Instant::now() >= deadline {
                let timed_out = gone.borrow().is_none();
                // Let its last words arrive.
                tokio::time::sleep(Duration::from_millis(100)).await;
                drop(m);
                let reason = if timed_out {
                    crate::i18n::gettext_f(
                        "could not connect to {host} in time",
                        &[("host", &self.host.name)],
                    )
                } else {
                    crate::i18n::gettext_f("could not connect to {host}", &[("host", &self.host.name)])
                };
                return Err(LinkError {
                    reason,
                    last_lines: last_lines(&lines),
                });
            }
            let _ = tokio::time::timeout(Duration::from_millis(25), gone.changed()).await;
        }
    }

    /// The connection's last words, when it has ended (ssh only).
    pub async fn lost(&self) -> Option<Vec<String>> {
        let master = self.master.lock().await;
        let m = master.as_ref()?;
        let gone = m.gone.borrow().is_some();
        gone.then(|| last_lines(&m.lines))
    }

    /// Runs `script` with `sh -c` on the far side (stdin from `input`);
    /// its output, or why not.
    async fn run_script(
        &self,
        script: &str,
        args: &[&str],
        input: Option<std::fs::File>,
    ) -> Result<String, String> {
        let mut argv = vec![
            "sh".to_owned(),
            "-c".to_owned(),
            script.to_owned(),
            "parley".to_owned(),
        ];
        argv.extend(args.iter().map(|s| (*s).to_owned()));
        let (program, args) = self.far_command(false, &argv);
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args)
            .stdin(input.map_or_else(Stdio::null, Stdio::from))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let out = cmd.output().await.map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
        } else {
            let err = String::from_utf8_lossy(&out.stderr);
            let out_text = String::from_utf8_lossy(&out.stdout);
            Err(format!("{} {}", out_text.trim(), err.trim()).trim().to_owned())
        }
    }

    /// Puts the helper on the far side unless it is there already (same
    /// SHA-256); its path there.
    async fn install(&self) -> Result<String, LinkError> {
        let local = super::guardian::helper()
            .map(|c| {
                PathBuf::from(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(
                    c.to_bytes(),
                ))
            })
            .ok_or_else(|| {
                LinkError::plain(crate::i18n::gettext(
                    "Parley's helper program was not found beside Parley",
                ))
            })?;
        let hash = local_hash(&local).await.map_err(LinkError::plain)?;
        let arch = std::env::consts::ARCH;
        let checked = self
            .run_script(CHECK_SCRIPT, &[&hash, arch], None)
            .await
            .map_err(|e| LinkError {
                reason: crate::i18n::gettext_f("could not reach {host}", &[("host", &self.host.name)]),
                last_lines: e.lines().map(str::to_owned).collect(),
            })?;
        // The script prints one line. More: the far side's shell prints
        // text before every command (a start-up file), which would also
        // corrupt what the helper and the agent say.
        let mut lines = checked.lines().filter(|l| !l.trim().is_empty());
        let first = lines.next().unwrap_or("").to_owned();
        let checked = checked.lines().last().unwrap_or("").trim().to_owned();
        if checked != first {
            let shown: String = first.chars().take(80).collect();
            return Err(LinkError::plain(crate::i18n::gettext_f(
                "{host} prints text before every command (“{text}”), from a shell start-up file such as ~/.bashrc; Parley cannot talk to an agent through it. Print such text only in interactive shells.",
                &[("host", &self.host.name), ("text", &shown)],
            )));
        }
        if let Some(path) = checked.strip_prefix("ok ") {
            return Ok(path.to_owned());
        }
        if let Some(other) = checked.strip_prefix("arch ") {
            return Err(LinkError::plain(crate::i18n::gettext_f(
                "{host} is a {arch} machine; Parley's helper is built for {own}",
                &[("host", &self.host.name), ("arch", other), ("own", arch)],
            )));
        }
        let file = std::fs::File::open(&local).map_err(|e| LinkError::plain(e.to_string()))?;
        let copied = self
            .run_script(COPY_SCRIPT, &[&hash], Some(file))
            .await
            .map_err(|e| LinkError {
                reason: crate::i18n::gettext_f(
                    "Parley's helper could not be copied to {host}",
                    &[("host", &self.host.name)],
                ),
                last_lines: e.lines().map(str::to_owned).collect(),
            })?;
        copied.strip_prefix("ok ").map(str::to_owned).ok_or_else(|| {
            LinkError::plain(crate::i18n::gettext_f(
                "Parley's helper could not be copied to {host}",
                &[("host", &self.host.name)],
            ))
        })
    }

    /// Keeps `data` in a private file of the helper's on the far side; its
    /// path there.
    pub async fn stash(&self, helper: &str, data: &[u8]) -> Result<String, String> {
        use tokio::io::AsyncWriteExt;
        let (program, args) =
            self.far_command(false, &[helper.to_owned(), helper::FLAG.into(), "stash".into()]);
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| e.to_string())?;
        if let Some(mut input) = child.stdin.take() {
            input.write_all(data).await.map_err(|e| e.to_string())?;
        }
        let out = child.wait_with_output().await.map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if out.status.success() && !text.is_empty() {
            Ok(text)
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
        }
    }

    /// The far side's file service, started if it is not running.
    pub async fn fs(&self, limit: Duration) -> Result<Arc<FsClient>, String> {
        let helper = self.ready(limit).await.map_err(|e| e.to_string())?;
        let mut fs = self.fs.lock().await;
        if let Some(client) = fs.upgrade().filter(|c| c.alive()) {
            return Ok(client);
        }
        let (program, args) = self.far_command(false, &[helper, helper::FLAG.to_owned(), "fs".to_owned()]);
        let client = FsClient::start(&program, &args, &self.host.name).map_err(|e| e.to_string())?;
        *fs = Arc::downgrade(&client);
        Ok(client)
    }
}

/// Prints `ok PATH` when the helper with this hash is there, `need PATH`
/// when it is not, `arch X` when the far side is another machine kind.
const CHECK_SCRIPT: &str = r#"m=$(uname -m); [ "$m" = "$2" ] || { echo "arch $m"; exit 0; }
d="${XDG_CACHE_HOME:-$HOME/.cache}/parley"; f="$d/parley-helper-$1"
if [ -x "$f" ] && [ "$(sha256sum < "$f" | cut -c1-64)" = "$1" ]; then echo "ok $f"; else echo "need $f"; fi"#;

/// Takes the helper on stdin; keeps it only when its hash is right.
const COPY_SCRIPT: &str = r#"umask 077; d="${XDG_CACHE_HOME:-$HOME/.cache}/parley"; f="$d/parley-helper-$1"; t="$f.$$"
mkdir -p "$d" && cat > "$t" && [ "$(sha256sum < "$t" | cut -c1-64)" = "$1" ] && chmod 700 "$t" && mv -f "$t" "$f" && echo "ok $f" || { rm -f "$t"; echo "the copy's hash is wrong" >&2; exit 1; }"#;

/// The SHA-256 of Parley's helper program, worked out once.
async fn local_hash(path: &Path) -> Result<String, String> {
    static HASH: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    let path = path.to_path_buf();
    HASH.get_or_try_init(|| async move {
        tokio::task::spawn_blocking(move || {
            use sha2::Digest;
            use std::io::Read;
            let mut file = std::fs::File::open(&path).map_err(|e| e.to_string())?;
            let mut hasher = sha2::Sha256::new();
            let mut buf = vec![0u8; 1 << 20];
            loop {
                let n = file.read(&mut buf).map_err(|e| e.to_string())?;
                if n == 0 {
                    break;
                }
                hasher.update(&buf[..n]);
            }
            Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
        })
        .await
        .map_err(|e| e.to_string())?
    })
    .await
    .cloned()
}
