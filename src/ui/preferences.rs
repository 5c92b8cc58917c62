//! Preferences: the theme (applied live through AdwStyleManager) and the
//! language, both written into the configuration file with its comments kept.

use adw::prelude::*;
use gtk::glib;

use crate::core::config::model::Theme;
use crate::core::services::Core;
use crate::i18n::gettext;
use crate::ui::runtime;

/// Shows Preferences over `parent`, whose `win.toast` action shows errors.
pub fn show(parent: &gtk::Window, core: &Core) {
    let current = core.current();
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

fn set(parent: &gtk::Window, core: &Core, key: &'static str, value: serde_json::Value) {
    let core = core.clone();
    runtime::call(
        async move {
            core.edit_config(|text| Ok((crate::core::config::edit::set_top_level(text, key, &value)?, ())))
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
