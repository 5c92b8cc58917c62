//! The pieces a message row is built of: text blocks and labels for Markdown
//! and plain text (`text_label`: links confirmed when misleading), code
//! blocks (`code_block`), expanders that the keyboard opens, tool cards,
//! plans, session notices and compaction dividers.

use crate::ui::models::{SubagentThreads, TerminalOutputs};
use agent_client_protocol_schema::v1 as acp;
use gtk::glib;
use gtk::prelude::*;

use super::text_block::TextBlock;
use crate::core::types::message::{Part, ToolCall};
use crate::i18n::{gettext, gettext_f};
use crate::ui::markdown::{self, escape, visible, Block};

pub use super::text_label::{label, markdown_label};

/// A label showing `text` as it is (made visible, see `markdown::visible`).
pub(super) fn plain(text: &str) -> gtk::Label {
    label(&escape(text))
}

/// An expander with a real name for screen readers (GTK 4.8 would say
/// "GtkExpander"), opened and closed with Space and Enter too: inside a
/// list row, the row's own key bindings would otherwise take them.
pub(super) fn expander(title: &str) -> gtk::Expander {
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

pub(super) fn kind_icon(kind: acp::ToolKind) -> &'static str {
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
pub(super) fn tool_status(status: acp::ToolCallStatus) -> (String, &'static str) {
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
pub(super) fn plan_status(status: &acp::PlanEntryStatus) -> (String, &'static str) {
    use acp::PlanEntryStatus as S;
    match status {
        S::Completed => (gettext("completed"), "emblem-ok-symbolic"),
        S::InProgress => (gettext("running…"), "media-playback-start-symbolic"),
        _ => (gettext("pending"), "radio-symbolic"),
    }
}

pub(super) fn tool_card(call: &ToolCall, terminals: &TerminalOutputs) -> gtk::Widget {
    let card = gtk::Box::new(gtk::Orientation::Vertical, 4);
    card.add_css_class("tool-card");
    let header = gtk::Box::new(gtk::Orientation::Horizontal, 8);
    header.append(&gtk::Image::from_icon_name(kind_icon(call.kind)));
    let title = label(&format!("<b>{}</b>", escape(&call.title)));
    title.set_hexpand(true);
    header.append(&title);
    // The tool's own name, where the agent gives one its title does not
    // already start with.
    if !call.name.is_empty() && !call.title.starts_with(call.name.as_str()) {
        let name = gtk::Label::new(Some(&visible(&call.name)));
        name.add_css_class("caption");
        name.add_css_class("dim-label");
        header.append(&name);
    }
    let (shown, class) = tool_status(call.status);
    let status = gtk::Label::new(Some(&shown));
    status.add_css_class("status");
    status.add_css_class(class);
    header.append(&status);
    card.append(&header);
    // Each file it names: a button that opens it in the editor at its line.
    for location in &call.locations {
        let shown = match location.line {
            Some(n) => format!("{}:{n}", visible(&location.path)),
            None => visible(&location.path).into_owned(),
        };
        let button = gtk::Button::builder()
            .label(&shown)
            .halign(gtk::Align::Start)
            .css_classes(["flat", "caption", "location"])
            .tooltip_text(gettext("Open in Editor"))
            .build();
        if let Some(l) = button.child().and_downcast::<gtk::Label>() {
            l.set_ellipsize(gtk::pango::EllipsizeMode::Middle);
        }
        crate::ui::a11y::set_label(&button, &gettext_f("Open {path}", &[("path", &shown)]));
        let location = location.clone();
        button.connect_clicked(move |b| {
            let weak = b.downgrade();
            crate::ui::editor::open(&location, move |e| {
                if let Some(b) = weak.upgrade() {
                    crate::ui::a11y::announce(&b, &e, crate::ui::a11y::Priority::Medium);
                    b.set_tooltip_text(Some(&e));
                }
            });
        });
        card.append(&button);
    }
    for d in &call.diffs {
        card.append(&diff_view(d));
    }
    for id in &call.terminals {
        card.append(&super::terminal_view::view(terminals, id));
    }
    if !call.output.is_empty() {
        let expander = expander(&gettext("Output"));
        let l = TextBlock::new(&format!("<tt>{}</tt>", escape(&call.output)), Vec::new());
        expander.set_child(Some(&l));
        card.append(&expander);
    }
    card.upcast()
}

/// An edit as a unified diff under its file's name, open: in a tool card,
/// and in the permission banner (a reviewer decides on the change, not on
/// a title; gemini-cli announces its edits only there).
pub fn diff_view(d: &crate::core::types::message::Diff) -> gtk::Expander {
    let lines = crate::ui::widgets::diff::lines(&d.old_text, &d.new_text);
    let path = visible(&d.path);
    let title = if d.new_file {
        gettext_f("New file {path}", &[("path", &path)])
    } else {
        gettext_f("Changes to {path}", &[("path", &path)])
    };
    let expander = expander(&title);
    expander.set_expanded(true);
    let l = TextBlock::new(
        &diff_markup(&lines, adw::StyleManager::default().is_dark()),
        Vec::new(),
    );
    // The colours follow the style, also when it changes while shown.
    crate::ui::theme::on_dark_change(&l, move |l, dark| l.set_markup(&diff_markup(&lines, dark)));
    expander.set_child(Some(&l));
    expander
}

/// A diff's lines as markup, in libadwaita's success and error colours for
/// the style in use: each at least 4.5:1 against the card in its own style
/// (the fixed #26a269 and #e01b24 were under it, and unreadable in dark).
fn diff_markup(lines: &[(char, String)], dark: bool) -> String {
    let (added, removed) = if dark {
        ("#8ff0a4", "#ff7b63")
    } else {
        ("#1b8553", "#c01c28")
    };
    let mut markup = String::new();
    for (kind, line) in lines {
        let esc = escape(line);
        match kind {
            '+' => markup.push_str(&format!("<span foreground=\"{added}\">+{esc}</span>\n")),
            '-' => markup.push_str(&format!("<span foreground=\"{removed}\">-{esc}</span>\n")),
            _ => markup.push_str(&format!(" {esc}\n")),
        }
    }
    format!("<tt>{}</tt>", markup.trim_end())
}

pub(super) fn plan_view(entries: &[crate::core::types::message::PlanEntry]) -> gtk::Widget {
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

pub(super) fn append_markdown(target: &gtk::Box, md: &str) {
    for block in markdown::render(md) {
        match block {
            Block::Markup { markup, links } => target.append(&TextBlock::new(&markup, links)),
            Block::Code { lang, text } => target.append(&super::code_block::code_block(&lang, &text)),
        }
    }
}

fn notice_row(n: &crate::core::types::notice::Notice) -> gtk::Widget {
    let (shown, icon, class) = super::notice_parts::severity(n);
    let row = gtk::Box::new(gtk::Orientation::Horizontal, 10);
    row.add_css_class("notice");
    row.add_css_class(class);
    let image = gtk::Image::from_icon_name(icon);
    image.set_valign(gtk::Align::Start);
    image.set_tooltip_text(Some(&shown));
    image.add_css_class(class);
    row.append(&image);
    let text = gtk::Box::new(gtk::Orientation::Vertical, 2);
    text.set_hexpand(true);
    let title = plain(&n.title);
    title.add_css_class("heading");
    text.append(&title);
    if let Some(d) = &n.description {
        let l = plain(d);
        l.add_css_class("dim-label");
        text.append(&l);
    }
    row.append(&text);
    crate::ui::a11y::set_label(&row, &super::notice_parts::spoken(n));
    row.upcast()
}

/// "The agent compacted the conversation", a line across, the summary below.
fn compaction_divider(c: &crate::core::types::notice::Compaction) -> gtk::Widget {
    let b = gtk::Box::new(gtk::Orientation::Vertical, 6);
    b.add_css_class("compaction");
    let line = gtk::Box::new(gtk::Orientation::Horizontal, 10);
    let rule = || {
        let s = gtk::Separator::new(gtk::Orientation::Horizontal);
        s.set_hexpand(true);
        s.set_valign(gtk::Align::Center);
        s
    };
    let title = match c.status.as_str() {
        "in_progress" => gettext("The agent is compacting the conversation…"),
        "failed" => gettext("The agent could not compact the conversation"),
        "cancelled" => gettext("The agent stopped compacting the conversation"),
        _ => gettext("The agent compacted the conversation"),
    };
    let l = label(&format!("<b>{}</b>", glib::markup_escape_text(&title)));
    l.add_css_class("dim-label");
    l.set_hexpand(false);
    // Narrow windows: the line wraps rather than widening the list.
    l.set_wrap(true);
    l.set_justify(gtk::Justification::Center);
    l.set_xalign(0.5);
    line.append(&rule());
    line.append(&l);
    line.append(&rule());
    b.append(&line);
    if let Some(e) = &c.error {
        let l = plain(e);
        l.add_css_class("error");
        b.append(&l);
    }
    if !c.summary.trim().is_empty() {
        let e = expander(&gettext("What the agent kept"));
        let body = gtk::Box::new(gtk::Orientation::Vertical, 6);
        append_markdown(&body, &c.summary);
        e.set_child(Some(&body));
        b.append(&e);
    }
    crate::ui::a11y::set_label(&b, &title);
    b.upcast()
}

/// A plan the agent gave as a document (`plan_update` of type markdown).
fn markdown_plan(md: &str) -> gtk::Widget {
    let b = gtk::Box::new(gtk::Orientation::Vertical, 4);
    b.add_css_class("tool-card");
    b.append(&label(&format!(
        "<b>{}</b>",
        glib::markup_escape_text(&gettext("Plan"))
    )));
    append_markdown(&b, md);
    b.upcast()
}

/// How a subagent's thread draws its parts: as the conversation does.
const DRAWING: super::subagent_view::Drawing = super::subagent_view::Drawing {
    part: part_widget,
    markdown: append_markdown,
};

/// The widget of a part that is not streamed text.
pub(super) fn part_widget(
    part: &Part,
    terminals: &TerminalOutputs,
    threads: &SubagentThreads,
) -> gtk::Widget {
    match part {
        // A user's text is shown as typed; an agent's is streamed Markdown
        // (a TextSlot) and never reaches here.
        Part::Text { text } => TextBlock::new(&escape(text), Vec::new()).upcast(),
        Part::Thought { text } => {
            let expander = expander(&gettext("Thinking"));
            // Markdown, as agents write their thoughts (gemini-cli's each
            // begin with a bold subject).
            let body = gtk::Box::new(gtk::Orientation::Vertical, 6);
            body.add_css_class("dim-label");
            append_markdown(&body, &markdown::thought(text));
            expander.set_child(Some(&body));
            expander.upcast()
        }
        Part::Tool(call) => {
            let card = tool_card(call, terminals);
            // The helpers it started: their threads, in its card.
            if let Some(b) = card.downcast_ref::<gtk::Box>() {
                for t in super::subagent_view::linked_threads(&call.id, terminals, threads, DRAWING) {
                    b.append(&t);
                }
            }
            card
        }
        Part::Plan {
            markdown: Some(md), ..
        } => markdown_plan(md),
        Part::Plan { entries, .. } => plan_view(entries),
        Part::Attachment(a) => super::attachment_view::attachments(&[a]),
        Part::Notice(n) => notice_row(n),
        Part::Compaction(c) => compaction_divider(c),
        Part::Subagent { session_id } => {
            super::subagent_view::thread(session_id, terminals, threads, DRAWING)
        }
        Part::SessionNote(n) => super::subagent_view::session_note(n, threads),
    }
}
