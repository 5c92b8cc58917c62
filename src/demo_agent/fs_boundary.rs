//! Prompt keywords that drive Parley's `fs/*` boundary: plain reads and
//! writes (`fs-read`, `fs-write`), which the tests aim inside and outside
//! the cwd, and hostile ones that attack it (issue 22): a symlink swapped in
//! mid-request, a FIFO, reads measured without echoing megabytes back, and
//! reads whose answers pile up because the agent stops reading. The
//! integration tests in `tests/integration/fs_boundary.rs` drive them; each
//! reports what happened as its answer text.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};

use super::state::Agent;

/// `fs-read PATH`: asks Parley to read `path` and shows the answer.
pub(super) async fn read(agent: &Agent, sid: &str, path: &str) -> String {
    let result = agent
        .request("fs/read_text_file", json!({"sessionId": sid, "path": path}))
        .await;
    agent.chunk(sid, "agent_message_chunk", &format!("fs-read result: {result}"));
    "end_turn".to_string()
}

/// `fs-write PATH TEXT`: asks Parley to write `content` to `path` and shows
/// the answer.
pub(super) async fn write(agent: &Agent, sid: &str, path: &str, content: &str) -> String {
    let result = agent
        .request(
            "fs/write_text_file",
            json!({"sessionId": sid, "path": path, "content": content}),
        )
        .await;
    agent.chunk(sid, "agent_message_chunk", &format!("fs-write result: {result}"));
    "end_turn".to_string()
}

/// `fs-no-read N PATH`: asks Parley to read `path` `times` times, then stops
/// reading stdin for good (the answers pile up) and never ends the turn.
pub(super) async fn no_read(agent: &Agent, sid: &str, times: u64, path: &str) -> String {
    for _ in 0..times {
        let id = agent.next_id.fetch_add(1, Ordering::Relaxed);
        agent.send(&json!({"jsonrpc": "2.0", "id": id, "method": "fs/read_text_file",
            "params": {"sessionId": sid, "path": path}}));
    }
    agent.deaf.store(true, Ordering::Relaxed);
    std::future::pending::<String>().await
}

/// Runs the keyword `first` (`fs-race`, `fs-fifo` or `fs-read-len`, see the
/// demo agent's HELP) and returns the text to answer with.
pub(super) async fn run(agent: &Agent, sid: &str, first: &str, words: &[&str]) -> String {
    let arg = |i: usize| words.get(i).copied().unwrap_or("");
    match first {
        "fs-race" => {
            let rounds = arg(1).parse::<u64>().unwrap_or(200);
            race(agent, sid, rounds, Path::new(arg(2))).await
        }
        "fs-fifo" => fifo(agent, sid, arg(1)).await,
        _ => {
            let mut params = json!({"sessionId": sid, "path": arg(1)});
            if let Ok(line) = arg(2).parse::<u32>() {
                params["line"] = json!(line);
            }
            if let Ok(limit) = arg(3).parse::<u32>() {
                params["limit"] = json!(limit);
            }
            let answer = agent.request("fs/read_text_file", params).await;
            match answer.get("content").and_then(Value::as_str) {
                Some(text) => format!(
                    "fs-read-len: {} bytes, {} lines, starting {:?}",
                    text.len(),
                    text.lines().count(),
                    text.chars().take(40).collect::<String>()
                ),
                None => format!("fs-read-len error: {answer}"),
            }
        }
    }
}

fn cstring(p: &Path) -> Option<CString> {
    CString::new(p.as_os_str().as_bytes()).ok()
}

/// Exchanges two paths atomically; either may be a directory or a symlink.
fn exchange(a: &CString, b: &CString) -> bool {
    // SAFETY: both are valid NUL-terminated paths that outlive the call;
    // renameat2 reads them and touches no memory of ours.
    let r = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    r == 0
}

/// `cwd/race-PID/real` is a directory holding `file.txt`; `swap` beside it is
/// a symlink to `outside`. A thread exchanges the two as fast as it can while
/// this asks Parley to read `real/file.txt` and to write `real/w-I.txt`. A
/// boundary that checks a path and then opens it again loses this race.
async fn race(agent: &Agent, sid: &str, rounds: u64, outside: &Path) -> String {
    if !outside.is_absolute() {
        return "fs-race: OUTSIDE must be an absolute directory".into();
    }
    let cwd = PathBuf::from(agent.cwd.lock().unwrap_or_else(|e| e.into_inner()).clone());
    let base = cwd.join(format!("race-{}", std::process::id()));
    let (real, swap) = (base.join("real"), base.join("swap"));
    let setup = std::fs::create_dir_all(&real)
        .and_then(|_| std::fs::write(real.join("file.txt"), "inside"))
        .and_then(|_| std::os::unix::fs::symlink(outside, &swap));
    if let Err(e) = setup {
        return format!("fs-race: cannot set up in {}: {e}", base.display());
    }
    let (Some(real_c), Some(swap_c)) = (cstring(&real), cstring(&swap)) else {
        return "fs-race: a path holds a NUL byte".into();
    };
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let swapper = {
        let (stop, swaps) = (stop.clone(), swaps.clone());
        let (real_c, swap_c) = (real_c.clone(), swap_c.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if exchange(&real_c, &swap_c) {
                    swaps.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
    };
    let (mut inside_reads, mut outside_reads, mut refused_reads) = (0u64, 0u64, 0u64);
    let (mut writes_ok, mut refused_writes) = (0u64, 0u64);
    for i in 0..rounds {
        let read = agent
            .request(
                "fs/read_text_file",
                json!({"sessionId": sid, "path": real.join("file.txt")}),
            )
            .await;
        match read.get("content").and_then(Value::as_str) {
            Some("inside") => inside_reads += 1,
            Some(_) => outside_reads += 1,
            None => refused_reads += 1,
        }
        let write = agent
            .request(
                "fs/write_text_file",
                json!({"sessionId": sid, "path": real.join(format!("w-{i}.txt")), "content": "x"}),
            )
            .await;
        if write.get("error").is_some() {
            refused_writes += 1;
        } else {
            writes_ok += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let _ = swapper.join();
    // Leave `real` a directory again, for whoever looks afterwards.
    if std::fs::symlink_metadata(&real).is_ok_and(|m| m.file_type().is_symlink()) {
        exchange(&real_c, &swap_c);
    }
    let mut strays: Vec<String> = std::fs::read_dir(outside)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n != "file.txt")
                .collect()
        })
        .unwrap_or_default();
    strays.sort();
    let shown: Vec<&String> = strays.iter().take(5).collect();
    format!(
        "fs-race: {rounds} rounds, {} swaps; reads inside {inside_reads}, reads outside {outside_reads}, \
         reads refused {refused_reads}; writes done {writes_ok}, writes refused {refused_writes}; \
         files created outside {}: {shown:?}",
        swaps.load(Ordering::Relaxed),
        strays.len()
    )
}

/// Makes a FIFO nobody writes to and asks Parley to read it: a client that
/// opens it for reading waits for a writer forever.
async fn fifo(agent: &Agent, sid: &str, path: &str) -> String {
    let Some(c) = cstring(Path::new(path)) else {
        return "fs-fifo: the path holds a NUL byte".into();
    };
    // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::AlreadyExists {
            return format!("fs-fifo: cannot make {path}: {e}");
        }
    }
    let answer = agent
        .request("fs/read_text_file", json!({"sessionId": sid, "path": path}))
        .await;
    format!("fs-fifo result: {answer}")
}
