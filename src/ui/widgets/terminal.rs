//! A VTE terminal widget through VTE's C API (`vte4-sys`): the safe `vte4`
//! crate binds `gtk::Accessible`, which gtk4-rs only has with GTK 4.10, and
//! Debian 12 has GTK 4.8. Only what the sign-in page needs is here: a
//! terminal on a pty whose controlling side Parley opened (the command runs
//! beneath a guardian, see `core::supervisor::login`), its text, and typing
//! into it. Its colours follow the light or dark style.

use std::os::fd::{IntoRawFd, OwnedFd};

use gtk::glib;
use gtk::glib::translate::{from_glib_full, from_glib_none, ToGlibPtr};
use gtk::prelude::*;

/// The widget data key of the rows a finished terminal was fitted to.
const FITTED: &str = "parley-fitted-rows";
/// The widget data key of the lines last given to a screen reader.
const SPOKEN: &str = "parley-spoken-lines";
/// How many of the last lines a screen reader gets, and how often.
const SPOKEN_LINES: i64 = 6;
const SPOKEN_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

#[derive(Clone)]
pub struct Terminal {
    widget: gtk::Widget,
}

fn rgba(hex: &str) -> gtk::gdk::RGBA {
    gtk::gdk::RGBA::parse(hex).unwrap_or(gtk::gdk::RGBA::BLACK)
}

impl Terminal {
    pub fn new() -> Self {
        // SAFETY: vte_terminal_new returns a new (floating) widget; from_glib_none
        // sinks it, as gtk4-rs does for its own constructors.
        let widget: gtk::Widget =
            unsafe { from_glib_none(vte_sys::vte_terminal_new() as *mut gtk::ffi::GtkWidget) };
        let t = Terminal { widget };
        t.follow_style();
        t.speak_last_lines();
        t
    }

    /// VTE 0.70 on GTK 4.8 gives assistive technology no text (newer VTE
    /// builds on GTK 4.14's accessible text): the last lines up to the
    /// cursor become the widget's accessible description when they change,
    /// at most every 250 ms, so "Type yes to sign in:" can be read.
    fn speak_last_lines(&self) {
        let pending = std::rc::Rc::new(std::cell::Cell::new(false));
        self.widget
            .connect_local("contents-changed", false, move |values| {
                let widget = values.first().and_then(|v| v.get::<gtk::Widget>().ok())?;
                if !pending.replace(true) {
                    let pending = pending.clone();
                    let weak = widget.downgrade();
                    glib::timeout_add_local_once(SPOKEN_EVERY, move || {
                        pending.set(false);
                        if let Some(widget) = weak.upgrade() {
                            Terminal::from_widget(widget).describe_last_lines();
                        }
                    });
                }
                None
            });
    }

    fn describe_last_lines(&self) {
        let (mut col, mut row) = (0, 0);
        // SAFETY: reads of a live terminal; the returned string is ours.
        let text = unsafe {
            vte_sys::vte_terminal_get_cursor_position(self.raw(), &mut col, &mut row);
            let cols = vte_sys::vte_terminal_get_column_count(self.raw());
            let raw = vte_sys::vte_terminal_get_text_range(
                self.raw(),
                (row - SPOKEN_LINES).max(0),
                0,
                row,
                cols,
                None,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            );
            if raw.is_null() {
                return;
            }
            let s: glib::GString = from_glib_full(raw);
            s.to_string()
        };
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim_end)
            .filter(|l| !l.is_empty())
            .collect();
        let spoken = crate::ui::markdown::visible(&lines.join("\n")).into_owned();
        // SAFETY: the key holds a String only, here and in `spoken`.
        let before = unsafe { self.widget.data::<String>(SPOKEN).map(|p| p.as_ref().clone()) };
        if before.as_deref() != Some(spoken.as_str()) {
            crate::ui::a11y::set_description(&self.widget, &spoken);
            // SAFETY: as above.
            unsafe { self.widget.set_data(SPOKEN, spoken) };
        }
    }

    /// What a screen reader was last given as the terminal's text.
    pub fn spoken(&self) -> String {
        // SAFETY: the key holds a String only (see `describe_last_lines`).
        unsafe { self.widget.data::<String>(SPOKEN).map(|p| p.as_ref().clone()) }.unwrap_or_default()
    }

    /// The wrapper around a widget made by [`Terminal::new`].
    pub fn from_widget(widget: gtk::Widget) -> Self {
        Terminal { widget }
    }

    /// Shows `text` as the command's output (it is not typed into it).
    pub fn feed(&self, text: &str) {
        // SAFETY: the bytes live across the call; the length is theirs.
        unsafe {
            vte_sys::vte_terminal_feed(self.raw(), text.as_ptr(), text.len() as isize);
        }
    }

    /// Nothing typed reaches the command; plenty of scrollback.
    pub fn set_read_only(&self) {
        // SAFETY: plain setters on a live terminal.
        unsafe {
            vte_sys::vte_terminal_set_input_enabled(self.raw(), glib::ffi::GFALSE);
            vte_sys::vte_terminal_set_scrollback_lines(self.raw(), 10_000);
        }
    }

    /// Copies everything shown to the clipboard, as text.
    pub fn copy_all(&self) {
        // SAFETY: plain calls on a live terminal.
        unsafe {
            vte_sys::vte_terminal_select_all(self.raw());
            vte_sys::vte_terminal_copy_clipboard_format(self.raw(), vte_sys::VTE_FORMAT_TEXT);
        }
    }

    /// As tall as `lines` lines (at least one, at most `most`), at its
    /// width: a finished command's output needs no screenful of blank rows.
    /// Returns the height asked for, in pixels.
    pub fn fit_lines(&self, lines: usize, most: usize) -> i32 {
        let rows = lines.clamp(1, most.max(1)) as std::ffi::c_long;
        // SAFETY: plain getters and a setter on a live terminal.
        let height = unsafe {
            let cols = vte_sys::vte_terminal_get_column_count(self.raw());
            vte_sys::vte_terminal_set_size(self.raw(), cols.max(1), rows);
            vte_sys::vte_terminal_get_char_height(self.raw()) * rows
        };
        let height = i32::try_from(height).unwrap_or(i32::MAX);
        self.widget.set_size_request(-1, height);
        // SAFETY: read back as the same type in `fitted_lines`.
        unsafe { self.widget.set_data(FITTED, rows as usize) };
        height
    }

    /// The lines [`Terminal::fit_lines`] last fitted it to, if it did.
    pub fn fitted_lines(&self) -> Option<usize> {
        // SAFETY: only `fit_lines` sets this key, as a usize.
        unsafe { self.widget.data::<usize>(FITTED).map(|p| *p.as_ref()) }
    }

    pub fn widget(&self) -> &gtk::Widget {
        &self.widget
    }

    fn raw(&self) -> *mut vte_sys::VteTerminal {
        let w: *mut gtk::ffi::GtkWidget = self.widget.to_glib_none().0;
        w as *mut vte_sys::VteTerminal
    }

    fn follow_style(&self) {
        let style = adw::StyleManager::default();
        let apply = glib::clone!(
            #[weak(rename_to = widget)]
            self.widget,
            move |style: &adw::StyleManager| {
                let (fg, bg) = if style.is_dark() {
                    ("#ffffff", "#1e1e1e")
                } else {
                    ("#241f31", "#fafafa")
                };
                let t = Terminal { widget };
                // SAFETY: the colours live across the call; no palette is given.
                unsafe {
                    vte_sys::vte_terminal_set_colors(
                        t.raw(),
                        rgba(fg).to_glib_none().0,
                        rgba(bg).to_glib_none().0,
                        std::ptr::null(),
                        0,
                    );
                }
            }
        );
        apply(&style);
        let handler = std::cell::Cell::new(Some(style.connect_dark_notify(apply)));
        // The style manager outlives every terminal: let go of it.
        self.widget.connect_destroy(move |_| {
            if let Some(id) = handler.take() {
                adw::StyleManager::default().disconnect(id);
            }
        });
    }

    /// Shows the command on the other side of `master` (the pty's
    /// controlling side, which the terminal then owns).
    pub fn attach(&self, master: OwnedFd) -> Result<(), String> {
        let mut error: *mut glib::ffi::GError = std::ptr::null_mut();
        // SAFETY: the descriptor is handed over (VTE closes it); the error
        // out-pointer is valid; the returned pty is released after set_pty
        // took its own reference.
        unsafe {
            let pty =
                vte_sys::vte_pty_new_foreign_sync(master.into_raw_fd(), std::ptr::null_mut(), &mut error);
            if pty.is_null() {
                let e: glib::Error = from_glib_full(error);
                return Err(e.to_string());
            }
            vte_sys::vte_terminal_set_pty(self.raw(), pty);
            glib::gobject_ffi::g_object_unref(pty as *mut glib::gobject_ffi::GObject);
        }
        Ok(())
    }

    /// The text on screen (and in the scrollback).
    pub fn text(&self) -> String {
        // SAFETY: no selection function; the returned string is ours to free.
        unsafe {
            let text =
                vte_sys::vte_terminal_get_text(self.raw(), None, std::ptr::null_mut(), std::ptr::null_mut());
            if text.is_null() {
                return String::new();
            }
            let s: glib::GString = from_glib_full(text);
            s.to_string()
        }
    }

    /// Types `text` into the command, as the keyboard would.
    pub fn feed_child(&self, text: &str) {
        // SAFETY: the bytes live across the call; the length is theirs.
        unsafe {
            vte_sys::vte_terminal_feed_child(self.raw(), text.as_ptr(), text.len() as isize);
        }
    }
}

impl Default for Terminal {
    fn default() -> Self {
        Self::new()
    }
}
