//! The conversation's own virtualised list of rows (`RowObject`s, shown by
//! `MessageRow`s).
//!
//! GTK 4.8's list view keeps up to 200 rows bound around the one it is
//! anchored to and binds them again while scrolling; with long rows (code,
//! tool cards, diffs) that was most of a frame (BENCHMARKS.md). This list
//! binds, measures and lays out only the rows on the page, plus the one
//! with the keyboard focus, and binds rows a page above and below in idle
//! time. It knows every other row by its height: as measured when it was
//! last on the page at this width, or estimated from its text until then
//! ([`Heights`]). Rows are bound in the frame's update phase and only
//! placed in the allocation (see `layout`).
//!
//! It scrolls by an anchor, the row at the top of the page and how far into
//! it the page begins, not by a pixel offset: a row above the page that
//! turns out taller than estimated moves the scrollbar, never what is
//! shown. With `follow-end` the anchor is the end instead, which is how a
//! stream is followed.
//!
//! For screen readers it is a list whose items are the rows on the page;
//! a row takes the focus, the arrow keys move it to the row above or below
//! (scrolling it into view, bound first if it was not), and the list is one
//! Tab stop, with Tab going on into the focused row.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use gtk::prelude::*;
use gtk::subclass::prelude::*;
use gtk::{gio, glib};

use crate::core::chat::message::Part;
use crate::ui::models::{RowKind, RowObject};
use crate::ui::widgets::message_row::{estimate_lines, MessageRow};

/// Row heights in pixels, with the running sum that places them: rows
/// before the first changed one keep their places, the rest are summed
/// again only when asked for.
#[derive(Default)]
pub struct Heights {
    heights: Vec<i32>,
    /// `starts[i]` is where row `i` begins; valid up to `valid`.
    starts: Vec<i64>,
    valid: usize,
}

impl Heights {
    pub fn len(&self) -> usize {
        self.heights.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heights.is_empty()
    }

    /// Rows `at..at + removed` replaced by rows of the `added` heights.
    pub fn splice(&mut self, at: usize, removed: usize, added: impl IntoIterator<Item = i32>) {
        let at = at.min(self.heights.len());
        let end = (at + removed).min(self.heights.len());
        let added: Vec<i32> = added.into_iter().collect();
        self.heights.splice(at..end, added);
        self.starts.resize(self.heights.len() + 1, 0);
        self.valid = self.valid.min(at);
    }

    pub fn set(&mut self, i: usize, height: i32) {
        if let Some(h) = self.heights.get_mut(i) {
            if *h != height {
                *h = height;
                self.valid = self.valid.min(i);
            }
        }
    }

    pub fn get(&self, i: usize) -> i32 {
        self.heights.get(i).copied().unwrap_or(0)
    }

    fn sum_up_to(&mut self, i: usize) {
        let i = i.min(self.heights.len());
        if self.starts.is_empty() {
            self.starts.push(0);
        }
        while self.valid < i {
            self.starts[self.valid + 1] = self.starts[self.valid] + i64::from(self.heights[self.valid]);
            self.valid += 1;
        }
    }

    /// Where row `i` begins (`len()`: the end of the last).
    pub fn start(&mut self, i: usize) -> i64 {
        self.sum_up_to(i);
        self.starts[i.min(self.heights.len())]
    }

    pub fn total(&mut self) -> i64 {
        self.start(self.heights.len())
    }

    /// The row at `y` and how far into it `y` is.
    pub fn row_at(&mut self, y: i64) -> (usize, i64) {
        let n = self.heights.len();
        if n == 0 {
            return (0, 0);
        }
        self.sum_up_to(n);
        let y = y.clamp(0, self.starts[n].max(1) - 1);
        // The last row starting at or before `y`.
        let i = self.starts[..n].partition_point(|&s| s <= y).saturating_sub(1);
        (i, y - self.starts[i])
    }
}

/// Pixels of a row outside its text: its padding, and the role's line on a
/// message's first row and the footer's on its last (style.css).
const ROW_PADDING: i32 = 8;
const ROLE_LINE: i32 = 22;
/// A part that is not text (a tool card, a plan, a thought): most are
/// drawn folded to about this height.
const PART_ESTIMATE: i32 = 90;

/// A row laid out on the page: its index, where its top is relative to
/// the page's, its height.
#[derive(Debug, Clone, Copy)]
pub struct Placed {
    index: usize,
    top: i64,
    height: i32,
}

/// The narrowest a row of text gets: its speaker's name on one line.
const MIN_WIDTH: i32 = 120;

/// What the list needs of the font to estimate a row's height.
#[derive(Clone, Copy)]
pub struct Metrics {
    char_width: f64,
    line_height: f64,
}

mod imp {
    use super::*;

    #[derive(glib::Properties)]
    #[properties(wrapper_type = super::MessageList)]
    pub struct MessageList {
        #[property(override_interface = gtk::Scrollable, get, set = Self::set_hadjustment, nullable)]
        pub hadjustment: RefCell<Option<gtk::Adjustment>>,
        #[property(override_interface = gtk::Scrollable, get, set = Self::set_vadjustment, nullable)]
        pub vadjustment: RefCell<Option<gtk::Adjustment>>,
        #[property(override_interface = gtk::Scrollable, get, set)]
        pub hscroll_policy: Cell<gtk::ScrollablePolicy>,
        #[property(override_interface = gtk::Scrollable, get, set)]
        pub vscroll_policy: Cell<gtk::ScrollablePolicy>,
        /// Whether the end of the list stays in view as rows grow or come.
        #[property(get, set = Self::set_follow_end)]
        pub follow_end: Cell<bool>,
        /// The title rows name the agent by.
        #[property(get, set = Self::set_agent_title)]
        pub agent_title: RefCell<String>,
        pub model: RefCell<Option<gio::ListModel>>,
        pub model_handler: RefCell<Option<glib::SignalHandlerId>>,
        pub value_handler: RefCell<Option<glib::SignalHandlerId>>,
        pub heights: RefCell<Heights>,
        /// Without `follow_end`: the row at the top of the page and how far
        /// into it the page begins.
        pub anchor: Cell<(usize, i64)>,
        /// The widgets bound to rows, by row.
        pub bound: RefCell<HashMap<RowObject, MessageRow>>,
        /// Widgets kept for rows to come (child-invisible).
        pub spare: RefCell<Vec<MessageRow>>,
        /// The rows on the page after the last layout.
        pub page_rows: RefCell<Vec<Placed>>,
        /// The row that has, or last had, the keyboard focus.
        pub cursor: RefCell<Option<RowObject>>,
        pub metrics: Cell<Option<Metrics>>,
        /// The rows to bind ahead: from, to, and the first below the page.
        pub ahead: Cell<(usize, usize, usize)>,
        pub ahead_source: RefCell<Option<glib::SourceId>>,
        /// The children wait to be put in the order of their rows.
        pub reorder_pending: Cell<bool>,
        /// That order, as the last allocation found it.
        pub order: RefCell<Vec<MessageRow>>,
        /// Spare rows wait to be emptied.
        pub clear_pending: Cell<bool>,
        /// The rows need binding or measuring before the next allocation.
        pub dirty: Cell<bool>,
        /// The last width and height laid out.
        pub size: Cell<(i32, i32)>,
        pub update_handler: RefCell<Option<(gtk::gdk::FrameClock, glib::SignalHandlerId)>>,
    }

    impl Default for MessageList {
        fn default() -> Self {
            Self {
                hadjustment: RefCell::default(),
                vadjustment: RefCell::default(),
                hscroll_policy: Cell::new(gtk::ScrollablePolicy::Minimum),
                vscroll_policy: Cell::new(gtk::ScrollablePolicy::Natural),
                follow_end: Cell::new(true),
                agent_title: RefCell::default(),
                model: RefCell::default(),
                model_handler: RefCell::default(),
                value_handler: RefCell::default(),
                heights: RefCell::default(),
                anchor: Cell::default(),
                bound: RefCell::default(),
                spare: RefCell::default(),
                page_rows: RefCell::default(),
                cursor: RefCell::default(),
                metrics: Cell::default(),
                ahead: Cell::default(),
                ahead_source: RefCell::default(),
                reorder_pending: Cell::default(),
                order: RefCell::default(),
                clear_pending: Cell::default(),
                dirty: Cell::default(),
                size: Cell::default(),
                update_handler: RefCell::default(),
            }
        }
    }

    impl MessageList {
        fn set_hadjustment(&self, adj: Option<gtk::Adjustment>) {
            self.hadjustment.replace(adj);
        }

        fn set_vadjustment(&self, adj: Option<gtk::Adjustment>) {
            if let Some(old) = self.vadjustment.take() {
                if let Some(id) = self.value_handler.take() {
                    old.disconnect(id);
                }
            }
            if let Some(adj) = &adj {
                let weak = self.obj().downgrade();
                let id = adj.connect_value_changed(move |adj| {
                    if let Some(list) = weak.upgrade() {
                        list.scrolled_to(adj.value());
                    }
                });
                self.value_handler.replace(Some(id));
            }
            self.vadjustment.replace(adj);
            self.obj().invalidate();
        }

        fn set_follow_end(&self, follow: bool) {
            if self.follow_end.replace(follow) != follow {
                self.obj().notify_follow_end();
                self.obj().invalidate();
            }
        }

        fn set_agent_title(&self, title: String) {
            if *self.agent_title.borrow() != title {
                self.agent_title.replace(title);
                // Rows draw the title on their next binding.
                self.obj().release_all();
                self.obj().invalidate();
            }
        }
    }

    #[glib::object_subclass]
    impl ObjectSubclass for MessageList {
        const NAME: &'static str = "ParleyMessageList";
        type Type = super::MessageList;
        type ParentType = gtk::Widget;
        type Interfaces = (gtk::Scrollable,);

        fn class_init(klass: &mut Self::Class) {
            klass.set_accessible_role(gtk::AccessibleRole::List);
            klass.set_css_name("messagelist");
        }
    }

    #[glib::derived_properties]
    impl ObjectImpl for MessageList {
        fn constructed(&self) {
            self.parent_constructed();
            let obj = self.obj();
            obj.set_overflow(gtk::Overflow::Hidden);
            obj.set_focusable(false);
        }

        fn dispose(&self) {
            if let Some(id) = self.ahead_source.take() {
                id.remove();
            }
            if let (Some(model), Some(id)) = (self.model.take(), self.model_handler.take()) {
                model.disconnect(id);
            }
            if let (Some(adj), Some(id)) = (self.vadjustment.take(), self.value_handler.take()) {
                adj.disconnect(id);
            }
            for (_, w) in self.bound.take() {
                w.unbind();
                w.unparent();
            }
            for w in self.spare.take() {
                w.unparent();
            }
        }
    }

    impl WidgetImpl for MessageList {
        fn measure(&self, orientation: gtk::Orientation, _for_size: i32) -> (i32, i32, i32, i32) {
            match orientation {
                gtk::Orientation::Horizontal => {
                    // Text wraps anywhere (word or character), so its rows
                    // are as narrow as need be: only the others, fewer and
                    // cheaper to ask, are. A text row's width for one line
                    // is a layout of its whole text, most of its cost.
                    let min = self
                        .bound
                        .borrow()
                        .iter()
                        .filter(|(row, _)| !matches!(row.kind(), RowKind::Text { .. }))
                        .map(|(_, w)| w.measure(gtk::Orientation::Horizontal, -1).0)
                        .max()
                        .unwrap_or(0)
                        .max(MIN_WIDTH);
                    (min, min, -1, -1)
                }
                gtk::Orientation::Vertical => {
                    let total = self.heights.borrow_mut().total();
                    (0, total.clamp(0, i64::from(i32::MAX)) as i32, -1, -1)
                }
                _ => (0, 0, -1, -1),
            }
        }

        fn size_allocate(&self, width: i32, height: i32, _baseline: i32) {
            self.obj().layout(width, height, true);
        }

        fn realize(&self) {
            self.parent_realize();
            let obj = self.obj();
            if let Some(clock) = obj.frame_clock() {
                let weak = obj.downgrade();
                let id = clock.connect_update(move |_| {
                    if let Some(list) = weak.upgrade() {
                        list.prepare();
                    }
                });
                self.update_handler.replace(Some((clock, id)));
            }
        }

        fn unrealize(&self) {
            if let Some((clock, id)) = self.update_handler.take() {
                clock.disconnect(id);
            }
            self.parent_unrealize();
        }

        fn focus(&self, direction: gtk::DirectionType) -> bool {
            self.obj().move_focus(direction)
        }

        fn grab_focus(&self) -> bool {
            self.obj().move_focus(gtk::DirectionType::TabForward)
        }

        fn set_focus_child(&self, child: Option<&gtk::Widget>) {
            self.parent_set_focus_child(child);
            if let Some(row) = child.and_then(|c| c.downcast_ref::<MessageRow>()) {
                if let Some(r) = row.row() {
                    self.cursor.replace(Some(r));
                }
                self.obj().bring_into_view(row);
            }
        }
    }

    impl ScrollableImpl for MessageList {}
}

glib::wrapper! {
    pub struct MessageList(ObjectSubclass<imp::MessageList>)
        @extends gtk::Widget,
        @implements gtk::Buildable, gtk::ConstraintTarget, gtk::Scrollable;
}

impl Default for MessageList {
    fn default() -> Self {
        glib::Object::new()
    }
}

impl MessageList {
    /// Shows the rows of `model` (a list of `RowObject`s), from its end.
    pub fn set_model(&self, model: Option<&impl IsA<gio::ListModel>>) {
        let imp = self.imp();
        if let (Some(old), Some(id)) = (imp.model.take(), imp.model_handler.take()) {
            old.disconnect(id);
        }
        self.release_all();
        imp.cursor.replace(None);
        imp.page_rows.borrow_mut().clear();
        let model = model.map(|m| m.as_ref().clone());
        {
            let mut heights = imp.heights.borrow_mut();
            let n = heights.len();
            heights.splice(0, n, []);
        }
        if let Some(model) = &model {
            let id = model.connect_items_changed(glib::clone!(
                #[weak(rename_to = list)]
                self,
                move |model, position, removed, added| list.items_changed(model, position, removed, added)
            ));
            imp.model_handler.replace(Some(id));
            self.items_changed(model, 0, 0, model.n_items());
        }
        imp.model.replace(model);
        imp.anchor.set((0, 0));
        self.queue_resize();
    }

    pub fn model(&self) -> Option<gio::ListModel> {
        self.imp().model.borrow().clone()
    }

    pub fn n_items(&self) -> u32 {
        self.model().map_or(0, |m| m.n_items())
    }

    fn item(&self, i: usize) -> Option<RowObject> {
        let model = self.imp().model.borrow();
        model.as_ref()?.item(u32::try_from(i).ok()?).and_downcast()
    }

    fn items_changed(&self, model: &gio::ListModel, position: u32, removed: u32, added: u32) {
        let imp = self.imp();
        let width = imp.size.get().0;
        let metrics = self.metrics();
        let estimates: Vec<i32> = (position..position + added)
            .map(|i| {
                model
                    .item(i)
                    .and_downcast::<RowObject>()
                    .map_or(PART_ESTIMATE, |r| estimate(&r, width, metrics))
            })
            .collect();
        let (position, removed, added) = (position as usize, removed as usize, added as usize);
        imp.heights.borrow_mut().splice(position, removed, estimates);
        // Rows gone are let go at the next layout; all of them at once now
        // (a new conversation), while the list may be off screen.
        if model.n_items() == 0 {
            self.release_all();
            imp.page_rows.borrow_mut().clear();
        }
        // The anchor stays on its row.
        let (index, offset) = imp.anchor.get();
        if index >= position + removed {
            imp.anchor.set((index + added - removed, offset));
        } else if index >= position {
            imp.anchor.set((position, 0));
        }
        self.invalidate();
    }

    /// The rows are to be laid out again: bound and measured in the next
    /// frame's update phase, then allocated.
    fn invalidate(&self) {
        let imp = self.imp();
        imp.dirty.set(true);
        match self.frame_clock() {
            Some(clock) => clock.request_phase(gtk::gdk::FrameClockPhase::UPDATE),
            None => self.queue_allocate(),
        }
    }

    /// The update phase: binds and measures what the next allocation needs.
    fn prepare(&self) {
        let imp = self.imp();
        let (width, page) = imp.size.get();
        if !imp.dirty.get() || width <= 0 {
            if imp.dirty.get() {
                self.queue_allocate();
            }
            return;
        }
        self.layout(width, page, false);
        self.queue_allocate();
    }

    /// The font's character width and line height, measured once.
    fn metrics(&self) -> Metrics {
        let imp = self.imp();
        if let Some(m) = imp.metrics.get() {
            return m;
        }
        let metrics = self.pango_context().metrics(None, None);
        let scale = f64::from(gtk::pango::SCALE);
        let m = Metrics {
            char_width: (f64::from(metrics.approximate_char_width()) / scale).max(1.0),
            line_height: (f64::from(metrics.ascent() + metrics.descent()) / scale).max(1.0),
        };
        imp.metrics.set(Some(m));
        m
    }

    /// The user (or a key, or a screen reader) moved the page.
    fn scrolled_to(&self, value: f64) {
        let imp = self.imp();
        let anchor = imp.heights.borrow_mut().row_at(value.round() as i64);
        imp.anchor.set(anchor);
        self.invalidate();
    }

    /// A bound row changed: it is drawn again when next laid out.
    pub fn row_changed(&self) {
        self.invalidate();
    }

    /// The widget showing row `i`, bound to it now if none is, and drawn
    /// again if its row changed.
    fn widget_for(&self, i: usize) -> Option<MessageRow> {
        let imp = self.imp();
        let row = self.item(i)?;
        let bound = imp.bound.borrow().get(&row).cloned();
        if let Some(w) = bound {
            w.refresh();
            return Some(w);
        }
        let widget = imp.spare.borrow_mut().pop().unwrap_or_else(|| {
            let w = MessageRow::new();
            w.set_parent(self);
            let list = self.downgrade();
            w.set_on_changed(move || {
                if let Some(list) = list.upgrade() {
                    list.row_changed();
                }
            });
            w
        });
        widget.set_child_visible(true);
        widget.bind(&row, &imp.agent_title.borrow());
        imp.bound.borrow_mut().insert(row, widget.clone());
        Some(widget)
    }

    /// Binds row `i` and measures it at `width`; its height from now on.
    fn measure_row(&self, i: usize, width: i32) -> i32 {
        let Some(widget) = self.widget_for(i) else {
            return 0;
        };
        // (GTK measures the width first, itself.)
        let (_, natural, _, _) = widget.measure(gtk::Orientation::Vertical, width);
        self.imp().heights.borrow_mut().set(i, natural);
        natural
    }

    /// Binds, measures and places the rows of the page; allocates them
    /// too with `allocate`. Done first in the frame's update phase
    /// (`prepare`), where binding a row, letting one go or moving the
    /// adjustment may queue resizes; the allocation that follows then
    /// finds it all done. A resize queued during the allocation itself is
    /// lost to GTK 4.8 for that frame: the window drew without the
    /// conversation ("Trying to snapshot GtkStack without a current
    /// allocation").
    fn layout(&self, width: i32, page: i32, allocate: bool) {
        let imp = self.imp();
        imp.dirty.set(false);
        imp.size.set((width, page));
        let n = imp.heights.borrow().len();
        // The focused row, drawn again if it changed, before the rows are
        // placed by their heights: it stays bound even off the page.
        if let Some((_, i)) = self.focused_row() {
            self.measure_row(i, width);
        }
        // At another width, heights measured at the old one stand as
        // estimates until their rows are on the page again.
        let page = i64::from(page.max(0));
        let value = self.page_start(width, page);
        let rows = self.page_rows(value, width, page);
        let total = imp.heights.borrow_mut().total();
        if !imp.follow_end.get() {
            let anchor = imp.heights.borrow_mut().row_at(value);
            imp.anchor.set(anchor);
        }
        self.configure_adjustment(value, total, page);
        // Rows within a page above and below are bound ahead, in idle time
        // (`bind_ahead`), so that scrolling finds them drawn; kept, not
        // shown, until they come on the page.
        let mut near: HashMap<RowObject, usize> = HashMap::new();
        if n > 0 {
            let mut heights = imp.heights.borrow_mut();
            let from = heights.row_at(value - page).0;
            let to = heights.row_at(value + 2 * page).0;
            drop(heights);
            let below = rows.last().map_or(0, |r| r.index + 1);
            imp.ahead.set((from, to, below));
            near.extend((from..=to).filter_map(|i| Some((self.item(i)?, i))));
        }
        let mut placed: HashMap<RowObject, Placed> = HashMap::new();
        for row in &rows {
            if let Some(r) = self.item(row.index) {
                placed.insert(r, *row);
            }
        }
        // The focused row is kept bound where it is, even off the page.
        if let Some((r, i)) = self.focused_row() {
            // One borrow at a time: a temporary's lives to the statement's end.
            let top = imp.heights.borrow_mut().start(i) - value;
            let height = imp.heights.borrow().get(i);
            placed.entry(r).or_insert(Placed {
                index: i,
                top,
                height,
            });
        }
        self.place(&placed, &near, width, allocate);
        let all_near_bound = near.keys().all(|r| imp.bound.borrow().contains_key(r));
        if !all_near_bound && !imp.follow_end.get() {
            self.schedule_ahead();
        }
        imp.page_rows.replace(rows);
    }

    /// Where the page begins (the adjustment's value), after measuring the
    /// rows it takes to know: from the anchor down, or from the end up.
    fn page_start(&self, width: i32, page: i64) -> i64 {
        let imp = self.imp();
        let n = imp.heights.borrow().len();
        if n == 0 {
            return 0;
        }
        let from_end = |list: &Self, mut missing: i64, mut above: usize| {
            while above > 0 && missing > 0 {
                above -= 1;
                missing -= i64::from(list.measure_row(above, width));
            }
            (imp.heights.borrow_mut().total() - page).max(0)
        };
        if imp.follow_end.get() {
            return from_end(self, page, n);
        }
        let (index, offset) = imp.anchor.get();
        let index = index.min(n - 1);
        let mut y = -offset;
        let mut i = index;
        while i < n && y < page {
            y += i64::from(self.measure_row(i, width));
            i += 1;
        }
        if y < page {
            // The end came before the page was full: the rows above fill
            // it, and the end is where it stays.
            return from_end(self, page - y, index);
        }
        imp.heights.borrow_mut().start(index) + offset
    }

    /// The rows of the page that begins at `value`, each measured (cheap
    /// when it did not change).
    fn page_rows(&self, value: i64, width: i32, page: i64) -> Vec<Placed> {
        let imp = self.imp();
        let n = imp.heights.borrow().len();
        let mut rows = Vec::new();
        if n == 0 {
            return rows;
        }
        let (mut index, _) = imp.heights.borrow_mut().row_at(value);
        let mut top = imp.heights.borrow_mut().start(index) - value;
        while index < n && top < page {
            let height = self.measure_row(index, width);
            rows.push(Placed { index, top, height });
            top += i64::from(height);
            index += 1;
        }
        rows
    }

    /// The row that holds the keyboard focus, with its index.
    fn focused_row(&self) -> Option<(RowObject, usize)> {
        let imp = self.imp();
        let row = imp.cursor.borrow().clone()?;
        let focused = imp
            .bound
            .borrow()
            .get(&row)
            .is_some_and(|w| w.has_focus() || w.focus_child().is_some());
        if !focused {
            return None;
        }
        let i = self.index_of(&row)?;
        Some((row, i))
    }

    /// Lets go of the widgets of rows neither `placed` nor `near`, puts the
    /// others in the order of their rows (the order a screen reader reads)
    /// and allocates the placed ones; the near ones wait, not shown.
    fn place(
        &self,
        placed: &HashMap<RowObject, Placed>,
        near: &HashMap<RowObject, usize>,
        width: i32,
        allocate: bool,
    ) {
        let imp = self.imp();
        let mut released = Vec::new();
        imp.bound.borrow_mut().retain(|row, widget| {
            let keep = placed.contains_key(row) || near.contains_key(row);
            if !keep {
                released.push(widget.clone());
            }
            keep
        });
        for widget in released {
            self.release(widget);
        }
        let mut widgets: Vec<(usize, Option<Placed>, MessageRow)> = imp
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
            self.put_in_order(widgets.into_iter().map(|w| w.2));
            return;
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
            imp.order.replace(order);
            self.schedule_reorder();
        }
    }

    /// Puts the children in the order of their rows, after the layout:
    /// moving a child queues a resize, which during the layout left the
    /// window's conversation stack unallocated for the frame's drawing
    /// ("Trying to snapshot GtkStack without a current allocation").
    fn schedule_reorder(&self) {
        self.once_in_idle(
            |imp| &imp.reorder_pending,
            |list| {
                let order = list.imp().order.take();
                list.put_in_order(order);
            },
        );
    }

    /// Moves the children that need it so that `order` is theirs.
    fn put_in_order(&self, order: impl IntoIterator<Item = MessageRow>) {
        let mut previous: Option<gtk::Widget> = None;
        for widget in order {
            // One let go since is not moved.
            if widget.parent().as_ref() != Some(self.upcast_ref()) || widget.row().is_none() {
                continue;
            }
            if prev_bound_sibling(&widget) != previous {
                widget.insert_after(self, previous.as_ref());
            }
            previous = Some(widget.upcast());
        }
    }

    fn schedule_ahead(&self) {
        let imp = self.imp();
        if imp.ahead_source.borrow().is_some() {
            return;
        }
        let weak = self.downgrade();
        let id = glib::idle_add_local(move || {
            let Some(list) = weak.upgrade() else {
                return glib::ControlFlow::Break;
            };
            if list.bind_ahead() {
                glib::ControlFlow::Continue
            } else {
                list.imp().ahead_source.take();
                glib::ControlFlow::Break
            }
        });
        imp.ahead_source.replace(Some(id));
    }

    /// Binds and measures rows near the page that are not bound yet, those
    /// below it first, for at most a few milliseconds; whether some are
    /// left.
    fn bind_ahead(&self) -> bool {
        let imp = self.imp();
        let started = std::time::Instant::now();
        let (lo, hi, below) = imp.ahead.get();
        let n = imp.heights.borrow().len();
        let width = imp.size.get().0;
        if n == 0 || width <= 0 {
            return false;
        }
        let hi = hi.min(n - 1);
        let below = below.min(hi + 1);
        for i in (below..=hi).chain((lo.min(below)..below).rev()) {
            let Some(row) = self.item(i) else { continue };
            if imp.bound.borrow().contains_key(&row) {
                continue;
            }
            if started.elapsed() > std::time::Duration::from_millis(3) {
                return true;
            }
            if let Some(widget) = self.widget_for(i) {
                widget.set_child_visible(false);
                let (_, natural, _, _) = widget.measure(gtk::Orientation::Vertical, width);
                imp.heights.borrow_mut().set(i, natural);
            }
        }
        false
    }

    fn configure_adjustment(&self, value: i64, total: i64, page: i64) {
        let imp = self.imp();
        let Some(adj) = imp.vadjustment.borrow().clone() else {
            return;
        };
        let page = page as f64;
        let upper = (total as f64).max(page);
        let same = |a: f64, b: f64| (a - b).abs() < 0.5;
        if same(adj.value(), value as f64) && same(adj.upper(), upper) && same(adj.page_size(), page) {
            // Configuring it anyway would have its watchers queue resizes.
            return;
        }
        let handler = imp.value_handler.borrow();
        if let Some(id) = handler.as_ref() {
            adj.block_signal(id);
        }
        adj.configure(value as f64, 0.0, upper, page * 0.1, page * 0.9, page);
        if let Some(id) = handler.as_ref() {
            adj.unblock_signal(id);
        }
    }

    /// A widget no row needs any longer: kept for the next, within reason.
    fn release(&self, widget: MessageRow) {
        widget.unbind();
        self.schedule_clear();
        let mut spare = self.imp().spare.borrow_mut();
        if spare.len() < 16 {
            widget.set_child_visible(false);
            spare.push(widget);
        } else {
            widget.unparent();
        }
    }

    /// Empties the spare rows after the layout, in an idle between
    /// frames (emptying one queues a resize, see `layout`). Emptying them
    /// within the frame instead, in its update phase or when a spare is
    /// bound again, made frames of a fast flick longer (BENCHMARKS.md).
    fn schedule_clear(&self) {
        self.once_in_idle(
            |imp| &imp.clear_pending,
            |list| {
                for w in list.imp().spare.borrow().iter() {
                    w.clear();
                }
            },
        );
    }

    /// Runs `f` in the next idle, once however often it is asked for
    /// before then; `pending` is the flag that says it is asked for.
    fn once_in_idle(&self, pending: fn(&imp::MessageList) -> &Cell<bool>, f: impl FnOnce(&Self) + 'static) {
        if pending(self.imp()).replace(true) {
            return;
        }
        let weak = self.downgrade();
        glib::idle_add_local_once(move || {
            if let Some(list) = weak.upgrade() {
                pending(list.imp()).set(false);
                f(&list);
            }
        });
    }

    fn release_all(&self) {
        let bound: Vec<MessageRow> = self.imp().bound.borrow_mut().drain().map(|(_, w)| w).collect();
        for w in bound {
            self.release(w);
        }
    }

    /// Where `row` is in the model: looked for on the page first.
    fn index_of(&self, row: &RowObject) -> Option<usize> {
        let imp = self.imp();
        let on_page = imp
            .page_rows
            .borrow()
            .iter()
            .map(|p| p.index)
            .find(|&i| self.item(i).as_ref() == Some(row));
        on_page.or_else(|| (0..imp.heights.borrow().len()).find(|&i| self.item(i).as_ref() == Some(row)))
    }

    /// Shows row `index` at the top of the page; stops following the end.
    pub fn scroll_to_row(&self, index: usize) {
        let imp = self.imp();
        self.set_follow_end(false);
        imp.anchor.set((index, 0));
        self.invalidate();
    }

    /// Scrolls so that all of `widget`'s row is on the page (its top, if
    /// it is taller than the page).
    fn bring_into_view(&self, widget: &MessageRow) {
        let imp = self.imp();
        let Some(row) = widget.row() else { return };
        let Some(i) = self.index_of(&row) else { return };
        let page = i64::from(self.height());
        let (value, start, h) = {
            let mut heights = imp.heights.borrow_mut();
            let value = match imp.follow_end.get() {
                true => (heights.total() - page).max(0),
                false => {
                    let (a, off) = imp.anchor.get();
                    heights.start(a) + off
                }
            };
            (value, heights.start(i), i64::from(heights.get(i)))
        };
        let target = if start < value || h >= page {
            start
        } else if start + h > value + page {
            start + h - page
        } else {
            return;
        };
        if i + 1 < imp.heights.borrow().len() || start < value {
            self.set_follow_end(false);
        }
        let anchor = imp.heights.borrow_mut().row_at(target);
        imp.anchor.set(anchor);
        self.invalidate();
    }

    /// Keyboard focus within the list (see the module's comment).
    fn move_focus(&self, direction: gtk::DirectionType) -> bool {
        use gtk::DirectionType as D;
        let imp = self.imp();
        let inside = self.focus_child().and_downcast::<MessageRow>();
        match (direction, inside) {
            (D::TabForward | D::TabBackward, Some(row)) => row.child_focus(direction),
            (D::TabForward | D::TabBackward, None) => {
                // Into the list: the row last focused, if still shown, or
                // the first row of the page.
                let cursor = imp.cursor.borrow().clone();
                let widget = cursor
                    .and_then(|r| imp.bound.borrow().get(&r).cloned())
                    .filter(|w| self.on_page(w))
                    .or_else(|| {
                        let rows = imp.page_rows.borrow();
                        let visible = rows
                            .iter()
                            .filter(|p| p.top + i64::from(p.height) > 0 && p.top < i64::from(self.height()))
                            .map(|p| p.index);
                        // The first, either way, as a list view does.
                        let i = visible.min()?;
                        let row = self.item(i)?;
                        imp.bound.borrow().get(&row).cloned()
                    });
                widget.is_some_and(|w| w.grab_focus())
            }
            (D::Up | D::Down, Some(row)) => {
                let Some(i) = row.row().and_then(|r| self.index_of(&r)) else {
                    return false;
                };
                let n = imp.heights.borrow().len();
                let target = match direction {
                    D::Up => i.checked_sub(1),
                    _ => Some(i + 1).filter(|&t| t < n),
                };
                let Some(target) = target else {
                    // At either end the focus stays.
                    self.error_bell();
                    return true;
                };
                let width = imp.size.get().0.max(1);
                self.measure_row(target, width);
                match self.widget_for(target) {
                    Some(w) => {
                        w.grab_focus();
                        true
                    }
                    None => false,
                }
            }
            (D::Up | D::Down, None) => self.move_focus(gtk::DirectionType::TabForward),
            _ => false,
        }
    }

    /// Whether `widget` is allocated within the page.
    fn on_page(&self, widget: &MessageRow) -> bool {
        widget.is_child_visible()
            && widget
                .compute_bounds(self)
                .is_some_and(|b| b.height() > 0.0 && b.y() + b.height() > 0.0 && b.y() < self.height() as f32)
    }

    /// The widgets bound to rows, by row (the page's and the focused one).
    pub fn bound_rows(&self) -> Vec<(RowObject, MessageRow)> {
        self.imp()
            .bound
            .borrow()
            .iter()
            .map(|(r, w)| (r.clone(), w.clone()))
            .collect()
    }

    /// Whether the last row is laid out on the page.
    pub fn last_row_shown(&self) -> bool {
        let n = self.imp().heights.borrow().len();
        if n == 0 || !self.is_mapped() {
            return false;
        }
        let Some(last) = self.item(n - 1) else {
            return false;
        };
        let widget = self.imp().bound.borrow().get(&last).cloned();
        widget.is_some_and(|w| self.on_page(&w))
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

/// About the height of `row` at `width`, before it is drawn.
fn estimate(row: &RowObject, width: i32, m: Metrics) -> i32 {
    let stamp = row.stamp();
    let mut h = ROW_PADDING;
    if stamp.first {
        h += ROLE_LINE;
    }
    if stamp.last {
        h += ROW_PADDING;
    }
    let width = if width > 0 { width } else { 600 };
    // The row's padding and the bubble's (style.css) are outside the text.
    let per_line = ((f64::from(width) - 36.0) / m.char_width).max(20.0);
    let body = row
        .message()
        .and_then(|message| {
            message.with(|msg| match row.kind() {
                RowKind::Empty => 0,
                RowKind::Text { part, start, end } => match msg.parts.get(part) {
                    Some(Part::Text { text }) => {
                        let slice = match end {
                            Some(end) => text.get(start..end),
                            None => text.get(start..),
                        };
                        estimate_lines(slice.unwrap_or_default(), per_line, m.line_height)
                    }
                    _ => 0,
                },
                RowKind::Part(i) => match msg.parts.get(i) {
                    Some(Part::Text { text }) => estimate_lines(text, per_line, m.line_height) + 16,
                    _ => PART_ESTIMATE,
                },
            })
        })
        .unwrap_or(0);
    h + body
}

#[cfg(test)]
mod tests {
    use super::Heights;

    #[test]
    fn heights_place_rows_and_find_them() {
        let mut h = Heights::default();
        h.splice(0, 0, [10, 20, 30]);
        assert_eq!(h.total(), 60);
        assert_eq!(h.start(2), 30);
        assert_eq!(h.row_at(0), (0, 0));
        assert_eq!(h.row_at(29), (1, 19));
        assert_eq!(h.row_at(30), (2, 0));
        assert_eq!(h.row_at(1000), (2, 29));
        // A measure before the end moves what follows, not what precedes.
        h.set(1, 5);
        assert_eq!(h.start(1), 10);
        assert_eq!(h.start(2), 15);
        // Rows inserted in the middle and removed at the start.
        h.splice(1, 0, [100]);
        assert_eq!(h.total(), 145);
        h.splice(0, 2, []);
        assert_eq!((h.len(), h.total()), (2, 35));
        assert_eq!(h.row_at(4), (0, 4));
        h.splice(0, 2, []);
        assert!(h.is_empty());
        assert_eq!(h.row_at(10), (0, 0));
        assert_eq!(h.total(), 0);
    }
}
