//! An agent's elicitation, answered in a dialog: a form (its JSON-schema
//! subset as libadwaita rows: text, numbers, switches, choices; required
//! fields, defaults, and every limit checked before Submit), or a link to
//! open, shown whole, opened only when the user says so. Decline and
//! Cancel answer as the protocol says; closing the dialog is Cancel.

use std::cell::RefCell;
use std::rc::Rc;

use adw::prelude::*;
use gtk::glib;
use serde_json::{json, Map, Value};

use crate::core::events::ElicitationRequest;
use crate::i18n::{gettext, gettext_f};
use crate::ui::models::AgentObject;

/// How one field is read back.
enum Field {
    Text(gtk::Entry),
    Number(gtk::SpinButton, bool),
    Switch(gtk::Switch),
    Choice(adw::ComboRow, Vec<String>),
    Many(Vec<(gtk::CheckButton, String)>),
}

impl Field {
    /// The control a person types into or sets first.
    fn control(&self) -> Option<gtk::Widget> {
        match self {
            Field::Text(row) => Some(row.clone().upcast()),
            Field::Number(spin, _) => Some(spin.clone().upcast()),
            Field::Switch(switch) => Some(switch.clone().upcast()),
            Field::Choice(row, _) => Some(row.clone().upcast()),
            Field::Many(checks) => checks.first().map(|(c, _)| c.clone().upcast()),
        }
    }

    fn value(&self) -> Option<Value> {
        match self {
            Field::Text(e) => {
                let t = e.text().to_string();
                (!t.is_empty()).then(|| json!(t))
            }
            Field::Number(s, integer) => Some(if *integer {
                json!(s.value().round() as i64)
            } else {
                json!(s.value())
            }),
            Field::Switch(s) => Some(json!(s.is_active())),
            Field::Choice(c, values) => values.get(c.selected() as usize).map(|v| json!(v)),
            Field::Many(checks) => Some(json!(checks
                .iter()
                .filter(|(c, _)| c.is_active())
                .map(|(_, v)| v.clone())
                .collect::<Vec<_>>())),
        }
    }
}

/// The choices of a string (or of an array's items): (value, title).
fn choices(prop: &Value) -> Option<Vec<(String, String)>> {
    if let Some(e) = prop.get("enum").and_then(Value::as_array) {
        return Some(
            e.iter()
                .filter_map(Value::as_str)
                .map(|v| (v.to_owned(), v.to_owned()))
                .collect(),
        );
    }
    let list = prop.get("oneOf").or_else(|| prop.get("anyOf"))?.as_array()?;
    Some(
        list.iter()
            .filter_map(|o| {
                let v = o.get("const")?.as_str()?;
                let t = o.get("title").and_then(Value::as_str).unwrap_or(v);
                Some((v.to_owned(), t.to_owned()))
            })
            .collect(),
    )
}

/// Opens the dialog for `request` over `parent`. The answer goes to the
/// agent through `agent`; errors become toasts in the dialog.
pub fn show(
    parent: &impl IsA<gtk::Window>,
    agent: &AgentObject,
    request: &ElicitationRequest,
) -> gtk::Window {
    if request.mode == "url" {
        return show_url(parent, agent, request);
    }
    let window = adw::Window::builder()
        .title(gettext_f("{agent} Asks", &[("agent", &agent.title())]))
        .modal(true)
        .transient_for(parent)
        .default_width(520)
        .default_height(560)
        .build();
    let cancel = crate::ui::a11y::mnemonic_button(&gettext("_Cancel"));
    let submit = gtk::Button::builder()
        .label(gettext("_Submit"))
        .use_underline(true)
        .css_classes(["suggested-action"])
        .build();
    crate::ui::a11y::name_mnemonic(&submit);
    let header = adw::HeaderBar::builder().show_end_title_buttons(false).build();
    header.pack_start(&cancel);
    header.pack_end(&submit);
    let page = adw::PreferencesPage::new();
    let intro = adw::PreferencesGroup::builder()
        .title(glib::markup_escape_text(&crate::ui::markdown::visible(
            &request.message.chars().take(2000).collect::<String>(),
        )))
        .build();
    page.add(&intro);
    let group = adw::PreferencesGroup::new();
    page.add(&group);
    let schema = request.schema.clone().unwrap_or(Value::Null);
    let empty = Map::new();
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    let mut fields: Vec<(String, Field)> = Vec::new();
    // The titles of the required fields' rows (with the star) and their
    // names (without).
    let mut starred: Vec<(String, String)> = Vec::new();
    for (key, prop) in props {
        let mut title = prop
            .get("title")
            .and_then(Value::as_str)
            .unwrap_or(key)
            .to_owned();
        // What a screen reader says: the title without the star (the field
        // is said to be required instead).
        let name = crate::ui::markdown::visible(&title).into_owned();
        if required.contains(key) {
            title.push_str(" *");
        }
        let title = crate::ui::markdown::visible(&title).into_owned();
        if required.contains(key) {
            // (A row's title is markup, escaped as each row is given it.)
            starred.push((glib::markup_escape_text(&title).to_string(), name.clone()));
        }
        let description = prop
            .get("description")
            .and_then(Value::as_str)
            .map(|d| crate::ui::markdown::visible(d).into_owned());
        let kind = prop.get("type").and_then(Value::as_str).unwrap_or("string");
        let default = prop.get("default");
        let field = match (kind, choices(prop)) {
            ("string", Some(options)) => {
                let names: Vec<&str> = options.iter().map(|(_, t)| t.as_str()).collect();
                let row = adw::ComboRow::builder()
                    .title(glib::markup_escape_text(&title))
                    .model(&gtk::StringList::new(&names))
                    .build();
                if let Some(i) = default
                    .and_then(Value::as_str)
                    .and_then(|d| options.iter().position(|(v, _)| v == d))
                {
                    row.set_selected(i as u32);
                }
                if let Some(d) = &description {
                    row.set_subtitle(&glib::markup_escape_text(d));
                }
                group.add(&row);
                Field::Choice(row, options.into_iter().map(|(v, _)| v).collect())
            }
            ("string", None) => {
                // A plain entry in a row, not an AdwEntryRow: GTK 4.8 marks
                // nothing focused inside an entry row, so a screen reader
                // hears nothing when the form opens on it.
                let entry = gtk::Entry::builder()
                    .hexpand(true)
                    .valign(gtk::Align::Center)
                    .activates_default(true)
                    .build();
                if let Some(d) = default.and_then(Value::as_str) {
                    entry.set_text(d);
                }
                let row = adw::ActionRow::builder()
                    .title(glib::markup_escape_text(&title))
                    .activatable_widget(&entry)
                    .build();
                if let Some(d) = &description {
                    row.set_subtitle(&glib::markup_escape_text(d));
                }
                row.add_suffix(&entry);
                // After the row made its title a label of it (said twice).
                crate::ui::a11y::set_label(&entry, &name);
                if let Some(d) = &description {
                    crate::ui::a11y::set_description(&entry, d);
                }
                group.add(&row);
                Field::Text(entry)
            }
            ("number" | "integer", _) => {
                let integer = kind == "integer";
                let finite = |v: Option<f64>| v.filter(|v| v.is_finite());
                let min = finite(prop.get("minimum").and_then(Value::as_f64)).unwrap_or(-1e9);
                // The agent's limits may be upside down: GTK must never see that.
                let max = finite(prop.get("maximum").and_then(Value::as_f64))
                    .unwrap_or(1e9)
                    .max(min);
                let spin = gtk::SpinButton::with_range(min, max, 1.0);
                spin.set_digits(if integer { 0 } else { 2 });
                spin.set_valign(gtk::Align::Center);
                spin.set_value(default.and_then(Value::as_f64).unwrap_or(min.max(0.0)));
                let row = adw::ActionRow::builder()
                    .title(glib::markup_escape_text(&title))
                    .build();
                if let Some(d) = &description {
                    row.set_subtitle(&glib::markup_escape_text(d));
                }
                row.add_suffix(&spin);
                row.set_activatable_widget(Some(&spin));
                // After the row made its title a label of it (said twice).
                crate::ui::a11y::set_label(&spin, &name);
                group.add(&row);
                Field::Number(spin, integer)
            }
            ("boolean", _) => {
                let switch = gtk::Switch::builder()
                    .valign(gtk::Align::Center)
                    .active(default.and_then(Value::as_bool).unwrap_or(false))
                    .build();
                let row = adw::ActionRow::builder()
                    .title(glib::markup_escape_text(&title))
                    .build();
                if let Some(d) = &description {
                    row.set_subtitle(&glib::markup_escape_text(d));
                }
                row.add_suffix(&switch);
                row.set_activatable_widget(Some(&switch));
                // After the row made its title a label of it (said twice).
                crate::ui::a11y::set_label(&switch, &name);
                group.add(&row);
                Field::Switch(switch)
            }
            ("array", _) => {
                let options = prop.get("items").and_then(choices).unwrap_or_default();
                let chosen: Vec<&str> = default
                    .and_then(Value::as_array)
                    .map(|d| d.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let expander = adw::ExpanderRow::builder()
                    .title(glib::markup_escape_text(&title))
                    .expanded(true)
                    .build();
                let mut checks = Vec::new();
                for (value, name) in options {
                    let check = gtk::CheckButton::builder()
                        .active(chosen.contains(&value.as_str()))
                        .build();
                    let row = adw::ActionRow::builder()
                        .title(glib::markup_escape_text(&name))
                        .build();
                    row.add_prefix(&check);
                    row.set_activatable_widget(Some(&check));
                    expander.add_row(&row);
                    checks.push((check, value));
                }
                group.add(&expander);
                Field::Many(checks)
            }
            _ => {
                let row = adw::ActionRow::builder()
                    .title(glib::markup_escape_text(&title))
                    .subtitle(gettext(
                        "Parley cannot ask for this kind of value; it is left out",
                    ))
                    .build();
                group.add(&row);
                continue;
            }
        };
        if required.contains(key) {
            // Said as "required", not as the star drawn after the title:
            // as a property (newer GTK gives it as a state), and in words
            // (GTK 4.8 passes no "required" on to a screen reader).
            if let Some(control) = field.control() {
                crate::ui::a11y::set_required(&control);
                let said = match &description {
                    Some(d) => gettext_f("Required. {description}", &[("description", d)]),
                    None => gettext("Required"),
                };
                crate::ui::a11y::set_description(&control, &said);
            }
        }
        fields.push((key.clone(), field));
    }
    // A required field's row is said by its name, without the star drawn
    // after it (the field itself is said to be required).
    crate::ui::a11y::for_each_descendant(group.upcast_ref(), &mut |w| {
        if let Some(row) = w.downcast_ref::<adw::PreferencesRow>() {
            if let Some((_, name)) = starred.iter().find(|(t, _)| *t == row.title()) {
                crate::ui::a11y::set_label(row, name);
            }
        }
    });
    let problems = gtk::Label::builder()
        .wrap(true)
        .xalign(0.0)
        .visible(false)
        .css_classes(["error"])
        .build();
    let decline = gtk::Button::builder()
        .label(gettext("_Decline"))
        .use_underline(true)
        .halign(gtk::Align::Center)
        .css_classes(["pill"])
        .build();
    crate::ui::a11y::name_mnemonic(&decline);
    let bottom = adw::PreferencesGroup::new();
    let bottom_box = gtk::Box::new(gtk::Orientation::Vertical, 12);
    bottom_box.append(&problems);
    bottom_box.append(&decline);
    bottom.add(&bottom_box);
    page.add(&bottom);
    let content = gtk::Box::new(gtk::Orientation::Vertical, 0);
    content.append(&header);
    content.append(&page);
    let toasts = adw::ToastOverlay::new();
    toasts.set_child(Some(&content));
    window.set_content(Some(&toasts));

    // Answered once: closing after an answer sends nothing more.
    let answered = Rc::new(RefCell::new(false));
    let fields = Rc::new(fields);
    let answer = {
        let (agent, id, window, answered) = (
            agent.clone(),
            request.id.clone(),
            window.clone(),
            answered.clone(),
        );
        let toasts = toasts.clone();
        Rc::new(move |action: &str, content: Option<Value>| {
            answered.replace(true);
            let (window, toasts, answered) = (window.clone(), toasts.clone(), answered.clone());
            agent.conversation().answer_elicitation(
                &id,
                action,
                content,
                move |r: Result<(), String>| match r {
                    Ok(()) => window.close(),
                    Err(e) => {
                        answered.replace(false);
                        toasts.add_toast(adw::Toast::new(&crate::ui::markdown::escape(&e)));
                        crate::ui::a11y::announce(&window, &e, crate::ui::a11y::Priority::Medium);
                    }
                },
            );
        })
    };
    submit.connect_clicked(glib::clone!(
        #[strong]
        answer,
        #[strong]
        fields,
        #[weak]
        problems,
        #[weak]
        window,
        move |_| {
            let mut content = Map::new();
            for (key, field) in fields.iter() {
                if let Some(v) = field.value() {
                    content.insert(key.clone(), v);
                }
            }
            let content = Value::Object(content);
            // The same check the core makes, shown before anything is sent.
            match crate::core::chat::check_form(&schema, &content) {
                Ok(values) => {
                    problems.set_visible(false);
                    answer("accept", Some(Value::Object(values)));
                }
                Err(list) => {
                    let text = list.join("\n");
                    problems.set_label(&text);
                    problems.set_visible(true);
                    crate::ui::a11y::announce(&window, &text, crate::ui::a11y::Priority::Medium);
                }
            }
        }
    ));
    decline.connect_clicked(glib::clone!(
        #[strong]
        answer,
        move |_| answer("decline", None)
    ));
    cancel.connect_clicked(glib::clone!(
        #[weak]
        window,
        move |_| window.close()
    ));
    // Closed unanswered: cancel, unless it was settled elsewhere meanwhile
    // (the agent said complete, the turn ended, a notification's Decline).
    let (pending_agent, pending_id) = (agent.clone(), request.id.clone());
    window.connect_close_request(glib::clone!(
        #[strong]
        answer,
        #[strong]
        answered,
        move |_| {
            let pending = pending_agent
                .conversation()
                .elicitations()
                .iter()
                .any(|e| e.id == pending_id);
            if !*answered.borrow() && pending {
                answer("cancel", None);
            }
            glib::Propagation::Proceed
        }
    ));
    let keys = gtk::ShortcutController::new();
    super::add_close_keys(&keys);
    window.add_controller(keys);
    // The form opens on its first required field, or else its first field,
    // not on Cancel. (The schema's properties come sorted by name, so the
    // first field is not always the one the agent listed first.)
    let first = fields
        .iter()
        .find(|(key, _)| required.contains(key))
        .or_else(|| fields.first())
        .and_then(|(_, f)| f.control());
    // Once shown: focus given before the window is mapped sends no focus
    // event, and a screen reader would not say where it is.
    if let Some(first) = first {
        window.connect_map(move |_| {
            let first = first.clone();
            glib::idle_add_local_once(move || {
                first.grab_focus();
            });
        });
    }
    window.set_default_widget(Some(&submit));
    window.present();
    window.upcast()
}

/// A link to open: the whole address, and nothing opened without a yes.
fn show_url(
    parent: &impl IsA<gtk::Window>,
    agent: &AgentObject,
    request: &ElicitationRequest,
) -> gtk::Window {
    let url = request.url.clone().unwrap_or_default();
    let dialog = adw::MessageDialog::builder()
        .transient_for(parent)
        .modal(true)
        .heading(gettext_f(
            "{agent} Asks You to Open a Link",
            &[("agent", &agent.title())],
        ))
        .body(
            crate::ui::markdown::visible(&request.message.chars().take(2000).collect::<String>())
                .into_owned(),
        )
        .build();
    // Where it leads, first and large; then the whole address, which is
    // what opens (the core parsed it; see core::links).
    let host = crate::core::links::web_url(&url)
        .map(|u| u.host)
        .unwrap_or_default();
    let place = gtk::Label::builder()
        .label(crate::ui::markdown::visible(&host).into_owned())
        .selectable(true)
        .wrap(true)
        .wrap_mode(gtk::pango::WrapMode::Char)
        .css_classes(["title-2"])
        .build();
    crate::ui::a11y::set_label(&place, &gettext_f("Leads to {host}", &[("host", &host)]));
    let address = gtk::Label::builder()
        .label(crate::ui::markdown::visible(&url).into_owned())
        .selectable(true)
        .wrap(true)
        .wrap_mode(gtk::pango::WrapMode::Char)
        .css_classes(["monospace", "dim-label"])
        .build();
    crate::ui::a11y::set_label(&address, &gettext_f("Address: {url}", &[("url", &url)]));
    let both = gtk::Box::new(gtk::Orientation::Vertical, 6);
    both.append(&place);
    both.append(&address);
    dialog.set_extra_child(Some(&both));
    dialog.add_response("cancel", &gettext("_Cancel"));
    dialog.add_response("decline", &gettext("_Decline"));
    dialog.add_response("open", &gettext("_Open Link"));
    crate::ui::a11y::name_mnemonics(&dialog);
    dialog.set_response_appearance("open", adw::ResponseAppearance::Suggested);
    dialog.set_default_response(Some("open"));
    dialog.set_close_response("cancel");
    let (agent, id) = (agent.clone(), request.id.clone());
    dialog.connect_response(None, move |dialog, response| {
        if !agent.conversation().elicitations().iter().any(|e| e.id == id) {
            return; // settled elsewhere; the window closed this dialog
        }
        let action = match response {
            "open" => {
                // Through the desktop (the OpenURI portal inside Flatpak).
                gtk::show_uri(dialog.transient_for().as_ref(), &url, gtk::gdk::CURRENT_TIME);
                "accept"
            }
            "decline" => "decline",
            _ => "cancel",
        };
        agent.conversation().answer_elicitation(&id, action, None, |_| {});
    });
    dialog.present();
    dialog.upcast()
}
