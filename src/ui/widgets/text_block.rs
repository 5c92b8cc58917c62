//! A block of a message's text (a paragraph of an agent's Markdown, or what
//! the user typed) that lays its text out once per width.
//!
//! GTK 4.8's label lays a wrapping text out three or four times each time
//! it is measured: as one line (its natural width), at its narrowest (its
//! minimum width), at the width it is asked about, and again when
//! allocated. For a row of 1 KB that is 2.5–4 ms, and a stream shows a new
//! page of rows every frame (docs/benchmarks-history.md). A `TextBlock` answers the
//! width from font metrics alone and keeps one Pango layout, so the height
//! at a width and the drawing share one layout: 0.4 of the label's time
//! (`cargo bench --bench window -- text`).
//!
//! Nothing the label does is lost: the first time the pointer moves over the
//! block, or the keyboard focus comes to it, the block puts a real
//! selectable `GtkLabel` in its place (selection, the context menu, links
//! with their tooltips, keyboard focus on links). Only blocks someone
//! touched pay the label's price.

use std::cell::{Cell, RefCell};

use gtk::glib;
use gtk::pango;
use gtk::prelude::*;
use gtk::subclass::prelude::*;

use crate::ui::markdown::Link;

/// Wide enough for a few words: the label's `width-chars` (see
/// `text_label::label`).
const MIN_CHARS: i32 = 20;

thread_local! {
    /// How many times a text block has drawn itself on this thread: the
    /// window bench's proof that a conversation at rest draws nothing.
    static DRAWN: Cell<u64> = const { Cell::new(0) };
}

/// How many times text blocks have drawn themselves so far (GTK keeps a
/// widget's drawing until it asks to draw again).
pub fn drawn() -> u64 {
    DRAWN.with(Cell::get)
}

mod imp {
    use super::*;

    #[derive(Default)]
    pub struct TextBlock {
        /// The markup as a `GtkLabel` takes it, links as `<a>`.
        pub markup: RefCell<String>,
        pub links: RefCell<Vec<Link>>,
        /// The text without markup, for screen readers and tests.
        pub text: RefCell<String>,
        pub layout: RefCell<Option<pango::Layout>>,
        /// The Pango context's serial the layout was made for: a change of
        /// font or scale changes it.
        pub serial: Cell<u32>,
        /// The width of a character, and the serial it was measured at.
        pub char_width: Cell<(u32, i32)>,
        /// The text's attributes, and the link colour they were made with
        /// (the layout's, once there is one).
        pub parsed: RefCell<Option<(gtk::gdk::RGBA, pango::AttrList)>>,
        /// The label taking the block's place once it is interacted with.
        pub label: RefCell<Option<gtk::Label>>,
    }

    #[glib::object_subclass]
    impl ObjectSubclass for TextBlock {
        const NAME: &'static str = "ParleyTextBlock";
        type Type = super::TextBlock;
        type ParentType = gtk::Widget;

        fn class_init(klass: &mut Self::Class) {
            // Styled as a label, so the swap to a real one does not show.
            klass.set_css_name("label");
            klass.set_accessible_role(gtk::AccessibleRole::Label);
        }
    }

    impl ObjectImpl for TextBlock {
        fn constructed(&self) {
            self.parent_constructed();
            let obj = self.obj();
            let motion = gtk::EventControllerMotion::new();
            // Motion as well as entering: the text may have scrolled under
            // a pointer that did not move.
            motion.connect_enter(glib::clone!(
                #[weak]
                obj,
                move |_, _, _| {
                    obj.label();
                }
            ));
            motion.connect_motion(glib::clone!(
                #[weak]
                obj,
                move |_, _, _| {
                    obj.label();
                }
            ));
            obj.add_controller(motion);
        }

        fn dispose(&self) {
            if let Some(label) = self.label.take() {
                label.unparent();
            }
        }
    }

    impl WidgetImpl for TextBlock {
        fn request_mode(&self) -> gtk::SizeRequestMode {
            gtk::SizeRequestMode::HeightForWidth
        }

        fn measure(&self, orientation: gtk::Orientation, for_size: i32) -> (i32, i32, i32, i32) {
            if let Some(label) = self.label.borrow().as_ref() {
                return label.measure(orientation, for_size);
            }
            let obj = self.obj();
            match orientation {
                gtk::Orientation::Horizontal => {
                    let char_width = self.char_width();
                    let min = char_width * MIN_CHARS;
                    // The natural width only needs to be wide enough: a
                    // message's parts fill the row's width.
                    let longest = self
                        .text
                        .borrow()
                        .lines()
                        .map(|l| l.chars().count())
                        .max()
                        .unwrap_or(0);
                    let natural = (longest as i64 * char_width as i64).clamp(min as i64, 1 << 20) as i32;
                    (min, natural, -1, -1)
                }
                gtk::Orientation::Vertical => {
                    let layout = obj.layout();
                    if for_size >= 0 {
                        set_width(&layout, for_size);
                    } else if layout.width() < 0 {
                        set_width(&layout, self.char_width() * MIN_CHARS);
                    }
                    let height = layout.pixel_size().1;
                    (height, height, -1, -1)
                }
                _ => (0, 0, -1, -1),
            }
        }

        fn size_allocate(&self, width: i32, height: i32, baseline: i32) {
            if let Some(label) = self.label.borrow().as_ref() {
                label.allocate(width, height, baseline, None);
                return;
            }
            set_width(&self.obj().layout(), width);
        }

        fn snapshot(&self, snapshot: &gtk::Snapshot) {
            DRAWN.with(|d| d.set(d.get() + 1));
            let obj = self.obj();
            if let Some(label) = self.label.borrow().as_ref() {
                obj.snapshot_child(label, snapshot);
                return;
            }
            let layout = obj.layout();
            set_width(&layout, obj.width());
            // Placed as a label places its text (`xalign` 0, the start):
            // its lines' extent starts at the start edge even where Pango
            // aligns a line the other way (text of the other direction).
            let (_, mut logical) = layout.extents();
            pango::extents_to_pixels(Some(&mut logical), None);
            let x = if obj.direction() == gtk::TextDirection::Rtl {
                obj.width() - logical.width() - logical.x()
            } else {
                -logical.x()
            };
            // Drawn as a label draws its text: the CSS colour and shadows.
            #[allow(deprecated)]
            snapshot.render_layout(&obj.style_context(), f64::from(x), 0.0, &layout);
        }

        fn focus(&self, direction: gtk::DirectionType) -> bool {
            // Not while hidden: a closed expander keeps its child (GTK 4.8
            // still offers it the focus), and a label that is not shown
            // says it took the focus without taking it, so Tab stayed on
            // the expander for good.
            if !self.obj().is_mapped() {
                return false;
            }
            self.obj().label().child_focus(direction)
        }

        fn grab_focus(&self) -> bool {
            self.obj().label().grab_focus()
        }
    }

    impl TextBlock {
        /// The width of a character in this font, as GtkLabel reckons it.
        fn char_width(&self) -> i32 {
            let context = self.obj().pango_context();
            let (serial, width) = self.char_width.get();
            if serial == context.serial() && width > 0 {
                return width;
            }
            let width = shared_char_width(&context);
            self.char_width.set((context.serial(), width));
            width
        }
    }

    /// A font's character width, measured once per font and resolution:
    /// each widget has a Pango context of its own, and asking one for its
    /// metrics loads the font set again (a streamed page makes a dozen
    /// blocks a frame).
    fn shared_char_width(context: &pango::Context) -> i32 {
        thread_local! {
            static WIDTHS: RefCell<Vec<(Option<pango::FontDescription>, u32, i32)>> = const { RefCell::new(Vec::new()) };
        }
        let font = context.font_description();
        let dpi = gtk::Settings::default().map_or(0, |s| s.gtk_xft_dpi() as u32);
        let known = WIDTHS.with(|w| {
            w.borrow()
                .iter()
                .find(|(f, d, _)| *f == font && *d == dpi)
                .map(|(_, _, width)| *width)
        });
        if let Some(width) = known {
            return width;
        }
        let metrics = context.metrics(None, None);
        let width = metrics
            .approximate_char_width()
            .max(metrics.approximate_digit_width());
        let width = ((width + pango::SCALE - 1) / pango::SCALE).max(1);
        WIDTHS.with(|w| w.borrow_mut().push((font, dpi, width)));
        width
    }
}

glib::wrapper! {
    pub struct TextBlock(ObjectSubclass<imp::TextBlock>)
        @extends gtk::Widget,
        @implements gtk::Buildable, gtk::ConstraintTarget;
}

fn set_width(layout: &pango::Layout, width: i32) {
    let width = width.max(1) * pango::SCALE;
    // Setting the same width keeps Pango's lines; another lays out again.
    if layout.width() != width {
        layout.set_width(width);
    }
}

/// `markup` with its links (`<a href=… title=…>`, as `markdown::render`
/// writes them) drawn as underlined text of `color`: Pango's markup has no
/// links of its own.
fn pango_markup(markup: &str, color: &gtk::gdk::RGBA) -> String {
    let span = format!(
        "<span underline=\"single\" foreground=\"#{:02x}{:02x}{:02x}\">",
        (color.red() * 255.0).round() as u8,
        (color.green() * 255.0).round() as u8,
        (color.blue() * 255.0).round() as u8
    );
    let mut out = String::with_capacity(markup.len());
    let mut rest = markup;
    // Text is escaped (`markdown::escape`): every `<` opens a tag, and a
    // tag's attribute values hold no `>`.
    while let Some(at) = rest.find('<') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let end = rest.find('>').map_or(rest.len(), |e| e + 1);
        let tag = &rest[..end];
        if tag.starts_with("<a ") || tag == "<a>" {
            out.push_str(&span);
        } else if tag == "</a>" {
            out.push_str("</span>");
        } else {
            out.push_str(tag);
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

impl TextBlock {
    /// A block showing `markup` (Pango markup with `<a>` links, as a
    /// `GtkLabel` takes it), whose links are `links`.
    pub fn new(markup: &str, links: Vec<Link>) -> Self {
        let obj: Self = glib::Object::new();
        let imp = obj.imp();
        imp.markup.replace(markup.to_owned());
        imp.links.replace(links);
        // Parsed once, with the link colour of now; parsed again only if
        // that colour is not the one drawn with (a change of style).
        let color = obj.link_color();
        let (attrs, text) = parse(markup, &color);
        crate::ui::a11y::set_label(&obj, &text);
        imp.text.replace(text);
        imp.parsed.replace(Some((color, attrs)));
        obj
    }

    /// Shows `markup` instead (as a code block does when the style
    /// changes); its links stay.
    pub fn set_markup(&self, markup: &str) {
        let imp = self.imp();
        if *imp.markup.borrow() == markup {
            return;
        }
        imp.markup.replace(markup.to_owned());
        let color = self.link_color();
        let (attrs, text) = parse(markup, &color);
        imp.text.replace(text);
        let label = imp.label.borrow().clone();
        match label {
            Some(label) => label.set_markup(markup),
            None => {
                crate::ui::a11y::set_label(self, &imp.text.borrow());
                imp.parsed.replace(Some((color, attrs)));
                imp.layout.replace(None);
            }
        }
        self.queue_resize();
    }

    /// The text shown, without markup.
    pub fn text(&self) -> String {
        self.imp().text.borrow().clone()
    }

    /// The markup shown, with its links, as the label takes it.
    pub fn markup(&self) -> String {
        self.imp().markup.borrow().clone()
    }

    /// Whether a real label has taken the block's place.
    pub fn has_label(&self) -> bool {
        self.imp().label.borrow().is_some()
    }

    /// The selectable label that takes the block's place, made the first
    /// time it is asked for (as the pointer or the focus comes).
    pub fn label(&self) -> gtk::Label {
        let imp = self.imp();
        if let Some(label) = imp.label.borrow().as_ref() {
            return label.clone();
        }
        let label = super::text_label::markdown_label(&imp.markup.borrow(), imp.links.borrow().clone());
        label.set_parent(self);
        // The label speaks for the text from now on.
        crate::ui::a11y::set_label(self, "");
        imp.label.replace(Some(label.clone()));
        imp.layout.replace(None);
        imp.parsed.replace(None);
        self.queue_resize();
        label
    }

    /// The colour of links in the current style. A block without links
    /// does not ask: a lookup walks the style's cascade, and a streamed
    /// page makes a dozen blocks each frame.
    fn link_color(&self) -> gtk::gdk::RGBA {
        let fallback = gtk::gdk::RGBA::new(0.11, 0.44, 0.85, 1.0);
        if !self.imp().markup.borrow().contains("<a ") {
            return fallback;
        }
        #[allow(deprecated)]
        self.style_context()
            .lookup_color("accent_color")
            .unwrap_or(fallback)
    }

    /// The text's attributes for links of `color`.
    fn attributes(&self, color: &gtk::gdk::RGBA) -> pango::AttrList {
        let imp = self.imp();
        if let Some((parsed, attrs)) = imp.parsed.borrow().as_ref() {
            if parsed == color {
                return attrs.clone();
            }
        }
        let (attrs, _) = parse(&imp.markup.borrow(), color);
        imp.parsed.replace(Some((*color, attrs.clone())));
        attrs
    }

    /// The layout, made again when the font or the link colour changed.
    fn layout(&self) -> pango::Layout {
        let imp = self.imp();
        let context = self.pango_context();
        let color = self.link_color();
        let existing = imp.layout.borrow().clone();
        // A label's start: the right in a right-to-left window.
        let alignment = if self.direction() == gtk::TextDirection::Rtl {
            pango::Alignment::Right
        } else {
            pango::Alignment::Left
        };
        let layout = match existing {
            Some(layout) => {
                if imp.serial.get() != context.serial() {
                    layout.context_changed();
                }
                let drawn_with = imp.parsed.borrow().as_ref().map(|(c, _)| *c);
                if drawn_with != Some(color) {
                    layout.set_attributes(Some(&self.attributes(&color)));
                }
                layout
            }
            None => {
                let layout = self.create_pango_layout(Some(&imp.text.borrow()));
                layout.set_wrap(pango::WrapMode::WordChar);
                layout.set_attributes(Some(&self.attributes(&color)));
                imp.layout.replace(Some(layout.clone()));
                layout
            }
        };
        if layout.alignment() != alignment {
            layout.set_alignment(alignment);
        }
        imp.serial.set(context.serial());
        layout
    }
}

/// The attributes and text of `markup`, links drawn in `link_color`. What
/// `pango_layout_set_markup` does, without its critical on bad markup:
/// escaped text cannot make markup fail, but were it to, the text shows as
/// it is rather than not at all.
fn parse(markup: &str, link_color: &gtk::gdk::RGBA) -> (pango::AttrList, String) {
    match pango::parse_markup(&pango_markup(markup, link_color), '\0') {
        Ok((attrs, text, _)) => (attrs, text.to_string()),
        Err(_) => (pango::AttrList::new(), markup.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_become_underlined_spans() {
        let color = gtk::gdk::RGBA::new(1.0, 0.0, 0.0, 1.0);
        let markup = "see <a href=\"https://e.x/?a=1&amp;b=2\" title=\"https://e.x/?a=1&amp;amp;b=2\"><b>here</b></a> &lt;a&gt;";
        assert_eq!(
            pango_markup(markup, &color),
            "see <span underline=\"single\" foreground=\"#ff0000\"><b>here</b></span> &lt;a&gt;"
        );
        assert_eq!(parse(markup, &color).1, "see here <a>");
        // Markup that Pango refuses still shows, as it is.
        assert_eq!(parse("<b>bold", &color).1, "<b>bold");
    }
}
