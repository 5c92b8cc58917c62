//! Subagents (`-- subagents`): one agent's 5 helpers stream 25,000 chunks
//! of 40 bytes each at once (the demo agent's `subagents-flood 5 25000
//! 40`) into the shown conversation. Once with their threads collapsed
//! (goal: no more than one visible stream costs, window ÷ core ≤ 1.2, as
//! the stream figure's), once with all 5 open (goal: the frame goals of 8
//! agents at once, window ÷ core ≤ 1.3 and no frame with over 16 ms of
//! work). The core's own time for the same turn is the floor of each run.

use super::*;

const HELPERS: usize = 5;
const CHUNKS: usize = 25_000;
const BYTES: usize = 40;

/// The text the window holds of each helper's thread, in all.
fn threads_text(win: &ParleyWindow) -> Vec<usize> {
    let Some(agent) = win.agent("demo") else {
        return Vec::new();
    };
    let threads = agent.conversation().subagents();
    (0..HELPERS)
        .filter_map(|i| find_helper(&threads, i))
        .map(|o| {
            o.with_messages(|m| {
                m.iter()
                    .flat_map(|m| m.parts.iter())
                    .map(|p| match p {
                        parley::core::types::message::Part::Text { text } => text.len(),
                        _ => 0,
                    })
                    .sum()
            })
        })
        .collect()
}

/// Helper `i` (titled "Helper i+1"), whatever its session id.
fn find_helper(
    threads: &parley::ui::models::SubagentThreads,
    i: usize,
) -> Option<parley::ui::models::SubagentObject> {
    let title = format!("Helper {}", i + 1);
    threads.all().into_iter().find(|o| o.info().title == title)
}

/// One run: the window's time until all helpers' text is in and the turn
/// ended, its frames, and the core's own time for the same turn.
fn run(app: &adw::Application, expanded: bool) -> (Duration, Duration, FrameSummary) {
    let prompt = format!("subagents-flood {HELPERS} {CHUNKS} {BYTES}");
    let names = vec!["demo".to_owned()];
    let core = formatted::core_time_of(&names, &[("demo".to_owned(), prompt.clone())]);
    let dir = tempfile::tempdir().expect("tempdir");
    let (core_handle, rx) = core_with(dir.path(), &names);
    let win = shown_window(app, &core_handle, rx);
    let runtime = parley::ui::runtime::runtime();
    runtime.block_on(core_handle.agents.start("demo")).expect("start");
    win.select_agent("demo");
    spin_until(Duration::from_millis(300), || false);
    let log = log_frames(&win.frame_clock().expect("frame clock"));
    let _entered = runtime.enter();
    let t = Instant::now();
    core_handle.chat.send("demo", &prompt).expect("send");
    if expanded {
        // Opened as soon as their cards are drawn (the stream goes on).
        let w = win.clone();
        spin_until(Duration::from_secs(20), move || {
            let cards = expanders(&w);
            if cards.len() < HELPERS {
                return false;
            }
            for e in cards {
                e.set_expanded(true);
            }
            true
        });
    }
    let expected = CHUNKS * BYTES;
    let w = win.clone();
    let done = spin_until(Duration::from_secs(120), move || {
        let lens = threads_text(&w);
        lens.len() == HELPERS
            && lens.iter().all(|l| *l >= expected)
            && w.agent("demo").is_some_and(|a| !a.conversation().answering())
    });
    assert!(done, "the helpers' streams did not end: {:?}", threads_text(&win));
    let took = t.elapsed();
    let painted = log.frames.borrow().len();
    spin_until(Duration::from_secs(10), || log.frames.borrow().len() > painted);
    let frames = FrameSummary::of(&log.finish());
    if expanded {
        // Kept open, drawn or not (the list binds only its page's rows).
        let threads = win.agent("demo").expect("demo").conversation().subagents();
        let open = (0..HELPERS)
            .filter(|i| find_helper(&threads, *i).is_some_and(|o| o.expanded()))
            .count();
        assert_eq!(open, HELPERS, "the threads were not open");
    }
    win.close();
    runtime.block_on(core_handle.shutdown());
    (took, core, frames)
}

/// The helpers' cards in the shown conversation.
fn expanders(win: &ParleyWindow) -> Vec<gtk::Expander> {
    let mut out = Vec::new();
    parley::ui::a11y::for_each_descendant(win.conversation_view().message_list().upcast_ref(), &mut |w| {
        if let Some(e) = w.downcast_ref::<gtk::Expander>() {
            // A card: its expander sits in the card's top row.
            let card = w.parent().and_then(|row| row.parent());
            if card.is_some_and(|c| c.has_css_class("subagent-thread")) {
                out.push(e.clone());
            }
        }
    });
    out
}

pub fn subagents_figure(app: &adw::Application) {
    figures::command("GSK_RENDERER=cairo xvfb-run -a cargo bench --bench window -- subagents");
    for (expanded, what, goal) in [
        (false, "5 subagents × 25,000 chunks, threads collapsed", 1.2),
        (true, "5 subagents × 25,000 chunks, threads open", 1.3),
    ] {
        let mut runs = Vec::new();
        for _ in 0..3 {
            let (took, core, frames) = run(app, expanded);
            println!(
                "  {what}: window {:.0} ms, core {:.0} ms, ratio {:.2}; frames: {}; most work in a frame {:.1} ms",
                took.as_secs_f64() * 1e3,
                core.as_secs_f64() * 1e3,
                took.as_secs_f64() / core.as_secs_f64(),
                frames.why_long(),
                frames.most_work.as_secs_f64() * 1e3
            );
            runs.push((took, core, frames.work_over_16));
        }
        formatted::record_runs_with_goal(what, &runs, goal);
    }
}
