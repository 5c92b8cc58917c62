//! The Changes window's group for a conversation in a worktree (issue
//! 62): the branch and what it was made from, every file that differs
//! from its base, and the three ways to bring it back or let it go —
//! Apply to Project (as uncommitted changes, with Undo), Merge Branch…
//! (with the commit message to edit) and Discard Worktree… (saying what
//! would be lost).

use std::rc::Rc;

use adw::prelude::*;
use gtk::glib;

use crate::core::services::Core;
use crate::core::worktrees::{Status, Worktree};
use crate::i18n::{fill, gettext, gettext_f, ngettext};
use crate::ui::runtime;

/// A toast's button: its label, and what it does.
pub type ToastAction = Option<(String, Box<dyn Fn()>)>;

/// Shows a toast (with its button, if any).
pub type Toast = Rc<dyn Fn(&str, ToastAction)>;

/// What the group tells its window.
pub struct Host {
    pub window: gtk::Window,
    /// A toast; with a button, if any.
    pub toast: Toast,
    /// The window reads everything again.
    pub reload: Rc<dyn Fn()>,
}

/// The group for `wt`, filled with its status once read.
pub fn group(core: &Core, agent: &str, wt: &Worktree, host: Rc<Host>) -> adw::PreferencesGroup {
    let group = adw::PreferencesGroup::builder()
        .title(
            glib::markup_escape_text(&gettext_f("Worktree on {branch}", &[("branch", &wt.branch)])).as_str(),
        )
        .description(
            glib::markup_escape_text(&gettext_f(
                "Made from {base}. The agent works here, apart from your project.",
                &[("base", &wt.base_name)],
            ))
            .as_str(),
        )
        .build();
    // The buttons wrap on a narrow window rather than widening it.
    let buttons = super::wrap_box::WrapBox::new(6);
    let apply = button(
        &gettext("_Apply to Project"),
        &gettext("Apply the worktree's changes to the project"),
    );
    apply.add_css_class("suggested-action");
    let merge = button(&gettext("_Merge…"), &gettext("Merge the worktree's branch"));
    let discard = button(&gettext("_Discard…"), &gettext("Discard the worktree"));
    discard.add_css_class("destructive-action");
    for b in [&apply, &merge, &discard] {
        buttons.append(b);
    }
    let rows = gtk::ListBox::builder()
        .selection_mode(gtk::SelectionMode::None)
        .css_classes(["boxed-list"])
        .build();
    crate::ui::a11y::set_label(&rows, &gettext("Files the worktree changed"));
    let outer = gtk::Box::new(gtk::Orientation::Vertical, 12);
    outer.append(&buttons);
    outer.append(&rows);
    group.add(&outer);

    let status: Rc<std::cell::RefCell<Option<Status>>> = Rc::default();
    {
        let (core, agent, rows, status) = (core.clone(), agent.to_owned(), rows.clone(), status.clone());
        runtime::call(
            async move { core.chat.worktree(&agent).await },
            move |r| match r {
                Ok(s) => {
                    fill_rows(&rows, &s);
                    status.replace(Some(s));
                }
                Err(e) => {
                    let row = adw::ActionRow::builder()
                        .title(glib::markup_escape_text(&e.to_string()).as_str())
                        .build();
                    rows.append(&row);
                }
            },
        );
    }
    {
        let (core, agent, host) = (core.clone(), agent.to_owned(), host.clone());
        apply.connect_clicked(move |_| apply_now(&core, &agent, &host));
    }
    {
        let (core, agent, host) = (core.clone(), agent.to_owned(), host.clone());
        merge.connect_clicked(move |_| ask_merge(&core, &agent, &host));
    }
    {
        let (core, agent, host, status) = (core.clone(), agent.to_owned(), host.clone(), status.clone());
        discard.connect_clicked(move |_| ask_discard(&core, &agent, &host, status.borrow().as_ref()));
    }
    group
}

fn button(label: &str, name: &str) -> gtk::Button {
    let b = gtk::Button::builder().label(label).use_underline(true).build();
    crate::ui::a11y::set_label(&b, name);
    b
}

fn fill_rows(rows: &gtk::ListBox, status: &Status) {
    if status.files.is_empty() {
        let row = adw::ActionRow::builder()
            .title(glib::markup_escape_text(&gettext("No file differs from the base yet")).as_str())
            .build();
        rows.append(&row);
    }
    for f in &status.files {
        let what = match f.status.as_str() {
            "added" => gettext("added"),
            "deleted" => gettext("deleted"),
            _ => gettext("modified"),
        };
        let row = adw::ActionRow::builder()
            .title(glib::markup_escape_text(&crate::ui::markdown::visible(&f.path)).as_str())
            .subtitle(glib::markup_escape_text(&what).as_str())
            .build();
        rows.append(&row);
    }
    if status.ahead > 0 {
        let row = adw::ActionRow::builder()
            .title(
                glib::markup_escape_text(&fill(
                    &ngettext(
                        "{n} commit on the branch",
                        "{n} commits on the branch",
                        status.ahead,
                    ),
                    &[("n", &status.ahead.to_string())],
                ))
                .as_str(),
            )
            .build();
        rows.append(&row);
    }
}

fn apply_now(core: &Core, agent: &str, host: &Rc<Host>) {
    let (c, a) = (core.clone(), agent.to_owned());
    let (core, agent, host) = (core.clone(), agent.to_owned(), host.clone());
    runtime::call(async move { c.chat.apply_worktree(&a).await }, move |r| match r {
        Ok(applied) => {
            let n = applied.files.len();
            let text = fill(
                &ngettext(
                    "Applied {n} file to the project",
                    "Applied {n} files to the project",
                    n as u32,
                ),
                &[("n", &n.to_string())],
            );
            let (core, agent, id, again) = (core.clone(), agent.clone(), applied.id.clone(), host.clone());
            let undo: Box<dyn Fn()> = Box::new(move || {
                let (core, agent, id, host) = (core.clone(), agent.clone(), id.clone(), again.clone());
                runtime::call(
                    async move { core.chat.undo_apply(&agent, &id).await },
                    move |r| match r {
                        Ok(_) => (host.toast)(&gettext("The apply was undone"), None),
                        Err(e) => (host.toast)(&e.to_string(), None),
                    },
                );
            });
            (host.toast)(&text, Some((gettext("_Undo"), undo)));
        }
        Err(e) => (host.toast)(&e.to_string(), None),
    });
}

fn ask_merge(core: &Core, agent: &str, host: &Rc<Host>) {
    let title = core
        .chat
        .conversation(agent)
        .ok()
        .and_then(|c| c.title)
        .unwrap_or_default();
    let dialog = adw::MessageDialog::builder()
        .transient_for(&host.window)
        .modal(true)
        .heading(gettext("Merge the Worktree's Branch?"))
        .body(gettext(
            "What is not committed in the worktree is committed with this message, then its branch is merged into the branch your project has out. A conflict stops the merge and leaves your project as it was.",
        ))
        .build();
    let entry = gtk::Entry::builder().text(title).activates_default(true).build();
    crate::ui::a11y::set_label(&entry, &gettext("Commit message"));
    dialog.set_extra_child(Some(&entry));
    dialog.add_response("cancel", &gettext("_Cancel"));
    dialog.add_response("merge", &gettext("_Merge"));
    dialog.set_response_appearance("merge", adw::ResponseAppearance::Suggested);
    dialog.set_default_response(Some("merge"));
    dialog.set_close_response("cancel");
    let (core, agent, host) = (core.clone(), agent.to_owned(), host.clone());
    dialog.connect_response(None, move |_, response| {
        if response != "merge" {
            return;
        }
        let message = entry.text().to_string();
        let (c, a, host) = (core.clone(), agent.clone(), host.clone());
        runtime::call(
            async move {
                let m = (!message.trim().is_empty()).then_some(message);
                c.chat.merge_worktree(&a, m.as_deref()).await
            },
            move |r| match r {
                Ok(commit) => {
                    let short: String = commit.chars().take(8).collect();
                    (host.toast)(
                        &gettext_f("Merged into your project ({commit})", &[("commit", &short)]),
                        None,
                    );
                    (host.reload)();
                }
                Err(e) => (host.toast)(&e.to_string(), None),
            },
        );
    });
    dialog.present();
}

fn ask_discard(core: &Core, agent: &str, host: &Rc<Host>, status: Option<&Status>) {
    let (files, commits) = status.map_or((0, 0), |s| (s.files.len(), s.ahead));
    let lost = if files == 0 && commits == 0 {
        gettext("Nothing in it differs from its base.")
    } else {
        gettext_f(
            "{files} and {commits} not merged are lost.",
            &[
                (
                    "files",
                    &fill(
                        &ngettext("{n} changed file", "{n} changed files", files as u32),
                        &[("n", &files.to_string())],
                    ),
                ),
                (
                    "commits",
                    &fill(
                        &ngettext("{n} commit", "{n} commits", commits),
                        &[("n", &commits.to_string())],
                    ),
                ),
            ],
        )
    };
    let dialog = adw::MessageDialog::builder()
        .transient_for(&host.window)
        .modal(true)
        .heading(gettext("Discard the Worktree?"))
        .body(gettext_f(
            "The worktree and its branch are removed. {lost}",
            &[("lost", &lost)],
        ))
        .build();
    dialog.add_response("cancel", &gettext("_Cancel"));
    dialog.add_response("discard", &gettext("_Discard"));
    dialog.set_response_appearance("discard", adw::ResponseAppearance::Destructive);
    dialog.set_default_response(Some("cancel"));
    dialog.set_close_response("cancel");
    let (core, agent, host) = (core.clone(), agent.to_owned(), host.clone());
    dialog.connect_response(None, move |_, response| {
        if response != "discard" {
            return;
        }
        let (c, a, host) = (core.clone(), agent.clone(), host.clone());
        runtime::call(
            async move { c.chat.discard_worktree(&a).await },
            move |r| match r {
                Ok(()) => {
                    (host.toast)(&gettext("The worktree was discarded"), None);
                    (host.reload)();
                }
                Err(e) => (host.toast)(&e.to_string(), None),
            },
        );
    });
    dialog.present();
}
