//! Preferences: the theme (applied live through AdwStyleManager) and the
//! language, both written into the configuration file with its comments kept.

use adw::prelude::*;
use gtk::glib;

use crate::core::config::model::Theme;
use crate::core::services::Core;
use crate::i18n::gettext;
use crate::ui::runtime;

/// Shows Preferences over `parent`, whose `win.toast` action shows errors.
/// `rules_first`: open at the Permissions page.
pub fn show(parent: &gtk::Window, core: &Core, rules_first: bool) {
    let current = core.config.current();
    let prefs = adw::PreferencesWindow::builder()
        .transient_for(parent)
        .search_enabled(false)
        .build();
    // A page with a title, so its tab is not called "GtkLabel".
    let page = adw::PreferencesPage::builder()
        .title(gettext("General"))
        .icon_name("preferences-system-symbolic")
        .build();
    let group = adw::PreferencesGroup::builder()
        .title(gettext("Appearance"))
        .build();
    let themes = [gettext("Follow System"), gettext("Light"), gettext("Dark")];
    let model = gtk::StringList::new(&themes.iter().map(String::as_str).collect::<Vec<_>>());
    let theme_row = adw::ComboRow::builder()
        .title(gettext("Theme"))
        .model(&model)
        .factory(&named_items())
        .list_factory(&named_items())
        .build();
    // Its pop-over list is "GtkListView" otherwise.
    crate::ui::a11y::for_each_descendant(theme_row.upcast_ref(), &mut |w| {
        if w.is::<gtk::ListView>() {
            crate::ui::a11y::set_label(w, &gettext("Theme"));
        }
    });
    theme_row.set_selected(match current.theme {
        Theme::System => 0,
        Theme::Light => 1,
        Theme::Dark => 2,
    });
    group.add(&theme_row);
    let lang_group = adw::PreferencesGroup::builder()
        .title(gettext("Language"))
        .description(gettext(
            "A locale such as de_DE, or empty for the system's language. Applies at the next start.",
        ))
        .build();
    let lang_row = adw::EntryRow::builder()
        .title(gettext("Language"))
        .show_apply_button(true)
        .build();
    lang_row.set_text(&current.language);
    lang_group.add(&lang_row);
    page.add(&group);
    page.add(&lang_group);
    prefs.add(&page);
    let rules_page = adw::PreferencesPage::builder()
        .title(gettext("Permissions"))
        .icon_name("dialog-question-symbolic")
        .build();
    let rules = adw::PreferencesGroup::builder()
        .title(gettext("Permission Rules"))
        .description(gettext(
            "Rules answer an agent's permission requests without asking you, in order: the first that matches answers. \"Always allow\" or \"Always reject\" in a request offers to save one. A title's * never matches across a shell control (a semicolon, pipe, ampersand, backquote, $( or line break) unless the rule writes it, and a path rule holds only what the file system reaches under it, never through a link.",
        ))
        .build();
    let edit_button = gtk::Button::builder()
        .label(gettext("_Edit in the Configuration"))
        .use_underline(true)
        .valign(gtk::Align::Center)
        .css_classes(["flat"])
        .build();
    crate::ui::a11y::name_mnemonic(&edit_button);
    edit_button.connect_clicked(glib::clone!(
        #[weak]
        parent,
        #[weak]
        prefs,
        move |_| {
            prefs.close();
            let _ = parent.activate_action("win.edit-config", None);
        }
    ));
    rules.set_header_suffix(Some(&edit_button));
    rules_page.add(&rules);
    prefs.add(&rules_page);
    if rules_first {
        prefs.set_visible_page(&rules_page);
    }
    let rules = std::rc::Rc::new(Rules {
        group: rules,
        parent: parent.downgrade(),
        core: core.clone(),
        rows: Default::default(),
    });
    rules.fill();
    // The list lives as long as the window.
    prefs.connect_close_request(move |_| {
        let _ = &rules;
        glib::Propagation::Proceed
    });

    theme_row.connect_selected_notify(glib::clone!(
        #[weak]
        parent,
        #[strong]
        core,
        move |row| {
            let theme = match row.selected() {
                1 => Theme::Light,
                2 => Theme::Dark,
                _ => Theme::System,
            };
            crate::ui::theme::apply(theme);
            let value = serde_json::to_value(theme).unwrap_or_default();
            set(&parent, &core, "theme", value);
        }
    ));
    lang_row.connect_apply(glib::clone!(
        #[weak]
        parent,
        #[strong]
        core,
        move |row| set(
            &parent,
            &core,
            "language",
            serde_json::Value::String(row.text().to_string())
        )
    ));
    prefs.present();
}

/// The Permissions page's list: a row per rule with what it says, its
/// decision (changed in place) and a button that removes it; filled again
/// after each change.
struct Rules {
    group: adw::PreferencesGroup,
    parent: glib::WeakRef<gtk::Window>,
    core: Core,
    rows: std::cell::RefCell<Vec<gtk::Widget>>,
}

impl Rules {
    fn fill(self: &std::rc::Rc<Self>) {
        for row in self.rows.take() {
            self.group.remove(&row);
        }
        let rules = self.core.config.current().permissions;
        let mut rows = Vec::new();
        if rules.is_empty() {
            let row = adw::ActionRow::builder()
                .title(gettext("No rules: every request asks you"))
                .build();
            self.group.add(&row);
            rows.push(row.upcast());
        }
        for (i, rule) in rules.iter().enumerate() {
            let n = (i + 1).to_string();
            let row = adw::ActionRow::builder()
                .title(glib::markup_escape_text(&crate::core::config::rules::describe(
                    rule,
                )))
                .subtitle(crate::i18n::gettext_f("Rule {n}", &[("n", &n)]))
                .build();
            let decision = gtk::DropDown::from_strings(&[&gettext("Allow"), &gettext("Reject")]);
            decision.set_valign(gtk::Align::Center);
            decision.set_selected(u32::from(
                rule.decision == crate::core::config::model::Decision::Reject,
            ));
            crate::ui::a11y::name_drop_down(
                &decision,
                &crate::i18n::gettext_f("Decision of rule {n}", &[("n", &n)]),
            );
            let remove = gtk::Button::builder()
                .icon_name("user-trash-symbolic")
                .valign(gtk::Align::Center)
                .tooltip_text(gettext("Remove Rule"))
                .css_classes(["flat", "circular"])
                .build();
            crate::ui::a11y::set_label(&remove, &crate::i18n::gettext_f("Remove rule {n}", &[("n", &n)]));
            row.add_suffix(&decision);
            row.add_suffix(&remove);
            let this = std::rc::Rc::downgrade(self);
            decision.connect_selected_notify(move |d| {
                let value = if d.selected() == 1 { "reject" } else { "allow" };
                if let Some(this) = this.upgrade() {
                    this.edit(move |text| {
                        crate::core::config::edit::set_members_at(
                            text,
                            "permissions",
                            i,
                            &vec![("decision".to_owned(), serde_json::json!(value))],
                        )
                    });
                }
            });
            let this = std::rc::Rc::downgrade(self);
            remove.connect_clicked(move |_| {
                if let Some(this) = this.upgrade() {
                    this.edit(move |text| crate::core::config::edit::remove_at(text, "permissions", i));
                }
            });
            self.group.add(&row);
            rows.push(row.upcast());
        }
        self.rows.replace(rows);
    }

    fn edit(self: &std::rc::Rc<Self>, change: impl FnOnce(&str) -> Result<String, String> + Send + 'static) {
        let core = self.core.clone();
        let this = std::rc::Rc::downgrade(self);
        runtime::call(
            async move { core.config.edit(|text| Ok((change(text)?, ()))).await },
            move |r: Result<(), String>| {
                let Some(this) = this.upgrade() else { return };
                if let (Err(e), Some(parent)) = (r, this.parent.upgrade()) {
                    let _ = parent.activate_action("win.toast", Some(&e.to_variant()));
                }
                this.fill();
            },
        );
    }
}

fn set(parent: &gtk::Window, core: &Core, key: &'static str, value: serde_json::Value) {
    let core = core.clone();
    runtime::call(
        async move {
            core.config
                .edit(|text| Ok((crate::core::config::edit::set_top_level(text, key, &value)?, ())))
                .await
        },
        glib::clone!(
            #[weak]
            parent,
            move |r: Result<(), String>| {
                if let Err(e) = r {
                    let _ = parent.activate_action("win.toast", Some(&e.to_variant()));
                }
            }
        ),
    );
}

/// A drop-down's items with their text as the name of the list item a
/// screen reader lands on (GTK 4.8 gives it none).
fn named_items() -> gtk::SignalListItemFactory {
    let factory = gtk::SignalListItemFactory::new();
    factory.connect_setup(|_, item| {
        if let Some(item) = item.downcast_ref::<gtk::ListItem>() {
            let label = gtk::Label::new(None);
            label.set_xalign(0.0);
            item.set_child(Some(&label));
        }
    });
    factory.connect_bind(|_, item| {
        let Some(item) = item.downcast_ref::<gtk::ListItem>() else {
            return;
        };
        let text = item
            .item()
            .and_downcast::<gtk::StringObject>()
            .map(|s| s.string())
            .unwrap_or_default();
        if let Some(label) = item.child().and_downcast::<gtk::Label>() {
            label.set_label(&text);
            if let Some(row) = label.parent() {
                crate::ui::a11y::set_label(&row, &text);
            }
        }
    });
    factory
}
