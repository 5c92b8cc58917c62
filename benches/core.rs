//! Core benchmarks: each figure is a ratio to a floor measured in the same
//! run (absolute times on shared machines drift). Run: `cargo bench --bench core`.
//!
//! - validate: `Validate` on a 1,000-agent configuration; floor: serde_json
//!   parsing the same text.
//! - ingest: the demo agent floods 100,000 chunks of 40 bytes through the core
//!   (events serialised as parley-cli prints them, into a sink); floor:
//!   serde_json parsing the same 100,000 lines from memory. Again with the
//!   conversation kept in the SQLite history, and the growth of the ratio.
//! - start: `Start` → `ready` minus the demo agent's own spawn + handshake,
//!   measured by hand over pipes.
//! - history: the SQLite store writing 100,000 chunks (floor: parsing them),
//!   reading a 10,000-message conversation (floor: its rows' JSON parsed)
//!   and searching 100,000 messages (floor: a substring scan in memory).
//! - files: the @-mention index of a 100,000-file tree (.gitignore honoured);
//!   floor: a plain `read_dir` walk. A fuzzy query over it; floor: a
//!   substring scan of the same paths.
//! - checkpoints: snapshots of a 10,000-file / 200 MB tree against git's own
//!   `add -A && write-tree`, the time added before a prompt, a turn's
//!   Changes (see `core/checkpoints.rs`).
//! - remote: 20 agents started at once on one host over ssh; floor: the
//!   same 20 here (see `core/remote.rs`).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use parley::core::events::Event;
use parley::core::services::{Core, Options};
use serde_json::{json, Value};

#[path = "figures.rs"]
mod figures;

#[path = "core/checkpoints.rs"]
mod checkpoints_bench;

#[path = "core/remote.rs"]
mod remote_bench;

#[path = "core/rest.rs"]
mod rest_bench;

#[path = "core/worktrees.rs"]
mod worktrees_bench;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn demo() -> String {
    // Benches run from target/release/deps; the demo agent is one level up.
    let exe = std::env::current_exe().expect("exe");
    let dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
    dir.join("parley-demo-agent").display().to_string()
}

fn config_1000() -> String {
    let agents: Vec<Value> = (0..1000)
        .map(|i| {
            json!({"name": format!("agent-{i}"), "title": format!("Agent {i}"), "description": "A benchmark agent",
                   "command": if i % 2 == 0 { "sh" } else { "/bin/true" }, "args": ["--acp"], "env": {"A": "1"}, "cwd": "~"})
        })
        .collect();
    serde_json::to_string_pretty(
        &json!({"theme": "system", "limits": {"maxRunningAgents": 4}, "agents": agents}),
    )
    .unwrap_or_default()
}

fn bench_validate() -> (Duration, Duration) {
    let text = config_1000();
    // In turns, so that both see the machine in the same mood.
    let (mut floor, mut ours) = (Vec::new(), Vec::new());
    for _ in 0..60 {
        let t = Instant::now();
        let v: Value = serde_json::from_str(&text).expect("json");
        std::hint::black_box(v);
        floor.push(t.elapsed());
        let t = Instant::now();
        let v = parley::core::config::validate::validate(&text);
        assert!(v.valid());
        std::hint::black_box(v);
        ours.push(t.elapsed());
    }
    (median(ours), median(floor))
}

fn flood_lines(n: usize, m: usize) -> Vec<String> {
    let body: String = "lorem *ipsum* `dolor` sit amet, consectetur "
        .chars()
        .cycle()
        .take(m)
        .collect();
    (0..n)
        .map(|i| {
            let mut chunk = body.clone();
            chunk.replace_range(m - 8.., &format!("{:07}\n", i % 10_000_000));
            json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "demo-session-1",
                "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": chunk}}}})
            .to_string()
        })
        .collect()
}

fn core_with(
    dir: &std::path::Path,
    agents: Value,
    history: bool,
) -> (tokio::runtime::Runtime, Core, parley::core::events::EventReceiver) {
    let path = dir.join("config.json");
    std::fs::write(&path, json!({"agents": agents}).to_string()).expect("write");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (core, rx) = {
        let _g = rt.enter();
        Core::new(Options {
            config_path: Some(path),
            watch: false,
            history: history.then(|| dir.join("history.sqlite3")),
            ..Default::default()
        })
        .expect("core")
    };
    (rt, core, rx)
}

/// `history`: the conversation is kept in the SQLite history as it streams.
fn bench_ingest(n: usize, history: bool) -> (Duration, Duration) {
    let floor = ingest_floor(n);
    (ingest_core(n, history), floor)
}

/// The floor: serde_json parsing the flood's `n` lines from memory.
fn ingest_floor(n: usize) -> Duration {
    let lines = flood_lines(n, 40);
    let t = Instant::now();
    for l in &lines {
        let v: Value = serde_json::from_str(l).expect("json");
        std::hint::black_box(v);
    }
    t.elapsed()
}

/// The floor with the agent in it: the plainest client reading the demo
/// agent's flood of `n` chunks from its pipe and parsing each line with
/// serde_json, from the prompt sent to its answer. The agent's own writing
/// is in it as it is in the core's figure, so the ratio is what the core
/// adds to reading the stream (`ingest_floor` leaves the agent out).
fn ingest_pipe_floor(n: usize) -> Duration {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut child, mut stdin, mut out) = spawn_demo();
    let mut line = String::new();
    // The answer to request `id`, each line before it parsed.
    let mut answer = |stdin: &mut std::process::ChildStdin, id: u64, request: Value| -> Value {
        writeln!(stdin, "{request}").expect("write");
        loop {
            line.clear();
            if out.read_line(&mut line).expect("read") == 0 {
                return Value::Null;
            }
            let v: Value = serde_json::from_str(&line).expect("json");
            if v.get("id").and_then(Value::as_u64) == Some(id) {
                return v;
            }
        }
    };
    answer(
        &mut stdin,
        0,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}}}),
    );
    let session = answer(
        &mut stdin,
        1,
        json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
        "params": {"cwd": dir.path(), "mcpServers": []}}),
    );
    let id = session["result"]["sessionId"].clone();
    let t = Instant::now();
    answer(
        &mut stdin,
        2,
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
        "params": {"sessionId": id, "prompt": [{"type": "text", "text": format!("flood {n} 40")}]}}),
    );
    let took = t.elapsed();
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    took
}

/// The core: the demo agent's flood of `n` chunks, every event serialised.
fn ingest_core(n: usize, history: bool) -> Duration {
    let dir = tempfile::tempdir().expect("tempdir");
    let (rt, core, rx) = core_with(dir.path(), json!([{"name": "demo", "command": demo()}]), history);
    let ours = rt.block_on(async {
        core.agents.start("demo").await.expect("start");
        while rx.try_recv().is_ok() {}
        let mut sink = std::io::BufWriter::new(std::io::sink());
        let t = Instant::now();
        core.chat.send("demo", &format!("flood {n} 40")).expect("send");
        while let Ok(e) = rx.recv().await {
            let _ = serde_json::to_writer(&mut sink, &e);
            let _ = sink.write_all(b"\n");
            if matches!(&e, Event::TurnChanged(t) if !t.busy) {
                break;
            }
        }
        let took = t.elapsed();
        core.shutdown().await;
        took
    });
    ours
}

/// The demo agent, spoken to by hand: its stdin, and its stdout buffered.
fn spawn_demo() -> (
    std::process::Child,
    std::process::ChildStdin,
    BufReader<std::process::ChildStdout>,
) {
    let mut child = Command::new(demo())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("demo");
    let stdin = child.stdin.take().expect("stdin");
    let out = BufReader::new(child.stdout.take().expect("stdout"));
    (child, stdin, out)
}

fn raw_handshake() -> Duration {
    let t = Instant::now();
    let (mut child, mut stdin, mut out) = spawn_demo();
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":1,"clientCapabilities":{{}}}}}}"#)
        .expect("write");
    let mut line = String::new();
    out.read_line(&mut line).expect("read");
    let took = t.elapsed();
    drop(stdin);
    let _ = child.wait();
    took
}

fn bench_start() -> (Duration, Duration) {
    // Not in turns: a hand-made handshake just before each Start made
    // Start→ready 15 ms longer (and not the handshake's).
    let floor = median((0..20).map(|_| raw_handshake()).collect());
    let dir = tempfile::tempdir().expect("tempdir");
    let (rt, core, _rx) = core_with(dir.path(), json!([{"name": "demo", "command": demo()}]), false);
    let ours = median(
        (0..20)
            .map(|_| {
                rt.block_on(async {
                    let t = Instant::now();
                    core.agents.start("demo").await.expect("start");
                    let took = t.elapsed();
                    core.agents.stop("demo").await.expect("stop");
                    took
                })
            })
            .collect(),
    );
    (ours, floor)
}

/// A tree of 100,000 files (1,000 directories of 100; `target/` with
/// another 10,000 is ignored by its .gitignore).
fn file_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let words = [
        "chat", "controls", "composer", "session", "widget", "model", "config", "files",
    ];
    for d in 0..1000 {
        let sub = dir
            .path()
            .join(format!("src/{}/{}-{d}", words[d % 8], words[(d / 8) % 8]));
        std::fs::create_dir_all(&sub).expect("mkdir");
        for f in 0..100 {
            std::fs::write(sub.join(format!("{}_{f}.rs", words[(d + f) % 8])), "").expect("write");
        }
    }
    for d in 0..100 {
        let sub = dir.path().join(format!("target/debug/{d}"));
        std::fs::create_dir_all(&sub).expect("mkdir");
        for f in 0..100 {
            std::fs::write(sub.join(format!("controls_{f}.rs")), "").expect("write");
        }
    }
    std::fs::write(dir.path().join(".gitignore"), "target/\n").expect("write");
    dir
}

/// The plainest walk: every entry, no ignore rules (the walk's floor).
fn plain_walk(root: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(root).into_iter().flatten().flatten() {
        match e.file_type() {
            Ok(t) if t.is_dir() => plain_walk(&e.path(), out),
            Ok(_) => out.push(e.path()),
            Err(_) => {}
        }
    }
}

/// @-mentions: walking a 100,000-file tree with .gitignore, and a fuzzy
/// query over it, each against a floor.
fn bench_files() {
    use parley::core::files::FileIndex;
    let tree = file_tree();
    let root = tree.path();
    let walk_floor = median(
        (0..5)
            .map(|_| {
                let t = Instant::now();
                let mut v = Vec::new();
                plain_walk(root, &mut v);
                std::hint::black_box(v);
                t.elapsed()
            })
            .collect(),
    );
    let mut index = None;
    let walk = median(
        (0..5)
            .map(|_| {
                let t = Instant::now();
                index = Some(FileIndex::build(root));
                t.elapsed()
            })
            .collect(),
    );
    let Some(index) = index else { return };
    let lower: Vec<String> = index.paths.iter().map(|p| p.to_lowercase()).collect();
    let queries = ["ctrl", "composer_42", "sesswid", "chatmodel9", "zzz"];
    let query_floor = median(
        (0..20)
            .map(|i| {
                let q = queries[i % queries.len()];
                let t = Instant::now();
                let hits = lower.iter().filter(|p| p.contains(q)).take(12).count();
                std::hint::black_box(hits);
                t.elapsed()
            })
            .collect(),
    );
    let query = median(
        (0..20)
            .map(|i| {
                let t = Instant::now();
                std::hint::black_box(index.search(queries[i % queries.len()], 12));
                t.elapsed()
            })
            .collect(),
    );
    println!("files   walk {} files:  {:>8.1} ms   floor (read_dir, no ignore rules, {} entries) {:>7.1} ms   ratio {:>5.2}",
        index.paths.len(), walk.as_secs_f64() * 1e3, index.paths.len() + 10_000, walk_floor.as_secs_f64() * 1e3,
        walk.as_secs_f64() / walk_floor.as_secs_f64());
    println!("files   fuzzy query:        {:>8.2} ms   floor (substring scan of the same paths) {:>7.2} ms   ratio {:>5.2}   goal: < 16 ms (a frame)",
        query.as_secs_f64() * 1e3, query_floor.as_secs_f64() * 1e3, query.as_secs_f64() / query_floor.as_secs_f64());
    figures::record(
        "files walk",
        walk.as_secs_f64() * 1e3,
        "ms",
        Some(walk_floor.as_secs_f64() * 1e3),
        None,
    );
    figures::record(
        "files fuzzy query",
        query.as_secs_f64() * 1e3,
        "ms",
        Some(query_floor.as_secs_f64() * 1e3),
        None,
    );
}

/// The history store (issue 16's groundwork): 100,000 streamed chunks
/// written through the writer, a 10,000-message conversation read back,
/// and a search over 100,000 stored messages, each against a floor.
fn bench_history() {
    use parley::core::history::{History, Op};
    use parley::core::types::message::{Message, Part, PartKind, Role};
    let dir = tempfile::tempdir().expect("tempdir");
    let (h, _) = History::open(&dir.path().join("h.sqlite3")).expect("open");
    let conv = |id: &str| Op::Conversation {
        id: id.into(),
        config: "/c.json".into(),
        agent: "demo".into(),
        created_at: "2026-12-01T10:00:00.000Z".into(),
    };
    let words = [
        "rainbow", "kernel", "parser", "window", "session", "terminal", "history", "search",
    ];

    // Writing a stream: the floor is serde_json parsing the same chunks.
    h.writer().send(conv("stream"));
    let mut m = Message::new("a1".into(), "demo", Role::Agent);
    m.done = false;
    h.writer().send(Op::Message {
        conversation: "stream".into(),
        message: m,
    });
    let chunks: Vec<String> = (0..100_000)
        .map(|i| format!("chunk {i} of {} ", words[i % 8]))
        .collect();
    let lines: Vec<String> = chunks
        .iter()
        .map(|c| serde_json::to_string(&json!({"text": c})).unwrap_or_default())
        .collect();
    let t = Instant::now();
    for l in &lines {
        std::hint::black_box(serde_json::from_str::<Value>(l).ok());
    }
    let write_floor = t.elapsed();
    let t = Instant::now();
    for c in chunks {
        h.writer().send(Op::Delta {
            conversation: "stream".into(),
            message_id: "a1".into(),
            index: 0,
            kind: PartKind::Text,
            text: Some(c),
            part: None,
        });
    }
    h.writer().flush().expect("flush");
    let write = t.elapsed();

    // 100,000 messages in 10 conversations of 10,000.
    for c in 0..10 {
        let id = format!("c{c}");
        h.writer().send(conv(&id));
        for i in 0..10_000 {
            let mut m = Message::new(
                format!("m{i}"),
                "demo",
                if i % 2 == 0 { Role::User } else { Role::Agent },
            );
            m.parts.push(Part::Text {
                text: format!(
                    "message {i} about the {} and the {} in conversation {c}",
                    words[i % 8],
                    words[(i / 8) % 8]
                ),
            });
            h.writer().send(Op::Message {
                conversation: id.clone(),
                message: m,
            });
        }
    }
    h.writer().flush().expect("flush");
    let open = median(
        (0..5)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(h.messages("c3").expect("messages"));
                t.elapsed()
            })
            .collect(),
    );
    let raw = rusqlite::Connection::open(dir.path().join("h.sqlite3")).expect("raw");
    let open_floor = median(
        (0..5)
            .map(|_| {
                let t = Instant::now();
                let mut stmt = raw
                    .prepare("SELECT meta FROM messages WHERE conversation = 'c3' ORDER BY seq")
                    .expect("prepare");
                let metas: Vec<Value> = stmt
                    .query_map([], |r| r.get::<_, String>(0))
                    .expect("query")
                    .filter_map(Result::ok)
                    .filter_map(|m| serde_json::from_str(&m).ok())
                    .collect();
                std::hint::black_box(metas);
                t.elapsed()
            })
            .collect(),
    );
    let texts: Vec<String> = raw
        .prepare("SELECT lower(text) FROM messages")
        .expect("prepare")
        .query_map([], |r| r.get(0))
        .expect("query")
        .filter_map(Result::ok)
        .collect();
    let queries = ["kernel parser", "rainb", "window conversation 7", "nothing-here"];
    let search = median(
        (0..20)
            .map(|i| {
                let t = Instant::now();
                std::hint::black_box(h.search("/c.json", queries[i % 4], 20).expect("search"));
                t.elapsed()
            })
            .collect(),
    );
    let search_floor = median(
        (0..20)
            .map(|i| {
                let q = queries[i % 4].split(' ').next().unwrap_or_default();
                let t = Instant::now();
                std::hint::black_box(texts.iter().filter(|t| t.contains(q)).count());
                t.elapsed()
            })
            .collect(),
    );
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("history write 100,000 chunks: {:>8.1} ms   floor (serde_json parsing them) {:>7.1} ms   ratio {:>5.2}",
        ms(write), ms(write_floor), ms(write) / ms(write_floor));
    figures::record(
        "history write 100,000 chunks",
        ms(write),
        "ms",
        Some(ms(write_floor)),
        None,
    );
    figures::record(
        "history open 10,000 messages",
        ms(open),
        "ms",
        Some(ms(open_floor)),
        None,
    );
    figures::record(
        "history search 100,000 messages",
        ms(search),
        "ms",
        Some(ms(search_floor)),
        None,
    );
    println!("history open 10,000 messages: {:>8.1} ms   floor (the rows' JSON parsed) {:>7.1} ms   ratio {:>5.2}   goal: < 100 ms",
        ms(open), ms(open_floor), ms(open) / ms(open_floor));
    println!("history search 100,000 msgs:  {:>8.2} ms   floor (substring scan in memory) {:>7.2} ms   ratio {:>5.2}   goal: < 50 ms",
        ms(search), ms(search_floor), ms(search) / ms(search_floor));
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --all-targets` runs this too,
    // in a debug build where the figures mean nothing: then only say so.
    if !std::env::args().any(|a| a == "--bench") {
        println!("benchmarks run with `cargo bench --bench core`");
        return;
    }
    // For build-aux/callgrind-ingest.sh: one ingest of N chunks through
    // the core (`ingest-once N`), the floor (`floor-once N`: making the
    // lines and parsing them), or making the lines alone (`lines-once N`).
    let args: Vec<String> = std::env::args().collect();
    let once = ["ingest-once", "floor-once", "lines-once"];
    if let Some(i) = args.iter().position(|a| once.contains(&a.as_str())) {
        let n = args.get(i + 1).and_then(|n| n.parse().ok()).unwrap_or(100_000);
        match args[i].as_str() {
            "ingest-once" => {
                std::hint::black_box(ingest_core(n, false));
            }
            "floor-once" => {
                std::hint::black_box(ingest_floor(n));
            }
            _ => {
                std::hint::black_box(flood_lines(n, 40));
            }
        }
        return;
    }
    figures::start("core");
    let quick = std::env::args().any(|a| a == "--quick");
    let n = if quick { 10_000 } else { 100_000 };
    println!(
        "machine: {} cores; {}",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|c| c
                .lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.to_owned()))
            .unwrap_or_default()
    );

    // `cargo bench --bench core -- ingest` runs one figure (for profiling).
    let only: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let run = |name: &str| only.is_empty() || only.iter().any(|o| o == name);
    if run("validate") {
        figures::command("cargo bench --bench core -- validate");
        let (ours, floor) = bench_validate();
        println!("validate  1,000 agents: {:>8.2} ms   floor (serde_json parse) {:>7.2} ms   ratio {:>5.2}   goal: < 10 ms",
        ours.as_secs_f64() * 1e3, floor.as_secs_f64() * 1e3, ours.as_secs_f64() / floor.as_secs_f64());
        figures::record(
            "validate 1,000 agents",
            ours.as_secs_f64() * 1e3,
            "ms",
            Some(floor.as_secs_f64() * 1e3),
            None,
        );
    }
    if run("ingest") {
        figures::command("cargo bench --bench core -- ingest");
        // Shared machines drift: runs each against its own floors, and the
        // median ratio; without the history and with it, in turns. The
        // growth is the median of each pair's own growth (a pair shares
        // the machine's mood).
        let mut plain = Vec::new();
        let mut kept = Vec::new();
        let mut piped = Vec::new();
        let mut growth = Vec::new();
        // The plainest client over the pipe against the in-memory floor:
        // what reading from another process costs on this machine.
        let mut floors = Vec::new();
        // The CI subset (`--ci`) takes 3 pairs: a few seconds.
        let pairs = if std::env::args().any(|a| a == "--ci") {
            3
        } else {
            15
        };
        // Their figures are named apart: 3 pairs are not 15.
        let ci = if pairs == 3 { ", CI subset" } else { "" };
        for _ in 0..pairs {
            let pipe_floor = ingest_pipe_floor(n);
            let (ours, floor) = bench_ingest(n, false);
            let a = ours.as_secs_f64() / floor.as_secs_f64();
            plain.push((a, ours, floor));
            floors.push((pipe_floor.as_secs_f64() / floor.as_secs_f64(), pipe_floor, floor));
            piped.push((ours.as_secs_f64() / pipe_floor.as_secs_f64(), ours, pipe_floor));
            let (ours, floor) = bench_ingest(n, true);
            let b = ours.as_secs_f64() / floor.as_secs_f64();
            kept.push((b, ours, floor));
            growth.push(b / a - 1.0);
        }
        for runs in [&mut plain, &mut kept, &mut piped, &mut floors] {
            runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        growth.sort_by(f64::total_cmp);
        let mid = pairs / 2;
        // Round three's goal is against the pipe floor (what reading from
        // another process costs), in every run: ≤ 1.2.
        for (label, what, runs, goal) in [
            ("ingest", "serde_json parsing the lines in memory", &plain, None),
            (
                "ingest+history",
                "serde_json parsing the lines in memory",
                &kept,
                None,
            ),
            (
                "ingest from the pipe",
                "the agent's pipe read and each line parsed by serde_json",
                &piped,
                Some(1.2),
            ),
        ] {
            let (ratio, ours, floor) = runs[mid];
            println!("{label} {n} chunks:  {:>8.1} ms   floor ({what}) {:>7.1} ms   ratio {ratio:>5.2} (median of {pairs}; {:.2}–{:.2}){}",
            ours.as_secs_f64() * 1e3, floor.as_secs_f64() * 1e3, runs[0].0, runs[pairs - 1].0,
            goal.map(|g| format!("   goal: ≤ {g} in every run")).unwrap_or_default());
            // The worst run too: the goal holds in every run, not the median's.
            figures::record(
                &format!("{label} {n} chunks (median{ci})"),
                ours.as_secs_f64() * 1e3,
                "ms",
                Some(floor.as_secs_f64() * 1e3),
                goal,
            );
            let (_, w_ours, w_floor) = runs[pairs - 1];
            figures::record(
                &format!("{label} {n} chunks (worst run{ci})"),
                w_ours.as_secs_f64() * 1e3,
                "ms",
                Some(w_floor.as_secs_f64() * 1e3),
                goal,
            );
        }
        let over = floors.iter().filter(|f| f.0 > 1.5).count();
        let (ratio, pipe, memory) = floors[mid];
        println!("ingest  the pipe floor ÷ the in-memory floor: {ratio:.2} (median of {pairs}; {:.2}–{:.2}); over 1.5 in {over} of {pairs} pairs",
            floors[0].0, floors[pairs - 1].0);
        figures::record(
            &format!("ingest {n} chunks, the pipe floor against the in-memory floor (median{ci})"),
            pipe.as_secs_f64() * 1e3,
            "ms",
            Some(memory.as_secs_f64() * 1e3),
            None,
        );
        // The medians' own growth, and each pair's (a pair shares the
        // machine's mood, but one slow run swings it).
        println!("ingest  growth with the history on: {:+.1} % (medians); per pair median {:+.1} % ({:+.0}–{:+.0} %)   goal: ≤ +10 %",
            (kept[mid].0 / plain[mid].0 - 1.0) * 100.0, growth[mid] * 100.0, growth[0] * 100.0, growth[pairs - 1] * 100.0);
    }
    if run("files") {
        figures::command("cargo bench --bench core -- files");
        bench_files();
    }
    if run("checkpoints") {
        figures::command("cargo bench --bench core -- checkpoints");
        checkpoints_bench::bench();
    }
    if run("remote") {
        figures::command("cargo bench --bench core -- remote");
        remote_bench::bench();
    }
    if run("history") {
        figures::command("cargo bench --bench core -- history");
        bench_history();
    }
    if run("rest") {
        figures::command("cargo bench --bench core -- rest");
        rest_bench::bench();
    }
    if run("worktrees") {
        figures::command("cargo bench --bench core -- worktrees");
        worktrees_bench::bench();
    }
    if run("start") {
        figures::command("cargo bench --bench core -- start");
        let (ours, floor) = bench_start();
        println!("start     Start→ready:  {:>8.2} ms   floor (spawn + initialize by hand) {:>6.2} ms   overhead {:>5.2} ms   goal: < 5 ms",
        ours.as_secs_f64() * 1e3, floor.as_secs_f64() * 1e3, (ours.as_secs_f64() - floor.as_secs_f64()) * 1e3);
        figures::record(
            "agent start",
            ours.as_secs_f64() * 1e3,
            "ms",
            Some(floor.as_secs_f64() * 1e3),
            None,
        );
    }
}
