//! The window under a stream, under Xvfb with the cairo renderer:
//! `GSK_RENDERER=cairo xvfb-run -a cargo bench --bench window`.
//!
//! - stream: the demo agent floods N chunks of 40 bytes into the selected
//!   conversation. Figures: the time until the last chunk is on screen ÷ the
//!   core's own time for the same flood (measured in the same run, no
//!   window), and the longest gap between frames while it streams (the frame
//!   clock's `after-paint`; goal: under 16 ms, none over 50 ms).

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use adw::prelude::*;
use adw::subclass::prelude::ObjectSubclassIsExt;
use gtk::glib;
use parley::core::events::Event;
use parley::core::services::Options;
use parley::ui::window::ParleyWindow;

fn demo() -> String {
    let exe = std::env::current_exe().expect("exe");
    let dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
    dir.join("parley-demo-agent").display().to_string()
}

fn config(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("config.json");
    let text =
        serde_json::json!({"agents": [{"name": "demo", "title": "Demo", "command": demo()}], "channels": []});
    std::fs::write(&path, text.to_string()).expect("write");
    path
}

fn spin_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let ctx = glib::MainContext::default();
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        ctx.iteration(true);
        if done() {
            return true;
        }
    }
    false
}

fn core_on(dir: &std::path::Path) -> (parley::core::services::Core, parley::core::events::EventReceiver) {
    parley::ui::runtime::start_core(Options {
        config_path: Some(config(dir)),
        watch: false,
        ..Default::default()
    })
    .expect("core")
}

/// The core alone: from Send to the end of the turn.
fn core_time(n: usize) -> Duration {
    let dir = tempfile::tempdir().expect("tempdir");
    let (core, rx) = core_on(dir.path());
    parley::ui::runtime::runtime().block_on(async {
        core.supervisor.start("demo").await.expect("start");
        while rx.try_recv().is_ok() {}
        let t = Instant::now();
        core.chat.send("demo", &format!("flood {n} 40")).expect("send");
        while let Ok(e) = rx.recv().await {
            if matches!(&e, Event::TurnChanged(t) if !t.busy) {
                break;
            }
        }
        let took = t.elapsed();
        core.shutdown().await;
        took
    })
}

fn window_time(app: &adw::Application, n: usize) -> (Duration, Duration, usize, usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (core, rx) = core_on(dir.path());
    let win = ParleyWindow::new(app, core.clone());
    parley::ui::bridge::attach(&win, rx);
    win.set_default_size(1100, 720);
    win.present();
    spin_until(Duration::from_secs(10), || win.is_mapped());
    win.select_agent("demo");
    parley::ui::runtime::runtime()
        .block_on(core.supervisor.start("demo"))
        .expect("start");
    spin_until(Duration::from_millis(300), || false);

    let frames: Rc<RefCell<Vec<Instant>>> = Rc::default();
    let clock = win.frame_clock().expect("frame clock");
    let f = frames.clone();
    let handler = clock.connect_after_paint(move |_| f.borrow_mut().push(Instant::now()));
    let expected = n * 40;
    let t = Instant::now();
    win.imp()
        .composer_text
        .buffer()
        .set_text(&format!("flood {n} 40"));
    win.send();
    // Until the whole text is in the conversation's model and a frame was
    // painted after that.
    let w = win.clone();
    spin_until(Duration::from_secs(600), move || {
        let len = w
            .imp_conversation("demo")
            .and_then(|store| store.item(store.n_items().saturating_sub(1)))
            .and_downcast::<parley::ui::models::MessageObject>()
            .and_then(|m| m.message())
            .map(|m| m.text().len())
            .unwrap_or(0);
        len >= expected && w.agent("demo").is_some_and(|a| !a.answering())
    });
    let painted_at = frames.borrow().len();
    spin_until(Duration::from_secs(30), || frames.borrow().len() > painted_at);
    let total = t.elapsed();
    clock.disconnect(handler);
    let frames = frames.borrow();
    let worst = frames.windows(2).map(|w| w[1] - w[0]).max().unwrap_or_default();
    let over_50 = frames
        .windows(2)
        .filter(|w| w[1] - w[0] > Duration::from_millis(50))
        .count();
    win.close();
    parley::ui::runtime::runtime().block_on(core.shutdown());
    (total, worst, frames.len(), over_50)
}

/// Exec → first painted frame of `parley` (which quits right after it).
fn startup(dir: &std::path::Path) -> Duration {
    let exe = std::env::current_exe().expect("exe");
    let parley = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target dir")
        .join("parley");
    let t = Instant::now();
    let status = std::process::Command::new(parley)
        .arg(config(dir))
        .env("PARLEY_EXIT_AFTER_FIRST_FRAME", "1")
        .env("XDG_STATE_HOME", dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("parley");
    assert!(status.success());
    t.elapsed()
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("benchmarks run with `xvfb-run -a cargo bench --bench window`");
        return;
    }
    if std::env::var_os("DISPLAY").is_none() {
        eprintln!("needs a display: GSK_RENDERER=cairo xvfb-run -a cargo bench --bench window");
        std::process::exit(1);
    }
    std::env::set_var("GSETTINGS_BACKEND", "memory");
    gtk::init().expect("gtk");
    adw::init().expect("adw");
    let app = adw::Application::new(
        Some("io.github.parley.ParleyBench"),
        gtk::gio::ApplicationFlags::NON_UNIQUE,
    );
    app.register(gtk::gio::Cancellable::NONE).expect("register");
    let _hold = app.hold();
    parley::ui::application::load_css();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut times: Vec<Duration> = (0..7).map(|_| startup(dir.path())).collect();
    times.sort();
    println!(
        "start-up: exec to first frame, median of 7: {:.0} ms (min {:.0}, max {:.0}; goal ≤ 300 ms)",
        times[3].as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3,
        times[6].as_secs_f64() * 1e3
    );
    // `-- 20000` measures one size (for profiling).
    let sizes: Vec<usize> = std::env::args().filter_map(|a| a.parse().ok()).collect();
    let sizes = if sizes.is_empty() {
        vec![2_000, 20_000, 100_000]
    } else {
        sizes
    };
    for n in sizes {
        let core = core_time(n);
        let (total, worst, frames, over_50) = window_time(&app, n);
        println!(
            "stream {n:>7} chunks: window {:>8.1} ms, core {:>7.1} ms, ratio {:>6.2} (goal ≤ 1.5); {frames} frames, longest gap {:>6.1} ms, {over_50} over 50 ms",
            total.as_secs_f64() * 1e3,
            core.as_secs_f64() * 1e3,
            total.as_secs_f64() / core.as_secs_f64(),
            worst.as_secs_f64() * 1e3
        );
    }
}
