//! The session's options as compact pickers under the composer: a menu
//! button per `select` (its choices with their descriptions, grouped as the
//! agent grouped them) and a toggle per `boolean`, in the order mode,
//! model, thought level, other. A change goes to the agent; if it refuses,
//! the picker shows the old value again and a toast gives its words.

use std::cell::{Cell, RefCell};

use gtk::prelude::*;
use gtk::{glib, pango};

use crate::core::types::options::{Choice, OptionValue, SessionOption, CATEGORIES};
use crate::i18n::{gettext, gettext_f};
use crate::ui::models::SessionControls;

fn category_icon(category: &str) -> &'static str {
    match category {
        "mode" => "view-list-bullet-symbolic",
        "model" => "applications-science-symbolic",
        "thought_level" => "preferences-system-symbolic",
        _ => "emblem-system-symbolic",
    }
}

thread_local! {
    /// Set while the pickers show a new value themselves (not the user).
    static UPDATING: Cell<bool> = const { Cell::new(false) };
}

/// Which options and choices there are, without their current values.
fn shape(options: &[SessionOption]) -> String {
    options
        .iter()
        .map(|o| {
            let mut o = o.clone();
            match &mut o.value {
                OptionValue::Select { current, .. } => current.clear(),
                OptionValue::Boolean { current } => *current = false,
            }
            serde_json::to_string(&o).unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Shows the agent's options in `box_` (hidden when there are none). When
/// only values changed, the pickers are updated where they are: a picker
/// whose popover just closed is never destroyed under it. `kept` holds the
/// shape last built.
pub fn rebuild(box_: &super::wrap_box::WrapBox, session: Option<&SessionControls>, kept: &RefCell<String>) {
    let mut options = session.map(SessionControls::options).unwrap_or_default();
    options.sort_by_key(|o| {
        CATEGORIES
            .iter()
            .position(|c| *c == o.category)
            .unwrap_or(CATEGORIES.len())
    });
    let shape = shape(&options);
    if session.is_some() && !options.is_empty() && *kept.borrow() == shape {
        for option in &options {
            update(box_, option);
        }
        update_unasked(box_, &options);
        return;
    }
    kept.replace(shape);
    while let Some(child) = box_.first_child() {
        box_.remove(&child);
    }
    box_.set_visible(!options.is_empty());
    let Some(agent) = session else { return };
    for option in &options {
        let widget = match &option.value {
            OptionValue::Select { current, choices } => select_picker(agent, option, current, choices),
            OptionValue::Boolean { current } => boolean_picker(agent, option, *current),
        };
        box_.append(&widget);
    }
    box_.append(&unasked_note());
    update_unasked(box_, &options);
}

/// "Runs without asking", beside the pickers while the agent's mode lets it
/// edit files and run commands without asking (claude-agent-acp's `auto`).
fn unasked_note() -> gtk::Widget {
    let note = gtk::Box::new(gtk::Orientation::Horizontal, 6);
    note.set_widget_name("asks-nothing");
    note.add_css_class("warning");
    note.set_valign(gtk::Align::Center);
    note.append(&gtk::Image::from_icon_name("dialog-warning-symbolic"));
    let label = gtk::Label::new(Some(&gettext("Runs without asking")));
    label.add_css_class("caption-heading");
    note.append(&label);
    note.set_focusable(true);
    note.set_visible(false);
    note.upcast()
}

fn update_unasked(box_: &super::wrap_box::WrapBox, options: &[SessionOption]) {
    let mut all = Vec::new();
    descendants(box_.upcast_ref(), &mut all);
    let Some(note) = all.into_iter().find(|w| w.widget_name() == "asks-nothing") else {
        return;
    };
    let mode = crate::core::types::options::asking_nothing(options);
    note.set_visible(mode.is_some());
    if let Some(mode) = mode {
        let text = crate::i18n::gettext_f(
            "The mode “{mode}” lets the agent edit files and run commands without asking you",
            &[("mode", &mode)],
        );
        note.set_tooltip_text(Some(&text));
        crate::ui::a11y::set_label(&note, &text);
    }
}

/// Every descendant of `w` (a popover's rows).
fn descendants(w: &gtk::Widget, out: &mut Vec<gtk::Widget>) {
    let mut child = w.first_child();
    while let Some(c) = child {
        out.push(c.clone());
        descendants(&c, out);
        child = c.next_sibling();
    }
}

/// Shows an option's new value in its picker.
fn update(box_: &super::wrap_box::WrapBox, option: &SessionOption) {
    let name = format!("option-{}", option.id);
    let mut all = Vec::new();
    descendants(box_.upcast_ref(), &mut all);
    let Some(widget) = all.into_iter().find(|w| w.widget_name() == name) else {
        return;
    };
    match &option.value {
        OptionValue::Select { current, choices } => {
            let Some(button) = widget.downcast_ref::<gtk::MenuButton>() else {
                return;
            };
            let current_name = option.current_name();
            let (label, tip) = describe(option, &current_name);
            if let Some(text) = button
                .child()
                .and_then(|c| c.first_child())
                .and_then(|i| i.next_sibling())
                .and_downcast::<gtk::Label>()
            {
                text.set_text(&current_name);
            }
            button.set_tooltip_text(Some(&tip));
            crate::ui::a11y::set_label(button, &label);
            let Some(popover) = button.popover() else { return };
            let mut rows = Vec::new();
            descendants(popover.upcast_ref(), &mut rows);
            for row in rows.iter().filter_map(|w| w.downcast_ref::<gtk::ListBoxRow>()) {
                let Some(i) = row
                    .widget_name()
                    .strip_prefix("choice-")
                    .and_then(|i| i.parse::<usize>().ok())
                else {
                    continue;
                };
                let Some(choice) = choices.get(i) else { continue };
                let selected = choice.value == *current;
                if let Some(check) = row.child().and_then(|b| b.last_child()) {
                    check.set_opacity(if selected { 1.0 } else { 0.0 });
                }
                crate::ui::a11y::set_label(row, &choice_label(choice, selected));
            }
        }
        OptionValue::Boolean { current } => {
            let Some(button) = widget.downcast_ref::<gtk::ToggleButton>() else {
                return;
            };
            let state = if *current { gettext("on") } else { gettext("off") };
            let (label, tip) = describe(option, &state);
            UPDATING.with(|u| u.set(true));
            button.set_active(*current);
            UPDATING.with(|u| u.set(false));
            button.set_tooltip_text(Some(&tip));
            crate::ui::a11y::set_label(button, &label);
        }
    }
}

/// The look and names every picker has: the tests and `update` find it
/// by `option-ID`, a screen reader by "Model: Sonnet".
fn named_picker(button: &impl IsA<gtk::Widget>, option: &SessionOption, label: &str) {
    button.add_css_class("flat");
    button.add_css_class("option-picker");
    button.set_widget_name(&format!("option-{}", option.id));
    crate::ui::a11y::set_label(button, label);
}

/// "Model: Sonnet", and the option's description: what the picker says.
fn describe(option: &SessionOption, current: &str) -> (String, String) {
    let label = gettext_f(
        "{option}: {value}",
        &[("option", &option.name), ("value", current)],
    );
    let tip = match &option.description {
        Some(d) => format!("{label}\n{d}"),
        None => label.clone(),
    };
    (label, tip)
}

/// Asks the agent for a new value. The picker waits, insensitive, for the
/// answer; a refusal is a toast in the agent's words (the pickers then
/// show the old value again, see `SessionControls::set_option`).
fn change(agent: &SessionControls, button: &impl IsA<gtk::Widget>, id: &str, value: serde_json::Value) {
    let button = button.as_ref().clone();
    button.set_sensitive(false);
    agent.set_option(
        id,
        value,
        glib::clone!(
            #[weak]
            button,
            move |r| {
                button.set_sensitive(true);
                if let Err(e) = r {
                    let _ = button.activate_action("win.toast", Some(&e.to_variant()));
                }
            }
        ),
    );
}

fn select_picker(
    agent: &SessionControls,
    option: &SessionOption,
    current: &str,
    choices: &[Choice],
) -> gtk::Widget {
    let current_name = option.current_name();
    let (label, tip) = describe(option, &current_name);
    let content = gtk::Box::new(gtk::Orientation::Horizontal, 4);
    content.append(&gtk::Image::from_icon_name(category_icon(&option.category)));
    let text = gtk::Label::new(Some(&current_name));
    text.set_ellipsize(pango::EllipsizeMode::End);
    text.set_max_width_chars(18);
    content.append(&text);
    content.append(&gtk::Image::from_icon_name("pan-down-symbolic"));
    let button = gtk::MenuButton::builder()
        .child(&content)
        .tooltip_text(&tip)
        .build();
    named_picker(&button, option, &label);

    let list = gtk::ListBox::new();
    list.set_selection_mode(gtk::SelectionMode::None);
    list.add_css_class("navigation-sidebar");
    crate::ui::a11y::set_label(&list, &option.name);
    // The option itself heads its choices: its name and what it is for.
    let heading = gtk::Box::new(gtk::Orientation::Vertical, 2);
    heading.set_margin_start(12);
    heading.set_margin_end(12);
    heading.set_margin_top(6);
    heading.set_margin_bottom(6);
    let title = gtk::Label::new(Some(&option.name));
    title.add_css_class("heading");
    title.set_xalign(0.0);
    heading.append(&title);
    if let Some(d) = &option.description {
        let desc = gtk::Label::new(Some(d));
        desc.add_css_class("dim-label");
        desc.add_css_class("caption");
        desc.set_xalign(0.0);
        desc.set_wrap(true);
        desc.set_max_width_chars(40);
        heading.append(&desc);
    }
    let mut last_group: Option<&str> = None;
    for (index, choice) in choices.iter().enumerate() {
        if choice.group.as_deref() != last_group {
            if let Some(g) = &choice.group {
                let header = gtk::Label::new(Some(g));
                header.add_css_class("caption-heading");
                header.add_css_class("dim-label");
                header.set_xalign(0.0);
                header.set_margin_top(6);
                let row = gtk::ListBoxRow::builder()
                    .child(&header)
                    .activatable(false)
                    .selectable(false)
                    .build();
                row.set_focusable(false);
                list.append(&row);
            }
            last_group = choice.group.as_deref();
        }
        let row = choice_row(choice, choice.value == current);
        row.set_widget_name(&format!("choice-{index}"));
        list.append(&row);
    }
    let content_box = gtk::Box::new(gtk::Orientation::Vertical, 0);
    content_box.append(&heading);
    content_box.append(&list);
    let scroller = gtk::ScrolledWindow::builder()
        .child(&content_box)
        .hscrollbar_policy(gtk::PolicyType::Never)
        .propagate_natural_height(true)
        .propagate_natural_width(true)
        .max_content_height(420)
        .build();
    let popover = gtk::Popover::builder().child(&scroller).build();
    popover.add_css_class("menu");
    button.set_popover(Some(&popover));

    let values: Vec<Option<String>> = choices.iter().map(|c| Some(c.value.clone())).collect();
    let id = option.id.clone();
    list.connect_row_activated(glib::clone!(
        #[weak]
        agent,
        #[weak]
        button,
        #[weak]
        popover,
        move |_, row| {
            popover.popdown();
            // Rows are named after their choice's index (group headers
            // between them are not).
            let chosen = row
                .widget_name()
                .strip_prefix("choice-")
                .and_then(|i| i.parse::<usize>().ok())
                .and_then(|i| values.get(i).cloned().flatten());
            // The value now, not when the picker was built.
            let now = agent
                .options()
                .into_iter()
                .find(|o| o.id == id)
                .map(|o| o.current_text());
            let Some(value) = chosen.filter(|v| Some(v) != now.as_ref()) else {
                return;
            };
            change(&agent, &button, &id, serde_json::Value::String(value));
        }
    ));
    button.upcast()
}

fn choice_row(choice: &Choice, selected: bool) -> gtk::ListBoxRow {
    let texts = gtk::Box::new(gtk::Orientation::Vertical, 2);
    texts.set_hexpand(true);
    let name = gtk::Label::new(Some(&choice.name));
    name.set_xalign(0.0);
    texts.append(&name);
    if let Some(d) = &choice.description {
        let desc = gtk::Label::new(Some(d));
        desc.set_xalign(0.0);
        desc.set_wrap(true);
        desc.set_max_width_chars(40);
        desc.add_css_class("dim-label");
        desc.add_css_class("caption");
        texts.append(&desc);
    }
    let row_box = gtk::Box::new(gtk::Orientation::Horizontal, 12);
    row_box.append(&texts);
    let check = gtk::Image::from_icon_name("object-select-symbolic");
    check.set_opacity(if selected { 1.0 } else { 0.0 });
    row_box.append(&check);
    let row = gtk::ListBoxRow::builder().child(&row_box).build();
    crate::ui::a11y::set_label(&row, &choice_label(choice, selected));
    row
}

/// "Sonnet, fast and cheap (current)": what a screen reader says of a row.
fn choice_label(choice: &Choice, selected: bool) -> String {
    let mut label = choice.name.clone();
    if let Some(d) = &choice.description {
        label = format!("{label}, {d}");
    }
    if selected {
        label = gettext_f("{choice} (current)", &[("choice", &label)]);
    }
    label
}

fn boolean_picker(agent: &SessionControls, option: &SessionOption, current: bool) -> gtk::Widget {
    let state = if current { gettext("on") } else { gettext("off") };
    let (label, tip) = describe(option, &state);
    let button = gtk::ToggleButton::builder()
        .label(&option.name)
        .active(current)
        .tooltip_text(&tip)
        .build();
    named_picker(&button, option, &label);
    let id = option.id.clone();
    button.connect_toggled(glib::clone!(
        #[weak]
        agent,
        move |button| {
            if UPDATING.with(Cell::get) {
                return;
            }
            change(&agent, button, &id, serde_json::Value::Bool(button.is_active()));
        }
    ));
    button.upcast()
}
