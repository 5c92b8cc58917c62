//! Opening an agent's ACP session (with its MCP servers, additional
//! directories and default options) and changing its options: the
//! composer's pickers and `parley-cli send --model/--mode/--option`.

use std::sync::Arc;

use agent_client_protocol_schema::v1 as acp;
use serde_json::Value;

use super::state::{lock, ChatService, Message};
use crate::core::acp::{calls, Connection};
use crate::core::config::model::{McpServerDef, McpTransport};
use crate::core::types::message::{MessageCode, Part, Role};
use crate::core::types::options as controls;
use crate::i18n::gettext_f;

/// A session and the updates that came for it before `session/new`
/// answered (applied once a turn's message exists).
pub(super) type Opened = (acp::SessionId, Vec<(String, acp::SessionUpdate)>);

/// The conversation a session is being opened for, as it was when the
/// opening began.
struct Opening {
    /// Its `Conv::serial`: the answer is the current conversation's only
    /// while this is still the current one's.
    serial: u64,
    /// The agent session to resume (or load), and whether the conversation
    /// came from the history (then it never silently gets a new session).
    resume_from: Option<String>,
    from_history: bool,
}

/// The protocol's form of a configured MCP server.
fn to_acp(def: &McpServerDef) -> acp::McpServer {
    let headers = || -> Vec<acp::HttpHeader> {
        def.headers
            .pairs()
            .into_iter()
            .map(|(k, v)| acp::HttpHeader::new(k, v))
            .collect()
    };
    match def.transport {
        McpTransport::Stdio => acp::McpServer::Stdio(
            acp::McpServerStdio::new(def.name.clone(), def.command.clone())
                .args(def.args.clone())
                .env(
                    def.env
                        .pairs()
                        .into_iter()
                        .map(|(k, v)| acp::EnvVariable::new(k, v))
                        .collect(),
                ),
        ),
        McpTransport::Http => acp::McpServer::Http(
            acp::McpServerHttp::new(def.name.clone(), def.url.clone()).headers(headers()),
        ),
        McpTransport::Sse => {
            acp::McpServer::Sse(acp::McpServerSse::new(def.name.clone(), def.url.clone()).headers(headers()))
        }
    }
}

/// The MCP servers a session gets: the global ones, then the agent's own
/// (which replace a global one of the same name), each only if the agent
/// supports its transport. Returns the servers and the names left out.
pub fn mcp_servers(
    global: &[McpServerDef],
    own: &[McpServerDef],
    caps: &acp::McpCapabilities,
) -> (Vec<acp::McpServer>, Vec<String>) {
    let mut all: Vec<&McpServerDef> = global
        .iter()
        .filter(|g| !own.iter().any(|o| o.name == g.name))
        .collect();
    all.extend(own.iter());
    let mut servers = Vec::new();
    let mut left_out = Vec::new();
    for def in all {
        let supported = match def.transport {
            McpTransport::Stdio => true,
            McpTransport::Http => caps.http,
            McpTransport::Sse => caps.sse,
        };
        if supported {
            servers.push(to_acp(def));
        } else {
            left_out.push(format!("{} ({})", def.name, def.transport.name()));
        }
    }
    (servers, left_out)
}

impl ChatService {
    pub(super) fn opener(&self, agent: &str) -> Arc<tokio::sync::Mutex<()>> {
        lock(&self.inner.openers)
            .entry(agent.to_owned())
            .or_default()
            .clone()
    }

    /// The agent's session for this process (`generation`), opened if there
    /// is none. One opening at a time per agent.
    pub(super) async fn session_for(
        &self,
        agent: &str,
        conn: &Connection,
        generation: u64,
    ) -> Result<Opened, calls::CallError> {
        let opener = self.opener(agent);
        let _one = opener.lock().await;
        let opening = {
            let mut convs = lock(&self.inner.convs);
            let c = convs.entry(agent.to_owned()).or_default();
            match &c.session {
                Some((sid, g)) if *g == generation => return Ok((sid.clone(), Vec::new())),
                _ => {}
            }
            if self.take_live(agent, c, generation) {
                // From now on a restart of the agent is a restart (below).
                c.from_history = false;
                c.had_session = true;
                self.emit(c.session_changed(agent));
                let sid = c.session.as_ref().map(|(s, _)| s.clone());
                if let Some(sid) = sid {
                    return Ok((sid, Vec::new()));
                }
            }
            c.opening_session = true;
            Opening {
                serial: c.serial,
                resume_from: c.stored_session.clone(),
                from_history: c.from_history,
            }
        };
        let opened = self.open_session(agent, conn, generation, &opening).await;
        if opened.is_err() {
            let mut convs = lock(&self.inner.convs);
            if let Some(c) = convs.get_mut(agent).filter(|c| c.serial == opening.serial) {
                c.opening_session = false;
                c.early.clear();
            }
        }
        opened
    }

    /// Opens the ACP session; returns it with the updates that arrived for
    /// it before the answer.
    async fn open_session(
        &self,
        agent: &str,
        conn: &Connection,
        generation: u64,
        opening: &Opening,
    ) -> Result<Opened, calls::CallError> {
        let sup = &self.inner.supervisor;
        let def = sup.definition(agent).unwrap_or_default();
        let caps = sup.capabilities(agent).unwrap_or_default();
        let global = sup.global_mcp_servers();
        let (servers, left_out) = mcp_servers(&global, &def.mcp_servers, &caps.mcp_capabilities);
        let mut warnings = Vec::new();
        if !left_out.is_empty() {
            warnings.push(gettext_f(
                "MCP servers left out, as the agent does not support their transport: {servers}",
                &[("servers", &left_out.join(", "))],
            ));
        }
        let mut dirs = def.additional_dirs();
        if !dirs.is_empty() && caps.session_capabilities.additional_directories.is_none() {
            warnings.push(gettext_f(
                "Additional directories left out, as the agent does not support them: {dirs}",
                &[(
                    "dirs",
                    &dirs
                        .iter()
                        .map(|d| d.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                )],
            ));
            dirs.clear();
        }
        let (resume_from, from_history) = (opening.resume_from.clone(), opening.from_history);
        let mut resumed = None;
        if let Some(stored) = &resume_from {
            resumed = self
                .resume(agent, conn, stored, &def.working_dir(), &dirs, &servers, &caps)
                .await?;
            if resumed.is_none() && from_history {
                return Err(self.make_read_only(agent, None, opening.serial));
            }
            if let Some(Err(why)) = &resumed {
                if from_history {
                    return Err(self.make_read_only(agent, Some(why.clone()), opening.serial));
                }
                sup.log(agent, format!("parley: the session could not be resumed: {why}"));
            }
        }
        let (raw, sid, loaded, is_new) = match resumed {
            Some(Ok((raw, loaded))) => (
                raw,
                acp::SessionId::new(resume_from.unwrap_or_default()),
                loaded,
                false,
            ),
            _ => {
                let (response, raw) = calls::new_session(conn, &def.working_dir(), dirs, servers).await?;
                (raw, response.session_id, false, true)
            }
        };
        let (restarted, sid, early, replayed_count) = {
            let mut convs = lock(&self.inner.convs);
            let c = convs.entry(agent.to_owned()).or_default();
            if c.serial != opening.serial {
                // The user left the conversation before the agent
                // answered: the session is that conversation's, kept for
                // switching back to it (or closed), and not given to the
                // one now current.
                drop(convs);
                self.let_go(
                    agent,
                    super::state::LiveSession {
                        sid,
                        generation,
                        options: controls::from_session_answer(&raw),
                        commands: Vec::new(),
                    },
                );
                return Err(calls::CallError::Superseded);
            }
            c.opening_session = false;
            let early = std::mem::take(&mut c.early);
            let restarted = c.had_session && is_new;
            c.session = Some((sid.clone(), generation));
            c.stored_session = Some(sid.to_string());
            c.had_session = true;
            // Taken up again: if the agent restarts now, the conversation
            // goes on as a live one does (resumed, else a new session).
            c.from_history = false;
            c.options = controls::from_session_answer(&raw);
            if !c.options.is_empty() {
                lock(&self.inner.offered).insert(agent.to_owned(), c.options.clone());
            }
            if is_new {
                c.title = None;
                c.usage = Default::default();
            }
            // Judged once the defaults (startMode) are set, below.
            self.unasked_reset(agent, is_new);
            let sid_text = sid.to_string();
            // What the agent said of the session's state before answering
            // (options, mode, title, commands, usage) applies now, before
            // the defaults change it; content waits for the turn's message,
            // or is the replay of a loaded session.
            let mut content = Vec::new();
            let mut next_id = || self.next_id("m");
            let mut emit = |e| self.emit(e);
            for (s, update) in early.into_iter().filter(|(s, _)| *s == sid_text) {
                use acp::SessionUpdate as U;
                match update {
                    U::ConfigOptionUpdate(_)
                    | U::CurrentModeUpdate(_)
                    | U::SessionInfoUpdate(_)
                    | U::AvailableCommandsUpdate(_)
                    | U::UsageUpdate(_) => {
                        c.apply(agent, update, &mut next_id, &mut emit);
                    }
                    other => content.push((s, other)),
                }
            }
            emit(c.session_changed(agent));
            // An agent that replays its history on `session/resume` too
            // (fast-agent 0.10.48, against the spec): the replay begins with
            // the user's words, which no turn of this run has sent yet. It
            // is taken as on `session/load`, not glued onto the next answer.
            let replayed_on_resume = !is_new
                && !loaded
                && content
                    .iter()
                    .any(|(_, u)| matches!(u, acp::SessionUpdate::UserMessageChunk(_)));
            let replayed_count = if replayed_on_resume { content.len() } else { 0 };
            if loaded || replayed_on_resume {
                let replay = replayed(agent, content, &mut next_id);
                for m in merge(&mut c.messages, replay) {
                    emit(crate::core::events::Event::MessageUpdated(
                        crate::core::events::MessageUpdated {
                            agent: agent.to_owned(),
                            message: m,
                        },
                    ));
                }
                content = Vec::new();
            }
            (restarted, sid, content, replayed_count)
        };
        if replayed_count > 0 {
            sup.log(
                agent,
                format!("parley: the agent replayed {replayed_count} updates on session/resume; taken as a session/load's replay"),
            );
        }
        self.record_session(agent, &sid.to_string());
        if !is_new {
            self.asks_nothing_ready(agent);
            return Ok((sid, early));
        }
        if restarted {
            self.system_message(agent, MessageCode::AgentRestarted, None);
        }
        for (key, value) in &def.session_defaults() {
            if let Some(w) = self.apply_default(agent, conn, &sid, key, value).await {
                warnings.push(w);
            }
        }
        for w in warnings {
            sup.log(agent, format!("parley: {w}"));
            self.session_warning(agent, w);
        }
        self.asks_nothing_ready(agent);
        Ok((sid, early))
    }

    /// Resumes the stored session `sid` (`session/resume`), else loads it
    /// (`session/load`, which replays it). `None` when the agent offers
    /// neither; `Some(Err(why))` when it refused; the answer, and whether
    /// it was a load, when it took it.
    #[allow(clippy::too_many_arguments)]
    async fn resume(
        &self,
        agent: &str,
        conn: &Connection,
        sid: &str,
        cwd: &std::path::Path,
        dirs: &[std::path::PathBuf],
        servers: &[acp::McpServer],
        caps: &acp::AgentCapabilities,
    ) -> Result<Option<Result<(Value, bool), String>>, calls::CallError> {
        let mut refused = None;
        if caps.session_capabilities.resume.is_some() {
            match calls::resume_session(conn, sid, cwd, dirs.to_vec(), servers.to_vec()).await {
                Ok(raw) => return Ok(Some(Ok((raw, false)))),
                Err(e @ calls::CallError::AuthRequired(_)) => return Err(e),
                Err(e) => {
                    self.inner
                        .supervisor
                        .log(agent, format!("parley: session/resume {sid} failed: {e}"));
                    refused = Some(agent_words(&e));
                }
            }
        }
        if caps.load_session {
            match calls::load_session(conn, sid, cwd, dirs.to_vec(), servers.to_vec()).await {
                Ok(raw) => return Ok(Some(Ok((raw, true)))),
                Err(e @ calls::CallError::AuthRequired(_)) => return Err(e),
                Err(e) => {
                    self.inner
                        .supervisor
                        .log(agent, format!("parley: session/load {sid} failed: {e}"));
                    refused = Some(agent_words(&e));
                }
            }
        }
        Ok(refused.map(Err))
    }

    /// The agent's current conversation cannot go on: it is read-only,
    /// and the front ends hear why (`conversation:switched`).
    /// `serial`: the conversation it was found for; if the user has left
    /// it meanwhile, the current one is not touched (`Superseded`).
    pub(super) fn make_read_only(
        &self,
        agent: &str,
        refused: Option<String>,
        serial: u64,
    ) -> calls::CallError {
        let why = match refused {
            None => crate::i18n::gettext(
                "This agent cannot resume its sessions, so this conversation is read-only. Continue in a new conversation.",
            ),
            Some(words) => gettext_f(
                "The agent could not resume this conversation’s session ({error}), so it is read-only. Continue in a new conversation.",
                &[("error", &words)],
            ),
        };
        let marked = match lock(&self.inner.convs).get_mut(agent) {
            Some(c) if c.serial == serial => {
                c.read_only = Some(why.clone());
                c.opening_session = false;
                c.early.clear();
                true
            }
            _ => false,
        };
        if !marked {
            return calls::CallError::Superseded;
        }
        self.emit_switched(agent);
        calls::CallError::NotResumable(why)
    }

    /// A `system` message that says what the session could not take.
    pub(super) fn session_warning(&self, agent: &str, text: String) {
        let mut m = Message::new(self.next_id("m"), agent, Role::System);
        m.code = Some(MessageCode::SessionWarning);
        m.parts.push(Part::Text { text });
        if let Some(c) = lock(&self.inner.convs).get_mut(agent) {
            c.messages.push(m.clone());
        }
        self.emit_message(&m);
    }
}

/// The messages a `session/load` replayed: user chunks make user
/// messages, everything else goes to the agent message after them.
fn replayed(
    agent: &str,
    updates: Vec<(String, acp::SessionUpdate)>,
    next_id: &mut impl FnMut() -> String,
) -> Vec<Message> {
    let mut tmp = super::state::Conv::default();
    for (_, update) in updates {
        match update {
            acp::SessionUpdate::UserMessageChunk(chunk) => {
                let text = crate::core::types::message::into_text(chunk.content);
                tmp.current = None;
                match tmp.messages.last_mut() {
                    Some(m) if m.role == Role::User => match m.parts.last_mut() {
                        Some(Part::Text { text: t }) => t.push_str(&text),
                        _ => m.parts.push(Part::Text { text }),
                    },
                    _ => {
                        let mut m = Message::new(next_id(), agent, Role::User);
                        m.parts.push(Part::Text { text });
                        tmp.messages.push(m);
                    }
                }
            }
            other => {
                if tmp.current.is_none() {
                    tmp.messages.push(Message::new(next_id(), agent, Role::Agent));
                    tmp.current = Some(tmp.messages.len() - 1);
                }
                tmp.apply(agent, other, next_id, &mut |_| {});
            }
        }
    }
    tmp.messages
}

/// Adds to `stored` the replayed messages it does not hold already (same
/// role and text, each stored message matched once); returns them.
fn merge(stored: &mut Vec<Message>, replay: Vec<Message>) -> Vec<Message> {
    let key = |m: &Message| (m.role, m.text().trim().to_owned());
    let mut used = vec![false; stored.len()];
    let mut added = Vec::new();
    for m in replay {
        let k = key(&m);
        let found = stored
            .iter()
            .enumerate()
            .position(|(i, s)| !used[i] && s.role != Role::System && key(s) == k);
        match found {
            Some(i) => used[i] = true,
            None => added.push(m),
        }
    }
    stored.extend(added.iter().cloned());
    added
}

/// What the agent said when it refused (its message and the detail of its
/// error's `data`, not our wrapping): gemini-cli's `session/load` says only
/// "Internal error", and why in `data.details`.
pub(super) fn agent_words(e: &calls::CallError) -> String {
    match e {
        calls::CallError::Rpc(crate::core::acp::RpcError::Remote { message, data, .. }) => {
            format!("{message}{}", crate::core::acp::connection::detail(data.as_ref()))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::config::model::NameValues;

    fn server(name: &str, transport: McpTransport) -> McpServerDef {
        McpServerDef {
            name: name.into(),
            transport,
            command: "mcp-fs".into(),
            url: "https://example.invalid/mcp".into(),
            headers: NameValues::List(vec![crate::core::config::model::NameValue {
                name: "Authorization".into(),
                value: "Bearer x".into(),
            }]),
            ..McpServerDef::default()
        }
    }

    fn said(role: Role, text: &str) -> Message {
        let mut m = Message::new(format!("{text}-{role:?}"), "demo", role);
        m.parts.push(Part::Text { text: text.into() });
        m
    }

    #[test]
    fn a_replay_adds_only_what_is_not_stored() {
        let mut stored = vec![
            said(Role::User, "one"),
            said(Role::Agent, "first answer"),
            said(Role::System, "restarted"),
        ];
        let chunk = |text: &str| acp::ContentChunk::new(acp::ContentBlock::from(text.to_owned()));
        let updates = vec![
            acp::SessionUpdate::UserMessageChunk(chunk("one")),
            acp::SessionUpdate::AgentMessageChunk(chunk("first ")),
            acp::SessionUpdate::AgentMessageChunk(chunk("answer")),
            acp::SessionUpdate::UserMessageChunk(chunk("two")),
            acp::SessionUpdate::AgentMessageChunk(chunk("said in a terminal")),
        ]
        .into_iter()
        .map(|u| ("s".to_owned(), u))
        .collect();
        let mut n = 0;
        let replay = replayed("demo", updates, &mut || {
            n += 1;
            format!("m{n}")
        });
        assert_eq!(replay.len(), 4);
        let added = merge(&mut stored, replay);
        let texts: Vec<String> = added.iter().map(Message::text).collect();
        assert_eq!(texts, ["two", "said in a terminal"]);
        assert_eq!(stored.len(), 5);
        // Loaded again: nothing new.
        let again = stored
            .iter()
            .filter(|m| m.role != Role::System)
            .cloned()
            .collect();
        assert!(merge(&mut stored, again).is_empty());
    }

    #[test]
    fn a_refusal_keeps_the_detail_of_its_data() {
        // gemini-cli's `session/load` of a session it does not have.
        let e = calls::CallError::Rpc(crate::core::acp::RpcError::Remote {
            code: -32603,
            message: "Internal error".into(),
            data: Some(serde_json::json!({"details": "No previous sessions found for this project."})),
        });
        assert_eq!(
            agent_words(&e),
            "Internal error: No previous sessions found for this project."
        );
    }

    #[test]
    fn transports_the_agent_lacks_are_named() {
        let global = [
            server("fs", McpTransport::Stdio),
            server("docs", McpTransport::Http),
        ];
        let own = [
            server("docs", McpTransport::Sse),
            server("web", McpTransport::Http),
        ];
        let (servers, left) = mcp_servers(&global, &own, &acp::McpCapabilities::new().http(true));
        let json = serde_json::to_value(&servers).expect("json");
        // The agent's own "docs" replaced the global one; sse is not supported.
        assert_eq!(left, ["docs (sse)"]);
        assert_eq!(json.as_array().map(Vec::len), Some(2));
        assert_eq!(json[0]["name"], "fs");
        assert_eq!(json[1]["type"], "http");
        assert_eq!(json[1]["headers"][0]["name"], "Authorization");
        let (servers, left) = mcp_servers(&global, &[], &acp::McpCapabilities::new());
        assert_eq!((servers.len(), left), (1, vec!["docs (http)".to_owned()]));
    }
}
