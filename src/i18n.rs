//! Translations through the system gettext.

pub use gettextrs::{gettext, ngettext};

pub const DOMAIN: &str = "parley";

/// Binds the text domain; `localedir` is where the `.mo` files live.
pub fn init(localedir: &str) {
    let _ = gettextrs::setlocale(gettextrs::LocaleCategory::LcAll, "");
    let _ = gettextrs::bindtextdomain(DOMAIN, localedir);
    let _ = gettextrs::bind_textdomain_codeset(DOMAIN, "UTF-8");
    let _ = gettextrs::textdomain(DOMAIN);
}

/// Translates `msgid`, then fills its `{name}` placeholders. Named arguments
/// let translators reorder them.
pub fn gettext_f(msgid: &str, args: &[(&str, &str)]) -> String {
    fill(&gettext(msgid), args)
}

/// Fills `{name}` placeholders in an already translated text.
pub fn fill(text: &str, args: &[(&str, &str)]) -> String {
    let mut out = text.to_owned();
    for (key, value) in args {
        out = out.replace(&format!("{{{key}}}"), value);
    }
    out
}

/// Where the `.mo` files are: set by meson at build time, the system's
/// locale directory otherwise.
pub const LOCALEDIR: &str = match option_env!("PARLEY_LOCALEDIR") {
    Some(d) => d,
    None => "/usr/share/locale",
};

#[cfg(test)]
mod tests {
    #[test]
    fn fills_named_arguments_in_any_order() {
        assert_eq!(
            super::fill("{b} then {a}, {a}", &[("a", "1"), ("b", "2")]),
            "2 then 1, 1"
        );
    }
}
