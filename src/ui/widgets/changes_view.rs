//! The Changes window: what the open conversation's turns changed in the
//! agent's folders (from Parley's checkpoints), newest turn first, each
//! file with its hunks as a coloured diff. Keep or Revert a hunk, Revert a
//! file, Undo a turn; each revert's toast has Undo. A file changed since
//! the turn is not overwritten: the window asks whether to revert only the
//! turn's lines.

use std::cell::Cell;
use std::rc::Rc;

use adw::prelude::*;
use gtk::{gio, glib};

use crate::core::chat::ChatError;
use crate::core::checkpoints::revert::RevertError;
use crate::core::checkpoints::{
    Changes, CheckpointError, FileChange, FileStatus, How, Hunk, Review, TurnChanges,
};
use crate::core::services::Core;
use crate::i18n::{fill, gettext, gettext_f, ngettext};
use crate::ui::runtime;

use super::changes_parts::{
    files_named, hunk_text, review_text, status_icon, status_text, total_group, whole_path,
};

struct View {
    window: adw::Window,
    core: Core,
    agent: String,
    toasts: adw::ToastOverlay,
    stack: gtk::Stack,
    body: gtk::Box,
    title: adw::WindowTitle,
    /// Answers to an older reload are dropped.
    generation: Cell<u64>,
    /// Said to a screen reader once the window is read again (what was
    /// focused is rebuilt by then).
    pending_announcement: std::cell::RefCell<Option<String>>,
    /// The files shown open (turn, path): a reload keeps them open.
    expanded: std::cell::RefCell<std::collections::HashSet<(String, String)>>,
}

/// Opens the Changes of `agent`'s open conversation over `parent`.
pub fn show(parent: &gtk::Window, core: Core, agent: &str, agent_title: &str) -> adw::Window {
    let window = adw::Window::builder()
        .title(gettext("Changes"))
        .modal(true)
        .transient_for(parent)
        .default_width(820)
        .default_height(680)
        .build();
    let title = adw::WindowTitle::new(&gettext("Changes"), agent_title);
    let header = adw::HeaderBar::builder().title_widget(&title).build();
    let body = gtk::Box::builder()
        .orientation(gtk::Orientation::Vertical)
        .spacing(24)
        .margin_top(18)
        .margin_bottom(18)
        .margin_start(12)
        .margin_end(12)
        .build();
    crate::ui::a11y::set_label(&body, &gettext("Changes by turn"));
    let scroller = gtk::ScrolledWindow::builder()
        .hscrollbar_policy(gtk::PolicyType::Never)
        .vexpand(true)
        .child(&adw::Clamp::builder().maximum_size(960).child(&body).build())
        .build();
    let empty = adw::StatusPage::builder()
        .icon_name("document-edit-symbolic")
        .title(gettext("No Changes Yet"))
        .description(gettext(
            "What the agent changes in its folders shows here, turn by turn, to review and undo.",
        ))
        .vexpand(true)
        .build();
    let stack = gtk::Stack::new();
    stack.add_named(&empty, Some("empty"));
    stack.add_named(&scroller, Some("changes"));
    let content = gtk::Box::new(gtk::Orientation::Vertical, 0);
    content.append(&header);
    content.append(&stack);
    let toasts = adw::ToastOverlay::new();
    toasts.set_child(Some(&content));
    window.set_content(Some(&toasts));
    let keys = gtk::ShortcutController::new();
    super::add_close_keys(&keys);
    window.add_controller(keys);
    // A list row keeps Escape to itself; the window takes it first.
    let escape = gtk::EventControllerKey::new();
    escape.set_propagation_phase(gtk::PropagationPhase::Capture);
    escape.connect_key_pressed(glib::clone!(
        #[weak]
        window,
        #[upgrade_or]
        glib::Propagation::Proceed,
        move |_, key, _, modifiers| {
            if key == gtk::gdk::Key::Escape && modifiers.is_empty() {
                window.close();
                return glib::Propagation::Stop;
            }
            glib::Propagation::Proceed
        }
    ));
    window.add_controller(escape);
    let view = Rc::new(View {
        window: window.clone(),
        core,
        agent: agent.to_owned(),
        toasts,
        stack,
        body,
        title,
        generation: Cell::new(0),
        expanded: Default::default(),
        pending_announcement: Default::default(),
    });
    view.reload();
    // The window keeps its view (every handler holds it weakly) until it
    // closes.
    let holder = std::cell::RefCell::new(Some(view));
    window.connect_close_request(move |_| {
        holder.take();
        glib::Propagation::Proceed
    });
    window.present();
    window
}

impl View {
    fn reload(self: &Rc<Self>) {
        let n = self.generation.get() + 1;
        self.generation.set(n);
        let (core, agent) = (self.core.clone(), self.agent.clone());
        let this = Rc::downgrade(self);
        runtime::call(
            async move { core.chat.changes(&agent, None, None).await },
            move |result| {
                let Some(this) = this.upgrade() else { return };
                if this.generation.get() != n {
                    return;
                }
                match result {
                    Ok(changes) => this.fill(&changes),
                    Err(e) => this.toast(&e.to_string()),
                }
            },
        );
    }

    fn fill(self: &Rc<Self>, changes: &Changes) {
        // Rebuilt, the focused control goes: the focus stays in the
        // window, on the first control of what is shown anew.
        let had_focus =
            gtk::prelude::GtkWindowExt::focus(&self.window).is_some_and(|f| f.is_ancestor(&self.body));
        while let Some(child) = self.body.first_child() {
            self.body.remove(&child);
        }
        self.fill_body(changes);
        if had_focus || self.pending_announcement.borrow().is_some() {
            self.body.child_focus(gtk::DirectionType::TabForward);
        }
        if let Some(text) = self.pending_announcement.take() {
            crate::ui::a11y::announce(&self.window, &text, crate::ui::a11y::Priority::Medium);
        }
    }

    fn fill_body(self: &Rc<Self>, changes: &Changes) {
        let n = changes.files_changed;
        self.title.set_subtitle(&fill(
            &ngettext("{n} file changed", "{n} files changed", n as u32),
            &[("n", &n.to_string())],
        ));
        // A conversation in a worktree: the whole of it first.
        let worktree = self.core.chat.worktree_info(&self.agent);
        if changes.turns.is_empty() && worktree.is_none() {
            self.stack.set_visible_child_name("empty");
            return;
        }
        self.stack.set_visible_child_name("changes");
        if let Some(wt) = worktree {
            let group = super::worktree_group::group(&self.core, &self.agent, &wt, self.worktree_host());
            self.body.append(&group);
        }
        let messages = self
            .core
            .chat
            .conversation(&self.agent)
            .map(|c| c.messages)
            .unwrap_or_default();
        // In total, when there is more than one turn.
        if changes.turns.len() > 1 && !changes.total.is_empty() {
            self.body.append(&total_group(changes));
        }
        for (i, turn) in changes.turns.iter().enumerate().rev() {
            let asked = messages
                .iter()
                .find(|m| m.id == turn.turn)
                .map(|m| m.text())
                .unwrap_or_default();
            self.body.append(&self.turn_group(turn, i + 1, &asked));
        }
    }

    fn turn_group(self: &Rc<Self>, turn: &TurnChanges, number: usize, asked: &str) -> adw::PreferencesGroup {
        let first_line = asked.lines().next().unwrap_or("").trim();
        let shown = crate::core::types::options::shown_text(first_line, 80);
        let title = if shown.is_empty() {
            gettext_f("Turn {n}", &[("n", &number.to_string())])
        } else {
            gettext_f(
                "Turn {n}: {asked}",
                &[("n", &number.to_string()), ("asked", &shown)],
            )
        };
        let group = adw::PreferencesGroup::builder()
            .title(glib::markup_escape_text(&crate::ui::markdown::visible(&title)).as_str())
            .build();
        let files = turn.files.iter().filter(|f| !f.unattributed).count();
        let description = if turn.pending {
            gettext("The turn is still running")
        } else {
            fill(
                &ngettext("{n} file changed", "{n} files changed", files as u32),
                &[("n", &files.to_string())],
            )
        };
        group.set_description(Some(&description));
        let open = turn.files.iter().any(|f| f.review != Review::Reverted);
        if !turn.pending && open {
            let undo = gtk::Button::builder()
                .label(gettext("_Undo Turn"))
                .use_underline(true)
                .valign(gtk::Align::Center)
                .tooltip_text(gettext(
                    "Restore every file this turn changed to what it was before",
                ))
                .build();
            crate::ui::a11y::set_label(&undo, &gettext_f("Undo turn {n}", &[("n", &number.to_string())]));
            let (this, id) = (Rc::downgrade(self), turn.turn.clone());
            undo.connect_clicked(move |_| {
                if let Some(this) = this.upgrade() {
                    this.revert(&id, None, None, false);
                }
            });
            group.set_header_suffix(Some(&undo));
        }
        for problem in &turn.problems {
            let row = adw::ActionRow::builder()
                .title(glib::markup_escape_text(&crate::ui::markdown::visible(problem)).as_str())
                .build();
            row.add_prefix(&gtk::Image::from_icon_name("dialog-warning-symbolic"));
            row.add_css_class("warning");
            group.add(&row);
        }
        for f in turn.files.iter().filter(|f| !f.unattributed) {
            group.add(&self.file_row(&turn.turn, f, turn.pending));
        }
        // Apart: what changed during the turn that nothing ties to the
        // agent (another agent, the user's editor). Undo Turn leaves it.
        let others: Vec<&FileChange> = turn.files.iter().filter(|f| f.unattributed).collect();
        if !others.is_empty() {
            let heading = adw::ActionRow::builder()
                .title(
                    glib::markup_escape_text(&gettext("Changed during the turn, perhaps not by the agent"))
                        .as_str(),
                )
                .subtitle(
                    glib::markup_escape_text(&gettext(
                        "Undo Turn leaves these files as they are; revert one to take it back too",
                    ))
                    .as_str(),
                )
                .activatable(false)
                .build();
            heading.add_prefix(&gtk::Image::from_icon_name("dialog-information-symbolic"));
            heading.add_css_class("unattributed-heading");
            group.add(&heading);
            for f in others {
                group.add(&self.file_row(&turn.turn, f, turn.pending));
            }
        }
        group
    }

    fn file_row(self: &Rc<Self>, turn: &str, f: &FileChange, pending: bool) -> adw::ExpanderRow {
        let mut subtitle = status_text(f);
        if f.binary {
            subtitle = gettext_f("{status}, binary", &[("status", &subtitle)]);
        } else if f.additions + f.deletions > 0 {
            subtitle = format!("{subtitle}  +{} −{}", f.additions, f.deletions);
        }
        if let Some(r) = review_text(f.review) {
            subtitle = format!("{subtitle} · {r}");
        }
        if f.unattributed {
            subtitle = gettext_f("{status} · perhaps not by the agent", &[("status", &subtitle)]);
        }
        let row = adw::ExpanderRow::builder()
            .title(glib::markup_escape_text(&crate::ui::markdown::visible(&f.path)).as_str())
            .subtitle(glib::markup_escape_text(&crate::ui::markdown::visible(&subtitle)).as_str())
            .build();
        row.add_prefix(&gtk::Image::from_icon_name(status_icon(f.status)));
        let full = std::path::Path::new(&f.root).join(&f.path);
        if f.status != FileStatus::Deleted {
            let open = gtk::Button::builder()
                .icon_name("document-open-symbolic")
                .valign(gtk::Align::Center)
                .tooltip_text(gettext("Open in Editor"))
                .css_classes(["flat"])
                .build();
            crate::ui::a11y::set_label(&open, &gettext_f("Open {path}", &[("path", &f.path)]));
            let (this, full) = (Rc::downgrade(self), full.clone());
            open.connect_clicked(move |_| {
                if let Some(this) = this.upgrade() {
                    this.open_file(&full);
                }
            });
            row.add_action(&open);
        }
        if !pending && f.review != Review::Reverted {
            let revert = gtk::Button::builder()
                .icon_name("edit-undo-symbolic")
                .valign(gtk::Align::Center)
                .tooltip_text(gettext("Revert File"))
                .css_classes(["flat"])
                .build();
            crate::ui::a11y::set_label(&revert, &gettext_f("Revert {path}", &[("path", &f.path)]));
            // By its whole path: two roots may each have a file of this name.
            let (this, turn, path) = (Rc::downgrade(self), turn.to_owned(), whole_path(f));
            revert.connect_clicked(move |_| {
                if let Some(this) = this.upgrade() {
                    this.revert(&turn, Some(&path), None, false);
                }
            });
            row.add_action(&revert);
        }
        // The hunks are drawn when the file is first opened: a turn of a
        // hundred files costs a hundred rows on the main loop, not a
        // hundred highlighted diffs.
        let key = (turn.to_owned(), whole_path(f));
        let f_turn = turn.to_owned();
        let this = Rc::downgrade(self);
        let (file, turn, built) = (f.clone(), turn.to_owned(), Cell::new(false));
        row.connect_expanded_notify(move |row| {
            let Some(this) = this.upgrade() else { return };
            if row.is_expanded() && !built.replace(true) {
                for h in &file.hunks {
                    row.add_row(&this.hunk_box(&turn, &file, h, pending));
                }
            }
            let mut open = this.expanded.borrow_mut();
            if row.is_expanded() {
                open.insert(key.clone());
            } else {
                open.remove(&key);
            }
        });
        if f.hunks.is_empty() {
            row.set_enable_expansion(false);
        }
        let open = self
            .expanded
            .borrow()
            .iter()
            .any(|(t, p)| p == &whole_path(f) && t == &f_turn);
        row.set_expanded(open);
        row
    }

    fn hunk_box(self: &Rc<Self>, turn: &str, f: &FileChange, h: &Hunk, pending: bool) -> gtk::Box {
        let b = gtk::Box::builder()
            .orientation(gtk::Orientation::Vertical)
            .spacing(6)
            .margin_top(6)
            .margin_bottom(6)
            .margin_start(6)
            .margin_end(6)
            .build();
        b.append(&super::code_block::code_block("diff", &hunk_text(h)));
        let buttons = gtk::Box::builder().spacing(6).halign(gtk::Align::End).build();
        let which = gettext_f(
            "change {n} of {path}",
            &[("n", &(h.index + 1).to_string()), ("path", &f.path)],
        );
        match review_text(h.review) {
            Some(text) => {
                let label = gtk::Label::builder()
                    .label(text)
                    .css_classes(["dim-label"])
                    .build();
                buttons.append(&label);
            }
            None if !pending => {
                let keep = gtk::Button::with_mnemonic(&gettext("_Keep"));
                crate::ui::a11y::set_label(&keep, &gettext_f("Keep {change}", &[("change", &which)]));
                let revert = gtk::Button::with_mnemonic(&gettext("_Revert"));
                crate::ui::a11y::set_label(&revert, &gettext_f("Revert {change}", &[("change", &which)]));
                let (this, t, p, i) = (Rc::downgrade(self), turn.to_owned(), whole_path(f), h.index);
                keep.connect_clicked(move |_| {
                    if let Some(this) = this.upgrade() {
                        this.keep(&t, &p, i);
                    }
                });
                let (this, t, p) = (Rc::downgrade(self), turn.to_owned(), whole_path(f));
                revert.connect_clicked(move |_| {
                    if let Some(this) = this.upgrade() {
                        this.revert(&t, Some(&p), Some(i), false);
                    }
                });
                buttons.append(&keep);
                buttons.append(&revert);
            }
            None => {}
        }
        b.append(&buttons);
        b
    }

    fn toast(&self, text: &str) {
        let toast = adw::Toast::new(&crate::ui::markdown::escape(text));
        toast.set_timeout(6);
        self.toasts.add_toast(toast);
        crate::ui::a11y::announce(&self.window, text, crate::ui::a11y::Priority::Medium);
    }

    /// A toast now; the screen reader hears it once the window is read
    /// again (see `fill`).
    fn toast_then_say(&self, text: &str) {
        let toast = adw::Toast::new(&crate::ui::markdown::escape(text));
        toast.set_timeout(6);
        self.toasts.add_toast(toast);
        self.pending_announcement.replace(Some(text.to_owned()));
    }

    fn keep(self: &Rc<Self>, turn: &str, path: &str, hunk: usize) {
        let (core, agent) = (self.core.clone(), self.agent.clone());
        let (turn, path) = (turn.to_owned(), path.to_owned());
        let this = Rc::downgrade(self);
        runtime::call(
            async move { core.chat.keep(&agent, &turn, &path, Some(hunk)).await },
            move |r| {
                let Some(this) = this.upgrade() else { return };
                if let Err(e) = r {
                    this.toast(&e.to_string());
                }
                this.reload();
            },
        );
    }

    fn revert(self: &Rc<Self>, turn: &str, path: Option<&str>, hunk: Option<usize>, merge: bool) {
        let (core, agent) = (self.core.clone(), self.agent.clone());
        let (turn, path) = (turn.to_owned(), path.map(str::to_owned));
        let this = Rc::downgrade(self);
        let (t, p) = (turn.clone(), path.clone());
        runtime::call(
            async move {
                match p.as_deref() {
                    None => {
                        core.chat
                            .undo_turn(&agent, Some(&t), How { merge, all: false })
                            .await
                    }
                    Some(p) => core.chat.revert(&agent, &t, Some(p), hunk, merge).await,
                }
            },
            move |r| {
                let Some(this) = this.upgrade() else { return };
                match r {
                    Ok(done) => {
                        let mut text = gettext_f("Reverted {files}", &[("files", &files_named(&done.files))]);
                        if !done.left_alone.is_empty() {
                            text = gettext_f(
                                "{reverted}; left {files}, changed beside the turn",
                                &[("reverted", &text), ("files", &files_named(&done.left_alone))],
                            );
                        }
                        for r in &done.refused {
                            text = format!("{text}. {}", r.reason);
                        }
                        this.toast_with_undo(&text, done.id);
                        this.reload();
                    }
                    Err(ChatError::Checkpoint(CheckpointError::Revert(RevertError::ChangedSince(p))))
                        if !merge =>
                    {
                        this.ask_merge(&turn, path.as_deref(), hunk, &p)
                    }
                    Err(e) => this.toast(&e.to_string()),
                }
            },
        );
    }

    /// What the worktree's group tells this window.
    fn worktree_host(self: &Rc<Self>) -> Rc<super::worktree_group::Host> {
        let (toasts, window) = (self.toasts.clone(), self.window.clone());
        let this = Rc::downgrade(self);
        Rc::new(super::worktree_group::Host {
            window: window.upcast(),
            toast: Rc::new(move |text: &str, action: super::worktree_group::ToastAction| {
                let toast = adw::Toast::builder()
                    .title(crate::ui::markdown::escape(text))
                    .timeout(10)
                    .build();
                if let Some((label, then)) = action {
                    toast.set_button_label(Some(&label));
                    toast.connect_button_clicked(move |_| then());
                }
                toasts.add_toast(toast);
                crate::ui::a11y::announce(&toasts, text, crate::ui::a11y::Priority::Medium);
            }),
            reload: Rc::new(move || {
                if let Some(this) = this.upgrade() {
                    this.reload();
                }
            }),
        })
    }

    /// A revert's toast, with Undo.
    fn toast_with_undo(self: &Rc<Self>, text: &str, id: String) {
        let toast = adw::Toast::builder()
            .title(crate::ui::markdown::escape(text))
            .button_label(gettext("_Undo"))
            .timeout(10)
            .build();
        let this = Rc::downgrade(self);
        toast.connect_button_clicked(move |_| {
            let Some(this) = this.upgrade() else { return };
            let (core, agent, id) = (this.core.clone(), this.agent.clone(), id.clone());
            let weak = Rc::downgrade(&this);
            runtime::call(
                async move { core.chat.undo_revert(&agent, &id).await },
                move |r| {
                    let Some(this) = weak.upgrade() else { return };
                    match r {
                        Ok(done) => this.toast_then_say(&gettext_f(
                            "Restored {files}",
                            &[("files", &files_named(&done.files))],
                        )),
                        Err(e) => this.toast(&e.to_string()),
                    }
                    this.reload();
                },
            );
        });
        self.toasts.add_toast(toast);
        // Said once the window shows the revert (see `fill`).
        self.pending_announcement.replace(Some(text.to_owned()));
    }

    /// The file changed since the turn: revert only the turn's lines?
    fn ask_merge(self: &Rc<Self>, turn: &str, path: Option<&str>, hunk: Option<usize>, changed: &str) {
        let dialog = adw::MessageDialog::builder()
            .transient_for(&self.window)
            .modal(true)
            .heading(gettext_f("{path} Changed Since the Turn", &[("path", changed)]))
            .body(gettext(
                "You or another turn changed this file after the turn. Parley can take back only the lines this turn changed and keep the rest.",
            ))
            .build();
        dialog.add_response("cancel", &gettext("_Cancel"));
        dialog.add_response("merge", &gettext("_Revert the Turn's Lines"));
        dialog.set_response_appearance("merge", adw::ResponseAppearance::Suggested);
        dialog.set_default_response(Some("cancel"));
        dialog.set_close_response("cancel");
        let (this, turn, path) = (Rc::downgrade(self), turn.to_owned(), path.map(str::to_owned));
        dialog.connect_response(None, move |_, response| {
            if response != "merge" {
                return;
            }
            if let Some(this) = this.upgrade() {
                this.revert(&turn, path.as_deref(), hunk, true);
            }
        });
        dialog.present();
    }

    /// Opens a file with the desktop's default application for it.
    fn open_file(self: &Rc<Self>, path: &std::path::Path) {
        let uri = gio::File::for_path(path).uri();
        let this = Rc::downgrade(self);
        let shown = path.display().to_string();
        gio::AppInfo::launch_default_for_uri_async(
            &uri,
            None::<&gio::AppLaunchContext>,
            None::<&gio::Cancellable>,
            move |r| {
                if let (Err(e), Some(this)) = (r, this.upgrade()) {
                    this.toast(&gettext_f(
                        "Could not open {path}: {error}",
                        &[("path", &shown), ("error", &e.to_string())],
                    ));
                }
            },
        );
    }
}
