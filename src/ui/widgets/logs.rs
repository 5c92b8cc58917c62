//! Show Logs: the last 200 stderr lines of an agent, live. The view follows
//! the agent's log model (`AgentObject::logs`) as lines arrive; nothing
//! polls.

use adw::prelude::*;
use gtk::glib;

use crate::i18n::gettext_f;
use crate::ui::models::AgentObject;

pub fn show(parent: &impl IsA<gtk::Window>, agent: &AgentObject) {
    let title = agent.title();
    let dialog = adw::Window::builder()
        .transient_for(parent)
        .default_width(720)
        .default_height(480)
        .title(gettext_f("Logs of {agent}", &[("agent", &title)]))
        .build();
    let view = gtk::TextView::builder()
        .editable(false)
        .monospace(true)
        .wrap_mode(gtk::WrapMode::WordChar)
        .build();
    crate::ui::a11y::set_label(&view, &gettext_f("Logs of {agent}", &[("agent", &title)]));
    let scroller = gtk::ScrolledWindow::builder().child(&view).vexpand(true).build();
    let content = gtk::Box::new(gtk::Orientation::Vertical, 0);
    content.append(&adw::HeaderBar::new());
    content.append(&scroller);
    dialog.set_content(Some(&content));
    let shortcuts = gtk::ShortcutController::new();
    shortcuts.set_scope(gtk::ShortcutScope::Managed);
    super::add_close_keys(&shortcuts);
    dialog.add_controller(shortcuts);
    let logs = agent.logs();
    // The agent's text, control and bidi characters shown (a NUL would
    // also panic on its way into GTK).
    let fill = move |view: &gtk::TextView, logs: &gtk::StringList| {
        let lines: Vec<String> = (0..logs.n_items())
            .filter_map(|i| {
                logs.string(i)
                    .map(|s| crate::ui::markdown::visible(&s).into_owned())
            })
            .collect();
        view.buffer().set_text(&lines.join("\n"));
        let end = view.buffer().end_iter();
        view.buffer().place_cursor(&end);
    };
    fill(&view, &logs);
    // At most one redraw a frame, however fast the agent writes.
    let pending = std::rc::Rc::new(std::cell::Cell::new(false));
    let handler = logs.connect_items_changed(glib::clone!(
        #[weak]
        view,
        #[strong]
        pending,
        move |logs, _, _, _| {
            if pending.replace(true) {
                return;
            }
            let (view, logs, pending) = (view.downgrade(), logs.downgrade(), pending.clone());
            glib::timeout_add_local_once(std::time::Duration::from_millis(16), move || {
                pending.set(false);
                if let (Some(view), Some(logs)) = (view.upgrade(), logs.upgrade()) {
                    fill(&view, &logs);
                }
            });
        }
    ));
    let logs_weak = logs.downgrade();
    let handler = std::cell::RefCell::new(Some(handler));
    dialog.connect_destroy(move |_| {
        if let (Some(logs), Some(id)) = (logs_weak.upgrade(), handler.take()) {
            logs.disconnect(id);
        }
    });
    dialog.present();
}
