//! Keyboard focus within the list. For screen readers the list is a list
//! whose items are the rows on the page; a row takes the focus, the arrow
//! keys move it to the row above or below (scrolling it into view, bound
//! first if it was not), and the list is one Tab stop, with Tab going on
//! into the focused row.

use gtk::prelude::*;

use super::anchor;
use super::layout::{measure_row, widget_for};
use super::row_widgets;
use super::state::ListWidget;
use crate::ui::widgets::message_row::MessageRow;

/// Moves the focus in `direction`, into the list, within it or out of it;
/// whether it moved (or stays, at either end).
pub fn move_focus(list: &impl ListWidget, direction: gtk::DirectionType) -> bool {
    use gtk::DirectionType as D;
    let s = list.state();
    let inside = list.focus_child().and_downcast::<MessageRow>();
    match (direction, inside) {
        (D::TabForward | D::TabBackward, Some(row)) => row.child_focus(direction),
        (D::TabForward | D::TabBackward, None) => {
            // Into the list: the row last focused, if still shown, or
            // the first row of the page.
            let cursor = s.cursor.borrow().clone();
            let widget = cursor
                .and_then(|r| s.widgets.get(&r))
                .filter(|w| row_widgets::on_page(w, list.upcast_ref()))
                .or_else(|| {
                    let rows = s.page_rows.borrow();
                    let page = i64::from(list.height());
                    let visible = rows.iter().filter(|p| p.shows(page)).map(|p| p.index);
                    // The first, either way, as a list view does.
                    let i = visible.min()?;
                    let row = s.item(i)?;
                    s.widgets.get(&row)
                });
            widget.is_some_and(|w| w.grab_focus())
        }
        (D::Up | D::Down, Some(row)) => {
            let Some(i) = row.row().and_then(|r| s.index_of(&r)) else {
                return false;
            };
            let n = s.heights.borrow().len();
            let target = match direction {
                D::Up => i.checked_sub(1),
                _ => Some(i + 1).filter(|&t| t < n),
            };
            let Some(target) = target else {
                // At either end the focus stays.
                list.error_bell();
                return true;
            };
            let width = s.size.get().0.max(1);
            measure_row(list, target, width);
            match widget_for(list, target) {
                Some(w) => {
                    w.grab_focus();
                    true
                }
                None => false,
            }
        }
        (D::Up | D::Down, None) => move_focus(list, gtk::DirectionType::TabForward),
        _ => false,
    }
}

/// Scrolls so that all of `widget`'s row is on the page (its top, if it
/// is taller than the page).
pub fn bring_into_view(list: &impl ListWidget, widget: &MessageRow) {
    let s = list.state();
    let Some(row) = widget.row() else { return };
    let Some(i) = s.index_of(&row) else { return };
    let page = i64::from(list.height());
    let shown = {
        let mut heights = s.heights.borrow_mut();
        let value = anchor::value(&mut heights, list.follows_end(), s.anchor.get(), page);
        anchor::to_show(&mut heights, value, i, page)
    };
    let Some((target, leaves_end)) = shown else {
        return;
    };
    if leaves_end {
        list.leave_end();
    }
    let anchor = s.heights.borrow_mut().row_at(target);
    s.anchor.set(anchor);
    list.invalidate();
}
