//! The session's options as compact pickers under the composer: a menu
//! button per `select` (its choices with their descriptions, grouped as the
//! agent grouped them) and a toggle per `boolean`, in the order mode,
//! model, thought level, other. A change goes to the agent; if it refuses,
//! the picker shows the old value again and a toast gives its words.

use gtk::prelude::*;
use gtk::{glib, pango};

use crate::core::chat::controls::{Choice, OptionValue, SessionOption, CATEGORIES};
use crate::i18n::{gettext, gettext_f};
use crate::ui::models::AgentObject;

fn category_icon(category: &str) -> &'static str {
    match category {
        "mode" => "view-list-bullet-symbolic",
        "model" => "applications-science-symbolic",
        "thought_level" => "preferences-system-symbolic",
        _ => "emblem-system-symbolic",
    }
}

/// Fills `box_` with the agent's pickers (hidden when there are none).
pub fn rebuild(box_: &gtk::FlowBox, agent: Option<&AgentObject>) {
    while let Some(child) = box_.first_child() {
        box_.remove(&child);
    }
    let mut options = agent.map(AgentObject::options).unwrap_or_default();
    options.sort_by_key(|o| {
        CATEGORIES
            .iter()
            .position(|c| *c == o.category)
            .unwrap_or(CATEGORIES.len())
    });
    box_.set_visible(!options.is_empty());
    let Some(agent) = agent else { return };
    for option in options {
        let widget = match &option.value {
            OptionValue::Select { current, choices } => select_picker(agent, &option, current, choices),
            OptionValue::Boolean { current } => boolean_picker(agent, &option, *current),
        };
        box_.append(&widget);
        // The pickers take focus, not the flow box's children around them.
        if let Some(child) = widget.parent() {
            child.set_focusable(false);
        }
    }
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

fn toast_refusal(widget: &impl IsA<gtk::Widget>, error: &str) {
    let _ = widget.activate_action("win.toast", Some(&error.to_variant()));
}

fn select_picker(
    agent: &AgentObject,
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
    button.add_css_class("flat");
    button.add_css_class("option-picker");
    button.set_widget_name(&format!("option-{}", option.id));
    crate::ui::a11y::set_label(&button, &label);

    let list = gtk::ListBox::new();
    list.set_selection_mode(gtk::SelectionMode::None);
    list.add_css_class("navigation-sidebar");
    crate::ui::a11y::set_label(&list, &option.name);
    let mut last_group: Option<&str> = None;
    for choice in choices {
        if choice.group.as_deref() != last_group {
            if let Some(g) = &choice.group {
                let header = gtk::Label::new(Some(g));
                header.add_css_class("heading");
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
        list.append(&choice_row(choice, choice.value == current));
    }
    let scroller = gtk::ScrolledWindow::builder()
        .child(&list)
        .hscrollbar_policy(gtk::PolicyType::Never)
        .propagate_natural_height(true)
        .max_content_height(420)
        .build();
    let popover = gtk::Popover::builder().child(&scroller).build();
    popover.add_css_class("menu");
    button.set_popover(Some(&popover));

    let values: Vec<Option<String>> = choices.iter().map(|c| Some(c.value.clone())).collect();
    let (id, current) = (option.id.clone(), current.to_owned());
    list.connect_row_activated(glib::clone!(
        #[weak]
        agent,
        #[weak]
        button,
        #[weak]
        popover,
        move |list, row| {
            popover.popdown();
            // Rows are the choices, with group headers between them.
            let mut index = 0;
            let mut child = list.first_child();
            let mut chosen = None;
            while let Some(c) = child {
                if let Some(r) = c.downcast_ref::<gtk::ListBoxRow>() {
                    if r.is_activatable() {
                        if r == row {
                            chosen = values.get(index).cloned().flatten();
                            break;
                        }
                        index += 1;
                    }
                }
                child = c.next_sibling();
            }
            let Some(value) = chosen.filter(|v| *v != current) else {
                return;
            };
            button.set_sensitive(false);
            agent.set_option(
                &id,
                serde_json::Value::String(value),
                glib::clone!(
                    #[weak]
                    button,
                    move |r| {
                        button.set_sensitive(true);
                        if let Err(e) = r {
                            toast_refusal(&button, &e);
                        }
                    }
                ),
            );
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
    let mut label = choice.name.clone();
    if let Some(d) = &choice.description {
        label = format!("{label}, {d}");
    }
    if selected {
        label = gettext_f("{choice} (current)", &[("choice", &label)]);
    }
    crate::ui::a11y::set_label(&row, &label);
    row
}

fn boolean_picker(agent: &AgentObject, option: &SessionOption, current: bool) -> gtk::Widget {
    let state = if current { gettext("on") } else { gettext("off") };
    let (label, tip) = describe(option, &state);
    let button = gtk::ToggleButton::builder()
        .label(&option.name)
        .active(current)
        .tooltip_text(&tip)
        .build();
    button.add_css_class("flat");
    button.add_css_class("option-picker");
    button.set_widget_name(&format!("option-{}", option.id));
    crate::ui::a11y::set_label(&button, &label);
    let id = option.id.clone();
    button.connect_toggled(glib::clone!(
        #[weak]
        agent,
        move |button| {
            button.set_sensitive(false);
            agent.set_option(
                &id,
                serde_json::Value::Bool(button.is_active()),
                glib::clone!(
                    #[weak]
                    button,
                    move |r| {
                        button.set_sensitive(true);
                        if let Err(e) = r {
                            // The pickers are rebuilt from the unchanged
                            // options; this one says why.
                            toast_refusal(&button, &e);
                        }
                    }
                ),
            );
        }
    ));
    button.upcast()
}
