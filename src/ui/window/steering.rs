//! Steering the conversation from the window: the queued messages' actions
//! (Send Now, Edit, Move Up and Down, Remove), Edit and Send Again of a
//! sent message (a fork before it), Fork Conversation (also the read-only
//! banner's Continue in a New Conversation), Retry, and the banner of a
//! forked conversation with Open Original.

use super::*;
use crate::core::chat::{Forked, QueueEdit};

impl ParleyWindow {
    /// The read-only banner's "Continue in a New Conversation" wraps its
    /// label, not the window: at 360 px with large text it is wider than
    /// the window.
    pub(super) fn wrap_banner_labels(&self) {
        if let Some(label) = self.imp().read_only_continue.child().and_downcast::<gtk::Label>() {
            label.set_wrap(true);
            label.set_justify(gtk::Justification::Center);
        }
    }

    /// A toast for an error, nothing for success.
    fn or_toast(&self) -> impl FnOnce(Result<(), String>) + 'static {
        self.done_saying(None)
    }

    /// A toast for an error; for success, `said` is heard. Said a moment
    /// later: the row whose button had the focus is rebuilt meanwhile, and
    /// what was said on it would go with it.
    fn done_saying(&self, said: Option<String>) -> impl FnOnce(Result<(), String>) + 'static {
        let weak = self.downgrade();
        move |r| {
            let Some(win) = weak.upgrade() else { return };
            match (r, said) {
                (Err(e), _) => win.toast(&e),
                (Ok(()), Some(text)) => {
                    glib::timeout_add_local_once(
                        std::time::Duration::from_millis(300),
                        glib::clone!(
                            #[weak]
                            win,
                            move || crate::ui::a11y::announce(
                                &*win.imp().composer,
                                &text,
                                crate::ui::a11y::Priority::Medium
                            )
                        ),
                    );
                }
                (Ok(()), None) => {}
            }
        }
    }

    fn move_queued(&self, agent: &AgentObject, id: &str, by: isize) {
        let queue = agent.conversation().queued_ids();
        let Some(at) = queue.iter().position(|q| q == id) else {
            return;
        };
        let Some(to) = at.checked_add_signed(by).filter(|t| *t < queue.len()) else {
            return;
        };
        let edit = QueueEdit {
            position: Some(to),
            ..QueueEdit::default()
        };
        let said = if by < 0 {
            gettext("Moved up in the queue")
        } else {
            gettext("Moved down in the queue")
        };
        agent
            .conversation()
            .edit_queued(id, edit, self.done_saying(Some(said)));
    }

    pub(super) fn setup_steering(&self) {
        self.conversation_action("queued-send-now", |win, agent, id| {
            let said = gettext("Sent now; the running answer was stopped");
            agent.conversation().send_now(&id, win.done_saying(Some(said)));
        });
        self.conversation_action("cancel-subagent", |win, agent, id| {
            let said = gettext("Cancelling the subagent");
            agent
                .conversation()
                .cancel_subagent(&id, win.done_saying(Some(said)));
        });
        self.conversation_action("queued-up", |win, agent, id| win.move_queued(&agent, &id, -1));
        self.conversation_action("queued-down", |win, agent, id| win.move_queued(&agent, &id, 1));
        self.conversation_action("queued-remove", |win, agent, id| {
            let edit = QueueEdit {
                delete: true,
                ..QueueEdit::default()
            };
            let said = gettext("Removed from the queue");
            agent
                .conversation()
                .edit_queued(&id, edit, win.done_saying(Some(said)));
        });
        self.conversation_action("queued-edit", |win, agent, id| win.ask_edit_queued(agent, id));
        self.conversation_action("edit-message", |win, agent, id| {
            let text = agent
                .conversation()
                .message_text(&id)
                .filter(|t| !t.trim().is_empty());
            win.fork(&agent, Some(id), text);
        });
        let fork = gio::SimpleAction::new("fork-conversation", None);
        fork.connect_activate(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_, _| {
                if let Some(agent) = win.selected_object() {
                    win.fork(&agent, None, None);
                }
            }
        ));
        self.add_action(&fork);
        let retry = gio::SimpleAction::new("retry", None);
        retry.connect_activate(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_, _| {
                if let Some(agent) = win.selected_object() {
                    agent.conversation().retry(win.or_toast());
                }
            }
        ));
        self.add_action(&retry);
        let original = gio::SimpleAction::new("open-original", None);
        original.connect_activate(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_, _| {
                let Some(agent) = win.selected_object() else {
                    return;
                };
                let id = agent.conversation().forked_from_id();
                if !id.is_empty() {
                    let _ = WidgetExt::activate_action(&win, "win.open-conversation", Some(&id.to_variant()));
                }
            }
        ));
        self.add_action(&original);
    }

    /// Forks the conversation (before message `before`, or whole); the new
    /// one is shown with its draft in the composer, and a toast says how
    /// it goes on.
    fn fork(&self, agent: &AgentObject, before: Option<String>, text: Option<String>) {
        agent.conversation().fork(
            before,
            text,
            glib::clone!(
                #[weak(rename_to = win)]
                self,
                #[strong]
                agent,
                move |r: Result<Forked, String>| match r {
                    // The user went on to another agent meanwhile: the fork
                    // is there, with its draft, when they come back.
                    Ok(_) if win.selected_object().as_ref() != Some(&agent) => {}
                    Ok(forked) => {
                        // Shown now (its event may come later), with its
                        // draft: also where no history keeps drafts.
                        let c = agent.conversation();
                        if let Ok((conv, _)) = win.core().chat.conversation_tail(&agent.name(), 0) {
                            c.apply_switched(conv.id.as_deref(), conv.read_only.as_deref());
                        }
                        win.show_draft(Some(&agent));
                        win.take_draft(&forked.draft);
                        let said = if forked.mode == "session" {
                            gettext("Forked: the agent goes on with all it knew")
                        } else {
                            gettext("A new conversation: the earlier turns go with your message as context")
                        };
                        win.toast(&said);
                        crate::ui::a11y::announce(
                            &*win.imp().composer,
                            &said,
                            crate::ui::a11y::Priority::Medium,
                        );
                        win.imp().composer.grab_focus();
                    }
                    Err(e) => win.toast(&e),
                }
            ),
        );
    }

    /// Edits a queued message's text in a dialog.
    fn ask_edit_queued(&self, agent: AgentObject, id: String) {
        let dialog = adw::MessageDialog::new(Some(self), Some(&gettext("Edit Queued Message")), None);
        let view = gtk::TextView::builder()
            .wrap_mode(gtk::WrapMode::WordChar)
            .accepts_tab(false)
            .top_margin(8)
            .bottom_margin(8)
            .left_margin(8)
            .right_margin(8)
            .build();
        view.buffer()
            .set_text(&agent.conversation().message_text(&id).unwrap_or_default());
        crate::ui::a11y::set_label(&view, &gettext("Message"));
        let scroller = gtk::ScrolledWindow::builder()
            .child(&view)
            .min_content_height(96)
            .max_content_height(320)
            .propagate_natural_height(true)
            .hscrollbar_policy(gtk::PolicyType::Never)
            .build();
        scroller.add_css_class("card");
        dialog.set_extra_child(Some(&scroller));
        dialog.add_responses(&[("cancel", &gettext("_Cancel")), ("save", &gettext("_Save"))]);
        crate::ui::a11y::name_mnemonics(&dialog);
        dialog.set_response_appearance("save", adw::ResponseAppearance::Suggested);
        dialog.set_default_response(Some("save"));
        dialog.set_close_response("cancel");
        dialog.connect_response(
            None,
            glib::clone!(
                #[weak(rename_to = win)]
                self,
                #[weak]
                view,
                move |_, response| {
                    if response != "save" {
                        return;
                    }
                    let buffer = view.buffer();
                    let text = buffer
                        .text(&buffer.start_iter(), &buffer.end_iter(), false)
                        .to_string();
                    let edit = QueueEdit {
                        text: Some(text),
                        ..QueueEdit::default()
                    };
                    agent.conversation().edit_queued(&id, edit, win.or_toast());
                }
            ),
        );
        dialog.present();
        view.grab_focus();
    }

    /// The Retry banner and the forked conversation's banner.
    pub(super) fn update_steering(&self, agent: &AgentObject) {
        let imp = self.imp();
        let c = agent.conversation();
        imp.retry_revealer
            .set_reveal_child(c.read_only().is_empty() && c.last_turn_failed());
        let forked = c.forked_from();
        if !forked.is_empty() {
            imp.forked_label.set_label(&gettext_f(
                "Forked from “{title}”",
                &[("title", &crate::ui::markdown::visible(&forked))],
            ));
        }
        imp.forked_revealer.set_reveal_child(!forked.is_empty());
    }
}

/// For the window tests.
impl ParleyWindow {
    /// The Retry banner is shown.
    pub fn retry_shown(&self) -> bool {
        self.imp().retry_revealer.reveals_child()
    }

    /// The forked conversation's banner, when it is shown.
    pub fn forked_banner(&self) -> Option<String> {
        let imp = self.imp();
        imp.forked_revealer
            .reveals_child()
            .then(|| imp.forked_label.label().to_string())
    }
}
