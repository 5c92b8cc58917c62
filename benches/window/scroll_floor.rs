//! The long conversation's floor: the least a window can do to scroll the
//! same messages a third of a page a frame. A drawing area as wide as
//! Parley's column and as high as its page draws the messages on the page,
//! each as one Pango layout; a layout is made when its message comes on
//! the page and kept until it leaves. Nothing is made ahead, nothing
//! off the page is kept, and there are no widgets for the rows.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use adw::prelude::*;
use gtk::{glib, pango};
use parley::core::types::message::{Message, Part};

use super::{log_frames, spin_until, Frames};

/// Space between two messages, as between Parley's rows.
const GAP: i32 = 12;

/// Message `m` as the floor draws it: its text, and a tool call's title,
/// output and diffs, as Pango markup (code in a monospace font).
fn markup(m: &Message) -> String {
    let esc = |t: &str| glib::markup_escape_text(t).to_string();
    let mut out = String::new();
    for part in &m.parts {
        match part {
            Part::Text { text } => out.push_str(&esc(text)),
            Part::Tool(t) => {
                out.push_str(&format!("<b>{}</b>\n<tt>{}", esc(&t.title), esc(&t.output)));
                for d in &t.diffs {
                    for l in d.old_text.lines() {
                        out.push_str(&format!("- {}\n", esc(l)));
                    }
                    for l in d.new_text.lines() {
                        out.push_str(&format!("+ {}\n", esc(l)));
                    }
                }
                out.push_str("</tt>");
            }
            _ => {}
        }
        out.push('\n');
    }
    out
}

#[derive(Default)]
struct State {
    /// The first message on the page, and how far the page starts below
    /// its top.
    top: usize,
    offset: i32,
    /// The layouts of the messages on the page, with their heights.
    layouts: HashMap<usize, (pango::Layout, i32)>,
    /// The last message has been drawn.
    done: bool,
}

/// Whether the floors' drawing areas (this one and the stream's) are also
/// laid out again each frame (`PARLEY_BENCH_FLOOR_LAYOUT=1`), as a
/// widget that moves its children or grows is. GTK 4.8 then lays out the
/// window, and on X11 that asks the X server where the window is and what
/// its work area is: five round trips a frame without a window manager
/// (docs/benchmarks-history.md).
pub fn laid_out() -> bool {
    std::env::var_os("PARLEY_BENCH_FLOOR_LAYOUT").is_some()
}

/// The floors' name in the figures: the floor laid out each frame is
/// another floor.
pub fn floor_name() -> &'static str {
    match laid_out() {
        true => "the floor window laid out each frame",
        false => "the floor window",
    }
}

/// Scrolls `size` messages of the long conversation from top to bottom
/// on a page `page` pixels high, and returns its frames.
pub fn scroll(app: &adw::Application, size: usize, page: i32) -> Frames {
    let texts: Rc<Vec<String>> = Rc::new((0..size).map(|i| markup(&super::long_message(i))).collect());
    let state: Rc<RefCell<State>> = Rc::default();
    let area = gtk::DrawingArea::builder()
        .height_request(page)
        .valign(gtk::Align::Start)
        .build();
    let (st, t) = (state.clone(), texts.clone());
    area.set_draw_func(move |area, cr, width, height| {
        let mut st = st.borrow_mut();
        let (mut i, mut y) = (st.top, -st.offset);
        while i < t.len() && y < height {
            let (layout, h) = st
                .layouts
                .entry(i)
                .or_insert_with(|| {
                    let layout = area.create_pango_layout(None);
                    layout.set_markup(&t[i]);
                    layout.set_width(width * pango::SCALE);
                    layout.set_wrap(pango::WrapMode::WordChar);
                    let h = layout.pixel_size().1 + GAP;
                    (layout, h)
                })
                .clone();
            #[allow(deprecated)]
            gtk::render_layout(&area.style_context(), cr, 0.0, f64::from(y), &layout);
            y += h;
            i += 1;
        }
        let top = st.top;
        st.layouts.retain(|k, _| (top..i).contains(k));
        st.done = i >= t.len();
    });
    let column = adw::Clamp::builder().maximum_size(705).child(&area).build();
    let win = super::floor_window_with(app, &column);
    win.present();
    spin_until(Duration::from_secs(10), || win.is_mapped());
    spin_until(Duration::from_millis(500), || false);
    let log = log_frames(&win.frame_clock().expect("frame clock"));
    let st = state.clone();
    area.add_tick_callback(move |area, _| {
        let mut st = st.borrow_mut();
        if !st.done {
            st.offset += page / 3;
            while let Some(h) = st.layouts.get(&st.top).map(|l| l.1) {
                if st.offset < h {
                    break;
                }
                st.offset -= h;
                st.top += 1;
            }
            area.queue_draw();
            if laid_out() {
                area.queue_allocate();
            }
        }
        glib::ControlFlow::Continue
    });
    spin_until(Duration::from_secs(900), || state.borrow().done);
    let frames = log.finish();
    win.close();
    frames
}
