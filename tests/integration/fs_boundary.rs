//! The agent's file-system boundary (issue 22) against hostile demo agents:
//! a symlink swapped in mid-request, a FIFO, files too big to answer with,
//! read-only files and hard links to other users' files.

use std::io::{BufWriter, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parley::core::events::Event;
use parley::core::types::message::Role;
use serde_json::{json, Value};

use crate::common::*;

/// A demo agent (no scripted mode) working in `cwd`.
fn agent_in(name: &str, cwd: &Path) -> Value {
    json!({"name": name, "command": demo(), "cwd": cwd.display().to_string()})
}

fn answer(h: &Harness, agent: &str) -> String {
    let conv = h.core.chat.conversation(agent).expect("conversation");
    conv.messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Agent)
        .map(|m| m.text())
        .unwrap_or_default()
}

async fn ask(h: &mut Harness, agent: &str, text: &str) -> String {
    h.core.chat.send(agent, text).expect("send");
    h.wait_idle(agent).await;
    answer(h, agent)
}

/// The number after `label` in a report such as `reads outside 0`.
fn count(report: &str, label: &str) -> u64 {
    report
        .split(label)
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).find(|s| !s.is_empty()))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no {label:?} in {report}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_symlink_swapped_in_mid_request_never_leads_outside() {
    let work = tempfile::tempdir().expect("tempdir");
    let outside = tempfile::tempdir().expect("tempdir");
    std::fs::write(outside.path().join("file.txt"), "OUTSIDE-SECRET").expect("write");
    let mut h = Harness::new(&[agent_in("a", work.path())]);
    let report = ask(&mut h, "a", &format!("fs-race 400 {}", outside.path().display())).await;
    eprintln!("{report}");
    assert_eq!(count(&report, "reads outside"), 0, "{report}");
    assert_eq!(count(&report, "files created outside"), 0, "{report}");
    assert!(count(&report, "swaps") > 0, "the race ran: {report}");
    assert!(
        count(&report, "reads inside") > 0,
        "reads through the real directory still work: {report}"
    );
    let left: Vec<String> = std::fs::read_dir(outside.path())
        .expect("read_dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["file.txt"], "no file, temp or not, was left outside");
    assert_eq!(read(&outside.path().join("file.txt")), "OUTSIDE-SECRET");
}

/// Waits until both agents' turns have ended, in whichever order.
async fn wait_both_idle(h: &mut Harness, a: &str, b: &str) {
    let idle_in = |seen: &[Event], agent: &str| {
        seen.iter()
            .any(|e| matches!(e, Event::TurnChanged(t) if t.agent == agent && !t.busy))
    };
    let from = h.seen.len();
    h.wait_idle(a).await;
    if !idle_in(&h.seen[from..], b) {
        h.wait_idle(b).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn reading_a_fifo_is_refused_and_blocks_nobody() {
    let (wa, wb) = (
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
    );
    let fifos = [wa.path().join("pipe"), wb.path().join("pipe")];
    let mut h = Harness::new(&[agent_in("a", wa.path()), agent_in("b", wb.path())]);
    // Wakes up a Parley stuck opening the FIFOs (a writer lets the open
    // return), so that a broken boundary fails this test instead of hanging it.
    let done = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let (done, fifos) = (done.clone(), fifos.clone());
        std::thread::spawn(move || {
            let start = Instant::now();
            while !done.load(Ordering::Relaxed) {
                if start.elapsed() > Duration::from_secs(15) {
                    for f in &fifos {
                        let _ = std::fs::OpenOptions::new()
                            .write(true)
                            .custom_flags(libc::O_NONBLOCK)
                            .open(f);
                    }
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let start = Instant::now();
    for (name, fifo) in ["a", "b"].iter().zip(&fifos) {
        h.core
            .chat
            .send(name, &format!("fs-fifo {}", fifo.display()))
            .expect("send");
    }
    wait_both_idle(&mut h, "a", "b").await;
    let answered = start.elapsed();
    for name in ["a", "b"] {
        let text = answer(&h, name);
        assert!(text.contains("not a regular file"), "{name}: {text}");
    }

    // The services answer at once, and the other agent goes on working.
    let t = Instant::now();
    let conv = h
        .core
        .call("ChatService.Conversation", &[json!("a")])
        .await
        .expect("conversation");
    let conversation_took = t.elapsed();
    assert!(conv["messages"].is_array(), "{conv}");
    assert_eq!(ask(&mut h, "b", "echo still here").await, "still here");
    let t = Instant::now();
    h.core
        .call("AgentService.Stop", &[json!("a")])
        .await
        .expect("stop");
    let stop_took = t.elapsed();
    done.store(true, Ordering::Relaxed);
    let _ = watchdog.join();
    assert!(
        answered < Duration::from_secs(5),
        "the FIFO reads took {answered:?}"
    );
    assert!(
        conversation_took < Duration::from_secs(1),
        "Conversation took {conversation_took:?}"
    );
    assert!(stop_took < Duration::from_secs(5), "Stop took {stop_took:?}");
}

#[test]
fn big_reads_are_refused_quickly_and_line_limits_read_only_what_they_return() {
    if rerun_alone("fs_boundary::big_reads_are_refused_quickly_and_line_limits_read_only_what_they_return") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let work = dir.path().join("work");
    std::fs::create_dir(&work).expect("mkdir");
    let big = work.join("big.txt");
    {
        let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(&big).expect("create"));
        let line = "lorem ipsum dolor sit amet, consectetur adipiscing elit 0123456789\n";
        let mut written = 0;
        while written < 200 * 1024 * 1024 {
            w.write_all(line.as_bytes()).expect("write");
            written += line.len();
        }
        w.flush().expect("flush");
    }
    let config = dir.path().join("config.json");
    std::fs::write(&config, config_text(&[agent_in("demo", &work)], 4, "0")).expect("write");
    let config = config.display().to_string();

    let whole = format!("fs-read-len {}", big.display());
    let (out, peak_kib, took) = cli_measured(&["send", "demo", &whole, "--config", &config], dir.path());
    eprintln!("200 MB read: parley-cli peak RSS {peak_kib} KiB, {took:?}");
    assert!(out.contains("larger than"), "{out}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert!(peak_kib < 100 * 1024, "parley-cli peaked at {peak_kib} KiB");

    let some = format!("fs-read-len {} 2 3", big.display());
    let (out, peak_kib, took) = cli_measured(&["send", "demo", &some, "--config", &config], dir.path());
    eprintln!("3 lines of 200 MB: parley-cli peak RSS {peak_kib} KiB, {took:?}");
    assert!(out.contains("fs-read-len: 201 bytes, 3 lines"), "{out}");
    assert!(peak_kib < 100 * 1024, "parley-cli peaked at {peak_kib} KiB");
}

#[tokio::test(flavor = "multi_thread")]
async fn writing_over_a_read_only_file_is_denied_and_modes_are_kept() {
    let work = tempfile::tempdir().expect("tempdir");
    let ro = work.path().join("ro.txt");
    std::fs::write(&ro, "keep").expect("write");
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o444)).expect("chmod");
    let private = work.path().join("private.txt");
    std::fs::write(&private, "old").expect("write");
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let mut h = Harness::new(&[agent_in("a", work.path())]);

    let text = ask(&mut h, "a", &format!("fs-write {} replaced", ro.display())).await;
    assert!(text.to_lowercase().contains("permission denied"), "{text}");
    assert_eq!(read(&ro), "keep");

    let text = ask(&mut h, "a", &format!("fs-write {} new", private.display())).await;
    assert!(text.contains("fs-write result: null"), "{text}");
    assert_eq!(read(&private), "new");
    let mode = std::fs::metadata(&private).expect("stat").permissions().mode();
    assert_eq!(mode & 0o777, 0o640);
}

#[tokio::test(flavor = "multi_thread")]
async fn symlinks_inside_work_and_invalid_text_is_named() {
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(work.path().join("src")).expect("mkdir");
    std::fs::write(work.path().join("src/real.txt"), "real").expect("write");
    std::os::unix::fs::symlink("src/real.txt", work.path().join("alias.txt")).expect("symlink");
    std::fs::write(work.path().join("bad.txt"), b"ok\xff\xfe\n").expect("write");
    let mut h = Harness::new(&[agent_in("a", work.path())]);
    let alias = work.path().join("alias.txt");

    let text = ask(&mut h, "a", &format!("fs-read {}", alias.display())).await;
    assert!(text.contains("\"real\""), "{text}");
    let text = ask(&mut h, "a", &format!("fs-write {} through", alias.display())).await;
    assert!(text.contains("fs-write result: null"), "{text}");
    assert_eq!(read(&work.path().join("src/real.txt")), "through");
    assert!(
        std::fs::symlink_metadata(&alias)
            .expect("lstat")
            .file_type()
            .is_symlink(),
        "the link stays a link"
    );

    let text = ask(&mut h, "a", &format!("fs-read {}/bad.txt", work.path().display())).await;
    assert!(text.contains("not UTF-8 text"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hard_link_to_another_users_file_is_refused() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED: giving a file to another user needs root");
        return;
    }
    let work = tempfile::tempdir().expect("tempdir");
    let outside = tempfile::tempdir().expect("tempdir");
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "SECRET").expect("write");
    std::os::unix::fs::chown(&secret, Some(65534), Some(65534)).expect("chown");
    let linked = work.path().join("linked.txt");
    std::fs::hard_link(&secret, &linked).expect("link");
    // A second name for one of our own files is fine.
    let own = work.path().join("own.txt");
    std::fs::write(&own, "mine").expect("write");
    std::fs::hard_link(&own, work.path().join("own2.txt")).expect("link");
    let mut h = Harness::new(&[agent_in("a", work.path())]);

    let text = ask(&mut h, "a", &format!("fs-read {}", linked.display())).await;
    assert!(text.contains("hard links"), "{text}");
    assert!(!text.contains("SECRET"), "{text}");
    let text = ask(&mut h, "a", &format!("fs-write {} changed", linked.display())).await;
    assert!(text.contains("hard links"), "{text}");
    assert_eq!(read(&secret), "SECRET");
    let text = ask(&mut h, "a", &format!("fs-read {}", own.display())).await;
    assert!(text.contains("\"mine\""), "{text}");
}

/// An agent that asks for a big file forty times and then stops reading its
/// input: the answers waiting for it stay bounded (the rest are refused with
/// an error), and when they have waited too long the agent is ended as lost.
/// Before, the answers piled up in Parley's memory without end.
#[tokio::test(flavor = "multi_thread")]
async fn an_agent_that_stops_reading_its_answers_is_refused_and_ended() {
    let work = tempfile::tempdir().expect("tempdir");
    let big = work.path().join("big.txt");
    let line = "x".repeat(1023) + "\n";
    std::fs::write(&big, line.repeat(8 * 1024)).expect("write 8 MiB");
    let mut h = Harness::new(&[agent_in("a", work.path())]);
    h.core
        .chat
        .send("a", &format!("fs-no-read 40 {}", big.display()))
        .expect("send");
    let error = h.wait_state("a", parley::core::types::AgentState::Error).await;
    let error = error.expect("an error text");
    assert!(error.contains("stopped reading its input"), "{error}");
    let logs = h.core.agents.logs("a").expect("logs");
    assert!(
        logs.iter()
            .any(|l| l.contains("was not sent: refused: the agent is not reading its input")),
        "some reads were refused: {logs:?}"
    );
}

/// The same through `parley-cli send`, measured: with a 30 MiB file asked
/// for forty times and never read, Parley's peak memory stays bounded by
/// the read budget and the outbound cap (64 MiB each), and the turn ends.
#[test]
fn a_stalled_reader_keeps_memory_bounded() {
    if rerun_alone("fs_boundary::a_stalled_reader_keeps_memory_bounded") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let work = dir.path().join("work");
    std::fs::create_dir(&work).expect("mkdir");
    let big = work.join("big.txt");
    let line = "y".repeat(1023) + "\n";
    std::fs::write(&big, line.repeat(30 * 1024)).expect("write 30 MiB");
    let config = dir.path().join("config.json");
    std::fs::write(&config, config_text(&[agent_in("demo", &work)], 4, "0")).expect("write");
    let config = config.display().to_string();
    let ask = format!("fs-no-read 40 {}", big.display());
    let (out, peak_kib, took) = cli_measured(&["send", "demo", &ask, "--config", &config], dir.path());
    eprintln!("40 unread reads of 30 MiB: parley-cli peak RSS {peak_kib} KiB, {took:?}");
    assert!(out.contains("stopped reading its input"), "{out}");
    assert!(peak_kib < 400 * 1024, "parley-cli peaked at {peak_kib} KiB");
}
