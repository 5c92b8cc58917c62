//! The colour scheme: a listener of configuration changes that applies
//! `theme` (system, light, dark) to libadwaita's style manager, and how a
//! widget follows the style as it changes.

use crate::core::config::model::Theme;
use crate::ui::models::AppModel;

/// Applies the configured theme now and whenever the configuration changes.
pub fn attach(model: &AppModel) {
    apply(model.core().current().theme);
    model.connect_config_changed(|model, _, _| apply(model.core().current().theme));
}

pub fn apply(theme: Theme) {
    let scheme = match theme {
        Theme::System => adw::ColorScheme::Default,
        Theme::Light => adw::ColorScheme::ForceLight,
        Theme::Dark => adw::ColorScheme::ForceDark,
    };
    adw::StyleManager::default().set_color_scheme(scheme);
}

/// Calls `f` with `widget` and whether the style is dark each time the
/// style changes while `widget` lives (not now: it was made for the style
/// of now). The style manager outlives every widget, so the handler goes
/// with the widget.
pub fn on_dark_change<W: gtk::prelude::IsA<gtk::Widget>>(widget: &W, f: impl Fn(&W, bool) + 'static) {
    use gtk::prelude::*;
    let weak = widget.downgrade();
    let handler = adw::StyleManager::default().connect_dark_notify(move |style| {
        if let Some(widget) = weak.upgrade() {
            f(&widget, style.is_dark());
        }
    });
    let handler = std::cell::Cell::new(Some(handler));
    widget.connect_destroy(move |_| {
        if let Some(id) = handler.take() {
            adw::StyleManager::default().disconnect(id);
        }
    });
}
