//! Drafts in the window: what is written in the composer is kept as the
//! draft of the conversation it was written in (half a second after the
//! last keystroke, when another conversation or agent is shown, and when
//! the window closes), with the message at the top of the view; showing a
//! conversation puts its draft back and scrolls to where the user was.

use super::*;
use crate::core::types::draft::Draft;

/// How long after the last change a draft is kept.
const DRAFT_DELAY: std::time::Duration = std::time::Duration::from_millis(500);

impl ParleyWindow {
    pub(super) fn setup_drafts(&self) {
        let buffer = self.imp().composer.text_view().buffer();
        buffer.connect_changed(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_| win.draft_changed()
        ));
    }

    fn composer_text(&self) -> String {
        let buffer = self.imp().composer.text_view().buffer();
        buffer
            .text(&buffer.start_iter(), &buffer.end_iter(), false)
            .to_string()
    }

    fn draft_changed(&self) {
        let imp = self.imp();
        if imp.draft_loading.get() {
            return;
        }
        // Typed: what the composer holds is the draft now.
        imp.draft_read.set(true);
        if let Some(old) = imp.draft_timer.take() {
            old.remove();
        }
        let id = glib::timeout_add_local_once(
            DRAFT_DELAY,
            glib::clone!(
                #[weak(rename_to = win)]
                self,
                move || {
                    win.imp().draft_timer.take();
                    win.flush_draft();
                }
            ),
        );
        imp.draft_timer.replace(Some(id));
    }

    /// Keeps the composer's text (and the place in the conversation) as the
    /// draft of the conversation it was written in, now.
    pub(super) fn flush_draft(&self) {
        let imp = self.imp();
        if let Some(timer) = imp.draft_timer.take() {
            timer.remove();
        }
        let Some((agent, key)) = imp.draft_for.borrow().clone() else {
            return;
        };
        // Not read yet, and nothing typed: the composer's emptiness is not
        // the draft (moving on quickly would delete it).
        if !imp.draft_read.get() {
            return;
        }
        let draft = Draft {
            text: self.composer_text(),
            anchor: imp.conversation_view.top_message(),
        };
        // A draft keeps at most 256 KiB: said once, while it is longer.
        let long = draft.text.len() > crate::core::types::draft::MAX_DRAFT;
        if long && !imp.draft_cut_told.get() {
            self.toast(&gettext(
                "This message is longer than 256 KiB: its draft keeps only the first 256 KiB if Parley quits before it is sent",
            ));
        }
        imp.draft_cut_told.set(long);
        agent.conversation().save_draft(&key, draft);
    }

    /// Shows the draft of `agent`'s open conversation (after keeping the
    /// one written so far), and goes back to where the user was in it.
    pub(super) fn show_draft(&self, agent: Option<&AgentObject>) {
        let imp = self.imp();
        let key = agent.map(|a| (a.clone(), a.conversation().conversation_id()));
        let same = match (&*imp.draft_for.borrow(), &key) {
            (Some((a, k)), Some((b, l))) => a == b && k == l,
            (None, None) => true,
            _ => false,
        };
        if same {
            return;
        }
        self.flush_draft();
        imp.draft_for.replace(key.clone());
        imp.draft_read.set(false);
        self.set_composer_text("");
        let Some((agent, key)) = key else { return };
        let conversation = agent.conversation().clone();
        conversation.load_draft(
            &key.clone(),
            glib::clone!(
                #[weak(rename_to = win)]
                self,
                move |draft: Draft| {
                    let imp = win.imp();
                    // Still the same conversation, and nothing typed since.
                    let current = imp.draft_for.borrow().clone();
                    if current.is_none_or(|(a, k)| a != agent || k != key) || imp.draft_read.get() {
                        return;
                    }
                    imp.draft_read.set(true);
                    win.set_composer_text(&draft.text);
                    if let Some(anchor) = draft.anchor {
                        win.go_back_to(&agent, anchor);
                    }
                }
            ),
        );
    }

    /// Puts `text` in the composer as the shown conversation's draft (a
    /// fork's transcript), whatever its stored draft says.
    pub(super) fn take_draft(&self, text: &str) {
        self.imp().draft_read.set(true);
        self.set_composer_text(text);
    }

    fn set_composer_text(&self, text: &str) {
        let imp = self.imp();
        imp.draft_loading.set(true);
        imp.composer.text_view().buffer().set_text(text);
        imp.draft_loading.set(false);
    }

    /// Scrolls to message `anchor` once the conversation is laid out.
    fn go_back_to(&self, agent: &AgentObject, anchor: String) {
        let agent = agent.clone();
        glib::timeout_add_local_once(
            std::time::Duration::from_millis(150),
            glib::clone!(
                #[weak(rename_to = win)]
                self,
                move || {
                    if win.selected_object().as_ref() == Some(&agent) {
                        agent.conversation().ensure_loaded(&anchor);
                        win.imp().conversation_view.restore_place(&anchor);
                    }
                }
            ),
        );
    }
}
