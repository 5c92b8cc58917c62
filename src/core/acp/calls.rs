//! The typed ACP calls a client makes, with the protocol's own types.

use std::path::Path;

use agent_client_protocol_schema::v1 as acp;
use agent_client_protocol_schema::ProtocolVersion;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::core::types::usage::TurnTokens;

use super::connection::{Connection, RpcError};
use crate::core::types::auth::{self as methods, AuthMethod};

/// The protocol version Parley speaks.
pub const PROTOCOL_VERSION: u16 = 1;

/// JSON-RPC error code agents use for "authentication required".
pub const AUTH_REQUIRED: i64 = -32000;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CallError {
    #[error(transparent)]
    Rpc(#[from] RpcError),
    #[error("the agent speaks ACP protocol version {agent}, Parley speaks version {ours}")]
    ProtocolVersion { agent: u16, ours: u16 },
    #[error("authentication required: {0}")]
    AuthRequired(String),
    /// The conversation's session can be neither resumed nor loaded: why
    /// (it stays read-only).
    #[error("{0}")]
    NotResumable(String),
    /// The conversation the session was being opened for was left (New
    /// or Open) before the agent answered.
    #[error("the conversation changed while its session was being opened")]
    Superseded,
}

fn to_params<T: Serialize>(value: &T) -> Value {
    // Our own protocol structs always serialise.
    serde_json::to_value(value).unwrap_or(Value::Null)
}

fn decode<T: DeserializeOwned>(method: &str, value: Value) -> Result<T, CallError> {
    serde_json::from_value(value).map_err(|e| CallError::Rpc(RpcError::Decode(format!("{method}: {e}"))))
}

fn map_auth(err: RpcError) -> CallError {
    match &err {
        RpcError::Remote { code, message, .. } if *code == AUTH_REQUIRED || says_auth(message) => {
            CallError::AuthRequired(message.clone())
        }
        _ => CallError::Rpc(err),
    }
}

/// Agents that use another code still say so in words.
fn says_auth(message: &str) -> bool {
    let m = message.to_lowercase();
    ["authentication", "unauthenticated", "not logged in", "api key"]
        .iter()
        .any(|w| m.contains(w))
}

/// What Parley keeps of an `initialize` answer.
#[derive(Debug, Clone)]
pub struct Initialized {
    pub response: acp::InitializeResponse,
    /// Read from the raw answer: see `auth::methods`.
    pub auth_methods: Vec<AuthMethod>,
    /// `agentCapabilities.auth.logout` was given.
    pub can_logout: bool,
}

pub async fn initialize(conn: &Connection) -> Result<Initialized, CallError> {
    let mut auth = acp::AuthCapabilities::new();
    auth.terminal = true;
    // Gateway methods (a base URL and headers the user names) are offered
    // by claude-agent-acp and codex-acp only to a client that says it can
    // ask for them (`auth::gateway`).
    auth.meta = Some(serde_json::Map::from_iter([(
        "gateway".to_owned(),
        Value::Bool(true),
    )]));
    let request = acp::InitializeRequest::new(ProtocolVersion::V1)
        .client_capabilities(
            acp::ClientCapabilities::new()
                .fs(acp::FileSystemCapabilities::new()
                    .read_text_file(true)
                    .write_text_file(true))
                .auth(auth)
                .terminal(true)
                // Helpers' sessions are shown as threads of their own
                // (`chat::subagents`).
                .subagents(acp::SubagentCapabilities::new())
                // Forms and URLs the agent asks the user for.
                .elicitation(
                    acp::ElicitationCapabilities::new()
                        .form(acp::ElicitationFormCapabilities::new())
                        .url(acp::ElicitationUrlCapabilities::new()),
                )
                // Notices, compactions and several plans are shown
                // (`chat::timeline`).
                .session(
                    acp::ClientSessionCapabilities::new()
                        .config_options(
                            acp::SessionConfigOptionsCapabilities::new()
                                .boolean(acp::BooleanConfigOptionCapabilities::new()),
                        )
                        .notices(acp::NoticeCapabilities::new())
                        .compaction(acp::CompactionCapabilities::new()),
                )
                .plan(acp::PlanCapabilities::new())
                // The legacy form of the same, which claude-agent-acp reads;
                // and `terminal_output`: claude-agent-acp and codex-acp then
                // stream a command's output as a live terminal
                // (`_meta.terminal_info`/`terminal_output`/`terminal_exit` on
                // the tool call) instead of a text block after the fact.
                .meta(serde_json::Map::from_iter([
                    ("terminal-auth".to_owned(), Value::Bool(true)),
                    ("terminal_output".to_owned(), Value::Bool(true)),
                ])),
        )
        .client_info(
            acp::Implementation::new("parley", env!("CARGO_PKG_VERSION")).title("Parley".to_string()),
        );
    let answer = conn.request("initialize", to_params(&request)).await?;
    // Check the version before anything else: a v2 answer may not decode as v1.
    let version = answer.get("protocolVersion").and_then(Value::as_u64).unwrap_or(0);
    if version != u64::from(PROTOCOL_VERSION) {
        return Err(CallError::ProtocolVersion {
            agent: u16::try_from(version).unwrap_or(u16::MAX),
            ours: PROTOCOL_VERSION,
        });
    }
    let auth_methods = methods::parse(answer.get("authMethods"));
    let can_logout = answer
        .pointer("/agentCapabilities/auth/logout")
        .is_some_and(Value::is_object);
    // `authMethods` is read above; the schema's own reading of it may
    // refuse a kind it does not know, which must not fail the handshake.
    let mut rest = answer;
    if let Some(o) = rest.as_object_mut() {
        o.remove("authMethods");
    }
    let mut response: acp::InitializeResponse = decode("initialize", rest)?;
    // claude-agent-acp and codex-acp advertise the `_session/steering`
    // extension at the answer's top level (`_meta.steering.supported`), not
    // in `agentCapabilities`: kept with the capabilities, where the chat
    // looks (`chat::steer`).
    let steering = response
        .meta
        .as_ref()
        .and_then(|m| m.get("steering"))
        .and_then(|s| s.get("supported"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if steering {
        response
            .agent_capabilities
            .meta
            .get_or_insert_with(Default::default)
            .insert("steering".to_owned(), serde_json::json!({"supported": true}));
    }
    Ok(Initialized {
        response,
        auth_methods,
        can_logout,
    })
}

/// `authenticate`; `meta` goes as its `_meta` (gemini-cli takes an API key
/// there as `api-key`).
pub async fn authenticate(
    conn: &Connection,
    method_id: &str,
    meta: Option<serde_json::Map<String, Value>>,
) -> Result<(), CallError> {
    let mut request = to_params(&acp::AuthenticateRequest::new(method_id.to_string()));
    if let (Some(meta), Some(o)) = (meta, request.as_object_mut()) {
        o.insert("_meta".to_owned(), Value::Object(meta));
    }
    conn.request("authenticate", request).await?;
    Ok(())
}

/// `logout` (where `agentCapabilities.auth.logout` was given).
pub async fn logout(conn: &Connection) -> Result<(), CallError> {
    conn.request("logout", to_params(&acp::LogoutRequest::new()))
        .await?;
    Ok(())
}

/// `session/new`: the typed answer, and the raw one (its `modes`,
/// `models` and `configOptions` are read from it: see `chat::controls`).
pub async fn new_session(
    conn: &Connection,
    cwd: &Path,
    additional_directories: Vec<std::path::PathBuf>,
    mcp_servers: Vec<acp::McpServer>,
) -> Result<(acp::NewSessionResponse, Value), CallError> {
    let request = acp::NewSessionRequest::new(cwd)
        .additional_directories(additional_directories)
        .mcp_servers(mcp_servers);
    let answer = conn
        .request("session/new", to_params(&request))
        .await
        .map_err(map_auth)?;
    Ok((decode("session/new", answer.clone())?, answer))
}

/// `session/prompt`: the answer, and the turn's tokens where the agent
/// told them (read from the raw answer: `usage` is unstable in the schema).
pub async fn prompt(
    conn: &Connection,
    session_id: &acp::SessionId,
    blocks: Vec<acp::ContentBlock>,
) -> Result<(acp::PromptResponse, Option<TurnTokens>), CallError> {
    let request = acp::PromptRequest::new(session_id.clone(), blocks);
    let answer = conn
        .request("session/prompt", to_params(&request))
        .await
        .map_err(map_auth)?;
    let tokens = TurnTokens::from_prompt_result(&answer);
    Ok((decode("session/prompt", answer)?, tokens))
}

pub fn cancel(conn: &Connection, session_id: &acp::SessionId) {
    conn.notify(
        "session/cancel",
        to_params(&acp::CancelNotification::new(session_id.clone())),
    );
}

pub async fn set_mode(
    conn: &Connection,
    session_id: &acp::SessionId,
    mode_id: &str,
) -> Result<(), CallError> {
    let request = acp::SetSessionModeRequest::new(session_id.clone(), mode_id.to_string());
    conn.request("session/set_mode", to_params(&request)).await?;
    Ok(())
}

/// `session/set_config_option`: the agent's whole list after the change.
pub async fn set_config_option(
    conn: &Connection,
    session_id: &acp::SessionId,
    config_id: &str,
    value: &Value,
) -> Result<Value, CallError> {
    let value = match value {
        Value::Bool(b) => acp::SessionConfigOptionValue::boolean(*b),
        other => acp::SessionConfigOptionValue::value_id(other.as_str().unwrap_or_default().to_owned()),
    };
    let request = acp::SetSessionConfigOptionRequest::new(session_id.clone(), config_id.to_owned(), value);
    let answer = conn
        .request("session/set_config_option", to_params(&request))
        .await?;
    Ok(answer.get("configOptions").cloned().unwrap_or(Value::Null))
}

/// `session/set_model`, of the legacy `models` (no longer in the schema).
pub async fn set_model(
    conn: &Connection,
    session_id: &acp::SessionId,
    model_id: &str,
) -> Result<(), CallError> {
    let request = serde_json::json!({"sessionId": session_id.to_string(), "modelId": model_id});
    conn.request("session/set_model", request).await?;
    Ok(())
}

/// `session/resume` (where `sessionCapabilities.resume` is advertised):
/// the raw answer (its options are read from it, as for `session/new`).
pub async fn resume_session(
    conn: &Connection,
    session_id: &str,
    cwd: &Path,
    additional_directories: Vec<std::path::PathBuf>,
    mcp_servers: Vec<acp::McpServer>,
) -> Result<Value, CallError> {
    let request = acp::ResumeSessionRequest::new(session_id.to_owned(), cwd)
        .additional_directories(additional_directories)
        .mcp_servers(mcp_servers);
    conn.request("session/resume", to_params(&request))
        .await
        .map_err(map_auth)
}

/// `session/load` (where `loadSession` is advertised): the agent replays
/// the conversation as session updates before it answers.
pub async fn load_session(
    conn: &Connection,
    session_id: &str,
    cwd: &Path,
    additional_directories: Vec<std::path::PathBuf>,
    mcp_servers: Vec<acp::McpServer>,
) -> Result<Value, CallError> {
    let request = acp::LoadSessionRequest::new(session_id.to_owned(), cwd)
        .mcp_servers(mcp_servers)
        .additional_directories(additional_directories);
    conn.request("session/load", to_params(&request))
        .await
        .map_err(map_auth)
}

/// `session/list` for one working directory, every page (at most 20, so a
/// hostile agent cannot keep Parley asking).
pub async fn list_sessions(conn: &Connection, cwd: &Path) -> Result<Vec<acp::SessionInfo>, CallError> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..20 {
        let request = acp::ListSessionsRequest::new()
            .cwd(cwd.to_path_buf())
            .cursor(cursor.take());
        let answer = conn
            .request("session/list", to_params(&request))
            .await
            .map_err(map_auth)?;
        let page: acp::ListSessionsResponse = decode("session/list", answer)?;
        out.extend(page.sessions);
        match page.next_cursor {
            Some(next) if !next.is_empty() => cursor = Some(next),
            _ => break,
        }
    }
    Ok(out)
}

/// `session/close` (where `sessionCapabilities.close` is advertised).
/// `session/fork` (where `sessionCapabilities.fork` is advertised): a new
/// session holding all the given one has; its id and the raw answer (its
/// options).
pub async fn fork_session(
    conn: &Connection,
    session_id: &str,
    cwd: &Path,
    additional_directories: Vec<std::path::PathBuf>,
    mcp_servers: Vec<acp::McpServer>,
) -> Result<(acp::SessionId, Value), CallError> {
    let request = acp::ForkSessionRequest::new(session_id.to_owned(), cwd)
        .additional_directories(additional_directories)
        .mcp_servers(mcp_servers);
    let answer = conn
        .request("session/fork", to_params(&request))
        .await
        .map_err(map_auth)?;
    let response: acp::ForkSessionResponse = decode("session/fork", answer.clone())?;
    Ok((response.session_id, answer))
}

pub async fn close_session(conn: &Connection, session_id: &str) -> Result<(), CallError> {
    let request = acp::CloseSessionRequest::new(session_id.to_owned());
    conn.request("session/close", to_params(&request)).await?;
    Ok(())
}

/// `session/delete` (where `sessionCapabilities.delete` is advertised).
pub async fn delete_session(conn: &Connection, session_id: &str) -> Result<(), CallError> {
    let request = acp::DeleteSessionRequest::new(session_id.to_owned());
    conn.request("session/delete", to_params(&request)).await?;
    Ok(())
}
