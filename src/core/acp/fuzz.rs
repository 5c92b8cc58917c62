//! A bounded fuzzer for the line reader and message dispatch: random byte
//! streams (valid calls, answers and notifications, garbage, broken UTF-8,
//! huge lines, unknown methods) must never panic, must answer every request
//! exactly once, and must end the connection cleanly. Text chunks spoilt by
//! a lone surrogate half, invalid UTF-8 or a byte-order mark, or carrying
//! an escaped NUL, must each still arrive as a session update.
//!
//! Not run in CI: `cargo test --release --lib fuzz -- --ignored`
//! (`PARLEY_FUZZ_SECONDS`, default 20, bounds it).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::connection::{Connection, Handler, Responder};

/// xorshift64*: deterministic per seed, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

#[derive(Default)]
struct Counting {
    requests: AtomicUsize,
    notifications: AtomicUsize,
    updates: AtomicUsize,
    closed: AtomicUsize,
}

impl Handler for Counting {
    fn notification(&self, _method: &str, _params: &serde_json::value::RawValue) {
        self.notifications.fetch_add(1, Ordering::Relaxed);
    }
    fn session_update(&self, _update: agent_client_protocol_schema::v1::SessionNotification) {
        self.updates.fetch_add(1, Ordering::Relaxed);
    }
    fn request(&self, _method: &str, _params: &serde_json::value::RawValue, responder: Responder) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        drop(responder); // answered with an error on drop
    }
    fn log(&self, _line: String) {}
    fn closed(&self, _reason: Option<String>) {
        self.closed.fetch_add(1, Ordering::Relaxed);
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Request,
    /// A text chunk that must arrive, whatever spoils it.
    Chunk,
    Other,
}

/// A text chunk line whose text holds hostile pieces.
fn chunk(rng: &mut Rng, text: &str) -> Vec<u8> {
    let mut body = Vec::new();
    for _ in 0..rng.below(6) + 1 {
        match rng.below(8) {
            0 => body.extend_from_slice(br"\uD83D"),
            1 => body.extend_from_slice(br"\uDE00"),
            2 => body.extend_from_slice(br"\uD83D\uDE00"),
            3 => body.extend_from_slice(br"\u0000"),
            4 => body.extend_from_slice(&[0xff, 0xc3]),
            5 => body.extend_from_slice("\u{FEFF}".as_bytes()),
            6 => body.extend_from_slice(br"\\uD83D"),
            _ => body.extend_from_slice(text.as_bytes()),
        }
    }
    let mut line = Vec::new();
    if rng.below(4) == 0 {
        line.extend_from_slice("\u{FEFF}".as_bytes());
    }
    line.extend_from_slice(
        br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""#,
    );
    line.extend_from_slice(&body);
    line.extend_from_slice(br#""}}}}"#);
    line
}

fn piece(rng: &mut Rng) -> (Vec<u8>, Kind) {
    let id = rng.below(1000);
    let text: String = (0..rng.below(20))
        .map(|_| char::from(b'a' + rng.below(26) as u8))
        .collect();
    if rng.below(5) == 0 {
        return (chunk(rng, &text), Kind::Chunk);
    }
    let (bytes, request) = match rng.below(10) {
        0 => (
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"fs/read_text_file","params":{{}}}}"#)
                .into_bytes(),
            true,
        ),
        1 => (
            format!(r#"{{"jsonrpc":"2.0","id":"{text}","method":"_x/{text}"}}"#).into_bytes(),
            true,
        ),
        2 => (
            format!(r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"t":"{text}"}}}}"#)
                .into_bytes(),
            false,
        ),
        3 => (
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#).into_bytes(),
            false,
        ),
        4 => (
            format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-1}}}}"#).into_bytes(),
            false,
        ),
        5 => (
            (0..rng.below(64))
                .map(|_| rng.below(256) as u8)
                .filter(|b| *b != b'\n')
                .collect(),
            false,
        ),
        6 => (format!("[1,2,{id}]").into_bytes(), false),
        7 => (b"{\"method\": 5, \"id\": null}".to_vec(), false),
        8 => (vec![0xff, 0xfe, b'{', b'}'], false),
        _ => (text.into_bytes(), false),
    };
    (bytes, if request { Kind::Request } else { Kind::Other })
}

async fn one_run(seed: u64) {
    let mut rng = Rng(seed | 1);
    let (mut agent_out, our_in) = tokio::io::duplex(1 << 16);
    let (our_out, mut agent_in) = tokio::io::duplex(1 << 16);
    let handler = Arc::new(Counting::default());
    let cap = 4096;
    let conn = Connection::start(tokio::io::BufReader::new(our_in), our_out, handler.clone(), cap);
    let mut expected_requests = 0;
    let mut expected_chunks = 0;
    let mut too_long = false;
    for _ in 0..rng.below(200) {
        let (mut bytes, kind) = piece(&mut rng);
        if rng.below(50) == 0 {
            bytes = vec![b'x'; cap + 1 + rng.below(100) as usize];
            too_long = true;
        }
        bytes.push(b'\n');
        if agent_out.write_all(&bytes).await.is_err() {
            break;
        }
        if too_long {
            break;
        }
        match kind {
            Kind::Request => expected_requests += 1,
            Kind::Chunk => expected_chunks += 1,
            Kind::Other => {}
        }
    }
    drop(agent_out);
    let reason = tokio::time::timeout(Duration::from_secs(5), conn.wait_closed()).await;
    assert!(reason.is_ok(), "seed {seed}: the connection did not end");
    conn.close_output();
    let mut answers = String::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), agent_in.read_to_string(&mut answers)).await;
    assert_eq!(handler.closed.load(Ordering::Relaxed), 1, "seed {seed}");
    if !too_long {
        let answered = answers.lines().filter(|l| l.contains("\"error\"")).count();
        assert_eq!(
            answered, expected_requests,
            "seed {seed}: every request answered once"
        );
        assert_eq!(
            handler.updates.load(Ordering::Relaxed),
            expected_chunks,
            "seed {seed}: every spoilt chunk arrived"
        );
    }
}

#[tokio::test]
async fn a_few_fixed_seeds() {
    for seed in 1..40 {
        one_run(seed).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "bounded fuzzing; run with --ignored"]
async fn fuzz_line_reader_and_dispatch() {
    let seconds = std::env::var("PARLEY_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(7);
    let mut runs = 0u64;
    while Instant::now() < deadline {
        one_run(seed).await;
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        runs += 1;
    }
    eprintln!("fuzz: {runs} streams without a failure");
}
