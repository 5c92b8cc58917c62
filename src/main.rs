//! `parley`: the window.

use std::path::PathBuf;

/// The configuration's `language`, read before anything is translated.
fn configured_language() -> Option<String> {
    let file = std::env::args()
        .nth(1)
        .filter(|a| !a.starts_with('-'))
        .map(PathBuf::from);
    let (path, _) = parley::core::config::store::initial_path(file);
    let text = std::fs::read_to_string(path).ok()?;
    let language = parley::core::config::validate::validate(&text).config?.language;
    (!language.trim().is_empty()).then(|| language.trim().to_owned())
}

fn main() -> gtk::glib::ExitCode {
    parley::core::supervisor::guardian::run_if_asked();
    parley::core::remote::helper::run_if_asked();
    parley::demo_agent::run_if_asked();
    parley::logging::init();
    parley::i18n::apply_language(configured_language().as_deref());
    parley::i18n::init(parley::i18n::LOCALEDIR);
    if let Err(why) = parley::core::config::store::check_home() {
        eprintln!("parley: {why}");
        return gtk::glib::ExitCode::FAILURE;
    }
    gtk::glib::set_application_name(&parley::i18n::gettext("Parley"));
    parley::ui::application::run()
}
