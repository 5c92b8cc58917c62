//! Idle at rest (`-- idle`): a window with a 20,000-message conversation
//! open, scrolled to its middle, and nothing changing, for 30 s: the frames
//! painted (goal 0) and the main thread's wake-ups (goal ≤ 1 a second on
//! average). Then the same with the agent `busy` but silent, and with 4
//! other agents streaming into conversations that are not shown: the shown
//! conversation's text blocks draw nothing (goal 0).
//!
//! The wait itself runs a plain `glib::MainLoop` with one timeout, so the
//! bench adds one wake-up to the 30 s (the `spin_until` of the other
//! figures wakes the loop ten times a second).

use std::cell::Cell;

use gtk::glib::translate::IntoGlib;

use super::*;

/// What 30 s at rest came to.
struct Rest {
    /// Frame clock cycles (the bridge runs one for each batch of events,
    /// whether or not anything is drawn), and those in which the window
    /// was drawn (its surface rendered some damage).
    frames: u64,
    rendered: u64,
    wakeups: u64,
    /// All threads' wake-ups (the main thread's included).
    process_wakeups: u64,
    /// Text blocks drawn (any conversation's; only the shown one can be).
    drawn: u64,
    /// The main thread's time on a core.
    on_core: Duration,
    span: Duration,
}

/// Voluntary context switches of all the process's threads (the core's
/// runtime and the history's writer too): the process's wake-ups.
fn process_wakeups() -> u64 {
    figures::wakeups("self")
}

/// The main thread's voluntary context switches so far: each is a time it
/// slept (in `poll`, mostly) and was woken.
fn wakeups() -> u64 {
    std::fs::read_to_string("/proc/thread-self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

thread_local! {
    /// Renders of any surface on this thread (`count_renders`).
    static RENDERS: Cell<u64> = const { Cell::new(0) };
}

/// Counts every emission of `GdkSurface::render` (the surface drawing
/// some damage). A handler cannot: GTK's own handler, connected when the
/// window is realized, returns TRUE and ends the emission before a later
/// one runs; an emission hook runs before the handlers.
fn count_renders() {
    unsafe extern "C" fn hook(
        _hint: *mut glib::gobject_ffi::GSignalInvocationHint,
        _n: u32,
        _params: *const glib::gobject_ffi::GValue,
        _data: glib::ffi::gpointer,
    ) -> glib::ffi::gboolean {
        RENDERS.with(|r| r.set(r.get() + 1));
        glib::ffi::GTRUE
    }
    let id = glib::subclass::signal::SignalId::lookup("render", gtk::gdk::Surface::static_type())
        .expect("GdkSurface::render");
    // SAFETY: the hook only touches this thread's counter; it stays for the
    // process's life (no destroy notify needed for null data).
    unsafe {
        glib::gobject_ffi::g_signal_add_emission_hook(
            id.into_glib(),
            0,
            Some(hook),
            std::ptr::null_mut(),
            None,
        );
    }
}

fn rest(win: &ParleyWindow, span: Duration) -> Rest {
    let clock = win.frame_clock().expect("frame clock");
    let frames = Rc::new(Cell::new(0u64));
    let f = frames.clone();
    let handler = clock.connect_after_paint(move |_| f.set(f.get() + 1));
    let main_loop = glib::MainLoop::new(None, false);
    let m = main_loop.clone();
    glib::timeout_add_local_once(span, move || m.quit());
    let (drawn, woken, all_woken, sched, renders) = (
        parley::ui::widgets::text_block::drawn(),
        wakeups(),
        process_wakeups(),
        schedstat(),
        RENDERS.with(Cell::get),
    );
    main_loop.run();
    let rest = Rest {
        frames: frames.get(),
        rendered: RENDERS.with(Cell::get) - renders,
        wakeups: wakeups() - woken,
        process_wakeups: process_wakeups().saturating_sub(all_woken),
        drawn: parley::ui::widgets::text_block::drawn() - drawn,
        on_core: schedstat().on_core.saturating_sub(sched.on_core),
        span,
    };
    clock.disconnect(handler);
    rest
}

impl Rest {
    fn per_second(&self) -> f64 {
        self.wakeups as f64 / self.span.as_secs_f64()
    }

    fn say(&self, what: &str) {
        println!(
            "idle {what}: the whole process (every thread) woke {} times ({:.2} a second)   goal: ≤ 1 a second",
            self.process_wakeups,
            self.process_wakeups as f64 / self.span.as_secs_f64()
        );
        println!(
            "idle {what}: {} frame clock cycles, {} drawn, {} main-loop wake-ups ({:.2} a second), text blocks drawn {}, main thread on a core {:.1} ms, over {:.0} s   goals: 0 frames, ≤ 1 wake-up a second",
            self.frames,
            self.rendered,
            self.wakeups,
            self.per_second(),
            self.drawn,
            self.on_core.as_secs_f64() * 1e3,
            self.span.as_secs_f64()
        );
    }

    fn record(&self, what: &str) {
        figures::record(
            &format!("idle {what}, frames drawn in 30 s"),
            self.rendered as f64,
            "frames",
            None,
            Some(0.0),
        );
        figures::record(
            &format!("idle {what}, frame clock cycles in 30 s"),
            self.frames as f64,
            "frames",
            None,
            None,
        );
        figures::record(
            &format!("idle {what}, main-loop wake-ups a second"),
            self.per_second(),
            "wake-ups/s",
            None,
            Some(1.0),
        );
        figures::record(
            &format!("idle {what}, process wake-ups a second (all threads)"),
            self.process_wakeups as f64 / self.span.as_secs_f64(),
            "wake-ups/s",
            None,
            Some(1.0),
        );
    }
}

pub fn idle_figure(app: &adw::Application) {
    figures::command("GSK_RENDERER=cairo xvfb-run -a cargo bench --bench window -- idle");
    let span = Duration::from_secs(
        std::env::var("PARLEY_BENCH_IDLE_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(30),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let names: Vec<String> = std::iter::once("demo".to_owned())
        .chain((1..=4).map(|i| format!("other{i}")))
        .collect();
    let (core, rx) = core_with(dir.path(), &names);
    let win = shown_window(app, &core, rx);
    win.select_agent("demo");
    parley::ui::runtime::runtime()
        .block_on(core.agents.start("demo"))
        .expect("start");
    spin_until(Duration::from_millis(500), || false);
    let store = win
        .agent("demo")
        .expect("the demo agent")
        .conversation()
        .messages();
    while store.n_items() < 20_000 {
        let from = store.n_items() as usize;
        let objects: Vec<parley::ui::models::MessageObject> = (from..from + 500)
            .map(|i| parley::ui::models::MessageObject::new(long_message(i)))
            .collect();
        store.splice(store.n_items(), 0, &objects);
        spin_until(Duration::from_millis(50), || false);
    }
    // To the middle, and let the rows come and the composer's cursor stop
    // blinking (GTK stops it after 10 s without a key).
    spin_until(Duration::from_secs(1), || false);
    let adjustment = win.conversation_view().scroller().vadjustment();
    count_renders();
    let before = RENDERS.with(Cell::get);
    adjustment.set_value((adjustment.upper() - adjustment.page_size()) / 2.0);
    spin_until(Duration::from_secs(11), || false);
    // The counter counts: scrolling drew.
    assert!(
        RENDERS.with(Cell::get) > before,
        "the scroll was not counted as drawn"
    );
    let at_rest = rest(&win, span);
    at_rest.say("with 20,000 messages scrolled to the middle");
    at_rest.record("with 20,000 messages");

    // Sends spawn on the core's runtime.
    let _runtime = parley::ui::runtime::runtime().enter();
    // Busy and silent: a turn that says nothing for longer than the span.
    core.chat
        .send("demo", &format!("silent {}", span.as_secs() + 60))
        .expect("send");
    let w = win.clone();
    spin_until(Duration::from_secs(10), move || {
        w.agent("demo").is_some_and(|a| a.conversation().answering())
    });
    spin_until(Duration::from_secs(11), || false);
    let silent = rest(&win, span);
    silent.say("with the agent busy but silent");
    silent.record("with the agent busy but silent");

    // Four agents stream (100 chunks a second each) into conversations
    // that are not shown.
    let runtime = parley::ui::runtime::runtime();
    for name in &names[1..] {
        runtime.block_on(core.agents.start(name)).expect("start");
        core.chat
            .send(name, &format!("slow {} 10", span.as_millis() / 10 + 1_000))
            .expect("send");
    }
    spin_until(Duration::from_secs(2), || false);
    let hidden = rest(&win, span);
    hidden.say("with 4 agents streaming into conversations not shown");
    println!(
        "  (the sidebar's rows of the streaming agents may draw; the shown conversation's text should not)"
    );
    figures::record(
        "idle with 4 hidden streams, the shown conversation's text drawn in 30 s",
        hidden.drawn as f64,
        "blocks",
        None,
        Some(0.0),
    );
    figures::record(
        "idle with 4 hidden streams, frames drawn in 30 s",
        hidden.rendered as f64,
        "frames",
        None,
        None,
    );
    figures::record(
        "idle with 4 hidden streams, frame clock cycles in 30 s",
        hidden.frames as f64,
        "frames",
        None,
        None,
    );
    win.close();
    runtime.block_on(core.shutdown());
}
