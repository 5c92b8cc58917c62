//! Show Logs: the last 200 stderr lines of an agent, live.

use adw::prelude::*;
use gtk::glib;

use crate::i18n::gettext_f;
use crate::ui::window::ParleyWindow;

pub fn show(win: &ParleyWindow, agent: &str) {
    let title = win
        .agent(agent)
        .map(|a| a.title())
        .unwrap_or_else(|| agent.to_owned());
    let dialog = adw::Window::builder()
        .transient_for(win)
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
    let shown = std::rc::Rc::new(std::cell::Cell::new(usize::MAX));
    let refresh = glib::clone!(
        #[weak]
        win,
        #[weak]
        view,
        #[strong]
        shown,
        #[strong(rename_to = agent)]
        agent.to_owned(),
        #[upgrade_or]
        glib::ControlFlow::Break,
        move || {
            let mut lines = win.logs(&agent);
            if lines.is_empty() {
                lines = win.core().supervisor.logs(&agent).unwrap_or_default();
            }
            let key = lines.len() ^ lines.last().map(|l| l.len() << 16).unwrap_or(0);
            if key != shown.get() {
                shown.set(key);
                view.buffer().set_text(&lines.join("\n"));
                let end = view.buffer().end_iter();
                view.buffer().place_cursor(&end);
            }
            glib::ControlFlow::Continue
        }
    );
    refresh();
    let id = glib::timeout_add_local(std::time::Duration::from_millis(250), refresh);
    let id = std::cell::RefCell::new(Some(id));
    dialog.connect_destroy(move |_| {
        if let Some(id) = id.take() {
            id.remove();
        }
    });
    dialog.present();
}
