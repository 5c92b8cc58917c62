//! Large text (GNOME's text scaling: GTK's `gtk-xft-dpi`, which GNOME sets
//! through XSETTINGS) and a right-to-left locale (GTK takes the direction
//! from its own translation of `default:LTR`, at start; set here as GTK
//! sets it): nothing leaves the window or overlaps, and right to left
//! the layout is mirrored. Screenshots of each.

use super::pickers_fit::{pickers_inside, resize, with_options};
use super::*;

const IDS: [&str; 6] = ["mode", "model", "effort", "brief", "sandbox", "verbosity"];

fn bounds(f: &Fixture, w: &impl IsA<gtk::Widget>, what: &str) -> Result<gtk::graphene::Rect, String> {
    w.compute_bounds(&f.win).ok_or(format!("{what} has no bounds"))
}

fn overlap(a: &gtk::graphene::Rect, b: &gtk::graphene::Rect) -> bool {
    // A pixel of rounding is no overlap.
    a.x() + a.width() > b.x() + 1.0
        && b.x() + b.width() > a.x() + 1.0
        && a.y() + a.height() > b.y() + 1.0
        && b.y() + b.height() > a.y() + 1.0
}

/// The composer's controls and pickers lie inside the window, none over
/// another; right to left, Send is left of the message and the sidebar
/// right of the conversation.
fn check(f: &Fixture, rtl: bool, what: &str) -> Result<(), String> {
    pickers_inside(f, &IDS, what)?;
    let composer = f.win.composer();
    let mut boxes = vec![
        ("the message", bounds(f, &composer.text_view(), "the message")?),
        ("Send", bounds(f, &composer.send_button(), "Send")?),
    ];
    for id in IDS {
        let p = picker(f, id).ok_or(format!("no picker {id}"))?;
        boxes.push((id, bounds(f, &p, id)?));
    }
    let (w, h) = (f.win.width() as f32, f.win.height() as f32);
    for (i, (a, ra)) in boxes.iter().enumerate() {
        if ra.x() < 0.0 || ra.y() < 0.0 || ra.x() + ra.width() > w + 0.5 || ra.y() + ra.height() > h + 0.5 {
            return Err(format!("{what}: {a} lies outside the window"));
        }
        for (b, rb) in &boxes[i + 1..] {
            if overlap(ra, rb) {
                save_png(&f.win, &format!("overlap-{}", what.replace(' ', "-")))?;
                return Err(format!("{what}: {a} overlaps {b}"));
            }
        }
    }
    let (message, send) = (&boxes[0].1, &boxes[1].1);
    if rtl != (send.x() < message.x()) {
        return Err(format!(
            "{what}: Send at x {:.0}, the message at {:.0} (right to left: {rtl})",
            send.x(),
            message.x()
        ));
    }
    let sidebar = f.win.sidebar();
    if sidebar.is_drawable() {
        let s = bounds(f, &sidebar, "the sidebar")?;
        if rtl != (s.x() > message.x()) {
            return Err(format!(
                "{what}: the sidebar at x {:.0}, the message at {:.0}",
                s.x(),
                message.x()
            ));
        }
    }
    Ok(())
}

pub fn large_text_and_right_to_left(app: &adw::Application) -> Result<(), String> {
    let cwd = tempfile::tempdir().map_err(|e| e.to_string())?;
    let f = with_options(app, 6, cwd.path())?;
    // A conversation, so its rows are in the pictures too.
    type_and_send(&f, "echo The answer, in a few words.");
    spin_until("the answer", Duration::from_secs(10), || {
        conversation_texts(&f)
            .iter()
            .any(|t| t.contains("in a few words"))
    })?;
    let settings = gtk::Settings::default().ok_or("no GTK settings")?;
    let dpi = settings.gtk_xft_dpi();
    let result = (|| {
        for (scale, rtl, name) in [
            (1.5, false, "large-text"),
            (1.0, true, "rtl"),
            (1.5, true, "large-text-rtl"),
        ] {
            // 96 dpi × the factor, in 1/1024ths, as GNOME's settings daemon
            // gives it for text-scaling-factor.
            settings.set_gtk_xft_dpi((96.0 * scale * 1024.0) as i32);
            gtk::Widget::set_default_direction(if rtl {
                gtk::TextDirection::Rtl
            } else {
                gtk::TextDirection::Ltr
            });
            if f.win.direction() != gtk::Widget::default_direction() {
                return Err(format!("{name}: the window did not take the direction"));
            }
            for (width, height) in [(360, 640), (1280, 720), (1920, 1080)] {
                resize(&f, width, height)?;
                let what = format!("{name} at {width} px");
                check(&f, rtl, &what)?;
                save_png(&f.win, &format!("{name}-{width}"))?;
            }
        }
        Ok(())
    })();
    settings.set_gtk_xft_dpi(dpi);
    gtk::Widget::set_default_direction(gtk::TextDirection::Ltr);
    close(f);
    result
}
