//! The window's GSettings (size, maximized).

use gtk::gio;

use crate::ui::SCHEMA_ID;

/// GSettings for the window; `None` when the schema is not installed and was
/// not compiled at build time (the window then just does not remember).
pub fn settings() -> Option<gio::Settings> {
    let source = gio::SettingsSchemaSource::default();
    if let Some(schema) = source.as_ref().and_then(|s| s.lookup(SCHEMA_ID, true)) {
        return Some(gio::Settings::new_full(
            &schema,
            None::<&gio::SettingsBackend>,
            None,
        ));
    }
    let dir = option_env!("PARLEY_SCHEMA_DIR")?;
    let local = gio::SettingsSchemaSource::from_directory(dir, source.as_ref(), false).ok()?;
    let schema = local.lookup(SCHEMA_ID, false)?;
    Some(gio::Settings::new_full(
        &schema,
        None::<&gio::SettingsBackend>,
        None,
    ))
}
