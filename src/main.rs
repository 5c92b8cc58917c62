//! `parley`: the window.

fn main() -> gtk::glib::ExitCode {
    parley::logging::init();
    parley::i18n::init(parley::i18n::LOCALEDIR);
    gtk::glib::set_application_name(&parley::i18n::gettext("Parley"));
    parley::ui::application::run()
}
