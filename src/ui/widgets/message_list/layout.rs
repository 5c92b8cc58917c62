//! Laying the rows out: binding, measuring and placing the rows of the
//! page and the one with the keyboard focus, letting go of the others, and
//! binding the rows near the page ahead, in idle time. Which rows sit where
//! is `placement`'s arithmetic, where the page begins `anchor`'s.

use std::collections::HashMap;

use gtk::prelude::*;

use super::anchor;
use super::placement::{self, Placed};
use super::state::ListWidget;
use crate::ui::models::RowObject;
use crate::ui::widgets::message_row::MessageRow;

/// Binds, measures and places the rows of the page; allocates them too
/// with `allocate`. Done first in the frame's update phase (`prepare`),
/// where binding a row, letting one go or moving the adjustment may queue
/// resizes; the allocation that follows then finds it all done. A resize
/// queued during the allocation itself is lost to GTK 4.8 for that frame:
/// the window drew without the conversation ("Trying to snapshot GtkStack
/// without a current allocation").
pub fn layout(list: &impl ListWidget, width: i32, page: i32, allocate: bool) {
    let s = list.state();
    s.dirty.set(false);
    s.size.set((width, page));
    let n = s.heights.borrow().len();
    // The focused row, drawn again if it changed, before the rows are
    // placed by their heights: it stays bound even off the page.
    if let Some((_, i)) = focused_row(list) {
        measure_row(list, i, width);
    }
    // At another width, heights measured at the old one stand as
    // estimates until their rows are on the page again.
    let page = i64::from(page.max(0));
    let value = page_start(list, width, page);
    let rows = placement::page_rows(&s.heights, value, page, |i| measure_row(list, i, width));
    let total = s.heights.borrow_mut().total();
    if !list.follows_end() {
        let anchor = s.heights.borrow_mut().row_at(value);
        s.anchor.set(anchor);
    }
    list.show_page(value, total, page);
    // Rows within a page above and below are bound ahead, in idle time
    // (`bind_ahead`), so that scrolling finds them drawn; kept, not
    // shown, until they come on the page.
    let mut near: HashMap<RowObject, usize> = HashMap::new();
    if n > 0 {
        let (from, to, below) = placement::ahead(&mut s.heights.borrow_mut(), value, page, &rows);
        s.ahead.set((from, to, below));
        near.extend((from..=to).filter_map(|i| Some((s.item(i)?, i))));
    }
    let mut placed: HashMap<RowObject, Placed> = HashMap::new();
    for row in &rows {
        if let Some(r) = s.item(row.index) {
            placed.insert(r, *row);
        }
    }
    // The focused row is kept bound where it is, even off the page.
    if let Some((r, i)) = focused_row(list) {
        placed.entry(r).or_insert(Placed::at(&s.heights, i, value));
    }
    place(list, &placed, &near, width, allocate);
    let all_near_bound = near.keys().all(|r| s.widgets.contains(r));
    if !all_near_bound && !list.follows_end() {
        list.schedule_ahead();
    }
    s.page_rows.replace(rows);
}

/// Where the page begins, from the anchor (see `anchor::page_start`).
fn page_start(list: &impl ListWidget, width: i32, page: i64) -> i64 {
    let s = list.state();
    anchor::page_start(&s.heights, list.follows_end(), s.anchor.get(), page, |i| {
        measure_row(list, i, width)
    })
}

/// The row that holds the keyboard focus, with its index.
fn focused_row(list: &impl ListWidget) -> Option<(RowObject, usize)> {
    let s = list.state();
    let row = s.cursor.borrow().clone()?;
    let focused = s
        .widgets
        .get(&row)
        .is_some_and(|w| w.has_focus() || w.focus_child().is_some());
    if !focused {
        return None;
    }
    let i = s.index_of(&row)?;
    Some((row, i))
}

/// Lets go of the widgets of rows neither `placed` nor `near`, puts the
/// others in the order of their rows (the order a screen reader reads)
/// and allocates the placed ones; the near ones wait, not shown.
fn place(
    list: &impl ListWidget,
    placed: &HashMap<RowObject, Placed>,
    near: &HashMap<RowObject, usize>,
    width: i32,
    allocate: bool,
) {
    let widgets = &list.state().widgets;
    if widgets.keep_only(|row| placed.contains_key(row) || near.contains_key(row)) {
        list.schedule_clear();
    }
    if widgets.arrange(list.upcast_ref(), placed, near, width, allocate) {
        list.schedule_reorder();
    }
}

/// The widget showing row `i`, bound to it now if none is, and drawn
/// again if its row changed.
pub fn widget_for(list: &impl ListWidget, i: usize) -> Option<MessageRow> {
    let s = list.state();
    let row = s.item(i)?;
    Some(s.widgets.bind(row, &list.row_title(), || list.new_row()))
}

/// Binds row `i` and measures it at `width`; its height from now on.
pub fn measure_row(list: &impl ListWidget, i: usize, width: i32) -> i32 {
    let Some(widget) = widget_for(list, i) else {
        return 0;
    };
    // (GTK measures the width first, itself.)
    let (_, natural, _, _) = widget.measure(gtk::Orientation::Vertical, width);
    list.state().heights.borrow_mut().set(i, natural);
    natural
}

/// Binds and measures rows near the page that are not bound yet, those
/// below it first, for at most a few milliseconds; whether some are left.
pub fn bind_ahead(list: &impl ListWidget) -> bool {
    let s = list.state();
    let started = std::time::Instant::now();
    let (lo, hi, below) = s.ahead.get();
    let n = s.heights.borrow().len();
    let width = s.size.get().0;
    if n == 0 || width <= 0 {
        return false;
    }
    let hi = hi.min(n - 1);
    let below = below.min(hi + 1);
    for i in (below..=hi).chain((lo.min(below)..below).rev()) {
        let Some(row) = s.item(i) else { continue };
        if s.widgets.contains(&row) {
            continue;
        }
        if started.elapsed() > std::time::Duration::from_millis(3) {
            return true;
        }
        if let Some(widget) = widget_for(list, i) {
            widget.set_child_visible(false);
            let (_, natural, _, _) = widget.measure(gtk::Orientation::Vertical, width);
            s.heights.borrow_mut().set(i, natural);
        }
    }
    false
}
