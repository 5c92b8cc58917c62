//! What a session notice is called and how it is said: its severity's name
//! and icon, the words a screen reader hears (`message_parts` draws it, the
//! announcer says it when it comes).

use crate::core::types::notice::Notice;
use crate::i18n::{gettext, gettext_f};

/// A notice's severity as said, its icon and its style class (unknown
/// severities are `info`).
pub fn severity(n: &Notice) -> (String, &'static str, &'static str) {
    match n.severity.as_str() {
        "warning" => (gettext("Warning"), "dialog-warning-symbolic", "notice-warning"),
        "error" => (gettext("Error"), "dialog-error-symbolic", "notice-error"),
        _ => (gettext("Notice"), "dialog-information-symbolic", "notice-info"),
    }
}

/// What a screen reader hears of a notice (also the row's name).
pub fn spoken(n: &Notice) -> String {
    let (shown, _, _) = severity(n);
    match &n.description {
        Some(d) => format!("{shown}: {}. {d}", n.title.trim_end_matches('.')),
        None => format!("{shown}: {}", n.title),
    }
}

/// A short name for a part in a row's name (`message_row`).
pub fn part_name(n: &Notice) -> String {
    gettext_f("notice: {text}", &[("text", &spoken(n))])
}
