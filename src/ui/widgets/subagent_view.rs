//! A subagent in the conversation: its thread where it was started (a
//! card that expands: collapsed, its title, status and what it does now;
//! expanded, its messages drawn as a conversation's, a helper of its own
//! nested inside), and what one session told another.

use std::cell::RefCell;
use std::rc::Rc;

use gtk::glib;
use gtk::prelude::*;

use crate::core::types::message::Part;
use crate::core::types::session_note::SessionNote;
use crate::core::types::subagent::{Subagent, SubagentStatus};
use crate::i18n::{gettext, gettext_f};
use crate::ui::markdown::visible;
use crate::ui::models::{SubagentObject, SubagentThreads, TerminalOutputs};

/// An expanded thread draws at most its last this many parts (the rest
/// are in the export and the history).
const SHOWN_PARTS: usize = 200;
/// Threads nest at most this deep in the window.
const MAX_DEPTH: usize = 6;

/// How the conversation draws a part and Markdown, handed in by
/// `message_parts` (a thread draws what the conversation draws; this file
/// does not reach back into that one).
#[derive(Clone, Copy)]
pub(super) struct Drawing {
    pub part: fn(&Part, &TerminalOutputs, &SubagentThreads) -> gtk::Widget,
    pub markdown: fn(&gtk::Box, &str),
}

/// The status as words, and its icon.
pub fn status_words(s: &Subagent) -> (String, &'static str) {
    match s.status {
        SubagentStatus::Working if s.stalled => (gettext("not responding"), "dialog-warning-symbolic"),
        SubagentStatus::Working => (gettext("working"), "content-loading-symbolic"),
        SubagentStatus::Waiting => (gettext("waiting for you"), "dialog-question-symbolic"),
        SubagentStatus::Done => (gettext("done"), "object-select-symbolic"),
        SubagentStatus::Failed => match &s.error {
            Some(e) => (
                gettext_f("failed: {error}", &[("error", &visible(e))]),
                "dialog-error-symbolic",
            ),
            None => (gettext("failed"), "dialog-error-symbolic"),
        },
        SubagentStatus::Cancelled => (gettext("cancelled"), "process-stop-symbolic"),
        SubagentStatus::Unknown => (gettext("status unknown"), "dialog-question-symbolic"),
    }
}

/// What a screen reader hears of a helper.
pub fn spoken(s: &Subagent) -> String {
    let (status, _) = status_words(s);
    let title = visible(&s.title);
    if s.summary.is_empty() || !s.status.is_active() {
        gettext_f(
            "Subagent {title}, {status}",
            &[("title", &title), ("status", &status)],
        )
    } else {
        gettext_f(
            "Subagent {title}, {status}: {summary}",
            &[
                ("title", &title),
                ("status", &status),
                ("summary", &visible(&s.summary)),
            ],
        )
    }
}

/// Where helper `session_id` was announced: its thread, unless a tool
/// call links it (its card is then drawn in that tool call's).
pub(super) fn thread(
    session_id: &str,
    terminals: &TerminalOutputs,
    threads: &SubagentThreads,
    draw: Drawing,
) -> gtk::Widget {
    thread_at(session_id, terminals, threads, draw, 0, true)
}

/// The threads of the helpers tool call `id` links, for its card.
pub(super) fn linked_threads(
    id: &str,
    terminals: &TerminalOutputs,
    threads: &SubagentThreads,
    draw: Drawing,
) -> Vec<gtk::Widget> {
    threads
        .linked_to(id)
        .iter()
        .map(|o| thread_at(&o.info().session_id, terminals, threads, draw, 0, false))
        .collect()
}

fn thread_at(
    session_id: &str,
    terminals: &TerminalOutputs,
    threads: &SubagentThreads,
    draw: Drawing,
    depth: usize,
    placeholder: bool,
) -> gtk::Widget {
    let Some(o) = threads.get(session_id) else {
        let l = gtk::Label::new(Some(&gettext("A subagent")));
        l.set_xalign(0.0);
        l.add_css_class("dim-label");
        return l.upcast();
    };
    let card = gtk::Box::new(gtk::Orientation::Vertical, 4);
    card.add_css_class("subagent-thread");
    let top = gtk::Box::new(gtk::Orientation::Horizontal, 8);
    let expander = gtk::Expander::new(None);
    expander.set_hexpand(true);
    let head = gtk::Box::new(gtk::Orientation::Vertical, 2);
    let line = gtk::Box::new(gtk::Orientation::Horizontal, 8);
    let icon = gtk::Image::builder()
        .accessible_role(gtk::AccessibleRole::Presentation)
        .build();
    let spinner = gtk::Spinner::new();
    let title = gtk::Label::new(None);
    title.set_xalign(0.0);
    title.set_hexpand(true);
    title.set_ellipsize(gtk::pango::EllipsizeMode::End);
    title.add_css_class("heading");
    let status = gtk::Label::new(None);
    status.add_css_class("caption");
    status.add_css_class("status");
    status.set_ellipsize(gtk::pango::EllipsizeMode::End);
    line.append(&icon);
    line.append(&spinner);
    line.append(&title);
    line.append(&status);
    let summary = gtk::Label::new(None);
    summary.set_xalign(0.0);
    summary.set_ellipsize(gtk::pango::EllipsizeMode::End);
    summary.add_css_class("caption");
    summary.add_css_class("dim-label");
    head.append(&line);
    head.append(&summary);
    expander.set_label_widget(Some(&head));
    expander.set_expanded(o.expanded());
    let body = gtk::Box::new(gtk::Orientation::Vertical, 6);
    body.add_css_class("subagent-body");
    expander.set_child(Some(&body));
    let cancel = gtk::Button::with_label(&gettext("Cancel"));
    cancel.add_css_class("flat");
    cancel.set_valign(gtk::Align::Start);
    cancel.set_action_name(Some("win.cancel-subagent"));
    cancel.set_action_target_value(Some(&session_id.to_variant()));
    top.append(&expander);
    top.append(&cancel);
    card.append(&top);

    let refresh = glib::clone!(
        #[weak]
        card,
        #[weak]
        expander,
        #[weak]
        icon,
        #[weak]
        spinner,
        #[weak]
        title,
        #[weak]
        status,
        #[weak]
        summary,
        #[weak]
        cancel,
        move |o: &SubagentObject| {
            let s = o.info();
            // Linked by a tool call, it is drawn in that call's card.
            card.set_visible(!(placeholder && s.tool_call.is_some()));
            let (words, icon_name) = status_words(&s);
            let shown_title = if s.title.is_empty() {
                gettext("A subagent")
            } else {
                visible(&s.title).into_owned()
            };
            title.set_label(&shown_title);
            title.set_tooltip_text(Some(&visible(&s.description)));
            status.set_label(&words);
            for c in ["failed", "completed"] {
                status.remove_css_class(c);
            }
            match s.status {
                SubagentStatus::Failed => status.add_css_class("failed"),
                SubagentStatus::Done => status.add_css_class("completed"),
                _ => {}
            }
            let working = s.status == SubagentStatus::Working && !s.stalled;
            spinner.set_visible(working);
            spinner.set_spinning(working);
            icon.set_visible(!working);
            icon.set_icon_name(Some(icon_name));
            summary.set_label(&visible(&s.summary));
            summary.set_visible(!s.summary.is_empty() && !expander.is_expanded() && s.status.is_active());
            cancel.set_visible(s.can_cancel && s.status.is_active());
            crate::ui::a11y::set_label(
                &cancel,
                &gettext_f("Cancel subagent {title}", &[("title", &shown_title)]),
            );
            crate::ui::a11y::set_label(&expander, &spoken(&s));
        }
    );
    refresh(&o);
    // What the body shows, part by part (only the parts that changed are
    // drawn again).
    let shown: Rc<RefCell<Vec<Shown>>> = Rc::default();
    let fill = glib::clone!(
        #[weak]
        expander,
        #[weak]
        body,
        #[strong]
        terminals,
        #[strong]
        threads,
        #[strong]
        shown,
        move |o: &SubagentObject| {
            if expander.is_expanded() {
                fill_body(
                    &body,
                    &mut shown.borrow_mut(),
                    o,
                    &terminals,
                    &threads,
                    draw,
                    depth,
                );
            }
        }
    );
    fill(&o);
    // Its status changes how its text is drawn (streamed: its end as
    // plain text; done: Markdown).
    let on_changed = {
        let (refresh, fill) = (refresh.clone(), fill.clone());
        move |o: &SubagentObject| {
            refresh(o);
            fill(o);
        }
    };
    // The handlers go with the card: the object outlives it.
    let handlers = RefCell::new(Some((
        o.connect_changed(on_changed),
        o.connect_thread_changed(fill.clone()),
    )));
    let weak = o.downgrade();
    card.connect_destroy(move |_| {
        if let (Some(o), Some((a, b))) = (weak.upgrade(), handlers.take()) {
            o.disconnect(a);
            o.disconnect(b);
        }
    });
    expander.connect_expanded_notify(glib::clone!(
        #[weak]
        o,
        #[weak]
        body,
        #[strong]
        shown,
        move |e| {
            o.set_expanded(e.is_expanded());
            if e.is_expanded() {
                fill(&o);
            } else {
                while let Some(c) = body.first_child() {
                    body.remove(&c);
                }
                shown.borrow_mut().clear();
            }
            refresh(&o);
        }
    ));
    card.upcast()
}

/// A part the body shows: which (message id and index; the note of what
/// is left out has id ""), at which revision, and its widget.
struct Shown {
    key: (String, usize),
    rev: u64,
    widget: gtk::Widget,
}

/// While a helper works its text is drawn as plain text, its last this
/// many bytes (Markdown of a growing text each frame would cost the
/// window as much as the text is long); once it is done, whole.
const STREAMED_TAIL: usize = 4096;
const STREAMED_LINES: usize = 8;
/// A finished text longer than this is drawn as its end too: Markdown of
/// a 400 KB text took a second of the main thread (the export has it
/// whole).
const MARKDOWN_MAX: usize = 64 * 1024;

/// The helper's thread (its last `SHOWN_PARTS` parts), brought in step
/// with `shown`: only the parts whose revision changed are drawn again.
fn fill_body(
    body: &gtk::Box,
    shown: &mut Vec<Shown>,
    o: &SubagentObject,
    terminals: &TerminalOutputs,
    threads: &SubagentThreads,
    draw: Drawing,
    depth: usize,
) {
    let active = o.info().status.is_active();
    o.with_messages(|messages| {
        let parts: Vec<(&str, usize, &Part)> = messages
            .iter()
            .flat_map(|m| {
                m.parts
                    .iter()
                    .enumerate()
                    .map(move |(i, p)| (m.id.as_str(), i, p))
            })
            .collect();
        let skip = parts.len().saturating_sub(SHOWN_PARTS);
        let mut at = 0;
        let mut previous: Option<gtk::Widget> = None;
        let mut place =
            |key: (String, usize), rev: u64, make: &dyn Fn() -> gtk::Widget, tail: Option<&str>| {
                if shown.get(at).is_some_and(|s| s.key == key && s.rev == rev) {
                    previous = Some(shown[at].widget.clone());
                    at += 1;
                    return;
                }
                // A streamed text's label takes its new end (no new widget
                // each frame).
                if let (Some(text), Some(s)) = (tail, shown.get_mut(at).filter(|s| s.key == key)) {
                    if let Some(l) = s
                        .widget
                        .downcast_ref::<gtk::Label>()
                        .filter(|l| l.widget_name() == STREAMED)
                    {
                        l.set_label(text);
                        s.rev = rev;
                        previous = Some(s.widget.clone());
                        at += 1;
                        return;
                    }
                }
                let widget = make();
                body.insert_child_after(&widget, previous.as_ref());
                let new = Shown {
                    key,
                    rev,
                    widget: widget.clone(),
                };
                match shown.get(at).map(|s| s.key == new.key) {
                    Some(true) => body.remove(&std::mem::replace(&mut shown[at], new).widget),
                    _ => shown.insert(at, new),
                }
                previous = Some(widget);
                at += 1;
            };
        if skip > 0 {
            let note = || -> gtk::Widget {
                let l = gtk::Label::new(Some(&gettext_f(
                    "{n} earlier parts are in the export",
                    &[("n", &skip.to_string())],
                )));
                l.add_css_class("dim-label");
                l.set_xalign(0.0);
                l.upcast()
            };
            place((String::new(), skip), 0, &note, None);
        }
        for (id, index, part) in parts.into_iter().skip(skip) {
            let rev = o.revision(id, index).wrapping_mul(2) + u64::from(active);
            let tail = match part {
                Part::Text { text } if active || text.len() > MARKDOWN_MAX => Some(streamed_tail(text)),
                _ => None,
            };
            let make = || part_view(part, active, terminals, threads, draw, depth);
            place((id.to_owned(), index), rev, &make, tail.as_deref());
        }
        for gone in shown.drain(at..) {
            body.remove(&gone.widget);
        }
    });
}

/// The name of a streamed text's label.
const STREAMED: &str = "streamed-text";

/// A streamed (or very long) text as its label shows it: its last
/// `STREAMED_LINES` lines (within its last `STREAMED_TAIL` bytes), "…"
/// above them when more came first.
fn streamed_tail(text: &str) -> String {
    let start = text.len().saturating_sub(STREAMED_TAIL);
    let start = (start..text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    let end = text[start..].trim_end();
    let lines: Vec<&str> = end.lines().rev().take(STREAMED_LINES).collect();
    let shown: Vec<String> = lines.iter().rev().map(|l| visible(l).into_owned()).collect();
    let more = start > 0 || end.lines().count() > STREAMED_LINES;
    if more {
        format!("…\n{}", shown.join("\n"))
    } else {
        shown.join("\n")
    }
}

fn part_view(
    part: &Part,
    active: bool,
    terminals: &TerminalOutputs,
    threads: &SubagentThreads,
    draw: Drawing,
    depth: usize,
) -> gtk::Widget {
    match part {
        Part::Text { text } if active || text.len() > MARKDOWN_MAX => {
            // Its last lines, each on one line: wrapping a text that
            // changes every frame cost the window 130 ms frames with five
            // helpers open.
            let l = gtk::Label::new(Some(&streamed_tail(text)));
            l.set_widget_name(STREAMED);
            l.set_xalign(0.0);
            l.set_ellipsize(gtk::pango::EllipsizeMode::End);
            l.add_css_class("streamed-text");
            l.upcast()
        }
        Part::Text { text } => {
            let b = gtk::Box::new(gtk::Orientation::Vertical, 6);
            (draw.markdown)(&b, text);
            b.upcast()
        }
        Part::Subagent { session_id } if depth + 1 < MAX_DEPTH => {
            thread_at(session_id, terminals, threads, draw, depth + 1, true)
        }
        Part::Subagent { .. } => gtk::Box::new(gtk::Orientation::Vertical, 0).upcast(),
        other => (draw.part)(other, terminals, threads),
    }
}

/// A message between sessions: never drawn as the user's or the agent's own
/// words (a quoted card that says who told whom).
pub(super) fn session_note(n: &SessionNote, threads: &SubagentThreads) -> gtk::Widget {
    let b = gtk::Box::new(gtk::Orientation::Vertical, 4);
    b.add_css_class("session-note");
    let name = |sid: &Option<String>| {
        sid.as_deref()
            .and_then(|s| threads.get(s))
            .map(|o| visible(&o.info().title).into_owned())
    };
    let heading = match (name(&n.sender), name(&n.recipient)) {
        (Some(from), _) => gettext_f("From subagent {title}", &[("title", &from)]),
        (None, Some(to)) => gettext_f("To subagent {title}", &[("title", &to)]),
        (None, None) => gettext("Between sessions"),
    };
    let label = gtk::Label::new(Some(&heading));
    label.set_xalign(0.0);
    label.add_css_class("caption-heading");
    label.add_css_class("dim-label");
    b.append(&label);
    let text = gtk::Label::new(Some(&visible(&n.text)));
    text.set_xalign(0.0);
    text.set_wrap(true);
    text.set_wrap_mode(gtk::pango::WrapMode::WordChar);
    text.set_selectable(true);
    b.append(&text);
    crate::ui::a11y::set_label(&b, &format!("{heading}: {}", visible(&n.text)));
    b.upcast()
}
