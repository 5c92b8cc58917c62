//! The demo agent: the ACP v1 agent that ships with Parley. No network, no
//! keys, deterministic. See `--help` for its scripted test modes.
//!
//! It lives in the library so that every Parley program can be it: the
//! `parley-demo-agent` program, and `parley --demo-agent` /
//! `parley-cli --demo-agent` for a tree where only `parley` was built
//! (`cargo run`). See `core::launch::bundled`.
//!
//! Why one file of some 880 lines: it is test tooling, a script of prompt
//! keywords read top to bottom; the hostile scripts live apart
//! (`hostile_fs`, `hostile_text`).

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol_schema::v1 as acp;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::oneshot;

mod auth;
mod controls;
mod hostile_fs;
mod hostile_text;
mod sessions;
mod terminals;

const HELP: &str = "\
parley-demo-agent: the ACP (protocol version 1) agent bundled with Parley.

It speaks JSON-RPC on stdin/stdout and logs on stderr. In normal use every
prompt gets a demo of what Parley shows: a thought, a plan, tool calls (read,
search, edit with a diff after a permission request, a failing execute),
streamed Markdown, usage reports and slash commands (/help, /plan, /flood).

Start-up modes, comma-separated in PARLEY_DEMO_MODE:
  exit-at-start        exit with status 3 before reading anything
  no-initialize        never answer initialize
  protocol-2           answer initialize with protocolVersion 2
  garbage              print non-JSON lines on stdout before every message
  huge-line:N          answer initialize after a line of N MiB
  stderr:K             write K lines on stderr at start
  stderr-line:N        write one stderr line of N MiB at start
  ignore-eof           keep running after stdin ends
  ignore-term          ignore SIGTERM
  child-ignores-term   start a child process that ignores SIGTERM
  setsid-child         start a child in a session of its own (setsid) that
                       ignores SIGTERM
  double-fork          start a daemon by a double fork: a setsid child whose
                       parent exits at once
  auth-required        answer session/new with an authentication error
  auth-agent           offer agent sign-in methods (demo-login succeeds,
                       demo-refuse fails, demo-slow takes 30 s) and logout;
                       answer prompts with an authentication error until
                       signed in
  auth-env             offer an env_var method; session/new fails until
                       DEMO_API_KEY is set
  auth-terminal        offer a terminal method (--login) and its legacy
                       _meta form; session/new fails until a terminal
                       sign-in left .parley-demo-signed-in in the cwd
  early-updates        send a session update before answering session/new
  legacy-modes         offer the legacy modes and models (session/set_mode,
                       session/set_model), not config options
  no-options           offer no session options at all
  images, embedded     take image content / embedded resources in prompts
  mcp-http, mcp-sse    take MCP servers over http / sse (stdio always)
  additional-dirs      take additionalDirectories in session/new
  close-stdout         close stdout after answering initialize, keep running
  resume               offer session/resume and session/close
  load                 offer session/load (replays the stored turns as
                       user and agent message chunks) and session/close
  slow-reopen          answer session/resume and session/load after 1 s
  list                 offer session/list (the stored sessions of a cwd,
                       newest first, one page) and session/delete
With resume, load or list, sessions are stored as <sessionId>.json files
in PARLEY_DEMO_SESSIONS (default: parley-demo-sessions in the temporary
directory), with session ids unique across processes; each prompt adds a
turn (its text and the agent text streamed), session-info stores the title.

Prompt keywords (the prompt's first word):
  flood N M            N text chunks of M bytes, as fast as possible
  slow N MS            N text chunks, MS milliseconds apart
  stop REASON          end the turn with end_turn, max_tokens,
                       max_turn_requests or refusal
  wait                 stream slowly until session/cancel (stopReason cancelled)
  crash                stream a little, then exit with status 3 mid-turn
  permission [N]       ask for permission N times; each answer is shown
  ask KIND PATH TITLE  ask for permission for a tool call of KIND (none: no
                       kind; announced:KIND: the kind only in the tool call's
                       announcement) touching PATH (-: none); show the answer
  silent SECONDS       say nothing for SECONDS, then answer
  ignore-cancel        say nothing and never end the turn, even when
                       cancelled (for a minute)
  elicit-form          ask the client for a form (name, age, colour,
                       subscribe) and show the answer
  elicit-url [tricky|userinfo]
                       ask the client to visit a URL; on accept, tell it
                       the elicitation is complete, then show the answer
                       (tricky: line breaks after a trusted host's name;
                       userinfo: a trusted name before an @)
  unknown-request      send Parley a request of an unknown method
  permission-elsewhere ask for permission in a session that is not this one
  tool ID TITLE        report a completed tool call with this id
  permission-hostile   ask for permission with a NUL and a right-to-left
                       override in the tool's title
  fs-read PATH         ask Parley to read PATH and show the answer
  fs-write PATH TEXT   ask Parley to write TEXT to PATH and show the answer
  fs-race N OUTSIDE    swap a directory of the cwd with a symlink to OUTSIDE
                       (renameat2 RENAME_EXCHANGE) while reading and writing
                       through it N times; report what came from outside
  fs-fifo PATH         make a FIFO at PATH and ask Parley to read it
  fs-no-read N PATH    ask Parley to read PATH N times, then stop reading
                       stdin for good (the answers pile up)
  fs-read-len PATH [LINE [LIMIT]]
                       ask Parley to read PATH; show only the answer's size
  usage USED SIZE      report context usage
  cost AMOUNT          report usage with a cost in USD
  session-info TITLE   title the session (session_info_update)
  switch-mode MODE     change its own mode (config_option_update)
  received             tell the MCP servers, additional directories and
                       option values the session got, and the last
                       prompt's content blocks
The model option's value demo-unavailable is always refused.
  late                 send a chunk after answering session/prompt
  unknown-update       send a session update of an unknown kind
  stderr K             write K lines on stderr
  error                answer session/prompt with a JSON-RPC error
  echo TEXT            answer TEXT
  terminals            use the client's terminals: echo, 5 MB through a
                       1,000-byte limit, kill a sleep and a command that
                       ignores SIGTERM, an unknown id; say what came back
  terminal-colors      a tool call showing a terminal with coloured output
  terminal-flood BYTES a tool call showing a terminal that prints BYTES bytes
  terminal-race        four terminal/create written at once; says how many were made
  terminal-orphan MARK a terminal whose command leaves a grandchild (its
                       environment holds MARK), then wait a minute
  broken-chunks        chunks with a split surrogate pair, invalid UTF-8 and
                       a byte-order mark, written raw
  text-fixture NAME [pieces]
                       answer fixture NAME in one chunk (or streamed in
                       pieces): four-fences, nul (control characters), link
                       (a misleading link) or bidi (a right-to-left override
                       in a file name)
Any prompt ends with stopReason cancelled if session/cancel arrives.

--login: the terminal sign-in: asks for \"yes\" on its terminal, then
exits 0 (and leaves .parley-demo-signed-in in the current directory) or 1.
";

struct Agent {
    out: Mutex<std::io::Stdout>,
    modes: Vec<String>,
    next_id: AtomicI64,
    pending: Mutex<HashMap<i64, oneshot::Sender<Value>>>,
    cancelled: Mutex<HashMap<String, Arc<AtomicBool>>>,
    always_allow: AtomicBool,
    always_reject: AtomicBool,
    sessions: AtomicU64,
    used: AtomicU64,
    cwd: Mutex<String>,
    /// Set by `fs-no-read`: stdin is no longer read.
    deaf: AtomicBool,
    /// `auth-agent`: `authenticate` succeeded (and no `logout` since).
    signed_in: AtomicBool,
    /// The client advertised `session.configOptions.boolean`.
    boolean_options: AtomicBool,
    recorded: Mutex<controls::Recorded>,
    /// With `resume`, `load` or `list`: where sessions are stored.
    sessions_dir: Option<PathBuf>,
    /// The agent text of the current turn of each session stored by this
    /// process (only those have an entry).
    turn_text: Mutex<HashMap<String, String>>,
}

impl Agent {
    fn mode(&self, name: &str) -> Option<&str> {
        self.modes.iter().find_map(|m| {
            if m == name {
                Some("")
            } else {
                m.strip_prefix(name).and_then(|r| r.strip_prefix(':'))
            }
        })
    }

    fn send(&self, msg: &Value) {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        if self.mode("garbage").is_some() {
            let _ = writeln!(out, "demo agent says hello (this is not JSON)");
        }
        let _ = writeln!(out, "{msg}");
        let _ = out.flush();
    }

    /// Writes `line` as it is, newline added (for lines serde_json would
    /// not write).
    fn send_raw(&self, line: &[u8]) {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let _ = out.write_all(line);
        let _ = out.write_all(b"\n");
        let _ = out.flush();
    }

    fn respond(&self, id: &Value, result: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    fn respond_error(&self, id: &Value, code: i64, message: &str) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}));
    }

    fn update(&self, session: &str, update: Value) {
        sessions::capture(self, session, &update);
        self.send(&json!({"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": session, "update": update}}));
    }

    fn chunk(&self, session: &str, kind: &str, text: &str) {
        self.update(
            session,
            json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}}),
        );
    }

    async fn request(&self, method: &str, params: Value) -> Value {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, tx);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        rx.await.unwrap_or(Value::Null)
    }

    fn is_cancelled(&self, session: &str) -> bool {
        self.cancelled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(session)
            .is_some_and(|f| f.load(Ordering::Relaxed))
    }
}

/// The argument that makes `parley` or `parley-cli` the demo agent.
pub const FLAG: &str = "--demo-agent";

/// When this program was started as `PROGRAM --demo-agent …`, runs the demo
/// agent and exits; otherwise returns at once.
pub fn run_if_asked() {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some(FLAG) {
        main(args.collect());
        std::process::exit(0);
    }
}

/// Runs the demo agent on this process's stdin and stdout; `args` are its
/// command-line arguments (without the program name).
pub fn main(args: Vec<String>) {
    match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt.block_on(run(args)),
        Err(e) => {
            eprintln!("demo: cannot start a runtime: {e}");
            std::process::exit(1);
        }
    }
}

async fn run(args: Vec<String>) {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        print!("{HELP}");
        return;
    }
    if args.first().is_some_and(|a| a == "--login") {
        std::process::exit(auth::terminal_login());
    }
    let modes: Vec<String> = std::env::var("PARLEY_DEMO_MODE")
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect();
    let mut agent = Agent {
        out: Mutex::new(std::io::stdout()),
        modes,
        next_id: AtomicI64::new(1000),
        pending: Mutex::new(HashMap::new()),
        cancelled: Mutex::new(HashMap::new()),
        always_allow: AtomicBool::new(false),
        always_reject: AtomicBool::new(false),
        sessions: AtomicU64::new(0),
        used: AtomicU64::new(1200),
        cwd: Mutex::new(String::new()),
        deaf: AtomicBool::new(false),
        signed_in: AtomicBool::new(false),
        boolean_options: AtomicBool::new(false),
        recorded: Mutex::new(controls::Recorded::default()),
        sessions_dir: None,
        turn_text: Mutex::new(HashMap::new()),
    };
    agent.sessions_dir = sessions::dir(&agent);
    let agent = Arc::new(agent);
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
    escape_the_group(&agent);
    eprintln!("demo: ready for ACP on stdin");

    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            eprintln!("demo: skipped a line that is not JSON");
            continue;
        };
        let agent = agent.clone();
        handle(agent.clone(), msg).await;
        if agent.deaf.load(Ordering::Relaxed) {
            eprintln!("demo: no longer reading stdin (fs-no-read)");
            std::future::pending::<()>().await;
        }
    }
    eprintln!("demo: end of input");
    if agent.mode("ignore-eof").is_some() {
        eprintln!("demo: ignoring end of input (ignore-eof)");
        loop {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
    }
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

async fn handle(agent: Arc<Agent>, msg: Value) {
    let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
    let id = msg.get("id").cloned();
    let params = msg.get("params").cloned().unwrap_or(Value::Null);
    match (method.as_deref(), id) {
        (None, Some(id)) => {
            let Some(n) = id.as_i64() else { return };
            let tx = agent.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&n);
            if let Some(tx) = tx {
                let answer = msg
                    .get("result")
                    .cloned()
                    .unwrap_or_else(|| json!({"error": msg.get("error")}));
                let _ = tx.send(answer);
            }
        }
        (Some("initialize"), Some(id)) => initialize(&agent, &id, params).await,
        (Some("authenticate"), Some(id)) => {
            tokio::spawn(async move { auth::authenticate(&agent, &id, params).await });
        }
        (Some("logout"), Some(id)) => {
            agent.signed_in.store(false, Ordering::Relaxed);
            agent.respond(&id, json!({}));
        }
        (Some("session/new"), Some(id)) => new_session(&agent, &id, params).await,
        (Some("session/set_mode"), Some(id)) => controls::set_legacy(&agent, &id, &params, false),
        (Some("session/set_model"), Some(id)) => controls::set_legacy(&agent, &id, &params, true),
        (Some("session/set_config_option"), Some(id)) => controls::set_config_option(&agent, &id, &params),
        (Some("session/prompt"), Some(id)) => {
            tokio::spawn(async move { prompt(agent, id, params).await });
        }
        (Some("session/cancel"), None) => {
            let sid = params
                .get("sessionId")
                .and_then(Value::as_str)
                .unwrap_or_default();
            eprintln!("demo: session/cancel for {sid}");
            if let Some(flag) = agent.cancelled.lock().unwrap_or_else(|e| e.into_inner()).get(sid) {
                flag.store(true, Ordering::Relaxed);
            }
        }
        (Some(m), Some(id)) if sessions::answers(&agent, m) => sessions::handle(&agent, m, &id, &params),
        (Some(other), Some(id)) => agent.respond_error(&id, -32601, &format!("method not found: {other}")),
        (Some(other), None) => eprintln!("demo: ignored notification {other}"),
        (None, None) => {}
    }
}

async fn initialize(agent: &Agent, id: &Value, params: Value) {
    let boolean = params
        .pointer("/clientCapabilities/session/configOptions/boolean")
        .is_some_and(Value::is_object);
    agent.boolean_options.store(boolean, Ordering::Relaxed);
    match serde_json::from_value::<acp::InitializeRequest>(params) {
        Ok(req) => eprintln!(
            "demo: initialize from {:?}, protocol {}",
            req.client_info.map(|c| c.name),
            req.protocol_version
        ),
        Err(e) => eprintln!("demo: initialize with unexpected params: {e}"),
    }
    if agent.mode("no-initialize").is_some() {
        eprintln!("demo: not answering initialize (no-initialize)");
        return;
    }
    if let Some(mib) = agent.mode("huge-line").and_then(|n| n.parse::<usize>().ok()) {
        let filler = "x".repeat(1024 * 1024);
        let mut out = agent.out.lock().unwrap_or_else(|e| e.into_inner());
        let _ = write!(
            out,
            "{{\"jsonrpc\":\"2.0\",\"method\":\"_demo/huge\",\"params\":\""
        );
        for _ in 0..mib {
            let _ = out.write_all(filler.as_bytes());
        }
        let _ = writeln!(out, "\"}}");
        let _ = out.flush();
    }
    let version = if agent.mode("protocol-2").is_some() { 2 } else { 1 };
    let (prompt_caps, mcp_caps, session_caps) = controls::capabilities(agent);
    let session_caps = sessions::capabilities(agent, session_caps);
    agent.respond(
        id,
        json!({
            "protocolVersion": version,
            "agentCapabilities": {"loadSession": sessions::load_session(agent), "promptCapabilities": prompt_caps,
                "mcpCapabilities": mcp_caps, "sessionCapabilities": session_caps,
                "auth": if agent.mode("auth-agent").is_some() { json!({"logout": {}}) } else { json!({}) }},
            "authMethods": auth::methods(agent),
            "agentInfo": {"name": "parley-demo-agent", "title": "Demo Agent", "version": env!("CARGO_PKG_VERSION")}
        }),
    );
    if agent.mode("close-stdout").is_some() {
        // Hostile: the connection ends, the process does not.
        let _out = agent.out.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: closing our own stdout; nothing writes to it after this
        // while the lock is held, and later writes fail harmlessly.
        unsafe {
            libc::close(1);
        }
        eprintln!("demo: closed stdout, still running (close-stdout)");
    }
}

async fn new_session(agent: &Agent, id: &Value, params: Value) {
    controls::record_session(agent, &params);
    let req: acp::NewSessionRequest = match serde_json::from_value(params) {
        Ok(r) => r,
        Err(e) => return agent.respond_error(id, -32602, &format!("invalid session/new params: {e}")),
    };
    if !req.cwd.is_absolute() {
        return agent.respond_error(id, -32602, "cwd must be absolute");
    }
    if agent.mode("auth-required").is_some() {
        return agent.respond_error(id, -32000, "Authentication required");
    }
    if let Some(why) = auth::session_refused(agent, &req.cwd) {
        return agent.respond_error(id, -32000, &why);
    }
    let cwd = req.cwd.display().to_string();
    let n = agent.sessions.fetch_add(1, Ordering::Relaxed) + 1;
    let sid = if agent.sessions_dir.is_some() {
        sessions::new_id(n)
    } else {
        format!("demo-session-{n}")
    };
    if let Err(e) = sessions::store_new(agent, &sid, &cwd) {
        return agent.respond_error(id, -32603, &format!("cannot store the session: {e}"));
    }
    *agent.cwd.lock().unwrap_or_else(|e| e.into_inner()) = cwd;
    agent
        .cancelled
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(sid.clone(), Arc::new(AtomicBool::new(false)));
    // Sent before the answer: clients must keep such updates (ACP issue trackers).
    available_commands(agent, &sid);
    if agent.mode("early-updates").is_some() {
        agent.chunk(&sid, "agent_message_chunk", "(sent before session/new answered) ");
    }
    let mut answer = controls::session_state(agent);
    answer["sessionId"] = json!(sid);
    agent.respond(id, answer);
}

/// The slash commands, as `session/new` (and resume, load) announce them.
fn available_commands(agent: &Agent, sid: &str) {
    agent.update(
        sid,
        json!({"sessionUpdate": "available_commands_update", "availableCommands": [
            {"name": "help", "description": "What the demo agent can do"},
            {"name": "plan", "description": "Show a plan whose entries progress"},
            {"name": "flood", "description": "Stream 2,000 chunks as fast as possible"}
        ]}),
    );
}

fn words(text: &str) -> Vec<&str> {
    text.split_whitespace().collect()
}

async fn prompt(agent: Arc<Agent>, id: Value, params: Value) {
    if let Some(blocks) = params.get("prompt").and_then(Value::as_array) {
        controls::record_blocks(&agent, blocks);
    }
    let req: acp::PromptRequest = match serde_json::from_value(params) {
        Ok(r) => r,
        Err(e) => return agent.respond_error(&id, -32602, &format!("invalid session/prompt params: {e}")),
    };
    let sid = req.session_id.to_string();
    if agent.mode("auth-agent").is_some() && !agent.signed_in.load(Ordering::Relaxed) {
        return agent.respond_error(&id, -32000, "Authentication required");
    }
    let flag = agent
        .cancelled
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(sid.clone())
        .or_insert_with(|| Arc::new(AtomicBool::new(false)))
        .clone();
    flag.store(false, Ordering::Relaxed);
    let text: String = req
        .prompt
        .iter()
        .filter_map(|b| match b {
            acp::ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(" ");
    sessions::start_turn(&agent, &sid);
    let w = words(&text);
    let first = w.first().copied().unwrap_or("").trim_start_matches('/');
    let num = |i: usize, default: u64| w.get(i).and_then(|s| s.parse::<u64>().ok()).unwrap_or(default);
    let stop = match first {
        "flood" => {
            let (n, m) = (num(1, 2000), num(2, 40) as usize);
            let body: String = "lorem *ipsum* `dolor` sit amet, consectetur "
                .chars()
                .cycle()
                .take(m)
                .collect();
            // As fast as a real agent can: buffered, one flush at the end.
            let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
            for i in 0..n {
                if i % 1024 == 0 && agent.is_cancelled(&sid) {
                    break;
                }
                let mut chunk = body.clone();
                if m >= 8 {
                    let tag = format!("{:07}\n", i % 10_000_000);
                    chunk.replace_range(m - 8.., &tag);
                }
                let text = serde_json::to_string(&chunk).unwrap_or_default();
                let _ = writeln!(
                    out,
                    r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"{sid}","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":{text}}}}}}}}}"#
                );
            }
            let _ = out.flush();
            drop(out);
            "end_turn".to_string()
        }
        "slow" => {
            let (n, ms) = (num(1, 20), num(2, 50));
            for i in 0..n {
                if agent.is_cancelled(&sid) {
                    break;
                }
                agent.chunk(&sid, "agent_message_chunk", &format!("chunk {i} "));
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            "end_turn".to_string()
        }
        "stop" => {
            let reason = w.get(1).copied().unwrap_or("end_turn");
            agent.chunk(&sid, "agent_message_chunk", &format!("Stopping with {reason}."));
            reason.to_string()
        }
        "wait" => {
            let mut i = 0;
            while !agent.is_cancelled(&sid) && i < 6000 {
                if i % 10 == 0 {
                    agent.chunk(&sid, "agent_message_chunk", ".");
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
                i += 1;
            }
            "end_turn".to_string()
        }
        "crash" => {
            agent.chunk(&sid, "agent_message_chunk", "About to crash… ");
            tokio::time::sleep(Duration::from_millis(50)).await;
            eprintln!("demo: crashing mid-turn, as asked");
            std::process::exit(3);
        }
        "ask" => {
            let kind = w.get(1).copied().unwrap_or("none");
            let path = w.get(2).copied().unwrap_or("-");
            let title = if w.len() > 3 {
                w[3..].join(" ")
            } else {
                "A tool".to_owned()
            };
            // A new call each time: an id of an earlier turn would bring its kind.
            let tool = format!("ask-{}", agent.next_id.fetch_add(1, Ordering::Relaxed));
            let mut call = json!({"toolCallId": tool, "title": title, "status": "pending"});
            // `announced:KIND`: the kind comes in the tool call's
            // announcement only, not in the permission request.
            if let Some(announced) = kind.strip_prefix("announced:") {
                agent.update(
                    &sid,
                    json!({"sessionUpdate": "tool_call", "toolCallId": tool, "title": title,
                        "kind": announced, "status": "pending"}),
                );
            } else if kind != "none" {
                call["kind"] = json!(kind);
            }
            if path != "-" {
                call["locations"] = json!([{"path": path}]);
            }
            let answer = agent
                .request(
                    "session/request_permission",
                    json!({"sessionId": sid, "toolCall": call, "options": permission_options()}),
                )
                .await;
            let outcome = &answer["outcome"];
            let said = outcome["optionId"]
                .as_str()
                .or(outcome["outcome"].as_str())
                .unwrap_or("no answer");
            agent.chunk(&sid, "agent_message_chunk", &format!("permission answer: {said}"));
            "end_turn".to_string()
        }
        "silent" => {
            tokio::time::sleep(Duration::from_secs(num(1, 2))).await;
            agent.chunk(&sid, "agent_message_chunk", "Back again.");
            "end_turn".to_string()
        }
        "ignore-cancel" => {
            eprintln!("demo: ignoring cancel for a minute");
            tokio::time::sleep(Duration::from_secs(60)).await;
            "end_turn".to_string()
        }
        "elicit-form" => {
            let answer = agent
                .request(
                    "elicitation/create",
                    json!({"sessionId": sid, "mode": "form",
                        "message": "Who are you? The demo agent needs a few details.",
                        "requestedSchema": {"type": "object",
                            "properties": {
                                "name": {"type": "string", "title": "Name", "description": "What to call you", "minLength": 2, "maxLength": 40},
                                "age": {"type": "integer", "title": "Age", "minimum": 0, "maximum": 150},
                                "colour": {"type": "string", "title": "Favourite colour", "enum": ["red", "green", "blue"], "default": "green"},
                                "subscribe": {"type": "boolean", "title": "Subscribe to news", "default": false}
                            },
                            "required": ["name"]}}),
                )
                .await;
            agent.chunk(&sid, "agent_message_chunk", &format!("elicitation: {answer}"));
            "end_turn".to_string()
        }
        "elicit-url" => {
            // `elicit-url tricky`: an address whose first line is another
            // host's, as an attacker would send it.
            let url = match w.get(1).copied() {
                Some("tricky") => format!(
                    "https://accounts.google.com{}.evil.example/login",
                    "\n".repeat(200)
                ),
                Some("userinfo") => "https://accounts.google.com@evil.example/login".to_owned(),
                _ => "https://example.org/demo/authorize?client=parley&state=42".to_owned(),
            };
            let answer = agent
                .request(
                    "elicitation/create",
                    json!({"sessionId": sid, "mode": "url", "elicitationId": "demo-e1",
                        "url": url,
                        "message": "Authorize the demo agent in your browser."}),
                )
                .await;
            if answer["action"] == "accept" {
                tokio::time::sleep(Duration::from_millis(200)).await;
                agent.send(&json!({"jsonrpc": "2.0", "method": "elicitation/complete",
                    "params": {"elicitationId": "demo-e1"}}));
            }
            agent.chunk(&sid, "agent_message_chunk", &format!("elicitation: {answer}"));
            "end_turn".to_string()
        }
        "permission" => {
            for i in 0..num(1, 1) {
                if agent.is_cancelled(&sid) {
                    break;
                }
                let tool = format!("perm-tool-{i}");
                let answer = ask_permission(&agent, &sid, &tool, "Delete build artefacts", "delete").await;
                agent.chunk(
                    &sid,
                    "agent_message_chunk",
                    &format!("permission answer: {answer}. "),
                );
            }
            "end_turn".to_string()
        }
        "tool" => {
            // A tool call whose id the test chooses (to reuse it).
            let id = w.get(1).copied().unwrap_or("tool-1");
            let title = w.get(2..).map(|r| r.join(" ")).unwrap_or_default();
            agent.update(
                &sid,
                json!({"sessionUpdate": "tool_call", "toolCallId": id, "title": title,
                    "kind": "execute", "status": "completed"}),
            );
            "end_turn".to_string()
        }
        "permission-hostile" => {
            let title = "Delete file\u{0}name and invoice\u{202E}gnp.exe";
            let answer = ask_permission(&agent, &sid, "hostile-tool", title, "delete").await;
            agent.chunk(
                &sid,
                "agent_message_chunk",
                &format!("permission answer: {answer}"),
            );
            "end_turn".to_string()
        }
        "permission-elsewhere" => {
            // For a session that is not this conversation's.
            let answer = agent
                .request(
                    "session/request_permission",
                    json!({"sessionId": "sess-elsewhere",
                    "toolCall": {"toolCallId": "elsewhere-tool", "title": "Delete elsewhere"},
                    "options": [{"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"}]}),
                )
                .await;
            agent.chunk(
                &sid,
                "agent_message_chunk",
                &format!("permission-elsewhere answer: {answer}"),
            );
            "end_turn".to_string()
        }
        "unknown-request" => {
            let answer = agent
                .request("telepathy/read_mind", json!({"sessionId": sid}))
                .await;
            agent.chunk(
                &sid,
                "agent_message_chunk",
                &format!("unknown-request result: {answer}"),
            );
            "end_turn".to_string()
        }
        "fs-no-read" => {
            let times = w.get(1).and_then(|n| n.parse::<u64>().ok()).unwrap_or(40);
            let path = w.get(2).copied().unwrap_or("");
            for _ in 0..times {
                let id = agent.next_id.fetch_add(1, Ordering::Relaxed);
                agent.send(&json!({"jsonrpc": "2.0", "id": id, "method": "fs/read_text_file",
                    "params": {"sessionId": sid, "path": path}}));
            }
            agent.deaf.store(true, Ordering::Relaxed);
            std::future::pending::<String>().await
        }
        "fs-race" | "fs-fifo" | "fs-read-len" => {
            let answer = hostile_fs::run(&agent, &sid, first, &w).await;
            agent.chunk(&sid, "agent_message_chunk", &answer);
            "end_turn".to_string()
        }
        "fs-read" | "fs-write" => {
            let path = w.get(1).copied().unwrap_or("");
            let result = if first == "fs-read" {
                agent
                    .request("fs/read_text_file", json!({"sessionId": sid, "path": path}))
                    .await
            } else {
                let content = w.get(2..).map(|r| r.join(" ")).unwrap_or_default();
                agent
                    .request(
                        "fs/write_text_file",
                        json!({"sessionId": sid, "path": path, "content": content}),
                    )
                    .await
            };
            agent.chunk(&sid, "agent_message_chunk", &format!("{first} result: {result}"));
            "end_turn".to_string()
        }
        "received" => {
            agent.chunk(&sid, "agent_message_chunk", &controls::received(&agent));
            "end_turn".to_string()
        }
        "session-info" => {
            let title = w.get(1..).map(|r| r.join(" ")).unwrap_or_default();
            agent.update(
                &sid,
                json!({"sessionUpdate": "session_info_update", "title": title}),
            );
            sessions::set_title(&agent, &sid, &title);
            agent.chunk(&sid, "agent_message_chunk", "Titled.");
            "end_turn".to_string()
        }
        "cost" => {
            let amount = w.get(1).and_then(|a| a.parse::<f64>().ok()).unwrap_or(0.5);
            agent.update(
                &sid,
                json!({"sessionUpdate": "usage_update", "used": 5000, "size": 200000,
                    "cost": {"amount": amount, "currency": "USD"}}),
            );
            agent.chunk(&sid, "agent_message_chunk", "Costed.");
            "end_turn".to_string()
        }
        "switch-mode" => {
            // The agent changes its own mode: the pickers follow.
            let mode = w.get(1).copied().unwrap_or("code");
            agent
                .recorded
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .values
                .insert("mode".into(), json!(mode));
            agent.update(
                &sid,
                json!({"sessionUpdate": "config_option_update", "configOptions": controls::config_options(&agent)}),
            );
            agent.chunk(&sid, "agent_message_chunk", "Switched.");
            "end_turn".to_string()
        }
        "usage" => {
            agent.update(
                &sid,
                json!({"sessionUpdate": "usage_update", "used": num(1, 1000), "size": num(2, 0)}),
            );
            "end_turn".to_string()
        }
        "late" => {
            agent.chunk(&sid, "agent_message_chunk", "before the answer. ");
            // The turn, as the answer ends it; the late chunk is not kept.
            sessions::end_turn(&agent, &sid, &text);
            agent.respond(&id, json!({"stopReason": "end_turn"}));
            agent.chunk(&sid, "agent_message_chunk", "after the answer.");
            return;
        }
        "unknown-update" => {
            agent.update(&sid, json!({"sessionUpdate": "telepathy", "thought": "hi"}));
            agent.update(
                &sid,
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "hologram", "data": "x"}}),
            );
            agent.send(&json!({"jsonrpc": "2.0", "method": "_demo/extension", "params": {}}));
            agent.chunk(&sid, "agent_message_chunk", "sent unknown things");
            "end_turn".to_string()
        }
        "stderr" => {
            for i in 1..=num(1, 10) {
                eprintln!("demo: stderr line {i}");
            }
            agent.chunk(&sid, "agent_message_chunk", "wrote to stderr");
            "end_turn".to_string()
        }
        "error" => {
            return agent.respond_error(&id, -32603, "the demo agent failed on purpose");
        }
        "broken-chunks" => {
            hostile_text::send_broken(&agent, &sid);
            "end_turn".to_string()
        }
        "text-fixture" => {
            let name = w.get(1).copied().unwrap_or_default();
            let pieces = w.get(2) == Some(&"pieces");
            if !hostile_text::send(&agent, &sid, name, pieces).await {
                agent.chunk(
                    &sid,
                    "agent_message_chunk",
                    &format!("no fixture {name:?}; there are {:?}", hostile_text::NAMES),
                );
            }
            "end_turn".to_string()
        }
        "terminals" => {
            let found = terminals::check_all(&agent, &sid).await;
            agent.chunk(&sid, "agent_message_chunk", &found);
            "end_turn".to_string()
        }
        "terminal-colors" => {
            let said = terminals::colors(&agent, &sid).await;
            agent.chunk(&sid, "agent_message_chunk", &said);
            "end_turn".to_string()
        }
        "terminal-flood" => {
            let said = terminals::flood(&agent, &sid, num(1, 10_000_000)).await;
            agent.chunk(&sid, "agent_message_chunk", &said);
            "end_turn".to_string()
        }
        "terminal-race" => {
            let said = terminals::race(&agent, &sid).await;
            agent.chunk(&sid, "agent_message_chunk", &said);
            "end_turn".to_string()
        }
        "terminal-orphan" => {
            let said = terminals::orphan(&agent, &sid, w.get(1).copied().unwrap_or("")).await;
            agent.chunk(&sid, "agent_message_chunk", &said);
            "end_turn".to_string()
        }
        "echo" => {
            agent.chunk(
                &sid,
                "agent_message_chunk",
                &w.get(1..).map(|r| r.join(" ")).unwrap_or_default(),
            );
            "end_turn".to_string()
        }
        "help" => {
            stream(&agent, &sid, &format!("```\n{HELP}```\n"), 0).await;
            "end_turn".to_string()
        }
        "plan" => {
            demo_plan(&agent, &sid, 3).await;
            "end_turn".to_string()
        }
        _ => demo(&agent, &sid, &text).await,
    };
    let stop = if agent.is_cancelled(&sid) {
        "cancelled".to_string()
    } else {
        stop
    };
    sessions::end_turn(&agent, &sid, &text);
    agent.respond(&id, json!({"stopReason": stop}));
}

/// The four options the demo agent offers with every permission request.
fn permission_options() -> Value {
    json!([
        {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
        {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
        {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
        {"optionId": "reject-always", "name": "Always reject", "kind": "reject_always"}
    ])
}

async fn ask_permission(agent: &Agent, sid: &str, tool: &str, title: &str, kind: &str) -> String {
    if agent.always_allow.load(Ordering::Relaxed) {
        return "allow_always (remembered)".into();
    }
    if agent.always_reject.load(Ordering::Relaxed) {
        return "reject_always (remembered)".into();
    }
    let answer = agent
        .request(
            "session/request_permission",
            json!({"sessionId": sid,
            "toolCall": {"toolCallId": tool, "title": title, "kind": kind, "status": "pending"},
            "options": permission_options()}),
        )
        .await;
    let outcome = &answer["outcome"];
    match outcome["outcome"].as_str() {
        Some("selected") => {
            let option = outcome["optionId"].as_str().unwrap_or("");
            match option {
                "allow-always" => agent.always_allow.store(true, Ordering::Relaxed),
                "reject-always" => agent.always_reject.store(true, Ordering::Relaxed),
                _ => {}
            }
            option.replace('-', "_")
        }
        _ => "cancelled".into(),
    }
}

async fn stream(agent: &Agent, sid: &str, text: &str, delay_ms: u64) {
    let chars: Vec<char> = text.chars().collect();
    for piece in chars.chunks(12) {
        if agent.is_cancelled(sid) {
            return;
        }
        agent.chunk(sid, "agent_message_chunk", &piece.iter().collect::<String>());
        if delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        }
    }
}

fn plan_update(agent: &Agent, sid: &str, done: usize, total: usize) {
    let names = [
        "Read the project layout",
        "Find where the greeting is built",
        "Make the change and run the tests",
    ];
    let entries: Vec<Value> = (0..total)
        .map(|i| {
            let status = if i < done { "completed" } else if i == done { "in_progress" } else { "pending" };
            json!({"content": names[i % names.len()], "priority": if i == 0 {"high"} else {"medium"}, "status": status})
        })
        .collect();
    agent.update(sid, json!({"sessionUpdate": "plan", "entries": entries}));
}

async fn demo_plan(agent: &Agent, sid: &str, total: usize) {
    for done in 0..=total {
        plan_update(agent, sid, done, total);
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
}

fn tool(agent: &Agent, sid: &str, update: Value) {
    agent.update(sid, update);
}

/// The normal answer: everything Parley can show, in one believable turn.
async fn demo(agent: &Agent, sid: &str, text: &str) -> String {
    let cwd = agent.cwd.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let file = format!("{cwd}/src/greeting.rs");
    let pause = |ms| tokio::time::sleep(Duration::from_millis(ms));
    // Fresh tool call ids each turn, as agents should send them.
    let turn = agent.next_id.fetch_add(1, Ordering::Relaxed);
    let [read_id, search_id, edit_id, exec_id] =
        ["read", "search", "edit", "exec"].map(|k| format!("{k}-{turn}"));
    for piece in [
        "The user asks: \"",
        text,
        "\". ",
        "I should read the code before changing anything, ",
        "then check the tests.",
    ] {
        agent.chunk(sid, "agent_thought_chunk", piece);
        pause(30).await;
    }
    plan_update(agent, sid, 0, 3);
    tool(
        agent,
        sid,
        json!({"sessionUpdate": "tool_call", "toolCallId": read_id, "title": "Read src/greeting.rs",
        "kind": "read", "status": "pending", "locations": [{"path": file, "line": 1}], "rawInput": {"path": file}}),
    );
    pause(120).await;
    tool(
        agent,
        sid,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": read_id, "status": "in_progress"}),
    );
    pause(120).await;
    tool(
        agent,
        sid,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": read_id, "status": "completed",
        "content": [{"type": "content", "content": {"type": "text", "text": "pub fn greeting() -> &'static str {\n    \"Hello\"\n}"}}]}),
    );
    plan_update(agent, sid, 1, 3);
    tool(
        agent,
        sid,
        json!({"sessionUpdate": "tool_call", "toolCallId": search_id, "title": "Search for \"greeting(\"",
        "kind": "search", "status": "in_progress", "rawInput": {"pattern": "greeting("}}),
    );
    pause(150).await;
    tool(
        agent,
        sid,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": search_id, "status": "completed",
        "content": [{"type": "content", "content": {"type": "text", "text": "src/main.rs:4: println!(\"{}\", greeting());"}}]}),
    );
    plan_update(agent, sid, 2, 3);
    let edit = json!({"sessionUpdate": "tool_call", "toolCallId": edit_id, "title": "Edit src/greeting.rs",
        "kind": "edit", "status": "pending", "locations": [{"path": file, "line": 2}],
        "content": [{"type": "diff", "path": file, "oldText": "pub fn greeting() -> &'static str {\n    \"Hello\"\n}\n",
            "newText": "pub fn greeting() -> &'static str {\n    \"Hello from Parley\"\n}\n"}]});
    tool(agent, sid, edit);
    let answer = ask_permission(agent, sid, &edit_id, "Edit src/greeting.rs", "edit").await;
    if agent.is_cancelled(sid) {
        return "cancelled".into();
    }
    let allowed = answer.starts_with("allow");
    tool(
        agent,
        sid,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": edit_id,
        "status": if allowed {"completed"} else {"failed"}}),
    );
    tool(
        agent,
        sid,
        json!({"sessionUpdate": "tool_call", "toolCallId": exec_id, "title": "cargo test",
        "kind": "execute", "status": "in_progress", "rawInput": {"command": "cargo test"}}),
    );
    pause(200).await;
    tool(
        agent,
        sid,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": exec_id, "status": "failed",
        "content": [{"type": "content", "content": {"type": "text", "text": "error: could not find `Cargo.toml` (this is a demo)"}}]}),
    );
    plan_update(agent, sid, 3, 3);
    let used = agent.used.fetch_add(850, Ordering::Relaxed) + 850;
    agent.update(
        sid,
        json!({"sessionUpdate": "usage_update", "used": used, "size": 200000}),
    );
    let outcome = if allowed {
        "I changed the greeting (you allowed the edit)."
    } else {
        "I left the file alone (you refused the edit)."
    };
    let answer_text = format!(
        "## What I did\n\n{outcome} Here is the plan I followed:\n\n\
         1. **Read** `src/greeting.rs`\n2. *Searched* for callers\n3. Edited and ran the tests\n\n\
         ```rust\npub fn greeting() -> &'static str {{\n    \"Hello from Parley\"\n}}\n```\n\n\
         The test run failed because this is a demo without a real project. \
         Try `/flood` or ask me anything else.\n"
    );
    stream(agent, sid, &answer_text, 15).await;
    "end_turn".into()
}
