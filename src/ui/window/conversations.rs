//! The window's conversations: New (Ctrl+N), Open, Rename, Delete and
//! Export of the selected agent's conversations, the read-only banner,
//! find in the conversation (Ctrl+F) and search across all of them
//! (Ctrl+Shift+F), and the history's status as toasts.

use super::*;
use crate::ui::models::ConversationAction;

impl ParleyWindow {
    pub(super) fn selected_object(&self) -> Option<AgentObject> {
        self.selected_agent().and_then(|n| self.agent(&n))
    }

    /// A window action on the selected agent with a string target (a
    /// conversation's or a message's id).
    pub(super) fn conversation_action(
        &self,
        name: &str,
        run: impl Fn(&ParleyWindow, AgentObject, String) + 'static,
    ) {
        let action = gio::SimpleAction::new(name, Some(glib::VariantTy::STRING));
        action.connect_activate(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_, param| {
                if let (Some(agent), Some(id)) =
                    (win.selected_object(), param.and_then(|p| p.get::<String>()))
                {
                    run(&win, agent, id);
                }
            }
        ));
        self.add_action(&action);
    }

    fn plain_action(&self, name: &str, run: impl Fn(&ParleyWindow) + 'static) {
        let action = gio::SimpleAction::new(name, None);
        action.connect_activate(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_, _| run(&win)
        ));
        self.add_action(&action);
    }

    /// Runs a conversation action; its error is a toast.
    fn run_conversation(
        &self,
        agent: &AgentObject,
        what: ConversationAction,
        then: impl FnOnce(&ParleyWindow) + 'static,
    ) {
        agent.conversation().conversation_action(
            what,
            glib::clone!(
                #[weak(rename_to = win)]
                self,
                move |r: Result<(), String>| match r {
                    Ok(()) => then(&win),
                    Err(e) => win.toast(&e),
                }
            ),
        );
    }

    /// `worktree: "ask"`: a new conversation in a worktree of its own, or
    /// in the agent's folder?
    fn ask_new_in_worktree(&self, agent: &AgentObject) {
        let dialog = adw::MessageDialog::builder()
            .transient_for(self)
            .modal(true)
            .heading(gettext("New Conversation in a Worktree?"))
            .body(gettext(
                "In a worktree of its own, the agent works apart from your project and from other agents; you apply or merge what it did when you choose.",
            ))
            .build();
        dialog.add_response("cancel", &gettext("_Cancel"));
        dialog.add_response("here", &gettext("In the _Project"));
        dialog.add_response("worktree", &gettext("In a _Worktree"));
        dialog.set_response_appearance("worktree", adw::ResponseAppearance::Suggested);
        dialog.set_default_response(Some("worktree"));
        dialog.set_close_response("cancel");
        let agent = agent.clone();
        dialog.connect_response(
            None,
            glib::clone!(
                #[weak(rename_to = win)]
                self,
                move |_, response| match response {
                    "worktree" => {
                        let _ = gtk::prelude::WidgetExt::activate_action(&win, "win.new-in-worktree", None);
                    }
                    "here" => win.run_conversation(&agent, ConversationAction::New, |win| {
                        win.imp().composer.grab_focus();
                    }),
                    _ => {}
                }
            ),
        );
        dialog.present();
    }

    pub(super) fn setup_conversations(&self) {
        self.plain_action("new-conversation", |win| {
            let Some(agent) = win.selected_object() else {
                return;
            };
            // The agent's `worktree`: always in one, ask, or never.
            use crate::core::config::model::WorktreeMode;
            let mode = win
                .core()
                .agents
                .configured(&agent.name())
                .map(|d| d.worktree)
                .unwrap_or_default();
            match mode {
                WorktreeMode::Always => {
                    let _ = gtk::prelude::WidgetExt::activate_action(win, "win.new-in-worktree", None);
                }
                WorktreeMode::Ask => win.ask_new_in_worktree(&agent),
                WorktreeMode::Never => win.run_conversation(&agent, ConversationAction::New, |win| {
                    win.imp().composer.grab_focus();
                }),
            }
        });
        self.plain_action("new-in-worktree", |win| {
            let Some(agent) = win.selected_object() else {
                return;
            };
            win.run_conversation(&agent, ConversationAction::NewInWorktree, |win| {
                let name = win.selected_object().map(|a| a.name()).unwrap_or_default();
                let core = win.core().clone();
                let weak = win.downgrade();
                crate::ui::runtime::call(async move { core.chat.worktree(&name).await }, move |r| {
                    let Some(win) = weak.upgrade() else { return };
                    if let Ok(status) = r {
                        win.toast(&gettext_f(
                            "A new conversation in its own worktree, on branch {branch} from {base}",
                            &[("branch", &status.branch), ("base", &status.base_name)],
                        ));
                    }
                });
                win.imp().composer.grab_focus();
            });
        });
        self.conversation_action("open-conversation", |win, agent, id| {
            win.run_conversation(&agent, ConversationAction::Open(id), |win| {
                win.imp().leaflet.navigate(adw::NavigationDirection::Forward);
                win.imp().composer.grab_focus();
            });
        });
        self.conversation_action("rename-conversation", |win, agent, id| win.ask_rename(agent, id));
        self.conversation_action("delete-conversation", |win, agent, id| win.ask_delete(agent, id));
        self.plain_action("export-conversation", |win| win.export_conversation());
        self.plain_action("show-changes", |win| {
            let Some(agent) = win.selected_object() else {
                return;
            };
            crate::ui::widgets::changes_view::show(
                win.upcast_ref(),
                win.core().clone(),
                &agent.name(),
                &agent.title(),
            );
        });
        self.plain_action("search-conversations", |win| {
            let weak = win.downgrade();
            let open = move |agent: &str, conversation: &str, message: &str| {
                if let Some(win) = weak.upgrade() {
                    win.open_message(agent, conversation, message);
                }
            };
            crate::ui::widgets::history_search::show(
                win.upcast_ref(),
                win.core().history.clone(),
                std::rc::Rc::new(open),
            );
        });
        self.plain_action("find", |win| {
            if win.selected_object().is_none() {
                return;
            }
            let imp = win.imp();
            imp.find_bar.set_search_mode(true);
            imp.find_entry.grab_focus();
        });
        let imp = self.imp();
        imp.find_bar.connect_entry(&*imp.find_entry);
        imp.find_entry.connect_search_changed(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_| win.find_again()
        ));
        imp.find_entry.connect_activate(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_| win.find_step(1)
        ));
        imp.find_entry.connect_next_match(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_| win.find_step(1)
        ));
        imp.find_entry.connect_previous_match(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_| win.find_step(-1)
        ));
        imp.find_entry.connect_stop_search(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_| {
                win.imp().find_bar.set_search_mode(false);
                win.imp().composer.grab_focus();
            }
        ));
        imp.find_next.connect_clicked(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_| win.find_step(1)
        ));
        imp.find_previous.connect_clicked(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_| win.find_step(-1)
        ));
        self.model().connect_history_status(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_, error| {
                if !error.is_empty() {
                    win.toast(error);
                }
            }
        ));
    }

    /// The banner of a conversation that cannot go on; the composer rests.
    pub(super) fn update_read_only(&self, agent: &AgentObject) {
        let imp = self.imp();
        let why = agent.conversation().read_only();
        imp.read_only_label.set_label(&why);
        imp.read_only_revealer.set_reveal_child(!why.is_empty());
        imp.composer.set_sensitive(why.is_empty());
    }

    fn ask_rename(&self, agent: AgentObject, id: String) {
        let current = self
            .imp()
            .conversation_list
            .titles()
            .into_iter()
            .zip(0u32..)
            .find_map(|(t, i)| {
                (self.imp().conversation_list.id_at(i).as_deref() == Some(id.as_str())).then_some(t)
            });
        let dialog = adw::MessageDialog::new(Some(self), Some(&gettext("Rename Conversation")), None);
        let entry = gtk::Entry::builder()
            .text(current.unwrap_or_default())
            .activates_default(true)
            .build();
        crate::ui::a11y::set_label(&entry, &gettext("Title"));
        dialog.set_extra_child(Some(&entry));
        dialog.add_responses(&[("cancel", &gettext("_Cancel")), ("rename", &gettext("_Rename"))]);
        crate::ui::a11y::name_mnemonics(&dialog);
        dialog.set_response_appearance("rename", adw::ResponseAppearance::Suggested);
        dialog.set_default_response(Some("rename"));
        dialog.set_close_response("cancel");
        dialog.connect_response(
            None,
            glib::clone!(
                #[weak(rename_to = win)]
                self,
                #[weak]
                entry,
                move |_, response| {
                    if response == "rename" {
                        let title = entry.text().to_string();
                        win.run_conversation(&agent, ConversationAction::Rename(id.clone(), title), |_| {});
                    }
                }
            ),
        );
        dialog.present();
        entry.grab_focus();
    }

    fn ask_delete(&self, agent: AgentObject, id: String) {
        let dialog = adw::MessageDialog::new(
            Some(self),
            Some(&gettext("Delete Conversation?")),
            Some(&gettext(
                "The conversation is removed from Parley’s history, and from the agent where it offers that. This cannot be undone.",
            )),
        );
        dialog.add_responses(&[("cancel", &gettext("_Cancel")), ("delete", &gettext("_Delete"))]);
        crate::ui::a11y::name_mnemonics(&dialog);
        dialog.set_response_appearance("delete", adw::ResponseAppearance::Destructive);
        dialog.set_default_response(Some("cancel"));
        dialog.set_close_response("cancel");
        dialog.connect_response(
            None,
            glib::clone!(
                #[weak(rename_to = win)]
                self,
                move |_, response| {
                    if response == "delete" {
                        win.run_conversation(&agent, ConversationAction::Delete(id.clone()), |win| {
                            win.toast(&gettext("Conversation deleted"));
                        });
                    }
                }
            ),
        );
        dialog.present();
    }

    /// Saves the current conversation as Markdown, where the native file
    /// chooser (the portal's, in a sandbox) says.
    fn export_conversation(&self) {
        let Some(agent) = self.selected_object() else {
            return;
        };
        let markdown = match agent.conversation().export() {
            Ok(m) => m,
            Err(e) => return self.toast(&e),
        };
        let chooser = gtk::FileChooserNative::new(
            Some(&gettext("Export Conversation")),
            Some(self),
            gtk::FileChooserAction::Save,
            Some(&gettext("_Export")),
            Some(&gettext("_Cancel")),
        );
        let title = agent.session().session_title();
        let name = if title.is_empty() { agent.title() } else { title };
        let safe: String = name
            .chars()
            .map(|c| {
                if c.is_alphanumeric() || c == ' ' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(60)
            .collect();
        chooser.set_current_name(&format!("{}.md", safe.trim()));
        chooser.connect_response(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |chooser, response| {
                if response != gtk::ResponseType::Accept {
                    return;
                }
                let Some(path) = chooser.file().and_then(|f| f.path()) else {
                    return;
                };
                let text = markdown.clone();
                crate::ui::runtime::call(
                    async move {
                        tokio::task::spawn_blocking(move || {
                            crate::core::atomic::write(&path, text.as_bytes()).map(|_| path)
                        })
                        .await
                        .map_err(|e| e.to_string())?
                        .map_err(|e| e.to_string())
                    },
                    glib::clone!(
                        #[weak]
                        win,
                        move |r: Result<std::path::PathBuf, String>| match r {
                            Ok(path) => win.toast(&gettext_f(
                                "Exported to {path}",
                                &[("path", &path.display().to_string())]
                            )),
                            Err(e) => win.toast(&gettext_f("Could not export: {error}", &[("error", &e)])),
                        }
                    ),
                );
            }
        ));
        chooser.show();
        self.keep_file_chooser(chooser);
    }

    /// Opens `conversation` of `agent` and scrolls to `message` (a search hit).
    pub fn open_message(&self, agent_name: &str, conversation: &str, message: &str) {
        self.select_agent(agent_name);
        let Some(agent) = self.agent(agent_name) else {
            return;
        };
        let message = message.to_owned();
        let current = agent.conversation().conversation_id() == conversation;
        let scroll = move |win: &ParleyWindow| {
            let Some(agent) = win.selected_object() else {
                return;
            };
            // The switch's event may come after this answer: read it now.
            agent
                .conversation()
                .apply_switched(Some(&agent.conversation().conversation_id()), None);
            let message = message.clone();
            glib::timeout_add_local_once(
                std::time::Duration::from_millis(150),
                glib::clone!(
                    #[weak]
                    win,
                    move || {
                        if let Some(agent) = win.selected_object() {
                            agent.conversation().ensure_loaded(&message);
                        }
                        win.imp().conversation_view.scroll_to_message(&message);
                    }
                ),
            );
        };
        if current {
            scroll(self);
        } else {
            self.run_conversation(&agent, ConversationAction::Open(conversation.to_owned()), scroll);
        }
    }

    /// The find bar's text changed: its matches are the messages that say
    /// it (case does not matter), the last one shown first.
    fn find_again(&self) {
        let imp = self.imp();
        let query = imp.find_entry.text().to_lowercase();
        let matches = match (query.trim().is_empty(), self.selected_object()) {
            (false, Some(agent)) => agent.conversation().find(&query),
            _ => Vec::new(),
        };
        let last = matches.len().saturating_sub(1);
        imp.find.replace((matches, last));
        self.find_step(0);
    }

    /// Shows the next (`1`), previous (`-1`) or same (`0`) match.
    fn find_step(&self, by: isize) {
        let imp = self.imp();
        let (id, at, count) = {
            let mut find = imp.find.borrow_mut();
            let count = find.0.len();
            if count == 0 {
                (None, 0, 0)
            } else {
                let at = (find.1 as isize + by).rem_euclid(count as isize) as usize;
                find.1 = at;
                (find.0.get(at).cloned(), at, count)
            }
        };
        let label = if imp.find_entry.text().is_empty() {
            String::new()
        } else if count == 0 {
            gettext("No match")
        } else {
            gettext_f(
                "{n} of {count}",
                &[("n", &(at + 1).to_string()), ("count", &count.to_string())],
            )
        };
        imp.find_count.set_label(&label);
        crate::ui::a11y::set_description(&*imp.find_entry, &label);
        if let (Some(id), Some(agent)) = (id, self.selected_object()) {
            agent.conversation().ensure_loaded(&id);
            imp.conversation_view.scroll_to_message(&id);
        }
        // Told when the user moves, or when nothing matches.
        if !label.is_empty() && (by != 0 || count == 0) {
            crate::ui::a11y::announce(self, &label, crate::ui::a11y::Priority::Medium);
        }
    }

    /// The find bar's count label (for tests).
    pub fn find_count(&self) -> String {
        self.imp().find_count.label().to_string()
    }

    pub fn conversation_list(&self) -> ConversationList {
        self.imp().conversation_list.get()
    }
}
