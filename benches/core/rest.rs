//! `parley-cli serve` at rest and under a giant answer (issue 61):
//!
//! - wake-ups a second of all its threads (voluntary context switches,
//!   from /proc) over 10 s with 4 demo agents started and idle (goal: at
//!   most 1 a second on average; the agents are processes of their own);
//! - its peak resident memory while one agent streams a 256 MiB answer in
//!   1 MiB chunks, against its peak at rest (goal: at most 4 × at rest: a
//!   giant answer keeps its end only).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use super::{demo, figures};

/// Voluntary context switches of all of `pid`'s threads so far.
fn wakeups(pid: u32) -> u64 {
    figures::wakeups(&pid.to_string())
}

/// `VmHWM` (peak resident memory) of `pid`, in KiB.
fn peak_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

pub fn bench() {
    let dir = tempfile::tempdir().expect("tempdir");
    let agents: Vec<_> = (0..4)
        .map(|i| json!({"name": format!("a{i}"), "command": demo()}))
        .collect();
    let config = dir.path().join("config.json");
    std::fs::write(&config, json!({ "agents": agents }).to_string()).expect("config");
    let cli = std::path::Path::new(&demo()).with_file_name("parley-cli");
    let mut serve = Command::new(&cli)
        .args(["serve", "--config"])
        .arg(&config)
        .env("XDG_DATA_HOME", dir.path())
        .env("XDG_STATE_HOME", dir.path())
        .env("XDG_CONFIG_HOME", dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("parley-cli serve");
    let pid = serve.id();
    let mut input = serve.stdin.take().expect("stdin");
    let output = serve.stdout.take().expect("stdout");
    // What serve prints is read (and dropped) as it comes; the last
    // turn's end is told on a channel.
    let (ended, turn_ended) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(output).lines().map_while(Result::ok) {
            if line.contains("\"turn:changed\"") && line.contains("\"busy\":false") {
                let _ = ended.send(());
            }
        }
    });
    for i in 0..4 {
        let call = json!({"id": i, "method": "AgentService.Start", "params": [format!("a{i}")]});
        writeln!(input, "{call}").expect("write");
    }
    std::thread::sleep(Duration::from_secs(3));
    let span = Duration::from_secs(10);
    let (w0, t0) = (wakeups(pid), Instant::now());
    std::thread::sleep(span);
    let per_second = (wakeups(pid) - w0) as f64 / t0.elapsed().as_secs_f64();
    println!("serve at rest, 4 agents idle: {per_second:.2} wake-ups a second (all threads, over {} s)   goal: ≤ 1", span.as_secs());
    figures::record(
        "serve at rest with 4 agents idle, wake-ups a second",
        per_second,
        "wake-ups/s",
        None,
        Some(1.0),
    );

    let at_rest = peak_kib(pid);
    let send = json!({"id": 10, "method": "ChatService.Send", "params": ["a0", "flood 256 1048576"]});
    writeln!(input, "{send}").expect("write");
    let _ = turn_ended.recv_timeout(Duration::from_secs(600));
    let streaming = peak_kib(pid);
    let ratio = streaming as f64 / at_rest.max(1) as f64;
    println!(
        "serve peak memory streaming a 256 MiB answer: {:.1} MB   floor (at rest) {:.1} MB   ratio {ratio:.2}   goal: ≤ 4",
        streaming as f64 / 1024.0,
        at_rest as f64 / 1024.0
    );
    figures::record(
        "serve peak memory streaming a 256 MiB answer",
        streaming as f64 / 1024.0,
        "MB",
        Some(at_rest as f64 / 1024.0),
        Some(4.0),
    );
    drop(input);
    let _ = serve.wait();
}
