//! Sending what is written: Send (Enter; queued while the agent answers),
//! and Steer: while the agent answers, what is written goes into its
//! running turn (Ctrl+Enter, or the Steer button beside Stop) where the
//! agent takes a message then.

use gtk::glib;
use gtk::prelude::*;
use gtk::subclass::prelude::*;

use super::Composer;
use crate::core::chat::AttachmentInput;

impl Composer {
    /// Sends what is written and attached; on failure the text goes back
    /// into the field and the attachments stay.
    pub fn send(&self) {
        let Some(agent) = self.agent() else { return };
        let buffer = self.imp().text.buffer();
        let text = buffer
            .text(&buffer.start_iter(), &buffer.end_iter(), false)
            .to_string();
        let attachments: Vec<AttachmentInput> = self
            .imp()
            .pending
            .borrow()
            .iter()
            .map(|p| p.input.clone())
            .collect();
        let sent = attachments.len();
        if text.trim().is_empty() && attachments.is_empty() {
            return;
        }
        buffer.set_text("");
        agent.conversation().send(
            text,
            attachments,
            glib::clone!(
                #[weak(rename_to = composer)]
                self,
                move |r: Result<(), (String, String)>| match r {
                    Ok(()) => composer.remove_sent(sent),
                    Err((e, text)) => {
                        // Nothing is lost: the text goes back into the composer.
                        composer.imp().text.buffer().set_text(&text);
                        let _ = composer.activate_action("win.toast", Some(&e.to_variant()));
                    }
                }
            ),
        );
    }

    /// Steer, beside Stop while the agent answers (where it takes it).
    pub fn steer_button(&self) -> gtk::Button {
        self.imp().steer_button.get()
    }

    /// Whether Steer is offered now: the agent answers and takes messages
    /// during a turn.
    pub fn steers(&self) -> bool {
        self.agent()
            .is_some_and(|a| a.conversation().answering() && a.conversation().can_steer())
    }

    /// Sends the text into the running turn; on failure it goes back into
    /// the field and a toast says why.
    pub fn steer(&self) {
        let Some(agent) = self.agent() else { return };
        if !self.steers() {
            return;
        }
        let buffer = self.imp().text.buffer();
        let text = buffer
            .text(&buffer.start_iter(), &buffer.end_iter(), false)
            .to_string();
        if text.trim().is_empty() {
            return;
        }
        buffer.set_text("");
        agent.conversation().steer(
            text,
            glib::clone!(
                #[weak(rename_to = composer)]
                self,
                move |r: Result<(), (String, String)>| {
                    if let Err((e, text)) = r {
                        composer.imp().text.buffer().set_text(&text);
                        let _ = composer.activate_action("win.toast", Some(&e.to_variant()));
                    }
                }
            ),
        );
    }
}
