//! What the list's parts share: the list's state (`State`), and what they
//! ask of the list widget itself (`ListWidget`, which `MessageList`
//! implements: the parts work on the widget without importing it).

use std::cell::{Cell, Ref, RefCell};

use gtk::gio;
use gtk::prelude::*;

use super::anchor::Anchor;
use super::estimate::Metrics;
use super::heights::Heights;
use super::placement::Placed;
use super::row_widgets::RowWidgets;
use crate::ui::models::RowObject;
use crate::ui::widgets::message_row::MessageRow;

/// The list's state, but for its properties.
#[derive(Default)]
pub struct State {
    pub model: RefCell<Option<gio::ListModel>>,
    pub heights: RefCell<Heights>,
    /// Without `follow_end`: the row at the top of the page and how far
    /// into it the page begins.
    pub anchor: Cell<Anchor>,
    /// The widgets of the rows, bound and spare.
    pub widgets: RowWidgets,
    /// The rows on the page after the last layout.
    pub page_rows: RefCell<Vec<Placed>>,
    /// The row that has, or last had, the keyboard focus.
    pub cursor: RefCell<Option<RowObject>>,
    pub metrics: Cell<Option<Metrics>>,
    /// The rows to bind ahead: from, to, and the first below the page.
    pub ahead: Cell<(usize, usize, usize)>,
    /// The rows need binding or measuring before the next allocation.
    pub dirty: Cell<bool>,
    /// The last width and height laid out.
    pub size: Cell<(i32, i32)>,
}

impl State {
    /// Row `i` of the model.
    pub fn item(&self, i: usize) -> Option<RowObject> {
        let model = self.model.borrow();
        model.as_ref()?.item(u32::try_from(i).ok()?).and_downcast()
    }

    /// Where `row` is in the model: looked for on the page first.
    pub fn index_of(&self, row: &RowObject) -> Option<usize> {
        let on_page = self
            .page_rows
            .borrow()
            .iter()
            .map(|p| p.index)
            .find(|&i| self.item(i).as_ref() == Some(row));
        on_page.or_else(|| (0..self.heights.borrow().len()).find(|&i| self.item(i).as_ref() == Some(row)))
    }
}

/// The list widget, as its parts see it.
pub trait ListWidget: IsA<gtk::Widget> {
    fn state(&self) -> &State;

    /// Whether the end of the list stays in view (`follow-end`).
    fn follows_end(&self) -> bool;

    /// Stops following the end.
    fn leave_end(&self);

    /// The title rows name the agent by.
    fn row_title(&self) -> Ref<'_, String>;

    /// A new row widget, a child of the list.
    fn new_row(&self) -> MessageRow;

    /// Has the scrollbar show a page `page` high at `value` of `total`.
    fn show_page(&self, value: i64, total: i64, page: i64);

    /// Binds rows near the page in idle time (`layout::bind_ahead`).
    fn schedule_ahead(&self);

    /// Empties the spare rows in an idle.
    fn schedule_clear(&self);

    /// Puts the children in the order of their rows in an idle.
    fn schedule_reorder(&self);

    /// The rows are to be laid out again: bound and measured in the next
    /// frame's update phase, then allocated.
    fn invalidate(&self) {
        self.state().dirty.set(true);
        match self.frame_clock() {
            Some(clock) => clock.request_phase(gtk::gdk::FrameClockPhase::UPDATE),
            None => self.queue_allocate(),
        }
    }
}
