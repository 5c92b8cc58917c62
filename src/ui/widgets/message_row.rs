//! A message of the conversation: Markdown text, thoughts (collapsed), tool
//! cards with their diffs, the plan, and how the message ended.

use std::cell::RefCell;

use gtk::glib;
use gtk::prelude::*;
use gtk::subclass::prelude::*;
use sourceview5::prelude::*;

use crate::core::chat::message::{Message, Part, Role, ToolCall};
use crate::i18n::{gettext, gettext_f};
use crate::ui::markdown::{self, Block};
use crate::ui::models::MessageObject;

mod imp {
    use super::*;

    #[derive(Default, gtk::CompositeTemplate)]
    #[template(file = "message_row.ui")]
    pub struct MessageRow {
        #[template_child]
        pub role: TemplateChild<gtk::Label>,
        #[template_child]
        pub parts: TemplateChild<gtk::Box>,
        #[template_child]
        pub footer: TemplateChild<gtk::Label>,
        pub bound: RefCell<Option<(MessageObject, glib::SignalHandlerId)>>,
        pub agent_title: RefCell<String>,
        /// What each part's widgets show now, so a change rebuilds only
        /// what changed.
        pub slots: RefCell<Vec<super::Slot>>,
    }

    #[glib::object_subclass]
    impl ObjectSubclass for MessageRow {
        const NAME: &'static str = "ParleyMessageRow";
        type Type = super::MessageRow;
        type ParentType = gtk::Box;

        fn class_init(klass: &mut Self::Class) {
            klass.bind_template();
        }

        fn instance_init(obj: &glib::subclass::InitializingObject<Self>) {
            obj.init_template();
        }
    }

    impl ObjectImpl for MessageRow {}
    impl WidgetImpl for MessageRow {}
    impl BoxImpl for MessageRow {}
}

glib::wrapper! {
    pub struct MessageRow(ObjectSubclass<imp::MessageRow>)
        @extends gtk::Box, gtk::Widget,
        @implements gtk::Buildable, gtk::ConstraintTarget, gtk::Orientable;
}

impl Default for MessageRow {
    fn default() -> Self {
        Self::new()
    }
}

fn label(markup: &str) -> gtk::Label {
    let l = gtk::Label::new(None);
    l.set_markup(markup);
    l.set_wrap(true);
    l.set_wrap_mode(gtk::pango::WrapMode::WordChar);
    l.set_xalign(0.0);
    l.set_selectable(true);
    l
}

fn plain(text: &str) -> gtk::Label {
    label(&glib::markup_escape_text(text))
}

fn code_view(lang: &str, text: &str) -> gtk::Widget {
    let buffer = sourceview5::Buffer::new(None);
    buffer.set_text(text);
    if let Some(l) = sourceview5::LanguageManager::default().language(lang) {
        buffer.set_language(Some(&l));
    }
    let dark = adw::StyleManager::default().is_dark();
    let scheme = if dark { "Adwaita-dark" } else { "Adwaita" };
    if let Some(s) = sourceview5::StyleSchemeManager::default().scheme(scheme) {
        buffer.set_style_scheme(Some(&s));
    }
    let view = sourceview5::View::with_buffer(&buffer);
    view.set_editable(false);
    view.set_monospace(true);
    view.set_wrap_mode(gtk::WrapMode::WordChar);
    view.add_css_class("code");
    crate::ui::a11y::set_label(&view, &gettext("Code"));
    view.upcast()
}

fn kind_icon(kind: &str) -> &'static str {
    match kind {
        "read" => "document-open-symbolic",
        "edit" => "document-edit-symbolic",
        "delete" => "user-trash-symbolic",
        "move" => "folder-symbolic",
        "search" => "system-search-symbolic",
        "execute" => "utilities-terminal-symbolic",
        "think" => "dialog-information-symbolic",
        "fetch" => "network-transmit-receive-symbolic",
        _ => "applications-system-symbolic",
    }
}

fn status_text(status: &str) -> String {
    match status {
        "pending" => gettext("pending"),
        "in_progress" => gettext("running…"),
        "completed" => gettext("completed"),
        "failed" => gettext("failed"),
        other => other.to_owned(),
    }
}

fn tool_card(call: &ToolCall) -> gtk::Widget {
    let card = gtk::Box::new(gtk::Orientation::Vertical, 4);
    card.add_css_class("tool-card");
    let header = gtk::Box::new(gtk::Orientation::Horizontal, 8);
    header.append(&gtk::Image::from_icon_name(kind_icon(&call.kind)));
    let title = label(&format!("<b>{}</b>", glib::markup_escape_text(&call.title)));
    title.set_hexpand(true);
    header.append(&title);
    let status = gtk::Label::new(Some(&status_text(&call.status)));
    status.add_css_class("status");
    status.add_css_class(&call.status);
    header.append(&status);
    card.append(&header);
    if !call.locations.is_empty() {
        let text: Vec<String> = call
            .locations
            .iter()
            .map(|l| match l.line {
                Some(n) => format!("{}:{n}", l.path),
                None => l.path.clone(),
            })
            .collect();
        let l = plain(&text.join("\n"));
        l.add_css_class("dim-label");
        l.add_css_class("caption");
        card.append(&l);
    }
    for d in &call.diffs {
        let mut markup = String::new();
        for (kind, line) in crate::ui::widgets::diff::lines(&d.old_text, &d.new_text) {
            let esc = glib::markup_escape_text(&line);
            match kind {
                '+' => markup.push_str(&format!("<span foreground=\"#26a269\">+{esc}</span>\n")),
                '-' => markup.push_str(&format!("<span foreground=\"#e01b24\">-{esc}</span>\n")),
                _ => markup.push_str(&format!(" {esc}\n")),
            }
        }
        let title = if d.new_file {
            gettext_f("New file {path}", &[("path", &d.path)])
        } else {
            gettext_f("Changes to {path}", &[("path", &d.path)])
        };
        let expander = gtk::Expander::new(Some(&title));
        expander.set_expanded(true);
        let l = label(&format!("<tt>{}</tt>", markup.trim_end()));
        expander.set_child(Some(&l));
        card.append(&expander);
    }
    if !call.output.is_empty() {
        let expander = gtk::Expander::new(Some(&gettext("Output")));
        let l = label(&format!("<tt>{}</tt>", glib::markup_escape_text(&call.output)));
        expander.set_child(Some(&l));
        card.append(&expander);
    }
    card.upcast()
}

fn plan_view(entries: &[crate::core::chat::message::PlanEntry]) -> gtk::Widget {
    let b = gtk::Box::new(gtk::Orientation::Vertical, 2);
    b.add_css_class("tool-card");
    b.append(&label(&format!(
        "<b>{}</b>",
        glib::markup_escape_text(&gettext("Plan"))
    )));
    for e in entries {
        let row = gtk::Box::new(gtk::Orientation::Horizontal, 8);
        let icon = match e.status.as_str() {
            "completed" => "emblem-ok-symbolic",
            "in_progress" => "media-playback-start-symbolic",
            _ => "radio-symbolic",
        };
        let image = gtk::Image::from_icon_name(icon);
        image.set_tooltip_text(Some(&status_text(&e.status)));
        row.append(&image);
        let l = plain(&e.content);
        if e.status == "completed" {
            l.add_css_class("dim-label");
        }
        row.append(&l);
        b.append(&row);
    }
    b.upcast()
}

/// The widgets of one part and what they show.
pub struct Slot {
    part: Part,
    container: gtk::Box,
    text: Option<TextSlot>,
}

/// A streamed text part: the settled prefix is rendered once, block by
/// block; only the tail is rendered again as text arrives. Without this a
/// long answer is re-rendered whole on every frame (see BENCHMARKS.md).
struct TextSlot {
    settled_len: usize,
    settled: gtk::Box,
    tail: gtk::Box,
}

/// A tail longer than this is settled at a line break even inside a
/// paragraph, so each frame's work stays bounded.
const MAX_TAIL: usize = 8 * 1024;

/// Where the settled prefix may end: after a blank line, or after any line
/// once the tail is long, but never inside a code fence. `from` is a
/// settled boundary (outside any fence).
fn settle_boundary(text: &str, from: usize) -> usize {
    let mut boundary = from;
    let mut in_fence = false;
    let mut pos = from;
    let rest = &text[from..];
    for line in rest.split_inclusive('\n') {
        if !line.ends_with('\n') {
            break; // an unfinished line is always tail
        }
        let start = pos;
        pos += line.len();
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let blank = line.trim().is_empty() && start > from;
        if blank || pos - boundary > MAX_TAIL {
            boundary = pos;
        }
    }
    boundary
}

fn append_markdown(target: &gtk::Box, md: &str) {
    for block in markdown::render(md) {
        match block {
            Block::Markup(markup) => target.append(&label(&markup)),
            Block::Code { lang, text } => target.append(&code_view(&lang, &text)),
        }
    }
}

fn clear(b: &gtk::Box) {
    while let Some(child) = b.first_child() {
        b.remove(&child);
    }
}

impl TextSlot {
    fn new(container: &gtk::Box) -> Self {
        let settled = gtk::Box::new(gtk::Orientation::Vertical, 8);
        let tail = gtk::Box::new(gtk::Orientation::Vertical, 8);
        container.append(&settled);
        container.append(&tail);
        TextSlot {
            settled_len: 0,
            settled,
            tail,
        }
    }

    /// Shows `text`, rendering only what is new since the last call.
    fn update(&mut self, text: &str) {
        let boundary = settle_boundary(text, self.settled_len);
        if boundary > self.settled_len {
            append_markdown(&self.settled, &text[self.settled_len..boundary]);
            self.settled_len = boundary;
        }
        clear(&self.tail);
        append_markdown(&self.tail, &text[self.settled_len..]);
    }
}

impl MessageRow {
    pub fn new() -> Self {
        glib::Object::new()
    }

    pub fn bind(&self, m: &MessageObject, agent_title: &str) {
        self.unbind();
        self.imp().agent_title.replace(agent_title.to_owned());
        // A recycled row starts over for its new message.
        self.imp().slots.borrow_mut().clear();
        clear(&self.imp().parts);
        let handler = m.connect_revision_notify(glib::clone!(
            #[weak(rename_to = row)]
            self,
            move |m| row.render(m)
        ));
        self.imp().bound.replace(Some((m.clone(), handler)));
        self.render(m);
    }

    pub fn unbind(&self) {
        if let Some((m, handler)) = self.imp().bound.take() {
            m.disconnect(handler);
        }
    }

    fn render(&self, m: &MessageObject) {
        let Some(msg) = m.message() else { return };
        let imp = self.imp();
        for class in ["user", "agent", "system", "queued"] {
            self.remove_css_class(class);
        }
        let role = match msg.role {
            Role::User => "user",
            Role::Agent => "agent",
            Role::System => "system",
        };
        self.add_css_class(role);
        if msg.queued {
            self.add_css_class("queued");
        }
        imp.role.set_label(&match msg.role {
            Role::User => gettext("You"),
            Role::Agent => imp.agent_title.borrow().clone(),
            Role::System => gettext("Parley"),
        });
        let mut slots = imp.slots.borrow_mut();
        if slots.len() > msg.parts.len() {
            for slot in slots.drain(msg.parts.len()..) {
                imp.parts.remove(&slot.container);
            }
        }
        for (i, part) in msg.parts.iter().enumerate() {
            if i == slots.len() {
                let container = gtk::Box::new(gtk::Orientation::Vertical, 8);
                imp.parts.append(&container);
                let text = matches!(part, Part::Text { .. } if msg.role != Role::User)
                    .then(|| TextSlot::new(&container));
                slots.push(Slot {
                    part: Part::Thought {
                        text: String::from("\u{0}"),
                    },
                    container,
                    text,
                });
            }
            let slot = &mut slots[i];
            if slot.part == *part {
                continue;
            }
            match (part, slot.text.as_mut(), &slot.part) {
                // Streamed text that grew: only the new end is rendered.
                (Part::Text { text }, Some(t), Part::Text { text: old })
                    if text.starts_with(old.as_str()) =>
                {
                    t.update(text)
                }
                (Part::Text { text }, Some(_), _) => {
                    clear(&slot.container);
                    let mut t = TextSlot::new(&slot.container);
                    t.update(text);
                    slot.text = Some(t);
                }
                _ => {
                    clear(&slot.container);
                    slot.text = None;
                    slot.container.append(&part_widget(part));
                }
            }
            slot.part = part.clone();
        }
        drop(slots);
        imp.parts.set_visible(imp.parts.first_child().is_some());
        let footer = footer_text(&msg);
        imp.footer.set_visible(!footer.is_empty());
        imp.footer.set_label(&footer);
    }
}

/// The widget of a part that is not streamed text.
fn part_widget(part: &Part) -> gtk::Widget {
    match part {
        // A user's text is shown as typed; an agent's is streamed Markdown
        // (a TextSlot) and never reaches here.
        Part::Text { text } => plain(text).upcast(),
        Part::Thought { text } => {
            let expander = gtk::Expander::new(Some(&gettext("Thinking")));
            let l = plain(text);
            l.add_css_class("dim-label");
            expander.set_child(Some(&l));
            expander.upcast()
        }
        Part::Tool(call) => tool_card(call),
        Part::Plan { entries } => plan_view(entries),
    }
}

fn footer_text(m: &Message) -> String {
    if m.queued {
        return gettext("Queued: sent when the current answer ends");
    }
    match m.code.as_deref() {
        Some("agent-restarted") => return gettext(
            "The agent was restarted in a new session: it has forgotten the beginning of this conversation.",
        ),
        Some("agent-unavailable") => {
            return gettext_f(
                "The agent could not be reached: {error}",
                &[("error", m.error.as_deref().unwrap_or_default())],
            )
        }
        _ => {}
    }
    if let Some(e) = &m.error {
        return if e == "cancelled" {
            gettext("Cancelled before it was sent")
        } else {
            gettext_f("Ended with an error: {error}", &[("error", e)])
        };
    }
    if !m.done {
        return gettext("Answering…");
    }
    match m.stop_reason.as_deref() {
        Some("cancelled") => gettext("Stopped"),
        Some("max_tokens") => gettext("Stopped: the answer reached the token limit"),
        Some("max_turn_requests") => gettext("Stopped: too many requests in one turn"),
        Some("refusal") => gettext("The agent refused to answer"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::settle_boundary;

    #[test]
    fn settles_after_blank_lines_but_never_inside_a_fence() {
        let text = "para one\n\npara two\n\n```rust\nfn x() {}\n\nfn y() {}\n";
        // Up to the open fence: its blank line does not end it.
        assert_eq!(settle_boundary(text, 0), "para one\n\npara two\n\n".len());
        let closed = format!("{text}```\n\nafter");
        assert_eq!(settle_boundary(&closed, 0), closed.len() - "after".len());
        assert_eq!(settle_boundary("no newline yet", 0), 0);
    }

    #[test]
    fn a_long_tail_settles_at_a_line_break() {
        let line = "x".repeat(100) + "\n";
        let text = line.repeat(200); // 20 KB, one paragraph
        let b = settle_boundary(&text, 0);
        assert!(b > 0 && b <= text.len() && b.is_multiple_of(line.len()), "{b}");
        assert!(text.len() - b <= super::MAX_TAIL + line.len());
    }
}
