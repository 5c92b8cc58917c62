//! A box whose children flow left to right (right to left in a
//! right-to-left locale) and wrap onto the next line when the width runs
//! out, each at its natural width: the composer's option pickers and the
//! attachments of a message.
//!
//! Not a `GtkFlowBox`: GTK 4.8's flow box puts as many children on a line
//! as fit its *widest* child, and aligns them in columns, so six pickers
//! took six lines at 360 px, and one given its natural width only (start
//! aligned) was measured shorter than it laid itself out. libadwaita's
//! `AdwWrapBox` (1.7) is not in Debian 12. Children are its own: no
//! wrapper between them and the focus chain.

use std::cell::Cell;

use gtk::glib;
use gtk::prelude::*;
use gtk::subclass::prelude::*;

mod imp {
    use super::*;

    pub struct WrapBox {
        pub spacing: Cell<i32>,
    }

    impl Default for WrapBox {
        fn default() -> Self {
            Self {
                spacing: Cell::new(6),
            }
        }
    }

    #[glib::object_subclass]
    impl ObjectSubclass for WrapBox {
        const NAME: &'static str = "ParleyWrapBox";
        type Type = super::WrapBox;
        type ParentType = gtk::Widget;

        fn class_init(klass: &mut Self::Class) {
            klass.set_accessible_role(gtk::AccessibleRole::Group);
        }
    }

    impl ObjectImpl for WrapBox {
        fn dispose(&self) {
            while let Some(child) = self.obj().first_child() {
                child.unparent();
            }
        }
    }

    impl WidgetImpl for WrapBox {
        fn request_mode(&self) -> gtk::SizeRequestMode {
            gtk::SizeRequestMode::HeightForWidth
        }

        fn measure(&self, orientation: gtk::Orientation, for_size: i32) -> (i32, i32, i32, i32) {
            let obj = self.obj();
            let spacing = self.spacing.get();
            let children = super::shown(&obj);
            if orientation == gtk::Orientation::Horizontal {
                // At least its widest child; at best all on one line.
                let mut min = 0;
                let mut nat = 0;
                for (i, c) in children.iter().enumerate() {
                    let (cmin, cnat, _, _) = c.measure(orientation, -1);
                    min = min.max(cmin);
                    nat += cnat + if i > 0 { spacing } else { 0 };
                }
                return (min, nat, -1, -1);
            }
            let height = |width: i32| super::lines(&children, width, spacing).1;
            if for_size >= 0 {
                let h = height(for_size);
                (h, h, -1, -1)
            } else {
                // Unknown width: as tall as at the narrowest (as a flow box
                // says), so a parent that asks so never clips it.
                let (min_w, _, _, _) = self.measure(gtk::Orientation::Horizontal, -1);
                let narrowest = height(min_w);
                (narrowest, narrowest, -1, -1)
            }
        }

        fn size_allocate(&self, width: i32, _height: i32, _baseline: i32) {
            let obj = self.obj();
            let children = super::shown(&obj);
            let rtl = obj.direction() == gtk::TextDirection::Rtl;
            let (placed, _) = super::lines(&children, width, self.spacing.get());
            for (child, (x, y, w, h)) in children.iter().zip(placed) {
                let x = if rtl { width - x - w } else { x };
                child.size_allocate(&gtk::Allocation::new(x, y, w, h), -1);
            }
        }
    }
}

glib::wrapper! {
    pub struct WrapBox(ObjectSubclass<imp::WrapBox>)
        @extends gtk::Widget,
        @implements gtk::Buildable, gtk::ConstraintTarget;
}

impl Default for WrapBox {
    fn default() -> Self {
        glib::Object::new()
    }
}

impl WrapBox {
    pub fn new(spacing: i32) -> Self {
        let this = Self::default();
        this.set_spacing(spacing);
        this
    }

    /// The space between children, across and between lines.
    pub fn set_spacing(&self, spacing: i32) {
        self.imp().spacing.set(spacing.max(0));
        self.queue_resize();
    }

    pub fn append(&self, child: &impl IsA<gtk::Widget>) {
        child.set_parent(self);
    }

    pub fn remove(&self, child: &impl IsA<gtk::Widget>) {
        if child.parent().as_ref() == Some(self.upcast_ref()) {
            child.unparent();
        }
    }
}

/// The children to lay out.
fn shown(w: &WrapBox) -> Vec<gtk::Widget> {
    let mut out = Vec::new();
    let mut child = w.first_child();
    while let Some(c) = child {
        if c.should_layout() {
            out.push(c.clone());
        }
        child = c.next_sibling();
    }
    out
}

/// Where each of `children` goes in `width` (left to right), as (x, y,
/// width, height), and the height of them all: each at its natural width
/// (no wider than `width`), a new line when the next does not fit, each
/// centred in its line's height.
fn lines(children: &[gtk::Widget], width: i32, spacing: i32) -> (Vec<(i32, i32, i32, i32)>, i32) {
    let mut placed = Vec::with_capacity(children.len());
    // The line of each child, and each line's (top, height).
    let mut line_of = Vec::with_capacity(children.len());
    let mut line_tops: Vec<(i32, i32)> = Vec::new();
    let mut x = 0;
    for (i, c) in children.iter().enumerate() {
        let (cmin, cnat, _, _) = c.measure(gtk::Orientation::Horizontal, -1);
        let w = cnat.min(width).max(cmin);
        let (_, h, _, _) = c.measure(gtk::Orientation::Vertical, w);
        match line_tops.last_mut() {
            Some((_, line_h)) if i > 0 && x + w <= width => *line_h = (*line_h).max(h),
            _ => {
                let top = line_tops.last().map(|(t, lh)| t + lh + spacing).unwrap_or(0);
                line_tops.push((top, h));
                x = 0;
            }
        }
        line_of.push(line_tops.len() - 1);
        placed.push((x, w, h));
        x += w + spacing;
    }
    let total = line_tops.last().map(|(t, h)| t + h).unwrap_or(0);
    let rects = placed
        .into_iter()
        .zip(line_of)
        .map(|((x, w, h), line)| {
            let (top, line_h) = line_tops[line];
            (x, top + (line_h - h) / 2, w, h)
        })
        .collect();
    (rects, total)
}
