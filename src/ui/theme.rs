//! The colour scheme: a listener of configuration changes that applies
//! `theme` (system, light, dark) to libadwaita's style manager. How a
//! widget follows the style is [`crate::ui::style`]'s.

use crate::core::config::model::Theme;
use crate::ui::models::AppModel;
pub use crate::ui::style::on_dark_change;

/// Applies the configured theme now and whenever the configuration changes.
pub fn attach(model: &AppModel) {
    apply(model.core().config.current().theme);
    model.connect_config_changed(|model, _, _| apply(model.core().config.current().theme));
}

pub fn apply(theme: Theme) {
    let scheme = match theme {
        Theme::System => adw::ColorScheme::Default,
        Theme::Light => adw::ColorScheme::ForceLight,
        Theme::Dark => adw::ColorScheme::ForceDark,
    };
    adw::StyleManager::default().set_color_scheme(scheme);
}
