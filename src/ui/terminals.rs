//! The ACP terminals as the window shows them: what each has printed (its
//! last 2 MiB, for a view made later) and how it ended, fed live to every
//! view of it (VTE, in a tool card). Main thread only; `AppModel::apply`
//! feeds it from `terminal:output` and `terminal:exited`.

use std::cell::RefCell;
use std::collections::HashMap;

use gtk::glib;
use gtk::prelude::*;

use crate::ui::widgets::terminal::Terminal;

/// Kept per terminal for views made after the output came.
const KEPT: usize = 2 << 20;
/// Fed to the views in one go, at most (one piece a frame, so a flood of
/// output never holds the main loop); what waits beyond the last 1 MiB is
/// dropped, as the views' own scrollback (10,000 lines) would drop it.
const FEED_PIECE: usize = 128 << 10;
const FEED_WAITING: usize = 1 << 20;

#[derive(Default)]
struct Entry {
    text: String,
    /// Every byte it printed, kept or not (for the benchmarks).
    total: usize,
    exited: Option<String>,
    views: Vec<(glib::WeakRef<gtk::Widget>, glib::WeakRef<gtk::Label>)>,
    /// Output not yet fed to the views.
    waiting: String,
    feeding: bool,
    /// When it was first seen (the oldest are forgotten first).
    seq: u64,
}

/// How many terminals' output is kept; beyond it, the oldest without a
/// view are forgotten (their cards then start empty).
const TERMINALS_KEPT: usize = 64;

thread_local! {
    static NEXT_SEQ: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

fn entry<'a>(t: &'a mut HashMap<String, Entry>, id: &str) -> &'a mut Entry {
    if !t.contains_key(id) {
        if t.len() >= TERMINALS_KEPT {
            let oldest = t
                .iter()
                .filter(|(_, e)| e.views.iter().all(|(w, _)| w.upgrade().is_none()))
                .min_by_key(|(_, e)| e.seq)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                t.remove(&k);
            }
        }
        let seq = NEXT_SEQ.with(|n| {
            n.set(n.get() + 1);
            n.get()
        });
        t.insert(
            id.to_owned(),
            Entry {
                seq,
                ..Default::default()
            },
        );
    }
    t.get_mut(id).unwrap_or_else(|| unreachable!("inserted above"))
}

fn cut_front(text: &mut String, keep: usize) {
    if text.len() > keep {
        let mut cut = text.len() - keep;
        while !text.is_char_boundary(cut) {
            cut += 1;
        }
        text.drain(..cut);
    }
}

thread_local! {
    static TERMINALS: RefCell<HashMap<String, Entry>> = RefCell::new(HashMap::new());
}

/// "Exited with status 0", "Ended by SIGKILL".
pub fn exit_text(code: Option<u32>, signal: Option<&str>) -> String {
    match (code, signal) {
        (_, Some(signal)) => crate::i18n::gettext_f("Ended by {signal}", &[("signal", signal)]),
        (Some(code), None) => {
            crate::i18n::gettext_f("Exited with status {code}", &[("code", &code.to_string())])
        }
        (None, None) => crate::i18n::gettext("Ended"),
    }
}

pub fn output(id: &str, data: &str) {
    TERMINALS.with(|t| {
        let mut t = t.borrow_mut();
        let e = entry(&mut t, id);
        e.total += data.len();
        e.text.push_str(data);
        // Cut back to KEPT only past twice it: a cut moves the whole text,
        // and a 10 MB build log comes in hundreds of pieces.
        if e.text.len() > 2 * KEPT {
            cut_front(&mut e.text, KEPT);
        }
        if e.views.is_empty() {
            return;
        }
        e.waiting.push_str(data);
        if e.waiting.len() > 2 * FEED_WAITING {
            cut_front(&mut e.waiting, FEED_WAITING);
        }
        if !e.feeding {
            e.feeding = true;
            schedule_feed(id.to_owned());
        }
    });
}

/// Feeds one piece of what waits to the views, then again after the next
/// frame's worth of time while more waits.
fn schedule_feed(id: String) {
    glib::timeout_add_local_once(std::time::Duration::from_millis(8), move || {
        let again = TERMINALS.with(|t| {
            let mut t = t.borrow_mut();
            let Some(e) = t.get_mut(&id) else { return false };
            let mut end = e.waiting.len().min(FEED_PIECE);
            while !e.waiting.is_char_boundary(end) {
                end += 1;
            }
            let piece: String = e.waiting.drain(..end).collect();
            e.views.retain(|(w, _)| {
                let Some(widget) = w.upgrade() else { return false };
                Terminal::from_widget(widget).feed(&piece);
                true
            });
            if e.views.is_empty() {
                e.waiting.clear();
            }
            e.feeding = !e.waiting.is_empty();
            e.feeding
        });
        if again {
            schedule_feed(id);
        }
    });
}

/// Whether every view has been fed all that came (for tests and benches).
pub fn all_fed() -> bool {
    TERMINALS.with(|t| t.borrow().values().all(|e| e.waiting.is_empty()))
}

pub fn exited(id: &str, code: Option<u32>, signal: Option<&str>) {
    let text = exit_text(code, signal);
    TERMINALS.with(|t| {
        let mut t = t.borrow_mut();
        let e = entry(&mut t, id);
        let lines = printed_lines(&e.text);
        for (widget, label) in &e.views {
            if let Some(label) = label.upgrade() {
                label.set_label(&text);
            }
            if let Some(widget) = widget.upgrade() {
                Terminal::from_widget(widget).fit_lines(lines, SHORT_ROWS);
            }
        }
        e.exited = Some(text);
    });
}

/// How many bytes every terminal printed so far, all together.
pub fn total_bytes() -> usize {
    TERMINALS.with(|t| t.borrow().values().map(|e| e.total).sum())
}

/// How many rows a finished terminal shows before it scrolls (the
/// "Show at Full Height" button shows more).
const SHORT_ROWS: usize = 12;

/// The rows a command's output takes: its lines, and the row the cursor
/// was left on after the last line break (fewer, and the first line would
/// scroll out of sight).
fn printed_lines(text: &str) -> usize {
    text.split('\n').count()
}

/// A read-only view of terminal `id`: what it printed so far, then live.
pub fn view(id: &str) -> gtk::Widget {
    let column = gtk::Box::new(gtk::Orientation::Vertical, 4);
    let terminal = Terminal::new();
    terminal.set_read_only();
    let widget = terminal.widget().clone();
    widget.set_size_request(-1, 200);
    widget.set_hexpand(true);
    crate::ui::a11y::set_label(&widget, &crate::i18n::gettext("Terminal"));
    let frame = gtk::Frame::new(None);
    frame.set_child(Some(&widget));
    column.append(&frame);
    let bar = gtk::Box::new(gtk::Orientation::Horizontal, 6);
    let status = gtk::Label::new(Some(&crate::i18n::gettext("Running…")));
    status.add_css_class("dim-label");
    status.add_css_class("caption");
    status.set_hexpand(true);
    status.set_xalign(0.0);
    bar.append(&status);
    let copy = gtk::Button::from_icon_name("edit-copy-symbolic");
    copy.add_css_class("flat");
    copy.set_tooltip_text(Some(&crate::i18n::gettext("Copy the Output")));
    crate::ui::a11y::set_label(&copy, &crate::i18n::gettext("Copy the Output"));
    let t = terminal.clone();
    copy.connect_clicked(move |_| t.copy_all());
    bar.append(&copy);
    let tall = gtk::ToggleButton::new();
    tall.set_icon_name("view-fullscreen-symbolic");
    tall.add_css_class("flat");
    tall.set_tooltip_text(Some(&crate::i18n::gettext("Show at Full Height")));
    crate::ui::a11y::set_label(&tall, &crate::i18n::gettext("Show at Full Height"));
    let w = widget.clone();
    tall.connect_toggled(move |b| {
        let t = Terminal::from_widget(w.clone());
        match (b.is_active(), t.fitted_lines()) {
            (true, _) => w.set_size_request(-1, 640),
            // Back to the lines a finished command printed.
            (false, Some(lines)) => {
                t.fit_lines(lines, SHORT_ROWS);
            }
            (false, None) => w.set_size_request(-1, 200),
        }
    });
    bar.append(&tall);
    column.append(&bar);
    TERMINALS.with(|t| {
        let mut t = t.borrow_mut();
        let e = entry(&mut t, id);
        // What it printed so far, less what still waits to be fed.
        let fed = e.text.len().saturating_sub(e.waiting.len());
        let mut end = fed;
        while !e.text.is_char_boundary(end) {
            end -= 1;
        }
        let shown = &e.text[..end];
        let mut start = shown.len().saturating_sub(FEED_WAITING);
        while !shown.is_char_boundary(start) {
            start += 1;
        }
        terminal.feed(&shown[start..]);
        if let Some(text) = &e.exited {
            status.set_label(text);
            terminal.fit_lines(printed_lines(&e.text), SHORT_ROWS);
        }
        e.views.push((widget.downgrade(), status.downgrade()));
    });
    column.upcast()
}
