//! Agents on another host (issue 44): 20 demo agents on one host (a real
//! sshd on 127.0.0.1, see tests/integration/sshd.rs) started at once over
//! Parley's one multiplexed connection, from a cold start (the connection
//! made and the helper checked, as after Parley starts); floor: the same
//! 20 agents started at once here. Goal: ≤ 1.5 ×. A second floor: ssh
//! itself doing the least the same needs (a connection made, then 20
//! sessions through it at once, each running `true`): what the host's
//! sshd and the user's shell cost, whatever Parley does.

use std::time::{Duration, Instant};

use parley::core::services::{Core, Options};
use serde_json::{json, Value};

use super::{demo, figures, median};

#[path = "../../tests/integration/sshd.rs"]
#[allow(dead_code)]
mod sshd;

const AGENTS: usize = 20;

/// A cold core on `agents`, all 20 started at once: the time until every
/// one is ready.
fn start_all(dir: &std::path::Path, agents: Vec<Value>) -> Duration {
    let path = dir.join("config.json");
    let names: Vec<String> = agents
        .iter()
        .filter_map(|a| a["name"].as_str().map(str::to_owned))
        .collect();
    let config = json!({"limits": {"maxRunningAgents": AGENTS + 1}, "agents": agents});
    std::fs::write(&path, config.to_string()).expect("config");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let core = {
        let _g = rt.enter();
        Core::new(Options {
            config_path: Some(path),
            watch: false,
            history: None,
            ..Default::default()
        })
        .expect("core")
        .0
    };
    let took = rt.block_on(async {
        let t = Instant::now();
        let starts: Vec<_> = names
            .iter()
            .map(|n| {
                let (agents, n) = (core.agents.clone(), n.clone());
                tokio::spawn(async move { agents.start(&n).await })
            })
            .collect();
        for s in starts {
            s.await.expect("join").expect("start");
        }
        t.elapsed()
    });
    rt.block_on(core.shutdown());
    let _: &Core = &core;
    took
}

/// ssh alone: a held connection made, then 20 sessions through it at once.
fn ssh_floor(server: &sshd::Sshd) -> Duration {
    use std::process::{Command, Stdio};
    let ssh = server.path("ssh");
    let sock = server.path("floor.sock");
    let _ = std::fs::remove_file(&sock);
    let t = Instant::now();
    let mut master = Command::new(&ssh)
        .args([
            "-o",
            "BatchMode=yes",
            "-M",
            "-N",
            "-n",
            "-o",
            "ControlPersist=no",
            "-S",
        ])
        .arg(&sock)
        .arg("devbox")
        .stderr(Stdio::null())
        .spawn()
        .expect("ssh -M");
    while !sock.exists() {
        std::thread::sleep(Duration::from_millis(2));
    }
    let sessions: Vec<_> = (0..AGENTS)
        .map(|_| {
            Command::new(&ssh)
                .args(["-o", "ControlMaster=no", "-S"])
                .arg(&sock)
                .args(["devbox", "true"])
                .spawn()
                .expect("ssh")
        })
        .collect();
    for mut s in sessions {
        let _ = s.wait();
    }
    let took = t.elapsed();
    let _ = master.kill();
    let _ = master.wait();
    took
}

pub fn bench() {
    if let Some(why) = sshd::unavailable() {
        println!("remote    skipped: {why}");
        return;
    }
    let server = sshd::Sshd::start();
    for (k, v) in server.env() {
        std::env::set_var(k, v);
    }
    let far = server.path("far");
    let agent = |i: usize, host: Option<&str>| {
        let mut a = json!({"name": format!("a{i}"), "command": if host.is_some() { "parley-demo-agent".to_owned() } else { demo() }, "cwd": far});
        if let Some(h) = host {
            a["host"] = json!(h);
        }
        a
    };
    // The first remote run puts the helper there; the figure is of a
    // connection made anew, with the helper checked (not copied).
    let dir = tempfile::tempdir().expect("tempdir");
    start_all(
        dir.path(),
        (0..AGENTS).map(|i| agent(i, Some("ssh://devbox"))).collect(),
    );
    let (mut local, mut remote, mut floor) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..5 {
        floor.push(ssh_floor(&server));
        let dir = tempfile::tempdir().expect("tempdir");
        local.push(start_all(
            dir.path(),
            (0..AGENTS).map(|i| agent(i, None)).collect(),
        ));
        let dir = tempfile::tempdir().expect("tempdir");
        remote.push(start_all(
            dir.path(),
            (0..AGENTS).map(|i| agent(i, Some("ssh://devbox"))).collect(),
        ));
    }
    let (l, r, f) = (median(local), median(remote), median(floor));
    println!(
        "remote    20 agents on one host: {:>8.1} ms   floor (20 here) {:>8.1} ms   ratio {:>5.2}   goal: ≤ 1.5",
        r.as_secs_f64() * 1e3,
        l.as_secs_f64() * 1e3,
        r.as_secs_f64() / l.as_secs_f64()
    );
    figures::record(
        "start 20 agents on one ssh host",
        r.as_secs_f64() * 1e3,
        "ms",
        Some(l.as_secs_f64() * 1e3),
        Some(1.5),
    );
    println!(
        "remote    20 agents on one host:   {:>8.1} ms   floor (ssh: connect, 20 sessions of `true`) {:>8.1} ms   ratio {:>5.2}   goal: ≤ 1.5",
        r.as_secs_f64() * 1e3,
        f.as_secs_f64() * 1e3,
        r.as_secs_f64() / f.as_secs_f64()
    );
    figures::record(
        "start 20 agents on one ssh host, against ssh itself",
        r.as_secs_f64() * 1e3,
        "ms",
        Some(f.as_secs_f64() * 1e3),
        Some(1.5),
    );
    std::env::remove_var("PARLEY_SSH");
}
