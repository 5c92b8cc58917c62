//! The model-API stand-in: a small HTTP server on 127.0.0.1 that plays a
//! model provider for real agents (claude-agent-acp, codex-acp, gemini-cli)
//! so that they do real turns offline. It speaks just enough of
//!
//! - the Anthropic Messages API (`POST /v1/messages`, streamed as
//!   server-sent events, `tool_use` blocks), for claude-agent-acp;
//! - the OpenAI Responses API (`POST /v1/responses`, streamed), as Codex
//!   uses it, for codex-acp;
//! - the Gemini API (`…:streamGenerateContent?alt=sse`, and
//!   `…:generateContent` for the router and other side calls, which want a
//!   JSON answer to their schema), for gemini-cli.
//!
//! A test gives it a script: one [`Reply`] per step of a turn, where the
//! step is the number of tool results the agent has sent back since the
//! user's last prompt (read from the request itself, so retries and side
//! calls do not move it). Past the script's end the last reply repeats.
//! [`ModelApi::next`] puts replies before the script for the next main
//! requests (a 429 once, then the script). Every request is recorded, so a
//! test can check what the agent sent the model. The server stops when it
//! is dropped. See docs/model-api-stand-in.md.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// What the stand-in answers to one main request of the agent.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A call of the agent's tool `name` with `input`; the text, if any,
    /// comes before it.
    Tool {
        name: String,
        input: Value,
        text: String,
    },
    /// Markdown, streamed `chunk` characters at a time with `delay`
    /// between; a thought (`thought`) first where not empty.
    Text {
        text: String,
        thought: String,
        chunk: usize,
        delay: Duration,
    },
    /// An HTTP error: `code`, with `retry-after` seconds where given.
    Status { code: u16, retry_after: Option<u32> },
    /// The stream starts, says a little, and the connection is cut.
    Cut,
    /// The request is taken and never answered (until the client goes or
    /// the server stops).
    Hang,
}

impl Reply {
    pub fn tool(name: &str, input: Value) -> Reply {
        Reply::Tool {
            name: name.into(),
            input,
            text: String::new(),
        }
    }

    pub fn text(text: &str) -> Reply {
        Reply::Text {
            text: text.into(),
            thought: String::new(),
            chunk: 40,
            delay: Duration::ZERO,
        }
    }

    /// `n` words, one chunk each, `delay` apart: a long answer to cancel.
    pub fn slow(n: usize, delay: Duration) -> Reply {
        let text: String = (0..n).map(|i| format!("word{i} ")).collect();
        Reply::Text {
            text,
            thought: String::new(),
            chunk: 6,
            delay,
        }
    }

    pub fn status(code: u16) -> Reply {
        Reply::Status {
            code,
            retry_after: None,
        }
    }
}

/// Which API a request spoke.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    Anthropic,
    OpenAi,
    Gemini,
}

/// One request the agent sent.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    /// A request of the agent's loop (the script answered it), not a side
    /// call such as a title or the router.
    pub main: bool,
    pub api: Option<Api>,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct State {
    script: Vec<Reply>,
    next: VecDeque<Reply>,
    requests: Vec<Recorded>,
    serial: u64,
}

pub struct ModelApi {
    pub port: u16,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
}

fn lock(s: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

impl ModelApi {
    /// Starts the server on a free port of 127.0.0.1 with `script`.
    pub fn start(script: Vec<Reply>) -> ModelApi {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().expect("addr").port();
        let state = Arc::new(Mutex::new(State {
            script,
            ..State::default()
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, halt) = (state.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if halt.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (s, halt) = (s.clone(), halt.clone());
                std::thread::spawn(move || serve(stream, &s, &halt));
            }
        });
        ModelApi { port, state, stop }
    }

    /// `http://127.0.0.1:PORT` (add the API's own path prefix where the
    /// agent wants one).
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn set_script(&self, script: Vec<Reply>) {
        lock(&self.state).script = script;
    }

    /// `reply` answers the next main request, before the script.
    pub fn next(&self, reply: Reply) {
        lock(&self.state).next.push_back(reply);
    }

    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.state).requests.clone()
    }

    pub fn main_requests(&self) -> Vec<Recorded> {
        self.requests().into_iter().filter(|r| r.main).collect()
    }

    /// Waits until `n` main requests have come, for up to `limit`.
    pub fn wait_main(&self, n: usize, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if self.main_requests().len() >= n {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

impl Drop for ModelApi {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accept loop, which then sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

struct Request {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

fn read_request(stream: &TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream);
    let mut first = String::new();
    reader.read_line(&mut first).ok()?;
    let mut words = first.split_whitespace();
    let (method, path) = (words.next()?.to_owned(), words.next()?.to_owned());
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 || line == "\r\n" || line == "\n" {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_owned(), v.trim().to_owned()));
        }
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let mut body = Vec::new();
    if let Some(n) = header("content-length").and_then(|n| n.parse::<usize>().ok()) {
        body.resize(n.min(64 << 20), 0);
        reader.read_exact(&mut body).ok()?;
    } else if header("transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let n = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            let mut chunk = vec![0; n + 2];
            reader.read_exact(&mut chunk).ok()?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    }
    Some(Request {
        method,
        path,
        headers,
        body,
    })
}

fn serve(stream: TcpStream, state: &Mutex<State>, stop: &AtomicBool) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let Some(req) = read_request(&stream) else { return };
    let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let route = req.path.split('?').next().unwrap_or_default().to_owned();
    let (api, main) = if route.ends_with("/messages") {
        (
            Some(Api::Anthropic),
            body.get("tools")
                .and_then(Value::as_array)
                .is_some_and(|t| !t.is_empty())
                && !anthropic_suggestion(&body),
        )
    } else if route.ends_with("/responses") {
        (Some(Api::OpenAi), true)
    } else if route.ends_with(":streamGenerateContent") {
        (Some(Api::Gemini), true)
    } else if route.ends_with(":generateContent") || route.ends_with(":countTokens") {
        (Some(Api::Gemini), false)
    } else {
        (None, false)
    };
    let (reply, serial) = {
        let mut s = lock(state);
        s.serial += 1;
        s.requests.push(Recorded {
            method: req.method.clone(),
            path: req.path.clone(),
            headers: req.headers.clone(),
            body: body.clone(),
            main,
            api,
        });
        let reply = if main {
            s.next.pop_front().or_else(|| {
                let step = api.map_or(0, |a| step_of(a, &body));
                s.script.get(step).or(s.script.last()).cloned()
            })
        } else {
            None
        };
        (reply, s.serial)
    };
    // codex-acp 0.16 drops a command's last update when the next answer
    // comes before it has passed it on: the next step waits a moment.
    let last_item = body.get("input").and_then(Value::as_array).and_then(|i| i.last());
    let after_tool = last_item
        .and_then(|i| i.get("type"))
        .and_then(Value::as_str)
        .is_some_and(|t| t.ends_with("_output"));
    if api == Some(Api::OpenAi) && after_tool {
        std::thread::sleep(Duration::from_millis(400));
    }
    let mut out = Out {
        stream: &stream,
        sse: false,
    };
    match (api, main) {
        (None, _) => out.json(
            404,
            &json!({"error": {"message": format!("the stand-in has no {route}")}}),
        ),
        (Some(Api::Gemini), false) if route.ends_with(":countTokens") => {
            out.json(200, &json!({"totalTokens": 42}))
        }
        (Some(Api::Gemini), false) => {
            let answer = fill_schema(body.pointer("/generationConfig/responseJsonSchema"));
            out.json(
                200,
                &json!({"candidates": [{"content": {"role": "model", "parts": [{"text": answer.to_string()}]},
                    "finishReason": "STOP"}]}),
            )
        }
        (Some(Api::Anthropic), false) => anthropic_side(&mut out, &body),
        (Some(Api::OpenAi), false) => out.json(404, &json!({"error": {"message": "no side calls"}})),
        (Some(api), true) => match reply {
            None => out.json(500, &json!({"error": {"message": "the stand-in has no script"}})),
            Some(Reply::Status { code, retry_after }) => error(&mut out, api, code, retry_after),
            Some(Reply::Hang) => hang(&stream, stop),
            Some(reply) => {
                let streamed =
                    api != Api::Anthropic || body.get("stream").and_then(Value::as_bool) == Some(true);
                if streamed {
                    out.start_sse();
                    let _ = match api {
                        Api::Anthropic => anthropic(&mut out, &reply, serial),
                        Api::OpenAi => openai(&mut out, &reply, serial, &body),
                        Api::Gemini => gemini(&mut out, &reply, serial),
                    };
                } else {
                    anthropic_whole(&mut out, &reply, serial);
                }
            }
        },
    }
}

/// Claude Code's guess at the user's next prompt, asked after a turn with
/// the turn's tools (and so like a main request): a side call, which must
/// not take a reply meant for the next turn.
fn anthropic_suggestion(body: &Value) -> bool {
    let last = body
        .get("messages")
        .and_then(Value::as_array)
        .and_then(|m| m.last());
    let text = last.and_then(|m| match m.get("content") {
        Some(Value::String(s)) => Some(s.as_str()),
        Some(Value::Array(blocks)) => blocks.iter().find_map(|b| b.get("text").and_then(Value::as_str)),
        _ => None,
    });
    text.is_some_and(|t| t.starts_with("[SUGGESTION MODE"))
}

/// How many tool results the agent has sent since the user's last prompt.
fn step_of(api: Api, body: &Value) -> usize {
    let empty = Vec::new();
    match api {
        Api::Anthropic => {
            let messages = body.get("messages").and_then(Value::as_array).unwrap_or(&empty);
            let is_result = |b: &Value| b.get("type").and_then(Value::as_str) == Some("tool_result");
            let mut n = 0;
            for m in messages {
                let blocks = m.get("content").and_then(Value::as_array);
                if m.get("role").and_then(Value::as_str) != Some("user") {
                    continue;
                }
                match blocks {
                    Some(b) if b.iter().any(is_result) => n += b.iter().filter(|b| is_result(b)).count(),
                    _ => n = 0,
                }
            }
            n
        }
        Api::OpenAi => {
            let items = body.get("input").and_then(Value::as_array).unwrap_or(&empty);
            let mut n = 0;
            for item in items {
                match item.get("type").and_then(Value::as_str) {
                    Some("message") if item.get("role").and_then(Value::as_str) == Some("user") => {
                        // Codex adds its own context as user messages; a
                        // prompt resets the count only where it comes after
                        // a tool result or the start.
                        let text = item
                            .pointer("/content/0/text")
                            .and_then(Value::as_str)
                            .unwrap_or("");
                        if !text.starts_with('<') {
                            n = 0;
                        }
                    }
                    Some("function_call_output" | "custom_tool_call_output" | "local_shell_call_output") => {
                        n += 1
                    }
                    _ => {}
                }
            }
            n
        }
        Api::Gemini => {
            let contents = body.get("contents").and_then(Value::as_array).unwrap_or(&empty);
            let mut n = 0;
            for c in contents {
                if c.get("role").and_then(Value::as_str) != Some("user") {
                    continue;
                }
                let parts = c.get("parts").and_then(Value::as_array).unwrap_or(&empty);
                let results = parts
                    .iter()
                    .filter(|p| p.get("functionResponse").is_some())
                    .count();
                if results > 0 {
                    n += results;
                } else {
                    n = 0;
                }
            }
            n
        }
    }
}

/// A JSON value that fits `schema` (the Gemini router's and other side
/// calls' `responseJsonSchema`): the lowest complexity, "flash", "user".
fn fill_schema(schema: Option<&Value>) -> Value {
    let Some(schema) = schema else { return json!({}) };
    let kind = schema
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_ascii_lowercase();
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    match kind.as_str() {
        "object" => {
            let mut o = serde_json::Map::new();
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, v) in props {
                    o.insert(k.clone(), fill_schema(Some(v)));
                }
            }
            Value::Object(o)
        }
        "array" => json!([]),
        "integer" | "number" => json!(1),
        "boolean" => json!(false),
        _ => json!("stand-in"),
    }
}

struct Out<'a> {
    stream: &'a TcpStream,
    sse: bool,
}

impl Out<'_> {
    fn json(&mut self, code: u16, v: &Value) {
        self.status(code, v, &[]);
    }

    fn status(&mut self, code: u16, v: &Value, extra: &[(&str, String)]) {
        let body = v.to_string();
        let mut head = format!(
            "HTTP/1.1 {code} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
            reason(code),
            body.len()
        );
        for (k, v) in extra {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        let _ = self.stream.write_all(head.as_bytes());
        let _ = self.stream.write_all(body.as_bytes());
        let _ = self.stream.shutdown(Shutdown::Write);
    }

    fn start_sse(&mut self) {
        self.sse = true;
        let _ = self.stream.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n",
        );
    }

    /// One event; `name` for the APIs that name theirs.
    fn event(&mut self, name: Option<&str>, data: &Value) -> std::io::Result<()> {
        let text = match name {
            Some(n) => format!("event: {n}\ndata: {data}\n\n"),
            None => format!("data: {data}\r\n\r\n"),
        };
        self.stream.write_all(text.as_bytes())?;
        self.stream.flush()
    }

    fn cut(&mut self) {
        std::thread::sleep(Duration::from_millis(100));
        let _ = self.stream.shutdown(Shutdown::Both);
    }
}

fn reason(code: u16) -> &'static str {
    match code {
        200 => "OK",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Error",
    }
}

fn error(out: &mut Out<'_>, api: Api, code: u16, retry_after: Option<u32>) {
    let extra: Vec<(&str, String)> = retry_after
        .map(|s| ("retry-after", s.to_string()))
        .into_iter()
        .collect();
    let message = format!("the stand-in answers {code}");
    let body = match api {
        Api::Anthropic => {
            let kind = match code {
                429 => "rate_limit_error",
                529 => "overloaded_error",
                _ => "api_error",
            };
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
        Api::OpenAi => {
            json!({"error": {"message": message, "type": if code == 429 { "requests" } else { "server_error" },
            "code": if code == 429 { json!("rate_limit_exceeded") } else { Value::Null }}})
        }
        Api::Gemini => json!({"error": {"code": code, "message": message,
            "status": if code == 429 { "RESOURCE_EXHAUSTED" } else { "INTERNAL" }}}),
    };
    out.status(code, &body, &extra);
}

/// Holds the request unanswered until the client goes or the server stops.
fn hang(stream: &TcpStream, stop: &AtomicBool) {
    let _ = stream.set_nonblocking(true);
    let mut byte = [0u8; 1];
    while !stop.load(Ordering::Relaxed) {
        match (&*stream).read(&mut byte) {
            Ok(0) => return,
            Err(e) if e.kind() != std::io::ErrorKind::WouldBlock => return,
            _ => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

fn pieces(text: &str, chunk: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(chunk.max(1)).map(|c| c.iter().collect()).collect()
}

// ---- Anthropic Messages

fn anthropic_usage() -> Value {
    json!({"input_tokens": 100, "output_tokens": 20, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
}

/// A side call (a title, a topic): short text, or JSON to its schema.
fn anthropic_side(out: &mut Out<'_>, body: &Value) {
    let text = match body.pointer("/output_config/format/schema") {
        Some(schema) => fill_schema(Some(schema)).to_string(),
        None => "Edit the notes".to_owned(),
    };
    let reply = Reply::text(&text);
    if body.get("stream").and_then(Value::as_bool) == Some(true) {
        out.start_sse();
        let _ = anthropic(out, &reply, 0);
    } else {
        anthropic_whole(out, &reply, 0);
    }
}

fn anthropic_whole(out: &mut Out<'_>, reply: &Reply, serial: u64) {
    let (content, stop) = match reply {
        Reply::Tool { name, input, .. } => (
            json!([{"type": "tool_use", "id": format!("toolu_standin_{serial}"), "name": name, "input": input}]),
            "tool_use",
        ),
        Reply::Text { text, .. } => (json!([{"type": "text", "text": text}]), "end_turn"),
        _ => (json!([{"type": "text", "text": "Partial"}]), "end_turn"),
    };
    out.json(
        200,
        &json!({"id": format!("msg_standin_{serial}"), "type": "message", "role": "assistant",
            "model": "claude-standin", "content": content, "stop_reason": stop, "stop_sequence": null,
            "usage": anthropic_usage()}),
    );
}

fn anthropic(out: &mut Out<'_>, reply: &Reply, serial: u64) -> std::io::Result<()> {
    let ev = |out: &mut Out<'_>, v: Value| {
        let name = v.get("type").and_then(Value::as_str).unwrap_or("").to_owned();
        out.event(Some(&name), &v)
    };
    ev(
        out,
        json!({"type": "message_start", "message": {"id": format!("msg_standin_{serial}"), "type": "message",
            "role": "assistant", "model": "claude-standin", "content": [], "stop_reason": null,
            "stop_sequence": null, "usage": anthropic_usage()}}),
    )?;
    let text_block = |out: &mut Out<'_>, index: usize, text: &str, chunk: usize, delay: Duration| {
        ev(
            out,
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
        )?;
        for p in pieces(text, chunk) {
            ev(
                out,
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": p}}),
            )?;
            if !delay.is_zero() {
                std::thread::sleep(delay);
            }
        }
        ev(out, json!({"type": "content_block_stop", "index": index}))
    };
    let stop = match reply {
        Reply::Tool { name, input, text } => {
            let mut index = 0;
            if !text.is_empty() {
                text_block(out, 0, text, 40, Duration::ZERO)?;
                index = 1;
            }
            ev(
                out,
                json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use",
                    "id": format!("toolu_standin_{serial}"), "name": name, "input": {}}}),
            )?;
            for p in pieces(&input.to_string(), 24) {
                ev(
                    out,
                    json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": p}}),
                )?;
            }
            ev(out, json!({"type": "content_block_stop", "index": index}))?;
            "tool_use"
        }
        Reply::Text {
            text,
            thought,
            chunk,
            delay,
        } => {
            let mut index = 0;
            if !thought.is_empty() {
                ev(
                    out,
                    json!({"type": "content_block_start", "index": 0,
                        "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
                )?;
                ev(
                    out,
                    json!({"type": "content_block_delta", "index": 0,
                        "delta": {"type": "thinking_delta", "thinking": thought}}),
                )?;
                ev(
                    out,
                    json!({"type": "content_block_delta", "index": 0,
                        "delta": {"type": "signature_delta", "signature": "standin"}}),
                )?;
                ev(out, json!({"type": "content_block_stop", "index": 0}))?;
                index = 1;
            }
            text_block(out, index, text, *chunk, *delay)?;
            "end_turn"
        }
        Reply::Cut => {
            ev(
                out,
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            )?;
            ev(
                out,
                json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "text_delta", "text": "This answer is cut "}}),
            )?;
            out.cut();
            return Ok(());
        }
        Reply::Status { .. } | Reply::Hang => return Ok(()),
    };
    ev(
        out,
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
            "usage": {"output_tokens": 20}}),
    )?;
    ev(out, json!({"type": "message_stop"}))
}

// ---- OpenAI Responses (as Codex uses it)

fn openai_usage() -> Value {
    json!({"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 20,
        "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 120})
}

/// The item that calls `name`: a custom (freeform) tool takes its input as
/// text (Codex's `apply_patch`), a function tool as JSON arguments.
fn openai_call(body: &Value, name: &str, input: &Value, serial: u64) -> Value {
    let call_id = format!("call_standin_{serial}");
    let custom = body
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| t.iter().any(|t| t["name"] == name && t["type"] == "custom"));
    if custom {
        let text = input.as_str().map_or_else(|| input.to_string(), str::to_owned);
        json!({"type": "custom_tool_call", "id": format!("ctc_{serial}"), "call_id": call_id, "name": name,
            "input": text, "status": "completed"})
    } else {
        json!({"type": "function_call", "id": format!("fc_{serial}"), "call_id": call_id, "name": name,
            "arguments": input.to_string(), "status": "completed"})
    }
}

fn openai(out: &mut Out<'_>, reply: &Reply, serial: u64, body: &Value) -> std::io::Result<()> {
    let model = body.get("model").cloned().unwrap_or(json!("gpt-5-codex"));
    let id = format!("resp_standin_{serial}");
    let ev = |out: &mut Out<'_>, v: Value| {
        let name = v.get("type").and_then(Value::as_str).unwrap_or("").to_owned();
        out.event(Some(&name), &v)
    };
    ev(
        out,
        json!({"type": "response.created", "response": {"id": id, "object": "response",
            "status": "in_progress", "model": model}}),
    )?;
    let message = |out: &mut Out<'_>, index: usize, text: &str, chunk: usize, delay: Duration| {
        let mid = format!("msg_standin_{serial}_{index}");
        ev(
            out,
            json!({"type": "response.output_item.added", "output_index": index,
                "item": {"type": "message", "id": mid, "role": "assistant", "status": "in_progress", "content": []}}),
        )?;
        ev(
            out,
            json!({"type": "response.content_part.added", "item_id": mid, "output_index": index,
                "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}),
        )?;
        for p in pieces(text, chunk) {
            ev(
                out,
                json!({"type": "response.output_text.delta", "item_id": mid, "output_index": index,
                    "content_index": 0, "delta": p}),
            )?;
            if !delay.is_zero() {
                std::thread::sleep(delay);
            }
        }
        let item = json!({"type": "message", "id": mid, "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]});
        ev(
            out,
            json!({"type": "response.output_item.done", "output_index": index, "item": item}),
        )?;
        Ok::<Value, std::io::Error>(item)
    };
    let output = match reply {
        Reply::Tool { name, input, text } => {
            let mut output = Vec::new();
            if !text.is_empty() {
                output.push(message(out, 0, text, 40, Duration::ZERO)?);
            }
            let item = openai_call(body, name, input, serial);
            let index = output.len();
            ev(
                out,
                json!({"type": "response.output_item.added", "output_index": index, "item": item}),
            )?;
            ev(
                out,
                json!({"type": "response.output_item.done", "output_index": index, "item": item}),
            )?;
            output.push(item);
            output
        }
        Reply::Text {
            text, chunk, delay, ..
        } => vec![message(out, 0, text, *chunk, *delay)?],
        Reply::Cut => {
            let mid = format!("msg_standin_{serial}");
            ev(
                out,
                json!({"type": "response.output_item.added", "output_index": 0,
                    "item": {"type": "message", "id": mid, "role": "assistant", "status": "in_progress", "content": []}}),
            )?;
            ev(
                out,
                json!({"type": "response.output_text.delta", "item_id": mid, "output_index": 0,
                    "content_index": 0, "delta": "This answer is cut "}),
            )?;
            out.cut();
            return Ok(());
        }
        Reply::Status { .. } | Reply::Hang => return Ok(()),
    };
    ev(
        out,
        json!({"type": "response.completed", "response": {"id": id, "object": "response",
            "status": "completed", "model": model, "output": output, "usage": openai_usage()}}),
    )
}

// ---- Gemini

fn gemini(out: &mut Out<'_>, reply: &Reply, serial: u64) -> std::io::Result<()> {
    let chunk = |parts: Value, finish: bool| {
        let mut c = json!({"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}],
            "responseId": format!("standin-{serial}"), "modelVersion": "gemini-standin"});
        if finish {
            c["candidates"][0]["finishReason"] = json!("STOP");
            c["usageMetadata"] =
                json!({"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120});
        }
        c
    };
    match reply {
        Reply::Tool { name, input, text } => {
            if !text.is_empty() {
                out.event(None, &chunk(json!([{"text": text}]), false))?;
            }
            out.event(
                None,
                &chunk(json!([{"functionCall": {"name": name, "args": input}}]), true),
            )
        }
        Reply::Text {
            text,
            thought,
            chunk: size,
            delay,
        } => {
            if !thought.is_empty() {
                out.event(None, &chunk(json!([{"text": thought, "thought": true}]), false))?;
            }
            let parts = pieces(text, *size);
            let last = parts.len().saturating_sub(1);
            for (i, p) in parts.iter().enumerate() {
                out.event(None, &chunk(json!([{"text": p}]), i == last))?;
                if !delay.is_zero() {
                    std::thread::sleep(*delay);
                }
            }
            Ok(())
        }
        Reply::Cut => {
            out.event(None, &chunk(json!([{"text": "This answer is cut "}]), false))?;
            // In the middle of the next event's JSON.
            let _ = out.stream.write_all(b"data: {\"candidates\": [{\"content\"");
            out.cut();
            Ok(())
        }
        Reply::Status { .. } | Reply::Hang => Ok(()),
    }
}

// Run in the integration tests (the window's test binary has no harness).
#[cfg(test)]
mod tests {
    #[allow(unused_imports)]
    use super::*;

    #[test]
    fn steps_count_the_tool_results_since_the_prompt() {
        let anthropic = json!({"messages": [
            {"role": "user", "content": [{"type": "text", "text": "first"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
            {"role": "user", "content": "second"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "b"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b"}, {"type": "text", "text": "<reminder>"}]},
        ]});
        assert_eq!(step_of(Api::Anthropic, &anthropic), 1);
        let gemini = json!({"contents": [
            {"role": "user", "parts": [{"text": "p"}]},
            {"role": "model", "parts": [{"functionCall": {}}]},
            {"role": "user", "parts": [{"functionResponse": {}}]},
        ]});
        assert_eq!(step_of(Api::Gemini, &gemini), 1);
        assert_eq!(
            fill_schema(Some(
                &json!({"type": "OBJECT", "properties": {"s": {"type": "INTEGER"}}})
            )),
            json!({"s": 1})
        );
    }
}
