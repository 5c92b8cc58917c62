//! The ACP terminal capability: `terminal/create`, `terminal/output`,
//! `terminal/wait_for_exit`, `terminal/kill` and `terminal/release`.
//!
//! Each terminal runs its command on a pseudo-terminal (colours, stdout
//! and stderr in one stream, as a person would see them) beneath a guardian
//! as agents do, in a session and group of its own. Its output is kept in
//! a buffer cut from the start at `outputByteLimit` (on a character
//! boundary) and sent out as `terminal:output`; its end as
//! `terminal:exited`. The terminals of an agent's process go with it: when
//! the connection ends they are killed, and dropping them closes their
//! guardians' lifelines.

use std::collections::HashMap;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use agent_client_protocol_schema::v1 as schema;
use std::collections::BTreeMap;
use std::future::Future;
use std::io::PipeReader;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::watch;

use super::process::{self, StopTimings, GUARDIAN_SLACK};
use crate::core::acp::{self, RpcError};
use crate::core::config::model::AgentDef;
use crate::core::events::{self, Event, EventSender, TerminalExited, TerminalOutput};

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What starting a terminal's command gives: the terminal's controlling
/// side, the command's process group, its guardian, and the guardian's
/// word of its exit.
pub type Started = (OwnedFd, i32, process::Guardian, PipeReader);

/// `TerminalService`: the ACP terminals of every running agent process,
/// by agent. The agents' service opens a process's set when it starts it
/// and closes it with its connection; the chat asks whether a command
/// still runs. Cheap to clone.
#[derive(Clone)]
pub struct TerminalService {
    events: EventSender,
    sets: Arc<Mutex<std::collections::HashMap<String, Arc<Terminals>>>>,
}

impl TerminalService {
    pub fn new(events: EventSender) -> Self {
        TerminalService {
            events,
            sets: Arc::default(),
        }
    }

    /// A new process of `agent` starts: its terminals, at most `cap`.
    pub fn open(&self, agent: &str, cap: usize, timings: StopTimings) -> Arc<Terminals> {
        let set = Arc::new(Terminals::new(agent, self.events.clone(), cap, timings));
        lock(&self.sets).insert(agent.to_owned(), set.clone());
        set
    }

    /// The process's connection ended: its terminals go with it.
    pub fn close(&self, agent: &str, set: &Arc<Terminals>) {
        set.end_all();
        let mut sets = lock(&self.sets);
        if sets.get(agent).is_some_and(|s| Arc::ptr_eq(s, set)) {
            sets.remove(agent);
        }
    }

    /// Whether a command the agent runs in one of its terminals still runs.
    pub fn running(&self, agent: &str) -> bool {
        let set = lock(&self.sets).get(agent).cloned();
        set.is_some_and(|t| t.any_running())
    }
}

/// Output kept when the agent names no limit (and the most it may name).
pub const MAX_OUTPUT: usize = 16 << 20;

/// Terminal ids are unique in this run of Parley, across agents.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

#[derive(Default)]
struct Buffer {
    data: Vec<u8>,
    truncated: bool,
    limit: usize,
}

impl Buffer {
    fn push(&mut self, bytes: &[u8]) {
        self.data.extend_from_slice(bytes);
        if self.data.len() > self.limit {
            let mut cut = self.data.len() - self.limit;
            // Never in the middle of a character.
            while cut < self.data.len() && (self.data[cut] & 0xC0) == 0x80 {
                cut += 1;
            }
            self.data.drain(..cut);
            self.truncated = true;
        }
    }
}

struct Term {
    buffer: Mutex<Buffer>,
    pgid: i32,
    exit: watch::Receiver<Option<ExitStatus>>,
    /// The output is read to its end (the terminal closed).
    drained: watch::Receiver<bool>,
    released: AtomicBool,
    guardian: Mutex<Option<process::Guardian>>,
}

/// One agent process's terminals.
pub struct Terminals {
    agent: String,
    events: EventSender,
    cap: usize,
    timings: StopTimings,
    map: Mutex<HashMap<String, Arc<Term>>>,
    /// Creates under way: counted against the cap from the check until the
    /// terminal is in `map` (or its spawn failed), so that creates written
    /// back to back cannot all pass the check while the first spawns.
    reserved: AtomicUsize,
}

/// A slot taken against the cap; given back when dropped.
struct Slot<'a>(&'a AtomicUsize);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// `exitCode` and `signal`, as ACP's `TerminalExitStatus`.
pub fn exit_json(status: Option<ExitStatus>) -> Value {
    use std::os::unix::process::ExitStatusExt;
    let code = status.and_then(|s| s.code()).map(|c| c as u32);
    let signal = status.and_then(|s| s.signal()).map(|n| {
        nix::sys::signal::Signal::try_from(n).map_or_else(|_| n.to_string(), |s| s.as_str().to_owned())
    });
    json!({"exitCode": code, "signal": signal})
}

fn invalid(message: impl Into<String>) -> RpcError {
    RpcError::remote(acp::connection::INVALID_PARAMS, message.into())
}

impl Terminals {
    pub fn new(agent: &str, events: EventSender, cap: usize, timings: StopTimings) -> Self {
        Terminals {
            agent: agent.to_owned(),
            events,
            cap,
            timings,
            map: Mutex::new(HashMap::new()),
            reserved: AtomicUsize::new(0),
        }
    }

    /// Takes a slot if the terminals and the creates under way leave one.
    /// The check and the count are one step: both under the map's lock.
    fn reserve(&self) -> Option<Slot<'_>> {
        let map = lock(&self.map);
        if map.len() + self.reserved.load(Ordering::SeqCst) >= self.cap {
            return None;
        }
        self.reserved.fetch_add(1, Ordering::SeqCst);
        Some(Slot(&self.reserved))
    }

    fn get(&self, params: &Value) -> Result<Arc<Term>, RpcError> {
        let id = params
            .get("terminalId")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("terminalId is missing"))?;
        lock(&self.map)
            .get(id)
            .cloned()
            .ok_or_else(|| invalid(format!("unknown terminal {id}")))
    }

    /// `terminal/create`: spawns the command with `start` (the agents'
    /// service, which finds programs as it does for agents); answers
    /// `{terminalId}`.
    pub async fn create<F, Fut>(
        &self,
        def: &AgentDef,
        params: schema::CreateTerminalRequest,
        start: F,
    ) -> Result<Value, RpcError>
    where
        F: FnOnce(String, Vec<String>, BTreeMap<String, String>, PathBuf) -> Fut,
        Fut: Future<Output = Result<Started, String>>,
    {
        let Some(slot) = self.reserve() else {
            return Err(invalid(crate::i18n::gettext_f(
                "too many terminals: the limit is {cap} per agent (limits.maxTerminalsPerAgent)",
                &[("cap", &self.cap.to_string())],
            )));
        };
        let base = def.working_dir();
        let cwd = match params.cwd {
            Some(c) if c.is_absolute() => c,
            Some(c) => base.join(c),
            None => base,
        };
        // On another host the helper checks it there.
        if !def.is_remote() && !cwd.is_dir() {
            return Err(invalid(format!("the directory {} does not exist", cwd.display())));
        }
        let mut env = def.env.clone();
        for v in &params.env {
            env.insert(v.name.clone(), v.value.clone());
        }
        env.insert("TERM".into(), "xterm-256color".into());
        let (master, pgid, guardian, status) = start(params.command.clone(), params.args.clone(), env, cwd)
            .await
            .map_err(invalid)?;
        let (exit_tx, exit_rx) = watch::channel(None);
        let (drained_tx, drained_rx) = watch::channel(false);
        let limit = params
            .output_byte_limit
            .and_then(|l| usize::try_from(l).ok())
            .unwrap_or(MAX_OUTPUT)
            .min(MAX_OUTPUT);
        let id = format!("term-{}", NEXT_ID.fetch_add(1, Ordering::Relaxed));
        let term = Arc::new(Term {
            buffer: Mutex::new(Buffer {
                limit,
                ..Default::default()
            }),
            pgid,
            exit: exit_rx,
            drained: drained_rx,
            released: AtomicBool::new(false),
            guardian: Mutex::new(Some(guardian)),
        });
        self.read_output(&id, &term, master, drained_tx);
        // The end: the status, then the output to its end (a moment at most),
        // then `terminal:exited`.
        let (events, agent, watched, tid) =
            (self.events.clone(), self.agent.clone(), term.clone(), id.clone());
        tokio::spawn(async move {
            let status = process::agent_exit(status).await;
            exit_tx.send_replace(status);
            let mut drained = watched.drained.clone();
            let _ = tokio::time::timeout(Duration::from_secs(1), drained.wait_for(|d| *d)).await;
            let e = exit_json(status);
            events::emit(
                &events,
                Event::TerminalExited(TerminalExited {
                    agent,
                    terminal_id: tid,
                    exit_code: e["exitCode"].as_u64().map(|c| c as u32),
                    signal: e["signal"].as_str().map(str::to_owned),
                }),
            );
        });
        // In the map before the slot is given back: never a moment in
        // which it counts for neither.
        lock(&self.map).insert(id.clone(), term);
        drop(slot);
        Ok(json!({"terminalId": id}))
    }

    /// Reads the terminal on a thread of its own (the read blocks) until it
    /// is closed; every piece goes to the buffer and out as an event.
    fn read_output(&self, id: &str, term: &Arc<Term>, master: OwnedFd, drained: watch::Sender<bool>) {
        let (events, agent, id, term) = (
            self.events.clone(),
            self.agent.clone(),
            id.to_owned(),
            term.clone(),
        );
        let spawned = std::thread::Builder::new()
            .name("parley-terminal".into())
            .spawn(move || {
                let mut file = std::fs::File::from(master);
                let mut buf = vec![0u8; 64 * 1024];
                // A character split between two reads waits for its end.
                let mut carry: Vec<u8> = Vec::new();
                // The terminal's side reads EIO once nothing holds the other.
                while let Ok(n) = file.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    lock(&term.buffer).push(&buf[..n]);
                    if term.released.load(Ordering::Relaxed) {
                        continue;
                    }
                    carry.extend_from_slice(&buf[..n]);
                    let valid = match std::str::from_utf8(&carry) {
                        Ok(_) => carry.len(),
                        Err(e) if e.error_len().is_none() => e.valid_up_to(),
                        Err(_) => carry.len(),
                    };
                    let rest = carry.split_off(valid);
                    let text = String::from_utf8_lossy(&carry).into_owned();
                    carry = rest;
                    if !text.is_empty() {
                        events::emit(
                            &events,
                            Event::TerminalOutput(TerminalOutput {
                                agent: agent.clone(),
                                terminal_id: id.clone(),
                                data: text,
                            }),
                        );
                    }
                }
                drained.send_replace(true);
            });
        if let Err(e) = spawned {
            tracing::warn!("cannot read a terminal: {e}");
        }
    }

    /// `terminal/output`.
    pub fn output(&self, params: &Value) -> Result<Value, RpcError> {
        let term = self.get(params)?;
        let (output, truncated) = {
            let b = lock(&term.buffer);
            (String::from_utf8_lossy(&b.data).into_owned(), b.truncated)
        };
        let status = *term.exit.borrow();
        let mut answer = json!({"output": output, "truncated": truncated});
        if status.is_some() {
            answer["exitStatus"] = exit_json(status);
        }
        Ok(answer)
    }

    /// A command of the agent's still runs (the agent may be waiting on it).
    pub fn any_running(&self) -> bool {
        lock(&self.map).values().any(|t| t.exit.borrow().is_none())
    }

    /// `terminal/wait_for_exit`.
    pub async fn wait_for_exit(&self, params: &Value) -> Result<Value, RpcError> {
        let term = self.get(params)?;
        let mut exit = term.exit.clone();
        let status = exit
            .wait_for(Option::is_some)
            .await
            .map(|s| *s)
            .map_err(|_| invalid("the terminal's command could not be waited for"))?;
        // What the command printed last may still be on its way from the
        // terminal: an agent that asks for the output next gets it all (as
        // `terminal:exited` does, a moment at most).
        let mut drained = term.drained.clone();
        let _ = tokio::time::timeout(Duration::from_secs(1), drained.wait_for(|d| *d)).await;
        Ok(exit_json(status))
    }

    fn end(&self, term: &Arc<Term>) {
        let (pgid, exit, timings) = (term.pgid, term.exit.clone(), self.timings);
        let guardian = lock(&term.guardian).take();
        tokio::spawn(async move {
            if exit.borrow().is_none() {
                process::stop_group(pgid, exit, timings).await;
            }
            if let Some(g) = guardian {
                g.release(timings.term_grace + GUARDIAN_SLACK).await;
            }
        });
    }

    /// `terminal/kill`: ends the command and all it started; the terminal
    /// and its output stay until released.
    pub fn kill(&self, params: &Value) -> Result<Value, RpcError> {
        let term = self.get(params)?;
        let (pgid, exit, timings) = (term.pgid, term.exit.clone(), self.timings);
        tokio::spawn(async move {
            if exit.borrow().is_none() {
                process::stop_group(pgid, exit, timings).await;
            }
        });
        Ok(json!({}))
    }

    /// `terminal/release`: kills what still runs and frees the output.
    pub fn release(&self, params: &Value) -> Result<Value, RpcError> {
        let term = self.get(params)?;
        term.released.store(true, Ordering::Relaxed);
        if let Some(id) = params.get("terminalId").and_then(Value::as_str) {
            lock(&self.map).remove(id);
        }
        self.end(&term);
        Ok(json!({}))
    }

    /// The agent's connection ended: every terminal goes with it.
    pub fn end_all(&self) {
        let all: Vec<Arc<Term>> = lock(&self.map).drain().map(|(_, t)| t).collect();
        for term in all {
            term.released.store(true, Ordering::Relaxed);
            self.end(&term);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Buffer;

    #[test]
    fn output_is_cut_from_the_start_on_a_character_boundary() {
        let mut b = Buffer {
            limit: 2,
            ..Default::default()
        };
        b.push("ab".as_bytes());
        assert!(!b.truncated);
        // a b c d é é f: the cut at 5 falls inside "é", so it moves on.
        b.push("cdéf".as_bytes());
        assert!(b.truncated);
        assert_eq!(std::str::from_utf8(&b.data), Ok("f"));
        b.push("ééé".as_bytes());
        assert_eq!(std::str::from_utf8(&b.data), Ok("é"));
    }
}
