//! Translations through the system gettext.

pub use gettextrs::{gettext, ngettext};

pub const DOMAIN: &str = "parley";

/// Uses the configuration's `language` (e.g. `de_DE`) instead of the
/// system's, when it is set. Call before [`init`].
pub fn apply_language(language: Option<&str>) {
    let Some(language) = language.map(str::trim).filter(|l| !l.is_empty()) else {
        return;
    };
    std::env::set_var("LANGUAGE", language);
    // gettext ignores LANGUAGE while the locale is plain "C".
    let plain = |v: Result<String, std::env::VarError>| {
        v.map(|l| l.is_empty() || l == "C" || l == "POSIX")
            .unwrap_or(true)
    };
    if plain(std::env::var("LC_ALL")) && plain(std::env::var("LC_MESSAGES")) && plain(std::env::var("LANG")) {
        std::env::set_var("LC_ALL", "C.UTF-8");
    }
}

/// Binds the text domain; `localedir` is where the `.mo` files live
/// (`PARLEY_LOCALEDIR` overrides it, for a build tree).
pub fn init(localedir: &str) {
    let localedir = std::env::var("PARLEY_LOCALEDIR").unwrap_or_else(|_| localedir.to_owned());
    let _ = gettextrs::setlocale(gettextrs::LocaleCategory::LcAll, "");
    let _ = gettextrs::bindtextdomain(DOMAIN, localedir.as_str());
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
