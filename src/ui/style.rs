//! How a widget follows the style (light or dark) as it changes. A leaf:
//! widgets use it, and it knows no model.

/// Calls `f` with `widget` and whether the style is dark each time the
/// style changes while `widget` lives (not now: it was made for the style
/// of now). The style manager outlives every widget, so the handler goes
/// with the widget.
pub fn on_dark_change<W: gtk::prelude::IsA<gtk::Widget>>(widget: &W, f: impl Fn(&W, bool) + 'static) {
    use gtk::prelude::*;
    let weak = widget.downgrade();
    let handler = adw::StyleManager::default().connect_dark_notify(move |style| {
        if let Some(widget) = weak.upgrade() {
            f(&widget, style.is_dark());
        }
    });
    let handler = std::cell::Cell::new(Some(handler));
    widget.connect_destroy(move |_| {
        if let Some(id) = handler.take() {
            adw::StyleManager::default().disconnect(id);
        }
    });
}
