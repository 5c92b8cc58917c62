//! Unit tests of `connection` (kept apart so the module itself stays readable).
use std::sync::Mutex as StdMutex;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::*;

#[test]
fn a_text_chunk_decodes_the_same_on_the_fast_path_and_anything_more_falls_back() {
    let line = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"h\u00e9 \"x\"\n"}}}}"#;
    let fast = serde_json::from_str::<TextChunkLine<'_>>(line)
        .ok()
        .and_then(TextChunkLine::into_notification);
    let general = serde_json::from_str::<UpdateLine<'_>>(line)
        .map(|u| u.params)
        .ok();
    assert!(fast.is_some());
    assert_eq!(fast, general);
    // Annotations, a message id, an id, another content type: the
    // general path, which keeps them.
    for other in [
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x","annotations":{"priority":1}}}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","messageId":"m","content":{"type":"text","text":"x"}}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"image","text":"x"}}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"plan","content":{"type":"text","text":"x"}}}}"#,
    ] {
        let fast = serde_json::from_str::<TextChunkLine<'_>>(other)
            .ok()
            .and_then(TextChunkLine::into_notification);
        assert!(fast.is_none(), "{other}");
    }
}

#[derive(Default)]
struct Logged(StdMutex<Vec<String>>);

impl Handler for Logged {
    fn notification(&self, _: &str, _: &RawValue) {}
    fn session_update(&self, _: SessionNotification) {}
    fn request(&self, _: &str, _: &RawValue, _: Responder) {}
    fn log(&self, line: String) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(line);
    }
    fn closed(&self, _: Option<String>) {}
}

/// When the agent's output has ended and the connection is dropped
/// (an agent that exited on its own), the writer ends too and the
/// agent's input is closed: nothing keeps the pipe, the handler or the
/// task alive. (Before, the writer held the sender it waited on.)
#[tokio::test]
async fn the_writer_ends_once_the_connection_is_dropped() {
    let (agent_side, our_in) = tokio::io::duplex(4096);
    let (our_out, agent_in) = tokio::io::duplex(4096);
    let handler = Arc::new(Logged::default());
    let conn = Connection::start(BufReader::new(our_in), our_out, handler.clone(), 1 << 20);
    conn.notify("session/cancel", json!({}));
    let mut agent_lines = BufReader::new(agent_in).lines();
    assert!(agent_lines.next_line().await.expect("read").is_some());
    drop(agent_side);
    let _ = conn.wait_closed().await;
    drop(conn);
    let end = tokio::time::timeout(Duration::from_secs(2), agent_lines.next_line()).await;
    assert!(
        matches!(end, Ok(Ok(None))),
        "the agent's input is closed: {end:?}"
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(Arc::strong_count(&handler), 1, "nothing holds the handler");
}

#[tokio::test]
async fn a_cancelled_request_is_forgotten_and_its_late_answer_ignored() {
    let (agent_side, our_in) = tokio::io::duplex(4096);
    let (our_out, agent_in) = tokio::io::duplex(4096);
    let handler = Arc::new(Logged::default());
    let conn = Connection::start(BufReader::new(our_in), our_out, handler.clone(), 1 << 20);
    let mut agent_lines = BufReader::new(agent_in).lines();
    let (_agent_reader, mut agent_writer) = tokio::io::split(agent_side);

    // Our request is dropped (cancelled) before the agent answers.
    let c = conn.clone();
    let pending = tokio::spawn(async move { c.request("session/prompt", json!({})).await });
    let sent = agent_lines.next_line().await.expect("read").expect("a request");
    assert!(sent.contains("\"id\":0"), "{sent}");
    pending.abort();
    let _ = pending.await;
    assert!(
        lock(&conn.inner.pending).is_empty(),
        "the cancelled request is forgotten"
    );
    // The agent is told the request was given up.
    let told = agent_lines
        .next_line()
        .await
        .expect("read")
        .expect("a notification");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&told).expect("json"),
        json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 0}})
    );

    // The late answer does not reach anyone; the next request gets its own.
    agent_writer
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"late\":true}}\n")
        .await
        .expect("write");
    let c = conn.clone();
    let next = tokio::spawn(async move { c.request("session/new", json!({})).await });
    let sent = agent_lines.next_line().await.expect("read").expect("a request");
    assert!(sent.contains("\"id\":1"), "{sent}");
    agent_writer
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":1}}\n")
        .await
        .expect("write");
    let answer = tokio::time::timeout(Duration::from_secs(5), next)
        .await
        .expect("in time")
        .expect("join");
    assert_eq!(answer, Ok(json!({"ok": 1})));
    let logs = handler.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert!(logs.iter().any(|l| l.contains("forgotten request 0")), "{logs:?}");
}
