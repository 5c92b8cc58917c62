//! The ACP terminals as the window keeps them: what each has printed (its
//! last 2 MiB, for a view made later) and how it ended, fed live to every
//! view of it, one piece a frame. `AppModel` owns it and applies
//! `terminal:output` and `terminal:exited` to it; views (VTE, in a tool
//! card) watch it through [`TerminalView`] and never the other way round.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::{Rc, Weak};

use gtk::glib;

/// Kept per terminal for views made after the output came.
const KEPT: usize = 2 << 20;
/// Fed to the views in one go, at most (one piece a frame, so a flood of
/// output never holds the main loop); what waits beyond the last 1 MiB is
/// dropped, as the views' own scrollback (10,000 lines) would drop it.
const FEED_PIECE: usize = 128 << 10;
pub const FEED_WAITING: usize = 1 << 20;
/// How many terminals' output is kept; beyond it, the oldest without a
/// view are forgotten (their cards then start empty).
const TERMINALS_KEPT: usize = 64;

/// What shows a terminal: it is fed what the terminal prints, and told
/// how it ended. The model holds it weakly; the view keeps it alive.
pub trait TerminalView {
    fn feed(&self, piece: &str);
    /// The terminal ended (`text` says how) after printing `lines` lines.
    fn exited(&self, text: &str, lines: usize);
}

/// What a view made now starts from.
pub struct Snapshot {
    /// What it printed so far (its last `FEED_WAITING` bytes), less what
    /// still waits to be fed.
    pub text: String,
    /// How it ended and how many lines it printed, if it has.
    pub exited: Option<(String, usize)>,
}

#[derive(Default)]
struct Entry {
    text: String,
    /// Every byte it printed, kept or not (for the benchmarks).
    total: usize,
    exited: Option<String>,
    views: Vec<Weak<dyn TerminalView>>,
    /// Output not yet fed to the views.
    waiting: String,
    feeding: bool,
    /// When it was first seen (the oldest are forgotten first).
    seq: u64,
}

impl Entry {
    fn has_views(&self) -> bool {
        self.views.iter().any(|v| v.strong_count() > 0)
    }
}

#[derive(Default)]
struct Inner {
    entries: RefCell<HashMap<String, Entry>>,
    next_seq: Cell<u64>,
}

/// The terminals' output, by terminal id; cheap to clone (main thread only).
#[derive(Clone, Default)]
pub struct TerminalOutputs {
    inner: Rc<Inner>,
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

/// The rows a command's output takes: its lines, and the row the cursor
/// was left on after the last line break (fewer, and the first line would
/// scroll out of sight).
fn printed_lines(text: &str) -> usize {
    text.split('\n').count()
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

impl TerminalOutputs {
    fn with_entry<T>(&self, id: &str, f: impl FnOnce(&mut Entry) -> T) -> T {
        let mut t = self.inner.entries.borrow_mut();
        if !t.contains_key(id) {
            if t.len() >= TERMINALS_KEPT {
                let oldest = t
                    .iter()
                    .filter(|(_, e)| !e.has_views())
                    .min_by_key(|(_, e)| e.seq)
                    .map(|(k, _)| k.clone());
                if let Some(k) = oldest {
                    t.remove(&k);
                }
            }
            let seq = self.inner.next_seq.get() + 1;
            self.inner.next_seq.set(seq);
            t.insert(
                id.to_owned(),
                Entry {
                    seq,
                    ..Default::default()
                },
            );
        }
        let e = t.get_mut(id).unwrap_or_else(|| unreachable!("inserted above"));
        f(e)
    }

    /// Takes `terminal:output`.
    pub fn output(&self, id: &str, data: &str) {
        let start = self.with_entry(id, |e| {
            e.total += data.len();
            e.text.push_str(data);
            // Cut back to KEPT only past twice it: a cut moves the whole
            // text, and a 10 MB build log comes in hundreds of pieces.
            if e.text.len() > 2 * KEPT {
                cut_front(&mut e.text, KEPT);
            }
            if !e.has_views() {
                return false;
            }
            e.waiting.push_str(data);
            if e.waiting.len() > 2 * FEED_WAITING {
                cut_front(&mut e.waiting, FEED_WAITING);
            }
            !std::mem::replace(&mut e.feeding, true)
        });
        if start {
            self.schedule_feed(id.to_owned());
        }
    }

    /// Feeds one piece of what waits to the views, then again after the
    /// next frame's worth of time while more waits.
    fn schedule_feed(&self, id: String) {
        let weak = Rc::downgrade(&self.inner);
        glib::timeout_add_local_once(std::time::Duration::from_millis(8), move || {
            let Some(inner) = weak.upgrade() else { return };
            let this = TerminalOutputs { inner };
            let (piece, views) = {
                let mut t = this.inner.entries.borrow_mut();
                let Some(e) = t.get_mut(&id) else { return };
                let mut end = e.waiting.len().min(FEED_PIECE);
                while !e.waiting.is_char_boundary(end) {
                    end += 1;
                }
                let piece: String = e.waiting.drain(..end).collect();
                e.views.retain(|v| v.strong_count() > 0);
                if e.views.is_empty() {
                    e.waiting.clear();
                }
                (piece, e.views.clone())
            };
            // Fed outside the borrow: a view may ask the model again.
            for view in views.iter().filter_map(Weak::upgrade) {
                view.feed(&piece);
            }
            let again = this
                .inner
                .entries
                .borrow_mut()
                .get_mut(&id)
                .map(|e| {
                    e.feeding = !e.waiting.is_empty();
                    e.feeding
                })
                .unwrap_or(false);
            if again {
                this.schedule_feed(id);
            }
        });
    }

    /// Takes `terminal:exited`.
    pub fn exited(&self, id: &str, code: Option<u32>, signal: Option<&str>) {
        let text = exit_text(code, signal);
        let (views, lines) = self.with_entry(id, |e| {
            e.exited = Some(text.clone());
            (e.views.clone(), printed_lines(&e.text))
        });
        for view in views.iter().filter_map(Weak::upgrade) {
            view.exited(&text, lines);
        }
    }

    /// `view` shows terminal `id` from now on; answers what it starts from.
    pub fn watch(&self, id: &str, view: &Rc<dyn TerminalView>) -> Snapshot {
        self.with_entry(id, |e| {
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
            e.views.retain(|v| v.strong_count() > 0);
            e.views.push(Rc::downgrade(view));
            Snapshot {
                text: shown[start..].to_owned(),
                exited: e.exited.clone().map(|t| (t, printed_lines(&e.text))),
            }
        })
    }

    /// Whether every view has been fed all that came (for tests and benches).
    pub fn all_fed(&self) -> bool {
        self.inner.entries.borrow().values().all(|e| e.waiting.is_empty())
    }

    /// How many bytes every terminal printed so far, all together.
    pub fn total_bytes(&self) -> usize {
        self.inner.entries.borrow().values().map(|e| e.total).sum()
    }
}
