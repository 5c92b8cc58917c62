//! The widgets that show the list's rows (`MessageRow`s, children of the
//! list): those bound to a row, by row, and spare ones kept for rows to
//! come; their order among the list's children, which is the order a
//! screen reader reads, and their allocation on the page.
//!
//! The list asks for a row's widget, lets widgets go and has them placed;
//! it schedules what waits for an idle (emptying the spare ones, putting
//! the children in order).

use std::cell::RefCell;
use std::collections::HashMap;

use gtk::prelude::*;

use super::placement::Placed;
use crate::ui::models::{RowKind, RowObject};
use crate::ui::widgets::message_row::MessageRow;

/// The narrowest a row of text gets: its speaker's name on one line.
const MIN_WIDTH: i32 = 120;

/// The most spare widgets kept; more are let go of.
const MAX_SPARE: usize = 16;

#[derive(Default)]
pub struct RowWidgets {
    /// The widgets bound to rows, by row.
    bound: RefCell<HashMap<RowObject, MessageRow>>,
    /// Widgets kept for rows to come (child-invisible).
    spare: RefCell<Vec<MessageRow>>,
    /// The order of the children, as the last allocation found it, until
    /// they are put in it.
    order: RefCell<Vec<MessageRow>>,
}

impl RowWidgets {
    /// The widget bound to `row`.
    pub fn get(&self, row: &RowObject) -> Option<MessageRow> {
        self.bound.borrow().get(row).cloned()
    }

    pub fn contains(&self, row: &RowObject) -> bool {
        self.bound.borrow().contains_key(row)
    }

    /// The widgets bound to rows, by row.
    pub fn all(&self) -> Vec<(RowObject, MessageRow)> {
        self.bound
            .borrow()
            .iter()
            .map(|(r, w)| (r.clone(), w.clone()))
            .collect()
    }

    /// The list's minimum width.
    pub fn min_width(&self) -> i32 {
        // Text wraps anywhere (word or character), so its rows are as
        // narrow as need be: only the others, fewer and cheaper to ask,
        // are. A text row's width for one line is a layout of its whole
        // text, most of its cost.
        self.bound
            .borrow()
            .iter()
            .filter(|(row, _)| !matches!(row.kind(), RowKind::Text { .. }))
            .map(|(_, w)| w.measure(gtk::Orientation::Horizontal, -1).0)
            .max()
            .unwrap_or(0)
            .max(MIN_WIDTH)
    }

    /// The widget showing `row`, drawn again if its row changed; or one
    /// bound to it now, a spare one or a new one made by `new`.
    pub fn bind(&self, row: RowObject, agent_title: &str, new: impl FnOnce() -> MessageRow) -> MessageRow {
        let bound = self.get(&row);
        if let Some(w) = bound {
            w.refresh();
            return w;
        }
        let widget = self.spare.borrow_mut().pop().unwrap_or_else(new);
        widget.set_child_visible(true);
        widget.bind(&row, agent_title);
        self.bound.borrow_mut().insert(row, widget.clone());
        widget
    }

    /// A widget no row needs any longer: kept for the next, within
    /// reason. It is to be emptied (`clear_spare`) in an idle.
    pub fn release(&self, widget: MessageRow) {
        widget.unbind();
        let mut spare = self.spare.borrow_mut();
        if spare.len() < MAX_SPARE {
            widget.set_child_visible(false);
            spare.push(widget);
        } else {
            widget.unparent();
        }
    }

    /// Lets go of the widgets of all rows; whether there were any.
    pub fn release_all(&self) -> bool {
        let bound: Vec<MessageRow> = self.bound.borrow_mut().drain().map(|(_, w)| w).collect();
        let any = !bound.is_empty();
        for w in bound {
            self.release(w);
        }
        any
    }

    /// Lets go of the widgets of rows that `keep` does not keep; whether
    /// there were any.
    pub fn keep_only(&self, keep: impl Fn(&RowObject) -> bool) -> bool {
        let mut released = Vec::new();
        self.bound.borrow_mut().retain(|row, widget| {
            let kept = keep(row);
            if !kept {
                released.push(widget.clone());
            }
            kept
        });
        let any = !released.is_empty();
        for widget in released {
            self.release(widget);
        }
        any
    }

    /// Empties the spare widgets.
    pub fn clear_spare(&self) {
        for w in self.spare.borrow().iter() {
            w.clear();
        }
    }

    /// Puts the children of `list` in the order of their rows (the order a
    /// screen reader reads), and with `allocate` allocates the `placed`
    /// ones; the `near` ones wait, not shown. Whether the children are to
    /// be put in order after the layout (`reorder`).
    pub fn arrange(
        &self,
        list: &gtk::Widget,
        placed: &HashMap<RowObject, Placed>,
        near: &HashMap<RowObject, usize>,
        width: i32,
        allocate: bool,
    ) -> bool {
        let mut widgets: Vec<(usize, Option<Placed>, MessageRow)> = self
            .bound
            .borrow()
            .iter()
            .filter_map(|(row, widget)| match placed.get(row) {
                Some(p) => Some((p.index, Some(*p), widget.clone())),
                None => near.get(row).map(|&i| (i, None, widget.clone())),
            })
            .collect();
        widgets.sort_by_key(|w| w.0);
        if !allocate {
            // The update phase, before the layout: the resize that moving
            // children queues is laid out in this frame, with the binding's.
            put_in_order(list, widgets.into_iter().map(|w| w.2));
            return false;
        }
        let mut previous: Option<gtk::Widget> = None;
        let mut in_order = true;
        let mut order = Vec::with_capacity(widgets.len());
        for (_, at, widget) in widgets {
            in_order &= prev_bound_sibling(&widget) == previous;
            order.push(widget.clone());
            match at {
                Some(p) => {
                    widget.set_child_visible(true);
                    let y = p.top.clamp(i64::from(i32::MIN / 2), i64::from(i32::MAX / 2)) as i32;
                    widget.size_allocate(&gtk::Allocation::new(0, y, width, p.height), -1);
                }
                None => widget.set_child_visible(false),
            }
            previous = Some(widget.upcast());
        }
        if !in_order {
            // The order just found: looking rows up again in the idle
            // would be a walk of the whole model.
            self.order.replace(order);
        }
        !in_order
    }

    /// Puts the children of `list` in the order the last allocation found.
    pub fn reorder(&self, list: &gtk::Widget) {
        let order = self.order.take();
        put_in_order(list, order);
    }

    /// Unbinds and unparents them all (the list is disposed of).
    pub fn dispose(&self) {
        for (_, w) in self.bound.take() {
            w.unbind();
            w.unparent();
        }
        for w in self.spare.take() {
            w.unparent();
        }
    }
}

/// Moves the children of `list` that need it so that `order` is theirs.
fn put_in_order(list: &gtk::Widget, order: impl IntoIterator<Item = MessageRow>) {
    let mut previous: Option<gtk::Widget> = None;
    for widget in order {
        // One let go since is not moved.
        if widget.parent().as_ref() != Some(list) || widget.row().is_none() {
            continue;
        }
        if prev_bound_sibling(&widget) != previous {
            widget.insert_after(list, previous.as_ref());
        }
        previous = Some(widget.upcast());
    }
}

/// The sibling before `widget` that shows a row, past the spare rows
/// (`release`) between them: those stay where they were let go, hidden,
/// and moving a row only to put it after them would restyle it and its
/// neighbours for nothing (a few moves a frame while scrolling).
fn prev_bound_sibling(widget: &MessageRow) -> Option<gtk::Widget> {
    let mut sibling = widget.prev_sibling();
    while let Some(spare) = sibling
        .as_ref()
        .and_then(|s| s.downcast_ref::<MessageRow>())
        .filter(|r| r.row().is_none())
    {
        sibling = spare.prev_sibling();
    }
    sibling
}

/// Whether `widget` is allocated within the page of `list`.
pub fn on_page(widget: &MessageRow, list: &gtk::Widget) -> bool {
    widget.is_child_visible()
        && widget
            .compute_bounds(list)
            .is_some_and(|b| b.height() > 0.0 && b.y() + b.height() > 0.0 && b.y() < list.height() as f32)
}
