//! Many agents configured (`-- configured`): start-up with 100 agents in
//! the configuration (none running) ÷ the floor window's (goal ≤ 1.3); and
//! the resident memory of the window with 100 configured and 8 demo agents
//! running against the floor window's × 1.3 + what 8 running agents add to
//! `parley-cli serve` (goal: ≤ 1 of that).

use std::io::{BufRead, Write};

use super::*;

/// A configuration of `n` demo agents, `demo1` … `demoN`.
pub fn config_of(dir: &std::path::Path, n: usize) -> std::path::PathBuf {
    let names: Vec<String> = (1..=n).map(|i| format!("demo{i}")).collect();
    config_with(dir, &names)
}

/// `--configured-window`: this bench's window over 100 configured agents,
/// 8 of them started; prints its resident memory a second after they are
/// all ready (`rss-kb N`).
pub fn configured_window() {
    gtk::init().expect("gtk");
    adw::init().expect("adw");
    std::env::set_var("GSETTINGS_BACKEND", "memory");
    let app = adw::Application::new(
        Some("io.github.parley.ParleyBenchConfigured"),
        gtk::gio::ApplicationFlags::NON_UNIQUE,
    );
    app.register(gtk::gio::Cancellable::NONE).expect("register");
    let _hold = app.hold();
    parley::ui::application::load_css();
    let dir = tempfile::tempdir().expect("tempdir");
    let (core, rx) = parley::ui::runtime::start_core(Options {
        config_path: Some(config_of(dir.path(), 100)),
        watch: false,
        history: Some(dir.path().join("history.sqlite3")),
        ..Default::default()
    })
    .expect("core");
    let win = shown_window(&app, &core, rx);
    win.select_agent("demo1");
    for i in 1..=8 {
        parley::ui::runtime::runtime()
            .block_on(core.agents.start(&format!("demo{i}")))
            .expect("start");
    }
    let running = core.agents.list().iter().filter(|a| a.state.is_running()).count();
    assert_eq!(running, 8, "8 agents running");
    spin_until(Duration::from_secs(1), || false);
    println!("rss-kb {}", rss_kb());
    win.close();
    parley::ui::runtime::runtime().block_on(core.shutdown());
}

/// The resident memory of a process, in KB.
fn rss_of(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// What 8 running demo agents add to `parley-cli serve`'s resident memory
/// (100 configured), in KB.
fn serve_cost(dir: &std::path::Path) -> u64 {
    let cli = std::env::current_exe()
        .expect("exe")
        .parent()
        .and_then(|d| d.parent())
        .expect("target dir")
        .join("parley-cli");
    let mut serve = std::process::Command::new(cli)
        .arg("serve")
        .arg("--config")
        .arg(config_of(dir, 100))
        .env("XDG_STATE_HOME", dir)
        .env("XDG_DATA_HOME", dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("serve");
    std::thread::sleep(Duration::from_secs(1));
    let idle = rss_of(serve.id());
    let mut input = serve.stdin.take().expect("stdin");
    for i in 1..=8 {
        let call =
            serde_json::json!({"id": i, "method": "AgentService.Start", "params": [format!("demo{i}")]});
        writeln!(input, "{call}").expect("write");
    }
    let out = std::io::BufReader::new(serve.stdout.take().expect("stdout"));
    let mut answered = 0;
    for line in out.lines().map_while(Result::ok) {
        if line.starts_with("{\"id\"") {
            answered += 1;
            if answered == 8 {
                break;
            }
        }
    }
    std::thread::sleep(Duration::from_secs(1));
    let running = rss_of(serve.id());
    drop(input);
    let _ = serve.wait();
    running.saturating_sub(idle)
}

pub fn configured_figure() {
    figures::command("GSK_RENDERER=cairo xvfb-run -a cargo bench --bench window -- configured");
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut ours, mut floor) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        ours.push(startup_with(dir.path(), false, 100));
        floor.push(startup_with(dir.path(), true, 100));
    }
    ours.sort();
    floor.sort();
    let (o, f) = (ours[3].as_secs_f64() * 1e3, floor[3].as_secs_f64() * 1e3);
    println!(
        "start-up with 100 agents configured, median of 7: {o:.0} ms   floor window {f:.0} ms   ratio {:.2}   goal: ≤ 1.3",
        o / f
    );
    figures::record("start-up with 100 agents configured", o, "ms", Some(f), Some(1.3));

    let exe = std::env::current_exe().expect("exe");
    let mut window = Vec::new();
    let mut floors = Vec::new();
    let mut serve = Vec::new();
    for _ in 0..3 {
        let out = std::process::Command::new(&exe)
            .arg("--configured-window")
            .stderr(std::process::Stdio::inherit())
            .output()
            .expect("window");
        let rss = String::from_utf8_lossy(&out.stdout)
            .lines()
            .find_map(|l| {
                l.strip_prefix("rss-kb ")
                    .and_then(|n| n.trim().parse::<u64>().ok())
            })
            .unwrap_or(0);
        // A window that failed would pass with nothing resident.
        assert!(
            out.status.success() && rss > 0,
            "the configured window failed: {}",
            out.status
        );
        window.push(rss);
        floors.push(first_frame_rss_with(dir.path(), true, 0));
        serve.push(serve_cost(dir.path()));
    }
    for v in [&mut window, &mut floors, &mut serve] {
        v.sort();
    }
    let mb = |kb: u64| kb as f64 / 1024.0;
    let allowance = mb(floors[1]) * 1.3 + mb(serve[1]);
    println!(
        "memory with 100 configured and 8 running, median of 3: {:.1} MB   floor window {:.1} MB; 8 running agents add {:.1} MB to parley-cli serve; allowed 1.3 × floor + that = {allowance:.1} MB   ratio {:.2}   goal: ≤ 1",
        mb(window[1]),
        mb(floors[1]),
        mb(serve[1]),
        mb(window[1]) / allowance
    );
    figures::record(
        "memory with 100 configured and 8 running, against 1.3 × the floor window + 8 agents in serve",
        mb(window[1]),
        "MB",
        Some(allowance),
        Some(1.0),
    );
}
