//! The conversation's own virtualised list of rows (`RowObject`s, shown by
//! `MessageRow`s).
//!
//! GTK 4.8's list view keeps up to 200 rows bound around the one it is
//! anchored to and binds them again while scrolling; with long rows (code,
//! tool cards, diffs) that was most of a frame (docs/benchmarks-history.md). This list
//! binds, measures and lays out only the rows on the page, plus the one
//! with the keyboard focus, and binds rows a page above and below in idle
//! time. It knows every other row by its height: as measured when it was
//! last on the page at this width, or estimated from its text until then
//! (`heights`, `estimate`). Rows are bound in the frame's update phase and
//! only placed in the allocation (`layout`; which rows sit where is
//! `placement`'s arithmetic).
//!
//! It scrolls by an anchor, the row at the top of the page and how far into
//! it the page begins, not by a pixel offset: a row above the page that
//! turns out taller than estimated moves the scrollbar, never what is
//! shown. With `follow-end` the anchor is the end instead, which is how a
//! stream is followed (`anchor`).
//!
//! For screen readers it is a list whose items are the rows on the page,
//! one Tab stop, the arrow keys moving the focus from row to row (`focus`).
//!
//! This module holds the widget; its parts work on it through `ListWidget`
//! (`state`), and do not import it.

use std::cell::{Cell, Ref, RefCell};

use gtk::prelude::*;
use gtk::subclass::prelude::*;
use gtk::{gio, glib};

use crate::ui::models::{RowObject, SubagentThreads, TerminalOutputs};
use crate::ui::widgets::message_row::MessageRow;

mod anchor;
mod estimate;
mod focus;
mod heights;
mod layout;
mod placement;
mod row_widgets;
mod state;

use estimate::{estimate, Metrics, PART_ESTIMATE};
use state::{ListWidget, State};

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
        pub state: State,
        pub model_handler: RefCell<Option<glib::SignalHandlerId>>,
        pub value_handler: RefCell<Option<glib::SignalHandlerId>>,
        pub ahead_source: RefCell<Option<glib::SourceId>>,
        /// The children wait to be put in the order of their rows.
        pub reorder_pending: Cell<bool>,
        /// Spare rows wait to be emptied.
        pub clear_pending: Cell<bool>,
        pub update_handler: RefCell<Option<(gtk::gdk::FrameClock, glib::SignalHandlerId)>>,
        /// What the terminals of the tool calls printed (for the rows).
        pub terminals: RefCell<TerminalOutputs>,
        /// The conversation's helpers (a `subagent` part shows one).
        pub threads: RefCell<SubagentThreads>,
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
                state: State::default(),
                model_handler: RefCell::default(),
                value_handler: RefCell::default(),
                ahead_source: RefCell::default(),
                reorder_pending: Cell::default(),
                clear_pending: Cell::default(),
                update_handler: RefCell::default(),
                terminals: RefCell::default(),
                threads: RefCell::default(),
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
            if let (Some(model), Some(id)) = (self.state.model.take(), self.model_handler.take()) {
                model.disconnect(id);
            }
            if let (Some(adj), Some(id)) = (self.vadjustment.take(), self.value_handler.take()) {
                adj.disconnect(id);
            }
            self.state.widgets.dispose();
        }
    }

    impl WidgetImpl for MessageList {
        fn measure(&self, orientation: gtk::Orientation, _for_size: i32) -> (i32, i32, i32, i32) {
            match orientation {
                gtk::Orientation::Horizontal => {
                    let min = self.state.widgets.min_width();
                    (min, min, -1, -1)
                }
                gtk::Orientation::Vertical => {
                    let total = self.state.heights.borrow_mut().total();
                    (0, total.clamp(0, i64::from(i32::MAX)) as i32, -1, -1)
                }
                _ => (0, 0, -1, -1),
            }
        }

        fn size_allocate(&self, width: i32, height: i32, _baseline: i32) {
            layout::layout(&*self.obj(), width, height, true);
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
            focus::move_focus(&*self.obj(), direction)
        }

        fn grab_focus(&self) -> bool {
            focus::move_focus(&*self.obj(), gtk::DirectionType::TabForward)
        }

        fn set_focus_child(&self, child: Option<&gtk::Widget>) {
            self.parent_set_focus_child(child);
            if let Some(row) = child.and_then(|c| c.downcast_ref::<MessageRow>()) {
                if let Some(r) = row.row() {
                    self.state.cursor.replace(Some(r));
                }
                focus::bring_into_view(&*self.obj(), row);
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
    /// Where the rows' tool cards read what their terminals printed; set
    /// before the rows come (the window has one for every agent).
    pub fn set_terminals(&self, terminals: &TerminalOutputs) {
        self.imp().terminals.replace(terminals.clone());
    }

    /// Where the rows' `subagent` parts find their helpers; set with the
    /// conversation.
    pub fn set_threads(&self, threads: &SubagentThreads) {
        self.imp().threads.replace(threads.clone());
        let widgets: Vec<MessageRow> = std::iter::successors(self.first_child(), |w| w.next_sibling())
            .filter_map(|w| w.downcast::<MessageRow>().ok())
            .collect();
        for w in widgets {
            w.set_threads(threads);
        }
    }

    /// Shows the rows of `model` (a list of `RowObject`s), from its end.
    pub fn set_model(&self, model: Option<&impl IsA<gio::ListModel>>) {
        let imp = self.imp();
        let s = &imp.state;
        if let (Some(old), Some(id)) = (s.model.take(), imp.model_handler.take()) {
            old.disconnect(id);
        }
        self.release_all();
        s.cursor.replace(None);
        s.page_rows.borrow_mut().clear();
        let model = model.map(|m| m.as_ref().clone());
        {
            let mut heights = s.heights.borrow_mut();
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
        s.model.replace(model);
        s.anchor.set((0, 0));
        self.queue_resize();
    }

    pub fn model(&self) -> Option<gio::ListModel> {
        self.imp().state.model.borrow().clone()
    }

    pub fn n_items(&self) -> u32 {
        self.model().map_or(0, |m| m.n_items())
    }

    fn items_changed(&self, model: &gio::ListModel, position: u32, removed: u32, added: u32) {
        let s = &self.imp().state;
        let width = s.size.get().0;
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
        s.heights.borrow_mut().splice(position, removed, estimates);
        // Rows gone are let go at the next layout; all of them at once now
        // (a new conversation), while the list may be off screen.
        if model.n_items() == 0 {
            self.release_all();
            s.page_rows.borrow_mut().clear();
        }
        // The anchor stays on its row.
        s.anchor
            .set(anchor::after_splice(s.anchor.get(), position, removed, added));
        self.invalidate();
    }

    /// The update phase: binds and measures what the next allocation needs.
    fn prepare(&self) {
        let s = &self.imp().state;
        let (width, page) = s.size.get();
        if !s.dirty.get() || width <= 0 {
            if s.dirty.get() {
                self.queue_allocate();
            }
            return;
        }
        layout::layout(self, width, page, false);
        self.queue_allocate();
    }

    /// The font's character width and line height, measured once.
    fn metrics(&self) -> Metrics {
        let s = &self.imp().state;
        if let Some(m) = s.metrics.get() {
            return m;
        }
        let m = Metrics::of(&self.pango_context());
        s.metrics.set(Some(m));
        m
    }

    /// The user (or a key, or a screen reader) moved the page.
    fn scrolled_to(&self, value: f64) {
        let s = &self.imp().state;
        let anchor = s.heights.borrow_mut().row_at(value.round() as i64);
        s.anchor.set(anchor);
        self.invalidate();
    }

    /// A bound row changed: it is drawn again when next laid out.
    pub fn row_changed(&self) {
        self.invalidate();
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
        if self.imp().state.widgets.release_all() {
            self.schedule_clear();
        }
    }

    /// Shows row `index` at the top of the page; stops following the end.
    pub fn scroll_to_row(&self, index: usize) {
        self.set_follow_end(false);
        self.imp().state.anchor.set((index, 0));
        self.invalidate();
    }

    /// The widgets bound to rows, by row (the page's and the focused one).
    pub fn bound_rows(&self) -> Vec<(RowObject, MessageRow)> {
        self.imp().state.widgets.all()
    }

    /// Whether the last row is laid out on the page.
    pub fn last_row_shown(&self) -> bool {
        let s = &self.imp().state;
        let n = s.heights.borrow().len();
        if n == 0 || !self.is_mapped() {
            return false;
        }
        let Some(last) = s.item(n - 1) else {
            return false;
        };
        let widget = s.widgets.get(&last);
        widget.is_some_and(|w| row_widgets::on_page(&w, self.upcast_ref()))
    }
}

impl ListWidget for MessageList {
    fn state(&self) -> &State {
        &self.imp().state
    }

    fn follows_end(&self) -> bool {
        self.imp().follow_end.get()
    }

    fn leave_end(&self) {
        self.set_follow_end(false);
    }

    fn row_title(&self) -> Ref<'_, String> {
        self.imp().agent_title.borrow()
    }

    fn new_row(&self) -> MessageRow {
        let w = MessageRow::new();
        w.set_terminals(&self.imp().terminals.borrow());
        w.set_threads(&self.imp().threads.borrow());
        w.set_parent(self);
        let list = self.downgrade();
        w.set_on_changed(move || {
            if let Some(list) = list.upgrade() {
                list.row_changed();
            }
        });
        w
    }

    fn show_page(&self, value: i64, total: i64, page: i64) {
        let imp = self.imp();
        let Some(adj) = imp.vadjustment.borrow().clone() else {
            return;
        };
        anchor::configure(&adj, imp.value_handler.borrow().as_ref(), value, total, page);
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
            if layout::bind_ahead(&list) {
                glib::ControlFlow::Continue
            } else {
                list.imp().ahead_source.take();
                glib::ControlFlow::Break
            }
        });
        imp.ahead_source.replace(Some(id));
    }

    /// Empties the spare rows after the layout, in an idle between
    /// frames (emptying one queues a resize, see `layout`). Emptying them
    /// within the frame instead, in its update phase or when a spare is
    /// bound again, made frames of a fast flick longer (docs/benchmarks-history.md).
    fn schedule_clear(&self) {
        self.once_in_idle(
            |imp| &imp.clear_pending,
            |list| list.imp().state.widgets.clear_spare(),
        );
    }

    /// Puts the children in the order of their rows, after the layout:
    /// moving a child queues a resize, which during the layout left the
    /// window's conversation stack unallocated for the frame's drawing
    /// ("Trying to snapshot GtkStack without a current allocation").
    fn schedule_reorder(&self) {
        self.once_in_idle(
            |imp| &imp.reorder_pending,
            |list| list.imp().state.widgets.reorder(list.upcast_ref()),
        );
    }
}
