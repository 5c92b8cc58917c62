//! The demo agent as a program: its entry points (`main`, and `FLAG` for
//! `parley --demo-agent`), its arguments (`--help`, `--login`), and the loop
//! that reads the client's messages from stdin in order.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

use super::help::HELP;
use super::state::Agent;
use super::{auth, methods, sessions, startup};

/// The argument that makes `parley` or `parley-cli` the demo agent.
pub const FLAG: &str = "--demo-agent";

/// When this program was started as `PROGRAM --demo-agent …`, runs the demo
/// agent and exits; otherwise returns at once.
pub fn run_if_asked() {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some(FLAG) {
        main(args.collect());
        std::process::exit(0);
    }
}

/// Runs the demo agent on this process's stdin and stdout; `args` are its
/// command-line arguments (without the program name).
pub fn main(args: Vec<String>) {
    match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt.block_on(run(args)),
        Err(e) => {
            eprintln!("demo: cannot start a runtime: {e}");
            std::process::exit(1);
        }
    }
}

async fn run(args: Vec<String>) {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        print!("{HELP}");
        return;
    }
    if args.first().is_some_and(|a| a == "--login") {
        std::process::exit(auth::terminal_login());
    }
    let modes: Vec<String> = std::env::var("PARLEY_DEMO_MODE")
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect();
    let mut agent = Agent::new(modes);
    agent.sessions_dir = sessions::dir(&agent);
    let agent = Arc::new(agent);
    startup::start(&agent);
    eprintln!("demo: ready for ACP on stdin");

    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            eprintln!("demo: skipped a line that is not JSON");
            continue;
        };
        let agent = agent.clone();
        methods::handle(agent.clone(), msg).await;
        if agent.deaf.load(Ordering::Relaxed) {
            eprintln!("demo: no longer reading stdin (fs-no-read)");
            std::future::pending::<()>().await;
        }
    }
    eprintln!("demo: end of input");
    if agent.mode("ignore-eof").is_some() {
        eprintln!("demo: ignoring end of input (ignore-eof)");
        loop {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
    }
}
