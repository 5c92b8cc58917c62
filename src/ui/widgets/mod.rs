//! The window's widgets; each `x.rs` beside its `x.ui` template.

pub mod add_agent;
pub mod agent_row;
pub mod completion_list;
pub mod composer;
pub mod config_editor;
pub mod conversation_list;
pub mod conversation_view;
pub mod diff;
pub mod elicitation;
pub mod history_search;
pub mod inbox;
pub mod logs;
pub mod mention_completion;
pub mod message_parts;
pub mod message_row;
pub mod option_pickers;
pub mod permission_banner;
pub mod sign_in_page;
pub mod slash_completion;
pub mod terminal;

pub use agent_row::AgentRow;
pub use composer::Composer;
pub use conversation_list::ConversationList;
pub use conversation_view::ConversationView;
pub use message_row::MessageRow;
pub use permission_banner::PermissionBanner;
pub use sign_in_page::SignInPage;

/// Escape and Ctrl+W close `controller`'s window, as GNOME dialogs do.
pub fn add_close_keys(controller: &gtk::ShortcutController) {
    for key in ["Escape", "<Control>w"] {
        controller.add_shortcut(gtk::Shortcut::new(
            gtk::ShortcutTrigger::parse_string(key),
            Some(gtk::NamedAction::new("window.close")),
        ));
    }
}
