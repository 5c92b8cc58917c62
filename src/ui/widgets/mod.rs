//! The window's widgets; each `x.rs` beside its `x.ui` template.

pub mod add_agent;
pub mod add_agent_place;
pub mod agent_row;
pub mod attachment_view;
mod changes_parts;
pub mod changes_view;
pub mod code_block;
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
pub mod message_actions;
pub mod message_list;
pub mod message_parts;
pub mod message_row;
pub mod notice_parts;
pub mod option_pickers;
pub mod permission_banner;
pub mod secret_entry;
pub mod sign_in_methods;
pub mod sign_in_page;
pub mod sign_in_terminal;
pub mod slash_completion;
pub mod subagent_view;
pub mod terminal;
pub mod terminal_view;
pub mod text_block;
pub mod text_label;
pub mod worktree_group;
pub mod wrap_box;

pub use agent_row::AgentRow;
pub use composer::Composer;
pub use conversation_list::ConversationList;
pub use conversation_view::ConversationView;
pub use message_row::MessageRow;
pub use permission_banner::PermissionBanner;
pub use sign_in_page::SignInPage;

/// The list of a dialog (search hits, the inbox, the registry): a boxed
/// list named `label` for screen readers, clamped to `width`, scrolling.
pub fn boxed_list(label: &str, width: i32) -> (gtk::ListBox, gtk::ScrolledWindow) {
    let list = gtk::ListBox::builder()
        .selection_mode(gtk::SelectionMode::None)
        .css_classes(["boxed-list"])
        .valign(gtk::Align::Start)
        .build();
    crate::ui::a11y::set_label(&list, label);
    let scroller = gtk::ScrolledWindow::builder()
        .hscrollbar_policy(gtk::PolicyType::Never)
        .vexpand(true)
        .child(
            &adw::Clamp::builder()
                .maximum_size(width)
                .margin_top(12)
                .margin_bottom(12)
                .margin_start(12)
                .margin_end(12)
                .child(&list)
                .build(),
        )
        .build();
    (list, scroller)
}

/// Escape and Ctrl+W close `controller`'s window, as GNOME dialogs do.
pub fn add_close_keys(controller: &gtk::ShortcutController) {
    for key in ["Escape", "<Control>w"] {
        controller.add_shortcut(gtk::Shortcut::new(
            gtk::ShortcutTrigger::parse_string(key),
            Some(gtk::NamedAction::new("window.close")),
        ));
    }
}
