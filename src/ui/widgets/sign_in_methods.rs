//! The sign-in page's rows, one for each way to sign in: a button, the
//! entries of the keys a method wants, or a gateway's form (its base URL
//! and a header, the key kept in the keyring). The page
//! ([`super::sign_in_page`]) lays them out and keeps their entries across
//! rebuilds.

use adw::prelude::*;
use gtk::glib;

use crate::core::auth::{AuthKind, AuthMethod};
use crate::core::secrets::Secret;
use crate::i18n::{gettext, gettext_f};
use crate::ui::models::AgentObject;
use crate::ui::widgets::secret_entry::{KeyField, SecretEntry};

/// The names the gateway form's entries are kept under (`key_entry`).
pub const GATEWAY_URL: &str = "gateway:url";
pub const GATEWAY_HEADER: &str = "gateway:header";
pub const GATEWAY_VALUE: &str = "gateway:value";

/// What a row needs of the page it is on: to keep its button and entries
/// (found again by name, kept across rebuilds), and to sign in.
pub trait MethodHost: glib::object::ObjectType + IsA<glib::Object> {
    fn keep_button(&self, id: &str, button: &gtk::Button);
    fn keep_entry(&self, name: &str, entry: &KeyField);
    fn sign_in(&self, agent: &AgentObject, method: &str, values: Vec<(String, Secret)>);
    fn sign_in_gateway(&self, agent: &AgentObject, method: &str, args: &serde_json::Value);
    fn open_terminal(&self, agent: &AgentObject, method: &str);
}

pub fn method_row<P: MethodHost>(page: &P, agent: &AgentObject, method: &AuthMethod) -> gtk::Widget {
    let description = method.description.clone().unwrap_or_default();
    if let AuthKind::Gateway { .. } = method.kind {
        return gateway_row(page, agent, method);
    }
    let (label, terminal) = match method.kind {
        AuthKind::Terminal { .. } => (gettext("Open _Terminal"), true),
        _ if !method.keys().is_empty() => (gettext("Save and _Sign In"), false),
        _ => (gettext("_Sign In"), false),
    };
    let button = crate::ui::a11y::mnemonic_button(&label);
    button.set_valign(gtk::Align::Center);
    let name = gettext_f("Sign in with {method}", &[("method", &method.name)]);
    crate::ui::a11y::set_label(&button, &name);
    page.keep_button(&method.id, &button);
    let id = method.id.clone();
    let key_id = method.id.clone();
    if terminal {
        let weak_page = page.downgrade();
        button.connect_clicked(glib::clone!(
            #[weak]
            agent,
            move |_| {
                let Some(page) = weak_page.upgrade() else { return };
                page.open_terminal(&agent, &id);
            }
        ));
    } else if method.keys().is_empty() {
        let weak_page = page.downgrade();
        button.connect_clicked(glib::clone!(
            #[weak]
            agent,
            move |_| {
                let Some(page) = weak_page.upgrade() else { return };
                page.sign_in(&agent, &id, Vec::new());
            }
        ));
    }
    if method.keys().is_empty() {
        let row = adw::ActionRow::builder()
            .title(glib::markup_escape_text(&method.name).as_str())
            .subtitle(glib::markup_escape_text(&description).as_str())
            .activatable_widget(&button)
            .build();
        row.add_suffix(&button);
        // The row made its title a label of the button: named again.
        crate::ui::a11y::set_label(&button, &name);
        return row.upcast();
    }
    // A method that wants keys: an entry for each, then the button.
    let row = adw::ExpanderRow::builder()
        .title(glib::markup_escape_text(&method.name).as_str())
        .subtitle(glib::markup_escape_text(&description).as_str())
        .build();
    let mut entries = Vec::new();
    for key in method.keys() {
        let title = key.label.clone().unwrap_or_else(|| key.name.clone());
        let entry = if key.secret {
            KeyField::Secret(SecretEntry::new(&title))
        } else {
            KeyField::Plain(
                adw::EntryRow::builder()
                    .title(glib::markup_escape_text(&title).as_str())
                    .build(),
            )
        };
        crate::ui::a11y::set_description(&entry.control(), &key.name);
        // Enter in a key's entry signs in.
        entry.connect_activate(glib::clone!(
            #[weak]
            button,
            move || button.emit_clicked()
        ));
        row.add_row(&entry.row());
        page.keep_entry(&key.name, &entry);
        entries.push((key.name.clone(), entry));
    }
    add_action_row(
        &row,
        &gettext("Saved in your keyring, passed to the agent when it starts"),
        &button,
    );
    let weak_page = page.downgrade();
    button.connect_clicked(glib::clone!(
        #[weak]
        agent,
        move |_| {
            let Some(page) = weak_page.upgrade() else { return };
            let values: Vec<(String, Secret)> = entries
                .iter()
                // An empty entry keeps what is saved (the core says
                // which keys are still missing).
                .map(|(name, e)| (name, e.value()))
                .filter(|(_, v)| !v.is_empty())
                .map(|(name, v)| (name.clone(), Secret::new(v)))
                .collect();
            page.sign_in(&agent, &key_id, values);
        }
    ));
    row.set_expanded(true);
    row.upcast()
}

/// A gateway method: where the model's requests go, and the header that
/// carries the gateway's key. Never a bare button: the agent would take
/// a gateway sign-in that goes nowhere.
fn gateway_row<P: MethodHost>(page: &P, agent: &AgentObject, method: &AuthMethod) -> gtk::Widget {
    let description = method.description.clone().unwrap_or_default();
    let row = adw::ExpanderRow::builder()
        .title(glib::markup_escape_text(&method.name).as_str())
        .subtitle(glib::markup_escape_text(&description).as_str())
        .build();
    let url = KeyField::Plain(
        adw::EntryRow::builder()
            .title(gettext("Base URL"))
            .input_purpose(gtk::InputPurpose::Url)
            .build(),
    );
    crate::ui::a11y::set_description(
        &url.control(),
        &gettext("Where the agent sends its model requests, e.g. https://gateway.example.com/v1"),
    );
    let header = KeyField::Plain(adw::EntryRow::builder().title(gettext("Header Name")).build());
    crate::ui::a11y::set_description(
        &header.control(),
        &gettext("The header that carries the key, e.g. Authorization or x-api-key"),
    );
    let value = KeyField::Secret(SecretEntry::new(&gettext("Header Value")));
    let button = crate::ui::a11y::mnemonic_button(&gettext("Save and _Sign In"));
    let name = gettext_f("Sign in with {method}", &[("method", &method.name)]);
    crate::ui::a11y::set_label(&button, &name);
    page.keep_button(&method.id, &button);
    for (key, field) in [
        (GATEWAY_URL, &url),
        (GATEWAY_HEADER, &header),
        (GATEWAY_VALUE, &value),
    ] {
        field.connect_activate(glib::clone!(
            #[weak]
            button,
            move || button.emit_clicked()
        ));
        row.add_row(&field.row());
        page.keep_entry(key, field);
    }
    add_action_row(
        &row,
        &gettext("Saved in your keyring, sent to the agent each time it starts"),
        &button,
    );
    let id = method.id.clone();
    let weak_page = page.downgrade();
    button.connect_clicked(glib::clone!(
        #[weak]
        agent,
        move |_| {
            let Some(page) = weak_page.upgrade() else { return };
            let mut headers = serde_json::Map::new();
            let name = header.value();
            if !name.trim().is_empty() {
                headers.insert(name.trim().to_owned(), value.value().into());
            }
            let args = serde_json::json!({"baseUrl": url.value(), "headers": headers});
            page.sign_in_gateway(&agent, &id, &args);
        }
    ));
    row.set_expanded(true);
    row.upcast()
}

/// The last row of a method that wants values: where they are kept, and
/// the button that signs in.
fn add_action_row(row: &adw::ExpanderRow, saved_text: &str, button: &gtk::Button) {
    let saved = gtk::Label::new(Some(saved_text));
    saved.add_css_class("dim-label");
    saved.add_css_class("caption");
    saved.set_wrap(true);
    saved.set_xalign(0.0);
    saved.set_hexpand(true);
    let action = gtk::Box::new(gtk::Orientation::Horizontal, 12);
    action.set_margin_top(6);
    action.set_margin_bottom(6);
    action.set_margin_start(12);
    action.set_margin_end(12);
    action.append(&saved);
    action.append(button);
    button.add_css_class("suggested-action");
    row.add_row(&action);
    // The list row around it is no Tab stop of its own (an unnamed
    // "list item" otherwise): its button is.
    if let Some(r) = action.parent().and_downcast::<gtk::ListBoxRow>() {
        r.set_activatable(false);
        r.set_focusable(false);
    }
}
