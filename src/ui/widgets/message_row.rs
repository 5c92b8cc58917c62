//! A row of the conversation: a piece of a message (see `RowObject`):
//! Markdown text, thoughts (collapsed), tool cards with their diffs, the
//! plan; the first row of a message has its header, the last how it ended.

use std::cell::{Cell, RefCell};

use adw::prelude::MessageDialogExt;
use agent_client_protocol_schema::v1 as acp;
use gtk::glib;
use gtk::prelude::*;
use gtk::subclass::prelude::*;
use sourceview5::prelude::*;

use crate::core::chat::message::{Message, Part, Role, ToolCall};
use crate::i18n::{gettext, gettext_f};
use crate::ui::markdown::{self, escape, visible, Block};
use crate::ui::models::{segments, RowKind, RowObject};

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
        pub bound: RefCell<Option<(RowObject, glib::SignalHandlerId)>>,
        pub agent_title: RefCell<String>,
        /// Whether the row's text is laid out, or only stands in for it at
        /// its estimated height (see [`super::MessageRow::reveal`]).
        pub revealed: Cell<bool>,
        /// The row, revision and title last drawn: a widget bound again to
        /// the row it just showed keeps what it drew.
        pub shown: RefCell<Option<(glib::WeakRef<RowObject>, u64, String)>>,
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
    // Without a width in characters, GTK measures a wrapping label's
    // minimum width by laying it out a character per line: 5 ms for 1 KB
    // (BENCHMARKS.md). Messages are never that narrow anyway.
    l.set_width_chars(20);
    l.set_xalign(0.0);
    l.set_selectable(true);
    l
}

/// A label showing `text` as it is (made visible, see `markdown::visible`).
fn plain(text: &str) -> gtk::Label {
    label(&escape(text))
}

/// A label of Markdown text, with its links: each one's real target shows
/// on hover (`markdown::render`), and opening one whose text names another
/// address, or that leaves the web, waits for the reader to confirm it.
fn markdown_label(markup: &str, links: Vec<markdown::Link>) -> gtk::Label {
    let l = label(markup);
    if !links.is_empty() {
        l.connect_activate_link(move |l, uri| {
            let Some(link) = links
                .iter()
                .find(|k| k.target == uri && markdown::link_needs_confirmation(&k.label, &k.target))
            else {
                return glib::Propagation::Proceed;
            };
            confirm_link(l, &link.label, uri);
            glib::Propagation::Stop
        });
    }
    l
}

/// Asks before opening `uri`, showing the whole of it beside what the link
/// said.
fn confirm_link(from: &gtk::Label, label: &str, uri: &str) {
    let window = from.root().and_downcast::<gtk::Window>();
    let body = gettext_f(
        "The link “{label}” leads to:\n\n{uri}\n\nOpen it only if you trust this address.",
        &[("label", label), ("uri", &visible(uri))],
    );
    let dialog = adw::MessageDialog::new(window.as_ref(), Some(&gettext("Open This Link?")), Some(&body));
    dialog.add_response("cancel", &gettext("_Cancel"));
    dialog.add_response("open", &gettext("_Open Link"));
    dialog.set_default_response(Some("cancel"));
    dialog.set_close_response("cancel");
    // Gone with the window if that closes first (GTK 4.8 warns otherwise).
    dialog.set_destroy_with_parent(true);
    let uri = uri.to_owned();
    dialog.connect_response(None, move |d, response| {
        if response == "open" {
            gtk::show_uri(d.transient_for().as_ref(), &uri, gtk::gdk::CURRENT_TIME);
        }
    });
    dialog.present();
}

fn code_view(lang: &str, text: &str) -> gtk::Widget {
    let buffer = sourceview5::Buffer::new(None);
    buffer.set_text(&visible(text));
    if let Some(l) = sourceview5::LanguageManager::default().language(lang) {
        buffer.set_language(Some(&l));
    }
    // The code follows the style, also when it changes while shown.
    let style = adw::StyleManager::default();
    follow_style(&buffer, style.is_dark());
    let weak = buffer.downgrade();
    let handler = style.connect_dark_notify(move |style| {
        if let Some(buffer) = weak.upgrade() {
            follow_style(&buffer, style.is_dark());
        }
    });
    let handler = std::cell::RefCell::new(Some(handler));
    let view = sourceview5::View::with_buffer(&buffer);
    view.set_editable(false);
    view.set_monospace(true);
    view.set_wrap_mode(gtk::WrapMode::WordChar);
    view.add_css_class("code");
    crate::ui::a11y::set_label(&view, &gettext("Code"));
    view.connect_destroy(move |_| {
        if let Some(id) = handler.take() {
            adw::StyleManager::default().disconnect(id);
        }
    });
    view.upcast()
}

fn follow_style(buffer: &sourceview5::Buffer, dark: bool) {
    let scheme = if dark { "Adwaita-dark" } else { "Adwaita" };
    if let Some(s) = sourceview5::StyleSchemeManager::default().scheme(scheme) {
        buffer.set_style_scheme(Some(&s));
    }
}

/// An expander with a real name for screen readers (GTK 4.8 would say
/// "GtkExpander"), opened and closed with Space and Enter too: inside a
/// list row, the row's own key bindings would otherwise take them.
fn expander(title: &str) -> gtk::Expander {
    let expander = gtk::Expander::new(Some(title));
    crate::ui::a11y::set_label(&expander, title);
    let keys = gtk::EventControllerKey::new();
    keys.set_propagation_phase(gtk::PropagationPhase::Capture);
    keys.connect_key_pressed(glib::clone!(
        #[weak]
        expander,
        #[upgrade_or]
        glib::Propagation::Proceed,
        move |_, key, _, state| {
            use gtk::gdk::Key;
            let plain =
                !state.intersects(gtk::gdk::ModifierType::CONTROL_MASK | gtk::gdk::ModifierType::ALT_MASK);
            // Not when the focus is in what it shows (a selectable label).
            let in_child = expander
                .child()
                .zip(expander.root().and_then(|r| r.focus()))
                .is_some_and(|(child, focus)| focus == child || focus.is_ancestor(&child));
            if plain && !in_child && matches!(key, Key::space | Key::Return | Key::KP_Enter | Key::KP_Space) {
                expander.set_expanded(!expander.is_expanded());
                return glib::Propagation::Stop;
            }
            glib::Propagation::Proceed
        }
    ));
    expander.add_controller(keys);
    expander
}

fn kind_icon(kind: acp::ToolKind) -> &'static str {
    use acp::ToolKind as K;
    match kind {
        K::Read => "document-open-symbolic",
        K::Edit => "document-edit-symbolic",
        K::Delete => "user-trash-symbolic",
        K::Move => "folder-symbolic",
        K::Search => "system-search-symbolic",
        K::Execute => "utilities-terminal-symbolic",
        K::Think => "dialog-information-symbolic",
        K::Fetch => "network-transmit-receive-symbolic",
        _ => "applications-system-symbolic",
    }
}

/// A tool call's status as shown, and its style class (style.css).
fn tool_status(status: acp::ToolCallStatus) -> (String, &'static str) {
    use acp::ToolCallStatus as S;
    match status {
        S::Pending => (gettext("pending"), "pending"),
        S::InProgress => (gettext("running…"), "in_progress"),
        S::Completed => (gettext("completed"), "completed"),
        S::Failed => (gettext("failed"), "failed"),
        _ => (gettext("pending"), "pending"),
    }
}

/// A plan entry's status as shown, and its icon.
fn plan_status(status: &acp::PlanEntryStatus) -> (String, &'static str) {
    use acp::PlanEntryStatus as S;
    match status {
        S::Completed => (gettext("completed"), "emblem-ok-symbolic"),
        S::InProgress => (gettext("running…"), "media-playback-start-symbolic"),
        _ => (gettext("pending"), "radio-symbolic"),
    }
}

fn tool_card(call: &ToolCall) -> gtk::Widget {
    let card = gtk::Box::new(gtk::Orientation::Vertical, 4);
    card.add_css_class("tool-card");
    let header = gtk::Box::new(gtk::Orientation::Horizontal, 8);
    header.append(&gtk::Image::from_icon_name(kind_icon(call.kind)));
    let title = label(&format!("<b>{}</b>", escape(&call.title)));
    title.set_hexpand(true);
    header.append(&title);
    let (shown, class) = tool_status(call.status);
    let status = gtk::Label::new(Some(&shown));
    status.add_css_class("status");
    status.add_css_class(class);
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
            let esc = escape(&line);
            match kind {
                '+' => markup.push_str(&format!("<span foreground=\"#26a269\">+{esc}</span>\n")),
                '-' => markup.push_str(&format!("<span foreground=\"#e01b24\">-{esc}</span>\n")),
                _ => markup.push_str(&format!(" {esc}\n")),
            }
        }
        let path = visible(&d.path);
        let title = if d.new_file {
            gettext_f("New file {path}", &[("path", &path)])
        } else {
            gettext_f("Changes to {path}", &[("path", &path)])
        };
        let expander = expander(&title);
        expander.set_expanded(true);
        let l = label(&format!("<tt>{}</tt>", markup.trim_end()));
        expander.set_child(Some(&l));
        card.append(&expander);
    }
    if !call.output.is_empty() {
        let expander = expander(&gettext("Output"));
        let l = label(&format!("<tt>{}</tt>", escape(&call.output)));
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
        let (shown, icon) = plan_status(&e.status);
        let image = gtk::Image::from_icon_name(icon);
        image.set_tooltip_text(Some(&shown));
        row.append(&image);
        let l = plain(&e.content);
        if e.status == acp::PlanEntryStatus::Completed {
            l.add_css_class("dim-label");
        }
        row.append(&l);
        b.append(&row);
    }
    b.upcast()
}

/// About the height of Markdown `md` rendered by [`append_markdown`]: its
/// paragraphs flow (soft breaks are spaces) and wrap at `per_line`
/// characters; list items, headings, quotes, table and code lines stand
/// alone; blocks are 8 px apart, as in the parts box.
fn estimate_lines(md: &str, per_line: f64, line_h: f64) -> i32 {
    let mut lines = 0.0;
    let mut blocks = 0u32;
    let mut para = 0usize;
    let mut fences = segments::Fences::default();
    let wrapped = |chars: usize| (chars as f64 / per_line).ceil().max(1.0);
    let flush = |para: &mut usize, lines: &mut f64, blocks: &mut u32| {
        if *para > 0 {
            *lines += wrapped(*para);
            *blocks += 1;
            *para = 0;
        }
    };
    for line in md.lines() {
        let t = line.trim_start();
        if fences.line(line) {
            flush(&mut para, &mut lines, &mut blocks);
            blocks += u32::from(fences.inside());
            continue;
        }
        if fences.inside() {
            lines += wrapped(line.chars().count());
            continue;
        }
        if t.is_empty() {
            flush(&mut para, &mut lines, &mut blocks);
            continue;
        }
        let numbered = t
            .split_once(". ")
            .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        let alone = numbered || ["#", "- ", "* ", "+ ", ">", "|"].iter().any(|p| t.starts_with(p));
        if alone && para > 0 {
            // A list's items share one block, without the 8 px between.
            lines += wrapped(para);
            para = 0;
        }
        para += line.chars().count() + usize::from(para > 0);
    }
    flush(&mut para, &mut lines, &mut blocks);
    (lines * line_h) as i32 + 8 * blocks.saturating_sub(1) as i32
}

fn append_markdown(target: &gtk::Box, md: &str) {
    for block in markdown::render(md) {
        match block {
            Block::Markup { markup, links } => target.append(&markdown_label(&markup, links)),
            Block::Code { lang, text } => target.append(&code_view(&lang, &text)),
        }
    }
}

/// Adds or removes a style class, only when that changes anything: each
/// change restyles the widget.
fn set_class(w: &impl IsA<gtk::Widget>, class: &str, on: bool) {
    if on != w.has_css_class(class) {
        if on {
            w.add_css_class(class);
        } else {
            w.remove_css_class(class);
        }
    }
}

fn clear(b: &gtk::Box) {
    while let Some(child) = b.first_child() {
        b.remove(&child);
    }
}

impl MessageRow {
    pub fn new() -> Self {
        glib::Object::new()
    }

    pub fn bind(&self, row: &RowObject, agent_title: &str) {
        self.unbind();
        let imp = self.imp();
        imp.agent_title.replace(agent_title.to_owned());
        let handler = row.connect_revision_notify(glib::clone!(
            #[weak(rename_to = this)]
            self,
            move |row| this.render(row)
        ));
        imp.bound.replace(Some((row.clone(), handler)));
        let unchanged = imp
            .shown
            .borrow()
            .as_ref()
            .is_some_and(|(shown, revision, title)| {
                shown.upgrade().as_ref() == Some(row) && *revision == row.revision() && title == agent_title
            });
        if !unchanged {
            imp.revealed.set(false);
            self.render(row);
        }
    }

    pub fn unbind(&self) {
        if let Some((row, handler)) = self.imp().bound.take() {
            row.disconnect(handler);
        }
    }

    /// The row it shows.
    pub fn row(&self) -> Option<RowObject> {
        self.imp().bound.borrow().as_ref().map(|(row, _)| row.clone())
    }

    /// Whether the row only stands in for its text so far.
    pub fn is_lazy(&self) -> bool {
        let imp = self.imp();
        !imp.revealed.get()
            && imp
                .bound
                .borrow()
                .as_ref()
                .is_some_and(|(row, _)| matches!(row.kind(), RowKind::Text { .. }))
    }

    /// Lays the row's text out. GTK 4.8's list view keeps up to 200 rows
    /// realized around the one it is anchored to, most of them off screen;
    /// a streamed text row is drawn for real only once the window sees it
    /// near the visible area (`ParleyWindow::reveal_visible_rows`), and
    /// until then is an empty box of about its height. This is what keeps a
    /// frame short while an agent streams megabytes (BENCHMARKS.md).
    pub fn reveal(&self) {
        let imp = self.imp();
        if imp.revealed.replace(true) {
            return;
        }
        let row = imp.bound.borrow().as_ref().map(|(row, _)| row.clone());
        if let Some(row) = row {
            self.render(&row);
        }
    }

    /// About the height of `text` laid out at the row's width, from the
    /// font's metrics; exact enough that revealed rows barely move.
    fn estimated_height(&self, text: &str) -> i32 {
        // Pango measures a sample text for these: once per font is enough.
        thread_local! {
            static METRICS: Cell<Option<(u64, f64, f64)>> = const { Cell::new(None) };
        }
        let context = self.pango_context();
        let font = context.font_description().map_or(0, |f| {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            f.hash(&mut h);
            h.finish()
        });
        let cached = METRICS.take().filter(|(f, _, _)| *f == font);
        let (char_w, line_h) = match cached {
            Some((f, w, h)) => {
                METRICS.set(Some((f, w, h)));
                (w, h)
            }
            None => {
                let metrics = context.metrics(None, None);
                let w = (metrics.approximate_char_width() as f64 / gtk::pango::SCALE as f64).max(1.0);
                let h = ((metrics.ascent() + metrics.descent()) as f64 / gtk::pango::SCALE as f64).max(1.0);
                METRICS.set(Some((font, w, h)));
                (w, h)
            }
        };
        // A row just made has no width yet: the nearest ancestor with one
        // (the list view) tells.
        let mut width = self.width();
        let mut up = self.parent();
        while width <= 0 {
            let Some(w) = up else { break };
            width = w.width();
            up = w.parent();
        }
        let width = if width > 0 { width } else { 600 };
        // The row's padding (style.css) is outside the parts box.
        let per_line = ((width as f64 - 36.0) / char_w).max(20.0);
        estimate_lines(text, per_line, line_h)
    }

    /// Draws the row again, whole: a row is at most a segment of a text
    /// (see `segments`) or one part, so this stays small.
    fn render(&self, row: &RowObject) {
        let imp = self.imp();
        let weak = glib::WeakRef::new();
        weak.set(Some(row));
        imp.shown
            .replace(Some((weak, row.revision(), imp.agent_title.borrow().clone())));
        clear(&imp.parts);
        imp.parts.set_size_request(-1, -1);
        let Some(m) = row.message() else { return };
        let stamp = row.stamp();
        m.with(|msg| {
            // Only what differs: each change restyles the row, and a
            // stream rebinds hundreds of rows a frame.
            // One paragraph cut in two rows for size reads as one.
            let (top, bottom) = match row.kind() {
                RowKind::Text { part, start, end } => match msg.parts.get(part) {
                    Some(Part::Text { text }) => (
                        segments::splits_paragraph(text, start),
                        end.is_some_and(|e| segments::splits_paragraph(text, e)),
                    ),
                    _ => (false, false),
                },
                _ => (false, false),
            };
            for (class, on) in [
                ("user", msg.role == Role::User),
                ("agent", msg.role == Role::Agent),
                ("system", msg.role == Role::System),
                ("queued", msg.queued),
                ("first", stamp.first),
                ("last", stamp.last),
                ("joined-top", top),
                ("joined-bottom", bottom),
            ] {
                set_class(self, class, on);
            }
            imp.role.set_visible(stamp.first);
            imp.role.set_label(&match msg.role {
                Role::User => gettext("You"),
                Role::Agent => visible(&imp.agent_title.borrow()).into_owned(),
                Role::System => gettext("Parley"),
            });
            match row.kind() {
                RowKind::Empty => {}
                RowKind::Part(i) => {
                    if let Some(part) = msg.parts.get(i) {
                        let content = self.content_for(row, |b| b.append(&part_widget(part)));
                        imp.parts.append(&content);
                    }
                }
                RowKind::Text { part, start, end } => {
                    if let Some(Part::Text { text }) = msg.parts.get(part) {
                        let slice = match end {
                            Some(end) => text.get(start..end),
                            None => text.get(start..),
                        }
                        .unwrap_or_default();
                        // Drawn before and kept: as good as revealed.
                        if !imp.revealed.get() && cached(row).is_some() {
                            imp.revealed.set(true);
                        }
                        if imp.revealed.get() {
                            let content = self.content_for(row, |b| append_markdown(b, slice));
                            imp.parts.append(&content);
                        } else {
                            let h = self.estimated_height(slice);
                            imp.parts.set_size_request(-1, h);
                        }
                    }
                }
            }
            let placeholder = matches!(row.kind(), RowKind::Text { .. }) && !imp.revealed.get();
            imp.parts
                .set_visible(imp.parts.first_child().is_some() || placeholder);
            let footer = if stamp.last {
                footer_text(msg)
            } else {
                String::new()
            };
            imp.footer.set_visible(!footer.is_empty());
            // It may quote the agent's error.
            imp.footer.set_label(&visible(&footer));
        });
    }
}

/// The most rows whose drawn widgets are kept for when the list binds them
/// again; bounded, so memory does not grow with the conversation.
const KEPT_CONTENTS: usize = 256;

/// Widgets drawn for rows, by row, with the row's revision and when each
/// was last used. GTK 4.8's list view rebinds rows to other widgets many
/// times while scrolling (tens of binds a frame); drawing a tool card or a
/// paragraph again each time was most of a frame (BENCHMARKS.md).
#[derive(Default)]
struct Contents {
    map: std::collections::HashMap<RowObject, (u64, gtk::Box, u64)>,
    clock: u64,
}

thread_local! {
    static CONTENTS: RefCell<Contents> = RefCell::default();
}

/// The widgets kept for `row` at its current revision.
fn cached(row: &RowObject) -> Option<gtk::Box> {
    CONTENTS.with_borrow(|c| {
        c.map
            .get(row)
            .filter(|(revision, _, _)| *revision == row.revision())
            .map(|(_, content, _)| content.clone())
    })
}

impl MessageRow {
    /// The content of `row`: kept widgets when there are some that no
    /// other row widget shows, or new ones made by `fill`.
    fn content_for(&self, row: &RowObject, fill: impl FnOnce(&gtk::Box)) -> gtk::Box {
        if let Some(content) = cached(row) {
            let holder = content.parent().and_downcast::<gtk::Box>();
            let owner = holder
                .as_ref()
                .and_then(|h| h.parent())
                .and_downcast::<MessageRow>();
            let shown_elsewhere = owner
                .as_ref()
                .is_some_and(|o| o != self && o.row().as_ref() == Some(row));
            if !shown_elsewhere {
                if let (Some(holder), Some(owner)) = (holder, owner) {
                    holder.remove(&content);
                    // It draws again whatever it is bound to next.
                    owner.imp().shown.replace(None);
                }
                CONTENTS.with_borrow_mut(|c| {
                    c.clock += 1;
                    let now = c.clock;
                    if let Some(entry) = c.map.get_mut(row) {
                        entry.2 = now;
                    }
                });
                return content;
            }
        }
        let content = gtk::Box::new(gtk::Orientation::Vertical, 8);
        fill(&content);
        CONTENTS.with_borrow_mut(|c| {
            c.clock += 1;
            let now = c.clock;
            c.map.insert(row.clone(), (row.revision(), content.clone(), now));
            if c.map.len() > KEPT_CONTENTS {
                if let Some(oldest) = c.map.iter().min_by_key(|(_, e)| e.2).map(|(r, _)| r.clone()) {
                    c.map.remove(&oldest);
                }
            }
        });
        content
    }
}

/// The widget of a part that is not streamed text.
fn part_widget(part: &Part) -> gtk::Widget {
    match part {
        // A user's text is shown as typed; an agent's is streamed Markdown
        // (a TextSlot) and never reaches here.
        Part::Text { text } => plain(text).upcast(),
        Part::Thought { text } => {
            let expander = expander(&gettext("Thinking"));
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
    use acp::StopReason as R;
    match m.stop_reason {
        Some(R::Cancelled) => gettext("Stopped"),
        Some(R::MaxTokens) => gettext("Stopped: the answer reached the token limit"),
        Some(R::MaxTurnRequests) => gettext("Stopped: too many requests in one turn"),
        Some(R::Refusal) => gettext("The agent refused to answer"),
        _ => String::new(),
    }
}
