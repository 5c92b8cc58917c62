//! The demo agent's persisted sessions, for the `resume`, `load` and `list`
//! modes: `session/resume`, `session/load` (which replays the stored
//! conversation), `session/close`, `session/list` and `session/delete`.
//!
//! Each session is one JSON file, `<sessionId>.json`, in the directory of
//! `PARLEY_DEMO_SESSIONS` (or `parley-demo-sessions` in the temporary
//! directory), so that a second demo agent process finds what the first one
//! stored. A turn keeps the user's text and the agent text that went through
//! `Agent::update` during it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::controls;
use super::help::available_commands;
use super::state::Agent;

/// JSON-RPC error code for a session that is not stored.
const NOT_FOUND: i64 = -32002;

/// One prompt turn of a stored session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    pub user: String,
    pub agent: String,
}

/// A stored session: the content of its file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Stored {
    pub session_id: String,
    pub cwd: String,
    pub title: Option<String>,
    pub updated_at: String,
    #[serde(default)]
    pub turns: Vec<Turn>,
}

impl Stored {
    fn new(session_id: &str, cwd: &str) -> Self {
        Stored {
            session_id: session_id.to_owned(),
            cwd: cwd.to_owned(),
            title: None,
            updated_at: now(),
            turns: Vec::new(),
        }
    }
}

fn now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

/// Where sessions are stored, when one of the modes that persist them is on.
pub fn dir(agent: &Agent) -> Option<PathBuf> {
    if !["resume", "load", "list", "fork"]
        .iter()
        .any(|m| agent.mode(m).is_some())
    {
        return None;
    }
    Some(match std::env::var_os("PARLEY_DEMO_SESSIONS") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => std::env::temp_dir().join("parley-demo-sessions"),
    })
}

/// A session id unique across processes (sessions outlive the process that
/// made them, and several test agents share the directory).
pub fn new_id(n: u64) -> String {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    format!("demo-{millis}-{}-{n}", std::process::id())
}

/// The file of session `sid`, or None for an id that cannot be a file name
/// of ours (the id comes from the client: no `/`, `..` or hidden names).
fn file(dir: &Path, sid: &str) -> Option<PathBuf> {
    let fits = !sid.is_empty()
        && !sid.starts_with('.')
        && sid
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    fits.then(|| dir.join(format!("{sid}.json")))
}

/// Writes `session` to its file, atomically: a temporary file in the same
/// directory, then a rename, so that a reader never sees half a file.
pub fn write(dir: &Path, session: &Stored) -> std::io::Result<()> {
    let Some(path) = file(dir, &session.session_id) else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("unfit session id {:?}", session.session_id),
        ));
    };
    std::fs::create_dir_all(dir)?;
    // Hidden and without the .json ending: `list` never reads it.
    let tmp = dir.join(format!(".{}.{}.tmp", session.session_id, std::process::id()));
    let text = serde_json::to_vec_pretty(session).map_err(std::io::Error::other)?;
    let result = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(&text)?;
        f.sync_all()
    });
    result
        .and_then(|()| std::fs::rename(&tmp, &path))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
}

/// The stored session `sid`, or None if there is none (or it is unreadable).
pub fn read(dir: &Path, sid: &str) -> Option<Stored> {
    let text = std::fs::read(file(dir, sid)?).ok()?;
    match serde_json::from_slice(&text) {
        Ok(s) => Some(s),
        Err(e) => {
            eprintln!("demo: stored session {sid} is unreadable: {e}");
            None
        }
    }
}

/// Removes the stored session `sid`; false if there was none.
pub fn remove(dir: &Path, sid: &str) -> bool {
    file(dir, sid).is_some_and(|p| std::fs::remove_file(p).is_ok())
}

/// The stored sessions in `cwd` (all if None), most recently updated first.
pub fn list(dir: &Path, cwd: Option<&str>) -> Vec<Stored> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<(Stored, Option<SystemTime>)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            // `read` skips hidden names (and so temporary files).
            let stored = read(dir, name.strip_suffix(".json")?)?;
            let modified = e.metadata().and_then(|m| m.modified()).ok();
            Some((stored, modified))
        })
        .filter(|(s, _)| cwd.is_none_or(|c| s.cwd == c))
        .collect();
    // updatedAt has whole seconds; the file's time orders sessions updated
    // within the same second.
    found.sort_by(|a, b| (&b.0.updated_at, b.1).cmp(&(&a.0.updated_at, a.1)));
    found.into_iter().map(|(s, _)| s).collect()
}

/// Reads, changes and rewrites session `sid`, when the agent stores it.
fn modify(agent: &Agent, sid: &str, change: impl FnOnce(&mut Stored)) {
    let Some(dir) = &agent.sessions_dir else { return };
    let Some(mut stored) = read(dir, sid) else {
        eprintln!("demo: session {sid} is not stored (any more); not updating it");
        return;
    };
    change(&mut stored);
    stored.updated_at = now();
    if let Err(e) = write(dir, &stored) {
        eprintln!("demo: cannot store session {sid}: {e}");
    }
}

/// Whether the agent stores session `sid` (it was made, resumed or loaded
/// in this process while a persisting mode is on).
fn persisted(agent: &Agent, sid: &str) -> bool {
    agent
        .turn_text
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .contains_key(sid)
}

/// `agentCapabilities.loadSession`.
pub fn load_session(agent: &Agent) -> bool {
    agent.mode("load").is_some()
}

/// Adds what the modes offer to `sessionCapabilities` (an object already
/// holding what `controls::capabilities` put there).
pub fn capabilities(agent: &Agent, mut caps: Value) -> Value {
    let resume = agent.mode("resume").is_some();
    let list = agent.mode("list").is_some();
    let offered = [
        ("resume", resume),
        ("close", resume || load_session(agent)),
        ("list", list),
        ("delete", list),
        ("fork", agent.mode("fork").is_some()),
    ];
    if let Some(map) = caps.as_object_mut() {
        for (name, on) in offered {
            if on {
                map.insert(name.into(), json!({}));
            }
        }
    }
    caps
}

/// Whether `handle` should answer `method` rather than "method not found".
pub fn answers(agent: &Agent, method: &str) -> bool {
    let on = |m: &str| agent.mode(m).is_some();
    match method {
        "session/resume" => on("resume"),
        "session/load" => on("load"),
        "session/close" => on("resume") || on("load"),
        "session/list" | "session/delete" => on("list"),
        "session/fork" => on("fork"),
        _ => false,
    }
}

/// Answers one of the methods `answers` accepts.
pub fn handle(agent: &Agent, method: &str, id: &Value, params: &Value) {
    match method {
        "session/resume" => reopen(agent, id, params, false),
        "session/load" => reopen(agent, id, params, true),
        "session/close" => close(agent, id, params),
        "session/list" => respond_list(agent, id, params),
        "session/delete" => delete(agent, id, params),
        "session/fork" => fork(agent, id, params),
        other => agent.respond_error(id, -32601, &format!("method not found: {other}")),
    }
}

fn session_id(params: &Value) -> &str {
    params
        .get("sessionId")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Starts keeping session `sid`: its cancel flag and its turn's text.
fn register(agent: &Agent, sid: &str) {
    agent
        .cancelled
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(sid.to_owned(), Arc::new(AtomicBool::new(false)));
    keep_turns(agent, sid);
}

/// Marks `sid` as stored by this process: its turns are written.
fn keep_turns(agent: &Agent, sid: &str) {
    agent
        .turn_text
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(sid.to_owned(), String::new());
}

/// `session/new` in a persisting mode: stores the new, empty session.
pub fn store_new(agent: &Agent, sid: &str, cwd: &str) -> std::io::Result<()> {
    let Some(dir) = &agent.sessions_dir else {
        return Ok(());
    };
    write(dir, &Stored::new(sid, cwd))?;
    keep_turns(agent, sid);
    Ok(())
}

/// `session/resume` and (with `replay`) `session/load`.
fn reopen(agent: &Agent, id: &Value, params: &Value, replay: bool) {
    let sid = session_id(params);
    let method = if replay { "session/load" } else { "session/resume" };
    eprintln!("demo: {method} {sid}");
    if agent.mode("slow-reopen").is_some() {
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    let cwd = params.get("cwd").and_then(Value::as_str).unwrap_or_default();
    if !Path::new(cwd).is_absolute() {
        return agent.respond_error(id, -32602, "cwd must be absolute");
    }
    let Some(stored) = agent.sessions_dir.as_deref().and_then(|d| read(d, sid)) else {
        return agent.respond_error(id, NOT_FOUND, &format!("session not found: {sid}"));
    };
    controls::record_session(agent, params);
    *agent.cwd.lock().unwrap_or_else(|e| e.into_inner()) = cwd.to_owned();
    // `replay-on-resume`: replays on session/resume too, as fast-agent
    // 0.10.48 does (against the spec).
    if replay || agent.mode("replay-on-resume").is_some() {
        // Before registering: the replayed agent text is history, not
        // part of the next turn.
        for turn in &stored.turns {
            agent.chunk(sid, "user_message_chunk", &turn.user);
            agent.chunk(sid, "agent_message_chunk", &turn.agent);
        }
    }
    register(agent, sid);
    available_commands(agent, sid);
    agent.respond(id, controls::session_state(agent));
}

/// `session/fork` (mode `fork`): a new session holding the stored turns
/// of the given one.
fn fork(agent: &Agent, id: &Value, params: &Value) {
    let from = session_id(params);
    eprintln!("demo: session/fork {from}");
    let Some(dir) = agent.sessions_dir.as_deref() else {
        return agent.respond_error(id, NOT_FOUND, "sessions are not kept");
    };
    let Some(mut stored) = read(dir, from) else {
        return agent.respond_error(id, NOT_FOUND, &format!("session not found: {from}"));
    };
    let n = agent.sessions.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let sid = new_id(n);
    stored.session_id = sid.clone();
    stored.updated_at = now();
    if let Err(e) = write(dir, &stored) {
        return agent.respond_error(id, -32603, &format!("cannot store the fork: {e}"));
    }
    register(agent, &sid);
    available_commands(agent, &sid);
    let mut answer = controls::session_state(agent);
    if let Some(map) = answer.as_object_mut() {
        map.insert("sessionId".into(), json!(sid));
    }
    agent.respond(id, answer);
}

/// The users' messages the session remembers (`remembered`), oldest first.
pub fn remembered(agent: &Agent, sid: &str) -> Vec<String> {
    agent
        .sessions_dir
        .as_deref()
        .and_then(|d| read(d, sid))
        .map(|s| s.turns.into_iter().map(|t| t.user).collect())
        .unwrap_or_default()
}

/// `session/close`: forgets the session; its file stays.
fn close(agent: &Agent, id: &Value, params: &Value) {
    let sid = session_id(params);
    eprintln!("demo: session/close {sid}");
    forget(agent, sid);
    agent.respond(id, json!({}));
}

fn forget(agent: &Agent, sid: &str) {
    agent
        .cancelled
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(sid);
    agent
        .turn_text
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(sid);
}

/// `session/list`: every stored session of the cwd, in one page.
fn respond_list(agent: &Agent, id: &Value, params: &Value) {
    let cwd = params.get("cwd").and_then(Value::as_str);
    let stored = agent
        .sessions_dir
        .as_deref()
        .map(|d| list(d, cwd))
        .unwrap_or_default();
    let sessions: Vec<Value> = stored
        .into_iter()
        .map(
            |s| json!({"sessionId": s.session_id, "cwd": s.cwd, "title": s.title, "updatedAt": s.updated_at}),
        )
        .collect();
    agent.respond(id, json!({"sessions": sessions}));
}

/// `session/delete`: removes the stored file.
fn delete(agent: &Agent, id: &Value, params: &Value) {
    let sid = session_id(params);
    eprintln!("demo: session/delete {sid}");
    if !agent.sessions_dir.as_deref().is_some_and(|d| remove(d, sid)) {
        return agent.respond_error(id, -32602, "unknown session");
    }
    forget(agent, sid);
    agent.respond(id, json!({}));
}

/// At the start of a prompt: forgets agent text sent between turns (after
/// an answer, or by a failed turn).
pub fn start_turn(agent: &Agent, sid: &str) {
    if let Some(buffer) = agent
        .turn_text
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_mut(sid)
    {
        buffer.clear();
    }
}

/// At the end of a prompt: stores the turn, `user` and the agent text sent
/// since `start_turn`.
pub fn end_turn(agent: &Agent, sid: &str, user: &str) {
    let taken = agent
        .turn_text
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_mut(sid)
        .map(std::mem::take);
    let Some(agent_text) = taken else { return };
    modify(agent, sid, |s| {
        s.turns.push(Turn {
            user: user.to_owned(),
            agent: agent_text,
        })
    });
}

/// The `session-info` keyword: stores the session's new title.
pub fn set_title(agent: &Agent, sid: &str, title: &str) {
    if persisted(agent, sid) {
        modify(agent, sid, |s| s.title = Some(title.to_owned()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(sid: &str, cwd: &str, updated_at: &str) -> Stored {
        Stored {
            session_id: sid.into(),
            cwd: cwd.into(),
            title: None,
            updated_at: updated_at.into(),
            turns: Vec::new(),
        }
    }

    #[test]
    fn sessions_round_trip_through_files() -> Result<(), Box<dyn std::error::Error>> {
        let tmp = tempfile::tempdir()?;
        // A directory that does not exist yet: `write` makes it.
        let dir = tmp.path().join("sessions");
        let mut first = session("demo-1-1-1", "/home/a", "2024-01-01T10:00:00Z");
        first.title = Some("First".into());
        first.turns.push(Turn {
            user: "hello".into(),
            agent: "Hi! \"quoted\"\nnext line".into(),
        });
        write(&dir, &first)?;
        write(&dir, &session("demo-2-1-1", "/home/b", "2024-01-01T11:00:00Z"))?;
        write(&dir, &session("demo-3-1-1", "/home/a", "2024-01-01T12:00:00Z"))?;

        assert_eq!(read(&dir, "demo-1-1-1"), Some(first.clone()));
        assert_eq!(read(&dir, "demo-9-9-9"), None);
        // Ids that are not file names of ours are unknown, not paths.
        assert_eq!(read(&dir, "../sessions/demo-1-1-1"), None);
        assert_eq!(read(&dir, ""), None);

        let ids = |l: Vec<Stored>| l.into_iter().map(|s| s.session_id).collect::<Vec<_>>();
        assert_eq!(ids(list(&dir, Some("/home/a"))), ["demo-3-1-1", "demo-1-1-1"]);
        assert_eq!(ids(list(&dir, Some("/home/b"))), ["demo-2-1-1"]);
        assert!(list(&dir, Some("/elsewhere")).is_empty());
        assert_eq!(ids(list(&dir, None)), ["demo-3-1-1", "demo-2-1-1", "demo-1-1-1"]);
        // Nothing but the three files: the temporary files were renamed.
        assert_eq!(std::fs::read_dir(&dir)?.count(), 3);

        assert!(remove(&dir, "demo-2-1-1"));
        assert!(!remove(&dir, "demo-2-1-1"));
        assert_eq!(ids(list(&dir, None)), ["demo-3-1-1", "demo-1-1-1"]);
        assert!(list(&tmp.path().join("missing"), None).is_empty());
        Ok(())
    }

    #[test]
    fn new_ids_differ_and_fit_file_names() {
        let (a, b) = (new_id(1), new_id(2));
        assert_ne!(a, b);
        assert!(a.starts_with("demo-"));
        assert!(file(Path::new("/tmp"), &a).is_some());
    }
}
