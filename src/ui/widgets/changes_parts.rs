//! The Changes window's parts that hold no state: how a file's status,
//! a hunk and a review are shown, the All Turns group, and the names a
//! revert is given and told by.

use adw::prelude::*;
use gtk::glib;

use crate::core::checkpoints::{Changes, FileChange, FileStatus, Hunk, Review};
use crate::i18n::{fill, gettext, gettext_f, ngettext};

pub(super) fn status_text(f: &FileChange) -> String {
    match f.status {
        FileStatus::Added => gettext("added"),
        FileStatus::Modified => gettext("modified"),
        FileStatus::Deleted => gettext("deleted"),
        FileStatus::Renamed => gettext_f(
            "renamed from {path}",
            &[("path", f.old_path.as_deref().unwrap_or(""))],
        ),
    }
}

pub(super) fn status_icon(status: FileStatus) -> &'static str {
    match status {
        FileStatus::Added => "list-add-symbolic",
        FileStatus::Modified => "document-edit-symbolic",
        FileStatus::Deleted => "user-trash-symbolic",
        FileStatus::Renamed => "go-next-symbolic",
    }
}

/// The unified diff of one hunk, as `git diff` shows it.
pub(super) fn hunk_text(h: &Hunk) -> String {
    let mut text = h.header.clone();
    for l in &h.lines {
        text.push('\n');
        text.push_str(l);
    }
    text
}

pub(super) fn review_text(r: Review) -> Option<String> {
    match r {
        Review::Pending => None,
        Review::Kept => Some(gettext("Kept")),
        Review::Reverted => Some(gettext("Reverted")),
    }
}

/// Every file the turns changed, from before the first to after the last.
pub(super) fn total_group(changes: &Changes) -> adw::PreferencesGroup {
    let group = adw::PreferencesGroup::builder()
        .title(gettext("All Turns"))
        .description(fill(
            &ngettext(
                "{n} file changed",
                "{n} files changed",
                changes.files_changed as u32,
            ),
            &[("n", &changes.files_changed.to_string())],
        ))
        .build();
    for f in &changes.total {
        let status = match f.status {
            FileStatus::Added => gettext("added"),
            FileStatus::Modified => gettext("modified"),
            FileStatus::Deleted => gettext("deleted"),
            FileStatus::Renamed => gettext("renamed"),
        };
        let row = adw::ActionRow::builder()
            .title(glib::markup_escape_text(&crate::ui::markdown::visible(&f.path)).as_str())
            .subtitle(
                glib::markup_escape_text(&format!("{status}  +{} −{}", f.additions, f.deletions)).as_str(),
            )
            .build();
        row.add_prefix(&gtk::Image::from_icon_name(status_icon(f.status)));
        group.add(&row);
    }
    group
}

/// A file's path with its root: what Revert and Keep are given.
pub(super) fn whole_path(f: &FileChange) -> String {
    std::path::Path::new(&f.root).join(&f.path).display().to_string()
}

/// What the revert named: one path, or how many.
pub(super) fn files_named(files: &[String]) -> String {
    match files {
        [one] => one.clone(),
        many => fill(
            &ngettext("{n} file", "{n} files", many.len() as u32),
            &[("n", &many.len().to_string())],
        ),
    }
}
