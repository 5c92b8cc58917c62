//! One JSON-RPC 2.0 connection over a reader and a writer of lines.
//!
//! A reader task takes lines in arrival order and dispatches each before the
//! next: notifications and the agent's requests go to the [`Handler`]
//! synchronously, answers wake the task that sent the request. So a session
//! update that arrives before the answer to `session/prompt` is always applied
//! before the prompt's caller sees that answer.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_client_protocol_schema::v1::SessionNotification;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, watch};

use super::incoming::{Envelope, TextChunkLine, UpdateLine};
use super::lines::{next_line, LineError};

/// Extension notifications (`_`-prefixed) that reach the handler: the
/// agent's word on who is signed in (claude-agent-acp, codex-acp).
const KNOWN_EXTENSION_NOTIFICATIONS: &[&str] = &["_auth/status_update"];

pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;

/// How many bytes of lines to the agent may wait unwritten. Past it, the
/// agent's requests are answered with an error instead of their result: an
/// agent that stops reading its input must not pile up Parley's memory. Room
/// for two of the largest file reads (32 MiB each).
pub const OUTBOUND_CAP: usize = 64 << 20;
/// How long the agent may read nothing while more than half of
/// [`OUTBOUND_CAP`] waits for it, before the connection is ended as lost.
pub const OUTBOUND_STALL: Duration = Duration::from_secs(10);

/// An error answer, or the end of the connection.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RpcError {
    #[error("{message}{} (error {code})", detail(data.as_ref()))]
    Remote {
        code: i64,
        message: String,
        data: Option<Value>,
    },
    #[error("the connection to the agent is closed: {0}")]
    Closed(String),
    #[error("the agent sent an answer Parley cannot read: {0}")]
    Decode(String),
}

/// What an error's `data` says in words (`message` or `details`, as
/// codex-acp, claude-agent-acp and gemini-cli put it), as ": …", cut to
/// 1,000 bytes.
pub fn detail(data: Option<&Value>) -> String {
    let text = data.and_then(|d| {
        d.as_str()
            .or_else(|| d.get("message").and_then(Value::as_str))
            .or_else(|| d.get("details").and_then(Value::as_str))
    });
    match text.map(str::trim).filter(|t| !t.is_empty()) {
        Some(t) => {
            let mut end = t.len().min(1000);
            while !t.is_char_boundary(end) {
                end -= 1;
            }
            format!(": {}", &t[..end])
        }
        None => String::new(),
    }
}

impl RpcError {
    pub fn remote(code: i64, message: impl Into<String>) -> Self {
        RpcError::Remote {
            code,
            message: message.into(),
            data: None,
        }
    }

    fn to_json(&self) -> Value {
        match self {
            RpcError::Remote { code, message, data } => {
                let mut e = json!({"code": code, "message": message});
                if let Some(d) = data {
                    e["data"] = d.clone();
                }
                e
            }
            other => json!({"code": INTERNAL_ERROR, "message": other.to_string()}),
        }
    }
}

/// What the agent sends us, dispatched in arrival order by the reader task.
/// Calls must be quick: they run on the reader task.
pub trait Handler: Send + Sync + 'static {
    fn notification(&self, method: &str, params: &RawValue);
    /// A `session/update` notification, decoded in the same pass as its
    /// line (the hot path while an agent streams).
    fn session_update(&self, update: SessionNotification);
    /// A request from the agent; answer through `responder`, now or later.
    fn request(&self, method: &str, params: &RawValue, responder: Responder);
    /// Something worth the agent's log: a skipped line, an ignored message.
    fn log(&self, line: String);
    /// The connection ended; `reason` is `None` at a clean end of input.
    fn closed(&self, reason: Option<String>);
}

enum Outgoing {
    Line(String),
    Close,
}

/// Answers one request from the agent. Dropping it unanswered answers an
/// internal error, so an agent never waits forever on a forgotten request.
pub struct Responder {
    id: Value,
    inner: Arc<Inner>,
    answered: bool,
}

impl Responder {
    pub fn respond(mut self, result: Result<Value, RpcError>) {
        self.answered = true;
        let line = match result {
            Ok(v) => json!({"jsonrpc": "2.0", "id": self.id, "result": v}).to_string(),
            Err(e) => json!({"jsonrpc": "2.0", "id": self.id, "error": e.to_json()}).to_string(),
        };
        let waiting = self.backlog();
        if waiting > 0 && waiting + line.len() > OUTBOUND_CAP {
            // The result is dropped here, not queued: only a short error
            // waits for the agent to read.
            let e = self.refuse_backlogged();
            self.inner.handler.log(format!(
                "parley: an answer of {} bytes was not sent: {e}",
                line.len()
            ));
            let msg = json!({"jsonrpc": "2.0", "id": self.id, "error": e.to_json()});
            self.inner.send(msg.to_string());
            return;
        }
        self.inner.send(line);
    }

    /// Whether lines for the agent have piled up past half the cap: a
    /// handler about to do costly work then refuses early, with
    /// [`Responder::refuse_backlogged`].
    pub fn backlogged(&self) -> bool {
        self.backlog() > OUTBOUND_CAP / 2
    }

    fn backlog(&self) -> usize {
        self.inner.queued.load(Ordering::Relaxed)
    }

    /// The error for a request refused because the agent does not read
    /// what Parley writes.
    pub fn refuse_backlogged(&self) -> RpcError {
        RpcError::remote(
            INTERNAL_ERROR,
            format!(
                "refused: the agent is not reading its input ({} MiB of answers are waiting)",
                self.backlog() >> 20
            ),
        )
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        if !self.answered {
            let msg = json!({"jsonrpc": "2.0", "id": self.id,
                "error": {"code": INTERNAL_ERROR, "message": "the client dropped this request"}});
            self.inner.send(msg.to_string());
        }
    }
}

type Pending = Mutex<HashMap<i64, oneshot::Sender<Result<Value, RpcError>>>>;

struct Inner {
    next_id: AtomicI64,
    pending: Pending,
    out: mpsc::UnboundedSender<Outgoing>,
    /// Bytes of lines queued and not yet written (shared with the writer,
    /// which must not hold `Inner`: its sender would keep it alive).
    queued: Arc<AtomicUsize>,
    /// For the agent's log.
    handler: Arc<dyn Handler>,
    /// `Some(reason)` once the connection has ended.
    closed: watch::Sender<Option<String>>,
}

impl Inner {
    fn send(&self, line: String) -> bool {
        let len = line.len() + 1;
        self.queued.fetch_add(len, Ordering::Relaxed);
        let sent = self.out.send(Outgoing::Line(line)).is_ok();
        if !sent {
            self.queued.fetch_sub(len, Ordering::Relaxed);
        }
        sent
    }

    /// Records the end of the connection (the first reason stays) and fails
    /// every request still waiting for an answer.
    fn end(&self, text: &str) {
        self.closed.send_if_modified(|r| {
            if r.is_some() {
                return false;
            }
            *r = Some(text.to_owned());
            true
        });
        for (_, tx) in lock(&self.pending).drain() {
            let _ = tx.send(Err(RpcError::Closed(text.to_owned())));
        }
    }
}

#[derive(Clone)]
pub struct Connection {
    inner: Arc<Inner>,
}

impl Connection {
    /// Starts the reader and writer tasks on the current tokio runtime.
    pub fn start<R, W>(reader: R, writer: W, handler: Arc<dyn Handler>, max_line: usize) -> Self
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (out_tx, out_rx) = mpsc::unbounded_channel();
        let (closed, _) = watch::channel(None);
        let inner = Arc::new(Inner {
            next_id: AtomicI64::new(0),
            pending: Mutex::new(HashMap::new()),
            out: out_tx,
            queued: Arc::new(AtomicUsize::new(0)),
            handler: handler.clone(),
            closed,
        });
        tokio::spawn(write_loop(
            writer,
            out_rx,
            inner.queued.clone(),
            Arc::downgrade(&inner),
            handler.clone(),
        ));
        tokio::spawn(read_loop(reader, inner.clone(), handler, max_line));
        Connection { inner }
    }

    /// Sends a request and waits for its answer. Dropping the future forgets
    /// the request: a late answer is then logged and ignored.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        if let Some(reason) = self.closed_reason() {
            return Err(RpcError::Closed(reason));
        }
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.inner.pending).insert(id, tx);
        let guard = PendingGuard {
            inner: &self.inner,
            id,
        };
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if !self.inner.send(msg.to_string()) {
            return Err(RpcError::Closed("the writer has stopped".into()));
        }
        let result = rx
            .await
            .unwrap_or_else(|_| Err(RpcError::Closed("the connection ended".into())));
        drop(guard);
        result
    }

    pub fn notify(&self, method: &str, params: Value) {
        let msg = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.inner.send(msg.to_string());
    }

    /// Closes our side of the stream (the agent's stdin). Outgoing lines
    /// already queued are written first.
    pub fn close_output(&self) {
        let _ = self.inner.out.send(Outgoing::Close);
    }

    pub fn closed_reason(&self) -> Option<String> {
        self.inner.closed.borrow().clone()
    }

    /// Resolves when the connection has ended, with the reason.
    pub async fn wait_closed(&self) -> String {
        let mut rx = self.inner.closed.subscribe();
        loop {
            if let Some(r) = rx.borrow_and_update().clone() {
                return r;
            }
            if rx.changed().await.is_err() {
                return "the connection ended".into();
            }
        }
    }
}

struct PendingGuard<'a> {
    inner: &'a Inner,
    id: i64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        // Still waiting: the caller gave the request up. The agent is told
        // (`$/cancel_request`), and a late answer is ignored.
        if lock(&self.inner.pending).remove(&self.id).is_some() && self.inner.closed.borrow().is_none() {
            let msg =
                json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": self.id}});
            self.inner.send(msg.to_string());
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic elsewhere must not take the connection down with it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Writes the queued lines in order. It holds no strong `Inner` (whose
/// sender would keep the channel open for good): it ends when every sender
/// is gone, on `Close`, or when the agent stops reading.
async fn write_loop<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut rx: mpsc::UnboundedReceiver<Outgoing>,
    queued: Arc<AtomicUsize>,
    inner: std::sync::Weak<Inner>,
    handler: Arc<dyn Handler>,
) {
    while let Some(msg) = rx.recv().await {
        match msg {
            Outgoing::Line(mut line) => {
                line.push('\n');
                let len = line.len();
                let written = match write_watched(&mut writer, line.as_bytes(), &queued).await {
                    Ok(written) => written,
                    Err(Stalled) => {
                        let reason = format!(
                            "the agent stopped reading its input: {} MiB of Parley's answers \
                             waited while it read nothing for {} s; the connection was closed",
                            queued.load(Ordering::Relaxed) >> 20,
                            OUTBOUND_STALL.as_secs()
                        );
                        // The supervisor hears it first (as in `read_loop`).
                        handler.closed(Some(reason.clone()));
                        if let Some(inner) = inner.upgrade() {
                            inner.end(&reason);
                        }
                        return;
                    }
                };
                queued.fetch_sub(len, Ordering::Relaxed);
                if !written {
                    break;
                }
            }
            Outgoing::Close => break,
        }
    }
    let _ = writer.shutdown().await;
    // Dropping the writer closes the pipe: the agent sees end of input.
}

/// The agent read nothing for [`OUTBOUND_STALL`] with a large backlog.
struct Stalled;

/// Writes `bytes`, watching progress: `Ok(true)` when written, `Ok(false)`
/// when the pipe failed, `Err(Stalled)` when the agent took nothing for
/// [`OUTBOUND_STALL`] while more than half of [`OUTBOUND_CAP`] waited.
async fn write_watched<W: AsyncWrite + Unpin>(
    writer: &mut W,
    bytes: &[u8],
    queued: &AtomicUsize,
) -> Result<bool, Stalled> {
    let mut at = 0;
    let mut progress = Instant::now();
    while at < bytes.len() {
        match tokio::time::timeout(Duration::from_secs(1), writer.write(&bytes[at..])).await {
            Ok(Ok(0)) | Ok(Err(_)) => return Ok(false),
            Ok(Ok(n)) => {
                at += n;
                progress = Instant::now();
            }
            Err(_) => {
                let large = queued.load(Ordering::Relaxed) > OUTBOUND_CAP / 2;
                if large && progress.elapsed() >= OUTBOUND_STALL {
                    return Err(Stalled);
                }
            }
        }
    }
    Ok(writer.flush().await.is_ok())
}

async fn read_loop<R: AsyncBufRead + Unpin>(
    mut reader: R,
    inner: Arc<Inner>,
    handler: Arc<dyn Handler>,
    max_line: usize,
) {
    let reason = loop {
        match next_line(&mut reader, max_line).await {
            Ok(Some(line)) => dispatch(&line, &inner, handler.as_ref()),
            Ok(None) => break None,
            Err(e @ LineError::TooLong { .. }) => break Some(format!("{e}; the connection was closed")),
            Err(e) => break Some(e.to_string()),
        }
    };
    let text = reason
        .clone()
        .unwrap_or_else(|| "the agent closed its output".into());
    // The handler (the supervisor) hears it first, so whoever sees the
    // connection closed afterwards finds its account already recorded.
    handler.closed(reason);
    inner.end(&text);
}

fn dispatch(line: &[u8], inner: &Arc<Inner>, handler: &dyn Handler) {
    dispatch_line(line, inner, handler, false);
}

fn skipped(line: &[u8], handler: &dyn Handler) {
    // Agents print banners and progress on stdout; skip, but say so.
    let shown = String::from_utf8_lossy(&line[..line.len().min(200)]).into_owned();
    handler.log(format!(
        "parley: skipped a line on stdout that is not JSON-RPC: {shown}"
    ));
}

/// `repairing`: this is a line already repaired once.
fn dispatch_line(line: &[u8], inner: &Arc<Inner>, handler: &dyn Handler, repairing: bool) {
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    // Fastest path: a plain text chunk, the bulk of any answer (see
    // `TextChunkLine`).
    if let Ok(chunk) = serde_json::from_slice::<TextChunkLine<'_>>(line) {
        if let Some(update) = chunk.into_notification() {
            handler.session_update(update);
            return;
        }
    }
    // Fast path: a session update, decoded in one pass. Anything else
    // (including an update Parley cannot decode) takes the general path.
    if let Ok(update) = serde_json::from_slice::<UpdateLine<'_>>(line) {
        if update.method == "session/update" && update.id.is_none() {
            handler.session_update(update.params);
            return;
        }
    }
    // Off the fast paths: a line spoilt only by a lone surrogate, invalid
    // UTF-8 or a byte-order mark is taken with U+FFFD in their place, so
    // the text around them is kept. (The envelope alone would not notice:
    // `params` stays raw until someone decodes it.)
    if !repairing {
        if let Some(fixed) = super::repair::repaired(line) {
            return dispatch_line(&fixed, inner, handler, true);
        }
    }
    let envelope: Envelope<'_> = match serde_json::from_slice(line) {
        Ok(e) => e,
        Err(_) => {
            skipped(line, handler);
            return;
        }
    };
    let id = envelope.id.filter(|v| !v.is_null());
    let params = envelope.params.unwrap_or(RawValue::NULL);
    match (envelope.method, id) {
        (Some(method), Some(id)) => {
            let responder = Responder {
                id,
                inner: inner.clone(),
                answered: false,
            };
            if method.starts_with('_') {
                responder.respond(Err(RpcError::remote(
                    METHOD_NOT_FOUND,
                    format!("method not found: {method}"),
                )));
            } else {
                handler.request(&method, params, responder);
            }
        }
        (Some(method), None) => {
            // Extension notifications Parley knows go on; others are dropped.
            if method.starts_with('_') && !KNOWN_EXTENSION_NOTIFICATIONS.contains(&&*method) {
                tracing::debug!("ignored extension notification {method}");
                return;
            }
            handler.notification(&method, params);
        }
        (None, Some(id)) => {
            let Some(num) = id.as_i64() else {
                handler.log(format!("parley: an answer with an unknown id {id} was ignored"));
                return;
            };
            let result = match envelope.error {
                Some(err) => Err(RpcError::Remote {
                    code: err.get("code").and_then(Value::as_i64).unwrap_or(INTERNAL_ERROR),
                    message: err
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("unknown error")
                        .to_owned(),
                    data: err.get("data").cloned(),
                }),
                None => Ok(envelope
                    .result
                    .and_then(|r| serde_json::from_str(r.get()).ok())
                    .unwrap_or(Value::Null)),
            };
            match lock(&inner.pending).remove(&num) {
                Some(tx) => {
                    let _ = tx.send(result);
                }
                None => handler.log(format!(
                    "parley: an answer to a forgotten request {num} was ignored"
                )),
            }
        }
        (None, None) => {
            handler.log("parley: skipped a JSON line that is neither a call nor an answer".into())
        }
    }
}

#[cfg(test)]
#[path = "connection_tests.rs"]
mod tests;
