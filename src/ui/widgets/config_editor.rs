//! The settings editor: the configuration file in a GtkSourceView, checked
//! on each edit (debounced), problems underlined and listed, Save (Ctrl+S)
//! only when valid, and Reload offered when the file changes on disk.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use adw::prelude::*;
use gtk::glib;
use sourceview5::prelude::*;

use crate::core::config::Problem;
use crate::core::services::Core;
use crate::i18n::{gettext, gettext_f};
use crate::ui::models::AppModel;
use crate::ui::runtime;

/// An open editor. Whoever opened it keeps a `Weak` to present it again;
/// the editor keeps itself alive until its window closes.
pub struct Editor {
    window: adw::Window,
    buffer: sourceview5::Buffer,
    view: sourceview5::View,
    save: gtk::Button,
    problems: gtk::ListBox,
    reload_revealer: gtk::Revealer,
    /// The text as last loaded from or saved to the file.
    saved: RefCell<String>,
    pending: RefCell<Option<glib::SourceId>>,
    generation: Cell<u64>,
    /// (start offset, end offset, message) of each underlined problem.
    marks: RefCell<Vec<(i32, i32, String)>>,
}

/// Opens the editor over `parent` (whose `win.toast` action shows errors),
/// following `model`'s configuration changes while it is open.
pub fn show(parent: &impl IsA<gtk::Window>, model: &AppModel) -> Option<Rc<Editor>> {
    let parent = parent.upcast_ref::<gtk::Window>();
    let text = match model.core().config.content() {
        Ok(t) => t,
        Err(e) => {
            toast(parent, &e.to_string());
            return None;
        }
    };
    let editor = build(parent, model.core(), &text);
    // Offers Reload when the file on disk no longer matches what the
    // editor started from.
    let weak = Rc::downgrade(&editor);
    let handler = model.connect_config_changed(move |model, _, _| {
        if let Some(e) = weak.upgrade() {
            file_changed(&e, model.core());
        }
    });
    // The editor lives until its window closes.
    let keep = RefCell::new(Some((editor.clone(), model.clone(), handler)));
    editor.window.connect_close_request(move |_| {
        if let Some((_, model, handler)) = keep.take() {
            model.disconnect(handler);
        }
        glib::Propagation::Proceed
    });
    editor.window.present();
    Some(editor)
}

fn toast(parent: &gtk::Window, text: &str) {
    let _ = parent.activate_action("win.toast", Some(&text.to_variant()));
}

fn file_changed(e: &Editor, core: &Core) {
    let Ok(disk) = core.config.content() else { return };
    if disk != *e.saved.borrow() {
        if current_text(e) == disk {
            e.saved.replace(disk);
        } else {
            e.reload_revealer.set_reveal_child(true);
        }
    }
}

impl Editor {
    pub fn window(&self) -> adw::Window {
        self.window.clone()
    }

    /// Whether the text differs from the file as last loaded or saved.
    pub fn has_unsaved_edits(&self) -> bool {
        current_text(self) != *self.saved.borrow()
    }

    /// The buffer, Save button and problem list (for tests).
    #[doc(hidden)]
    pub fn parts(&self) -> (sourceview5::Buffer, gtk::Button, gtk::ListBox) {
        (self.buffer.clone(), self.save.clone(), self.problems.clone())
    }
}

fn current_text(e: &Editor) -> String {
    e.buffer
        .text(&e.buffer.start_iter(), &e.buffer.end_iter(), false)
        .to_string()
}

fn build(parent: &gtk::Window, core: &Core, text: &str) -> Rc<Editor> {
    let window = adw::Window::builder()
        .transient_for(parent)
        .default_width(820)
        .default_height(640)
        .title(gettext("Configuration"))
        .build();
    let header = adw::HeaderBar::new();
    let save = crate::ui::a11y::mnemonic_button(&gettext("_Save"));
    // GTK 4.8 would name it "_Save Save".
    crate::ui::a11y::set_label(&save, &gettext("Save"));
    save.add_css_class("suggested-action");
    save.set_tooltip_text(Some(&gettext("Save (Ctrl+S)")));
    header.pack_end(&save);
    let path_label = adw::WindowTitle::new(&gettext("Configuration"), &core.config.current().path);
    header.set_title_widget(Some(&path_label));

    let buffer = sourceview5::Buffer::new(None);
    let lm = sourceview5::LanguageManager::default();
    // The JSON language marks `//` comments as errors; comments are fine
    // here, and JavaScript highlights the same tokens.
    if let Some(l) = lm.language("js").or_else(|| lm.language("json")) {
        buffer.set_language(Some(&l));
    }
    let apply_scheme = glib::clone!(
        #[weak]
        buffer,
        move |sm: &adw::StyleManager| {
            let name = if sm.is_dark() { "Adwaita-dark" } else { "Adwaita" };
            if let Some(s) = sourceview5::StyleSchemeManager::default().scheme(name) {
                buffer.set_style_scheme(Some(&s));
            }
        }
    );
    let sm = adw::StyleManager::default();
    apply_scheme(&sm);
    sm.connect_dark_notify(apply_scheme);
    buffer.set_text(text);
    let tag = gtk::TextTag::builder()
        .name("problem")
        .underline(gtk::pango::Underline::Error)
        .build();
    let warn_tag = gtk::TextTag::builder()
        .name("warning")
        .underline(gtk::pango::Underline::Single)
        .build();
    buffer.tag_table().add(&tag);
    buffer.tag_table().add(&warn_tag);
    let view = sourceview5::View::with_buffer(&buffer);
    view.set_show_line_numbers(true);
    view.set_monospace(true);
    view.set_auto_indent(true);
    view.set_tab_width(2);
    view.set_insert_spaces_instead_of_tabs(true);
    view.set_highlight_current_line(true);
    crate::ui::a11y::set_label(&view, &gettext("Configuration text"));
    let scroller = gtk::ScrolledWindow::builder().child(&view).vexpand(true).build();

    let reload = crate::ui::a11y::mnemonic_button(&gettext("_Reload"));
    let banner = gtk::Box::new(gtk::Orientation::Horizontal, 12);
    banner.add_css_class("permission-banner");
    let banner_label = gtk::Label::new(Some(&gettext("The file was changed on disk.")));
    banner_label.set_hexpand(true);
    banner_label.set_xalign(0.0);
    banner.append(&banner_label);
    banner.append(&reload);
    let reload_revealer = gtk::Revealer::builder().child(&banner).build();

    let problems = gtk::ListBox::new();
    problems.add_css_class("boxed-list");
    problems.set_selection_mode(gtk::SelectionMode::None);
    crate::ui::a11y::set_label(&problems, &gettext("Problems"));
    let problems_scroller = gtk::ScrolledWindow::builder()
        .child(&problems)
        .max_content_height(160)
        .propagate_natural_height(true)
        .margin_start(12)
        .margin_end(12)
        .margin_top(6)
        .margin_bottom(12)
        .build();

    let content = gtk::Box::new(gtk::Orientation::Vertical, 0);
    content.append(&header);
    content.append(&reload_revealer);
    content.append(&scroller);
    content.append(&problems_scroller);
    window.set_content(Some(&content));

    let editor = Rc::new(Editor {
        window: window.clone(),
        buffer: buffer.clone(),
        view,
        save: save.clone(),
        problems,
        reload_revealer,
        saved: RefCell::new(text.to_owned()),
        pending: RefCell::new(None),
        generation: Cell::new(0),
        marks: RefCell::new(Vec::new()),
    });

    // The underlined problems explain themselves on hover.
    editor.view.set_has_tooltip(true);
    let weak = Rc::downgrade(&editor);
    editor
        .view
        .connect_query_tooltip(move |view, x, y, keyboard, tooltip| {
            let Some(e) = weak.upgrade() else { return false };
            let iter = if keyboard {
                e.buffer.iter_at_mark(&e.buffer.get_insert())
            } else {
                let (bx, by) = view.window_to_buffer_coords(gtk::TextWindowType::Widget, x, y);
                match view.iter_at_location(bx, by) {
                    Some(it) => it,
                    None => return false,
                }
            };
            let offset = iter.offset();
            let marks = e.marks.borrow();
            let found: Vec<&str> = marks
                .iter()
                .filter(|(s, end, _)| *s <= offset && offset < *end)
                .map(|(_, _, m)| m.as_str())
                .collect();
            if found.is_empty() {
                return false;
            }
            tooltip.set_text(Some(&found.join("\n")));
            true
        });

    let core = core.clone();
    let weak = Rc::downgrade(&editor);
    let validate_core = core.clone();
    buffer.connect_changed(move |_| {
        let core = &validate_core;
        let Some(e) = weak.upgrade() else { return };
        e.save.set_sensitive(false);
        if let Some(id) = e.pending.take() {
            id.remove();
        }
        let weak = Rc::downgrade(&e);
        let core = core.clone();
        let id = glib::timeout_add_local_once(Duration::from_millis(250), move || {
            let Some(e) = weak.upgrade() else { return };
            e.pending.take();
            validate_now(&e, &core);
        });
        e.pending.replace(Some(id));
    });
    validate_now(&editor, &core);

    let do_save = {
        let weak = Rc::downgrade(&editor);
        let parent = parent.downgrade();
        let core = core.clone();
        move || {
            // Saving never depends on the window that opened the editor.
            let Some(e) = weak.upgrade() else {
                return;
            };
            let parent = parent.upgrade();
            if !e.save.is_sensitive() {
                return;
            }
            let text = current_text(&e);
            let core = core.clone();
            let saved_text = text.clone();
            runtime::call(async move { core.config.save(&text) }, move |r| match r {
                Ok(problems) if problems.is_empty() => {
                    e.saved.replace(saved_text);
                    e.reload_revealer.set_reveal_child(false);
                    if let Some(parent) = &parent {
                        toast(parent, &gettext("Configuration saved"));
                    }
                    // Heard in the editor too, where the focus is.
                    crate::ui::a11y::announce(
                        &e.view,
                        &gettext("Configuration saved"),
                        crate::ui::a11y::Priority::Medium,
                    );
                }
                Ok(problems) => show_problems(&e, &problems),
                Err(err) => match &parent {
                    Some(parent) => toast(parent, &err.to_string()),
                    None => crate::ui::a11y::announce(
                        &e.view,
                        &err.to_string(),
                        crate::ui::a11y::Priority::Medium,
                    ),
                },
            });
        }
    };
    let s1 = do_save.clone();
    save.connect_clicked(move |_| s1());
    let shortcuts = gtk::ShortcutController::new();
    shortcuts.set_scope(gtk::ShortcutScope::Managed);
    let s2 = do_save.clone();
    shortcuts.add_shortcut(gtk::Shortcut::new(
        gtk::ShortcutTrigger::parse_string("<Control>s"),
        Some(gtk::CallbackAction::new(move |_, _| {
            s2();
            glib::Propagation::Stop
        })),
    ));
    super::add_close_keys(&shortcuts);
    window.add_controller(shortcuts);
    // Unsaved edits are never thrown away without asking.
    let weak = Rc::downgrade(&editor);
    let save_then_close = do_save.clone();
    window.connect_close_request(move |window| {
        let Some(e) = weak.upgrade() else {
            return glib::Propagation::Proceed;
        };
        if current_text(&e) == *e.saved.borrow() {
            return glib::Propagation::Proceed;
        }
        ask_to_save(window, &e, save_then_close.clone());
        glib::Propagation::Stop
    });

    let weak = Rc::downgrade(&editor);
    reload.connect_clicked(move |_| {
        let Some(e) = weak.upgrade() else {
            return;
        };
        if let Ok(text) = core.config.content() {
            e.saved.replace(text.clone());
            e.buffer.set_text(&text);
        }
        e.reload_revealer.set_reveal_child(false);
    });
    editor
}

/// Save, Discard or Cancel for a window closed with unsaved edits. Save is
/// offered only while the text is valid; after it, the window closes once
/// the file is written.
fn ask_to_save(window: &adw::Window, e: &Rc<Editor>, save: impl Fn() + 'static) {
    let dialog = adw::MessageDialog::new(
        Some(window),
        Some(&gettext("Save Changes?")),
        Some(&gettext(
            "The configuration has edits that are not saved. Without saving, they are lost.",
        )),
    );
    dialog.add_response("cancel", &gettext("_Cancel"));
    dialog.add_response("discard", &gettext("_Discard"));
    dialog.add_response("save", &gettext("_Save"));
    crate::ui::a11y::name_mnemonics(&dialog);
    dialog.set_response_appearance("discard", adw::ResponseAppearance::Destructive);
    dialog.set_response_appearance("save", adw::ResponseAppearance::Suggested);
    dialog.set_response_enabled("save", e.save.is_sensitive());
    dialog.set_default_response(Some("cancel"));
    dialog.set_close_response("cancel");
    let weak = Rc::downgrade(e);
    let window = window.downgrade();
    dialog.connect_response(None, move |_, response| {
        let (Some(e), Some(window)) = (weak.upgrade(), window.upgrade()) else {
            return;
        };
        match response {
            "discard" => {
                e.saved.replace(current_text(&e));
                window.close();
            }
            "save" => {
                save();
                // Closes once the file holds the text (the save is async).
                let weak = Rc::downgrade(&e);
                let mut tries = 0;
                glib::timeout_add_local(Duration::from_millis(50), move || {
                    tries += 1;
                    let Some(e) = weak.upgrade().filter(|_| tries < 200) else {
                        return glib::ControlFlow::Break;
                    };
                    if current_text(&e) == *e.saved.borrow() {
                        window.close();
                        return glib::ControlFlow::Break;
                    }
                    glib::ControlFlow::Continue
                });
            }
            _ => {}
        }
    });
    dialog.present();
}

fn validate_now(e: &Rc<Editor>, core: &Core) {
    let text = current_text(e);
    let generation = e.generation.get() + 1;
    e.generation.set(generation);
    let core = core.clone();
    let weak = Rc::downgrade(e);
    runtime::call(async move { core.config.validate(&text) }, move |problems| {
        let Some(e) = weak.upgrade() else { return };
        if e.generation.get() == generation {
            show_problems(&e, &problems);
        }
    });
}

fn show_problems(e: &Rc<Editor>, problems: &[Problem]) {
    let buffer = &e.buffer;
    buffer.remove_tag_by_name("problem", &buffer.start_iter(), &buffer.end_iter());
    buffer.remove_tag_by_name("warning", &buffer.start_iter(), &buffer.end_iter());
    while let Some(row) = e.problems.first_child() {
        e.problems.remove(&row);
    }
    let mut marks = Vec::new();
    let errors = problems.iter().filter(|p| !p.warning).count();
    // A problem that appears (or goes) is said, as a sighted user sees the
    // underline and the list change.
    let was_valid = e.save.is_sensitive();
    e.save.set_sensitive(errors == 0);
    if let Some(first) = problems.iter().find(|p| !p.warning).filter(|_| was_valid) {
        crate::ui::a11y::announce(
            &e.view,
            &gettext_f(
                "Line {line}: {message}",
                &[("line", &first.line.to_string()), ("message", &first.message)],
            ),
            crate::ui::a11y::Priority::Medium,
        );
    }
    for p in problems {
        let line = (p.line.saturating_sub(1)) as i32;
        let col = (p.column.saturating_sub(1)) as i32;
        if let Some(start) = buffer.iter_at_line_offset(line, col) {
            let mut end = start;
            if !end.ends_line() {
                end.forward_to_line_end();
            }
            if start == end {
                end.forward_char();
            }
            buffer.apply_tag_by_name(if p.warning { "warning" } else { "problem" }, &start, &end);
            marks.push((start.offset(), end.offset(), p.message.clone()));
        }
        let row = adw::ActionRow::builder()
            .title(glib::markup_escape_text(&p.message).as_str())
            .subtitle(gettext_f(
                "Line {line}, column {column}",
                &[("line", &p.line.to_string()), ("column", &p.column.to_string())],
            ))
            .activatable(true)
            .build();
        row.add_prefix(&gtk::Image::from_icon_name(if p.warning {
            "dialog-warning-symbolic"
        } else {
            "dialog-error-symbolic"
        }));
        let weak = Rc::downgrade(e);
        let (line, col) = (line, col);
        row.connect_activated(move |_| {
            let Some(e) = weak.upgrade() else { return };
            if let Some(mut it) = e.buffer.iter_at_line_offset(line, col) {
                e.buffer.place_cursor(&it);
                e.view.scroll_to_iter(&mut it, 0.2, false, 0.0, 0.0);
                e.view.grab_focus();
            }
        });
        e.problems.append(&row);
    }
    e.problems.set_visible(!problems.is_empty());
    e.marks.replace(marks);
}
