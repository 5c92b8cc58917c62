//! The test harness: a core on a temp configuration, and waiting for events.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use parley::core::events::{Event, EventReceiver};
use parley::core::services::{Core, Options};
use parley::core::supervisor::process::StopTimings;
use parley::core::supervisor::Timings;
use parley::core::types::AgentState;
use serde_json::{json, Value};

pub fn demo() -> &'static str {
    env!("CARGO_BIN_EXE_parley-demo-agent")
}

pub fn cli() -> &'static str {
    env!("CARGO_BIN_EXE_parley-cli")
}

/// An agent entry running the demo agent with `PARLEY_DEMO_MODE=mode`.
pub fn agent(name: &str, mode: &str) -> Value {
    json!({"name": name, "command": demo(), "env": {"PARLEY_DEMO_MODE": mode}})
}

pub fn config_text(agents: &[Value], max_running: u32, idle: &str) -> String {
    serde_json::to_string_pretty(&json!({
        "limits": {"maxRunningAgents": max_running, "stopIdleAgentsAfter": idle},
        "agents": agents,
    }))
    .unwrap_or_default()
}

pub fn fast() -> Timings {
    Timings {
        handshake_timeout: Duration::from_secs(3),
        stop: StopTimings {
            eof_grace: Duration::from_millis(800),
            term_grace: Duration::from_millis(600),
        },
        idle_check: Duration::from_millis(200),
    }
}

pub struct Harness {
    pub core: Core,
    pub rx: EventReceiver,
    pub seen: Vec<Event>,
    pub dir: tempfile::TempDir,
    /// Kept for a restart (a real agent's start needs the spec's).
    pub timings: Timings,
}

/// Waits until the history's lock is free. The quit Parley let go of it,
/// but a child that another test forked in the meantime holds a copy of
/// its descriptor until it runs `exec`, and until then the lock stays
/// taken: the next Parley would open the history read-only.
async fn lock_let_go(path: &Path) {
    use std::os::fd::AsRawFd;
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        let Ok(file) = std::fs::OpenOptions::new().write(true).open(path) else {
            return;
        };
        // SAFETY: flock on a descriptor this function owns; closing it
        // below lets go again.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return;
        }
        drop(file);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{} is still locked 5 s after Parley quit", path.display());
}

impl Harness {
    pub fn path(&self) -> PathBuf {
        self.dir.path().join("config.json")
    }

    pub fn new(agents: &[Value]) -> Self {
        Self::with(&config_text(agents, 4, "0"), fast(), false)
    }

    pub fn with(text: &str, timings: Timings, watch: bool) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("config.json");
        std::fs::write(&path, text).expect("write config");
        let (core, rx) = Core::new(Options {
            config_path: Some(path),
            timings,
            spawn_prefix: Vec::new(),
            watch,
            history: Some(dir.path().join("history.sqlite3")),
        })
        .expect("core");
        Self::of(core, rx, dir, timings)
    }

    /// A harness on a core already made; the events it sent so far are
    /// history: waits look at what comes after.
    pub fn of(core: Core, rx: EventReceiver, dir: tempfile::TempDir, timings: Timings) -> Self {
        let seen: Vec<Event> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
        Harness {
            core,
            rx,
            seen,
            dir,
            timings,
        }
    }

    /// Quits this Parley and starts another on the same configuration and
    /// history (its agents are new processes).
    pub async fn restart(self) -> Harness {
        self.core.shutdown().await;
        let Harness {
            core,
            rx,
            dir,
            timings,
            ..
        } = self;
        drop((core, rx));
        lock_let_go(&dir.path().join("history.sqlite3.lock")).await;
        let (core, rx) = Core::new(Options {
            config_path: Some(dir.path().join("config.json")),
            timings,
            spawn_prefix: Vec::new(),
            watch: false,
            history: Some(dir.path().join("history.sqlite3")),
        })
        .expect("core");
        Self::of(core, rx, dir, timings)
    }

    /// Waits for an event matching `pred` (events before it are kept in `seen`).
    pub async fn wait_for(&mut self, what: &str, limit: Duration, pred: impl Fn(&Event) -> bool) -> Event {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.rx.recv()).await {
                Ok(Ok(e)) => {
                    self.seen.push(e.clone());
                    if pred(&e) {
                        return e;
                    }
                }
                _ => panic!(
                    "timed out after {limit:?} waiting for {what}; saw {:#?}",
                    self.tail()
                ),
            }
        }
    }

    fn tail(&self) -> Vec<String> {
        let skip = self.seen.len().saturating_sub(25);
        self.seen[skip..]
            .iter()
            .map(|e| {
                serde_json::to_string(e)
                    .unwrap_or_default()
                    .chars()
                    .take(300)
                    .collect()
            })
            .collect()
    }

    pub async fn wait_state(&mut self, agent: &str, state: AgentState) -> Option<String> {
        let agent_name = agent.to_owned();
        match self
            .wait_for(
                &format!("{agent} {state:?}"),
                Duration::from_secs(20),
                move |e| matches!(e, Event::AgentState(s) if s.agent == agent_name && s.state == state),
            )
            .await
        {
            Event::AgentState(s) => s.error,
            _ => None,
        }
    }

    /// Waits until `AgentService.List` shows the agent in `state` (for when
    /// several agents change at once and event order is not fixed).
    pub async fn wait_listed(&self, agent: &str, state: AgentState) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if self
                .core
                .agents
                .list()
                .iter()
                .any(|a| a.name == agent && a.state == state)
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("{agent} never became {state:?}: {:?}", self.core.agents.list());
    }

    /// The first system message of the agent's conversation.
    pub fn system_message(&self, agent: &str) -> parley::core::types::message::Message {
        let conv = self.core.chat.conversation(agent).expect("conversation");
        conv.messages
            .into_iter()
            .find(|m| m.role == parley::core::types::message::Role::System)
            .expect("a system message")
    }

    /// Waits for the next `permission:requested`.
    pub async fn next_permission(&mut self) -> parley::core::events::PermissionRequest {
        match self
            .wait_for("a permission request", Duration::from_secs(10), |e| {
                matches!(e, Event::PermissionRequested(_))
            })
            .await
        {
            Event::PermissionRequested(p) => p,
            _ => unreachable!("the predicate matched a permission request"),
        }
    }

    /// Waits for the end of the agent's turn.
    pub async fn wait_idle(&mut self, agent: &str) {
        let a = agent.to_owned();
        self.wait_for(
            &format!("{agent} idle"),
            Duration::from_secs(30),
            move |e| matches!(e, Event::TurnChanged(t) if t.agent == a && !t.busy),
        )
        .await;
    }

    /// Waits for the end of the agent's turn, for up to 2 minutes: a real
    /// agent may retry its provider for a while before it ends.
    pub async fn turn_ends(&mut self, agent: &str) {
        let a = agent.to_owned();
        self.wait_for(
            &format!("{agent}'s turn to end"),
            Duration::from_secs(120),
            move |e| matches!(e, Event::TurnChanged(t) if t.agent == a && !t.busy),
        )
        .await;
    }

    /// The states an agent went through, in order.
    pub fn states(&self, agent: &str) -> Vec<AgentState> {
        self.seen
            .iter()
            .filter_map(|e| match e {
                Event::AgentState(s) if s.agent == agent => Some(s.state),
                _ => None,
            })
            .collect()
    }
}

/// Processes whose environment holds `marker` (zombies have none).
pub fn processes_with(marker: &str) -> Vec<i32> {
    let needle = marker.as_bytes();
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) {
            if env.windows(needle.len()).any(|w| w == needle) {
                out.push(pid);
            }
        }
    }
    out
}

/// Waits (polling) until no process carries `marker`; returns those left.
pub async fn wait_no_processes(marker: &str, limit: Duration) -> Vec<i32> {
    let deadline = Instant::now() + limit;
    loop {
        let left = processes_with(marker);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub fn unique(prefix: &str) -> String {
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    )
}

#[allow(dead_code)]
pub fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

/// Runs the test `name` again in a test process of its own and returns true,
/// unless this already is that process (then false: run the body). For tests
/// that measure a child's peak memory: a spawned child's `ru_maxrss` starts
/// from its parent's high-water mark, which in the shared test process
/// holds whatever the tests running beside it allocated.
pub fn rerun_alone(name: &str) -> bool {
    if std::env::var_os("PARLEY_TEST_ALONE").is_some() {
        return false;
    }
    let exe = std::env::current_exe().expect("the test binary");
    let status = std::process::Command::new(exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env("PARLEY_TEST_ALONE", "1")
        .status()
        .expect("run the test alone");
    assert!(status.success(), "{name}, run alone, failed");
    true
}

/// Runs parley-cli to its end; returns its output, its peak resident memory
/// (KiB, from wait4's rusage: the VmHWM it ended with) and how long it ran.
pub fn cli_measured(args: &[&str], dir: &std::path::Path) -> (String, i64, Duration) {
    let start = Instant::now();
    // Reaped by wait4 below, not Child::wait: only wait4 gives its rusage.
    #[allow(clippy::zombie_processes)]
    let mut child = std::process::Command::new(cli())
        .args(args)
        .env("XDG_CONFIG_HOME", dir)
        .env("XDG_STATE_HOME", dir)
        .env("XDG_DATA_HOME", dir)
        .env_remove("PARLEY_CONFIG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("run parley-cli");
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = std::io::Read::read_to_string(&mut stdout, &mut out);
    }
    let pid = i32::try_from(child.id()).expect("pid");
    let mut status = 0;
    // SAFETY: rusage is plain old data; zero is a valid value for it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our unwaited child; the pointers are valid for the call.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4: {}", std::io::Error::last_os_error());
    (out, usage.ru_maxrss, start.elapsed())
}

/// Waits (polling, up to 3 s) until `n` processes carry `marker`, and
/// returns how many do then. A child caught between fork and exec (`sh -c
/// "…; exec sleep"`) has no readable environment for a moment.
pub async fn settled_count(marker: &str, n: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let count = processes_with(marker).len();
        if count == n || Instant::now() > deadline {
            return count;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Runs `parley-cli serve` on `config`; answers come back on the channel.
pub struct Serve {
    pub child: std::process::Child,
    pub stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<Value>,
}

impl Serve {
    pub fn start(dir: &std::path::Path, config: &std::path::Path) -> Serve {
        Serve::start_with(dir, config, &[])
    }

    /// As `start`, with `env` added to serve's environment.
    pub fn start_with(dir: &std::path::Path, config: &std::path::Path, env: &[(String, String)]) -> Serve {
        use std::io::BufRead;
        let mut child = std::process::Command::new(cli())
            .args(["serve", "--config"])
            .arg(config)
            .env("XDG_STATE_HOME", dir)
            .env("XDG_DATA_HOME", dir)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("serve");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    let _ = tx.send(v);
                }
            }
        });
        Serve { child, stdin, lines }
    }

    pub fn send(&mut self, call: Value) {
        use std::io::Write;
        writeln!(self.stdin, "{call}").expect("write");
    }

    pub fn wait(&self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            let v = self
                .lines
                .recv_timeout(Duration::from_secs(20))
                .unwrap_or_else(|_| panic!("timed out waiting for {what}"));
            if pred(&v) {
                return v;
            }
        }
    }

    /// A call and an event it causes, whichever line comes first (events
    /// and answers go out on their own paths): the answer and the event.
    pub fn call_seeing(
        &mut self,
        id: u64,
        method: &str,
        params: Value,
        event: impl Fn(&Value) -> bool,
    ) -> (Value, Value) {
        self.send(json!({"id": id, "method": method, "params": params}));
        let (mut answer, mut seen) = (None, None);
        while answer.is_none() || seen.is_none() {
            let v = self
                .lines
                .recv_timeout(Duration::from_secs(20))
                .unwrap_or_else(|_| panic!("timed out waiting for {method} and its event"));
            if v["id"] == id {
                answer = Some(v);
            } else if seen.is_none() && event(&v) {
                seen = Some(v);
            }
        }
        (answer.unwrap_or_default(), seen.unwrap_or_default())
    }

    pub fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"id": id, "method": method, "params": params}));
        self.wait(method, |v| v["id"] == id)
    }
}
