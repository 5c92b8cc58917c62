//! Anchored scrolling: the page is placed by an anchor, the row at its top
//! and how far into it the page begins, not by a pixel offset, so that a
//! row above the page that turns out taller than estimated moves the
//! scrollbar, never what is shown. With `follow-end` the anchor is the end
//! instead, which is how a stream is followed.
//!
//! Arithmetic over the height index; the list measures (`measure(i)` binds
//! and measures row `i`, its height from then on, and gives it). The
//! scrollbar's adjustment is told where the page is (`configure`).

use std::cell::RefCell;

use gtk::glib;
use gtk::prelude::*;

use super::heights::Heights;

/// The row at the top of the page and how far into it the page begins.
pub type Anchor = (usize, i64);

/// Where the page begins (the adjustment's value), after measuring the
/// rows it takes to know: from the anchor down, or from the end up.
pub fn page_start(
    heights: &RefCell<Heights>,
    follow_end: bool,
    anchor: Anchor,
    page: i64,
    mut measure: impl FnMut(usize) -> i32,
) -> i64 {
    let n = heights.borrow().len();
    if n == 0 {
        return 0;
    }
    if follow_end {
        return from_end(heights, page, n, page, &mut measure);
    }
    let (index, offset) = anchor;
    let index = index.min(n - 1);
    let mut y = -offset;
    let mut i = index;
    while i < n && y < page {
        y += i64::from(measure(i));
        i += 1;
    }
    if y < page {
        // The end came before the page was full: the rows above fill
        // it, and the end is where it stays.
        return from_end(heights, page - y, index, page, &mut measure);
    }
    heights.borrow_mut().start(index) + offset
}

/// The page at the end, after measuring the rows above row `above` that
/// fill the `missing` pixels of it.
fn from_end(
    heights: &RefCell<Heights>,
    mut missing: i64,
    mut above: usize,
    page: i64,
    measure: &mut impl FnMut(usize) -> i32,
) -> i64 {
    while above > 0 && missing > 0 {
        above -= 1;
        missing -= i64::from(measure(above));
    }
    (heights.borrow_mut().total() - page).max(0)
}

/// Where the page begins as the heights now stand, without measuring.
pub fn value(heights: &mut Heights, follow_end: bool, anchor: Anchor, page: i64) -> i64 {
    match follow_end {
        true => (heights.total() - page).max(0),
        false => {
            let (a, off) = anchor;
            heights.start(a) + off
        }
    }
}

/// The anchor after rows `position..position + removed` were replaced by
/// `added` rows: it stays on its row (the first new one, if its own went).
pub fn after_splice(anchor: Anchor, position: usize, removed: usize, added: usize) -> Anchor {
    let (index, offset) = anchor;
    if index >= position + removed {
        (index + added - removed, offset)
    } else if index >= position {
        (position, 0)
    } else {
        anchor
    }
}

/// Where the page that begins at `value` goes so that all of row `i` is
/// on it (its top, if it is taller than the page), and whether that
/// leaves the end (the row is not the last, or is above the page); `None`
/// when it is on the page already.
pub fn to_show(heights: &mut Heights, value: i64, i: usize, page: i64) -> Option<(i64, bool)> {
    let (start, h) = (heights.start(i), i64::from(heights.get(i)));
    let target = if start < value || h >= page {
        start
    } else if start + h > value + page {
        start + h - page
    } else {
        return None;
    };
    Some((target, i + 1 < heights.len() || start < value))
}

/// Has `adj` show a page `page` high at `value` of `total`, without
/// telling `handler` (the list's own, which would scroll to it again).
pub fn configure(
    adj: &gtk::Adjustment,
    handler: Option<&glib::SignalHandlerId>,
    value: i64,
    total: i64,
    page: i64,
) {
    let page = page as f64;
    let upper = (total as f64).max(page);
    let same = |a: f64, b: f64| (a - b).abs() < 0.5;
    if same(adj.value(), value as f64) && same(adj.upper(), upper) && same(adj.page_size(), page) {
        // Configuring it anyway would have its watchers queue resizes.
        return;
    }
    if let Some(id) = handler {
        adj.block_signal(id);
    }
    adj.configure(value as f64, 0.0, upper, page * 0.1, page * 0.9, page);
    if let Some(id) = handler {
        adj.unblock_signal(id);
    }
}
