//! The composer's option pickers lie inside the window, at every width and
//! with one to six of them: they wrap into rows rather than stack below the
//! window's edge. Screenshots in light, dark and high contrast.

use super::*;

/// The demo agent's options in `options:N`, in order (with `brief`, a
/// boolean, as Parley advertises booleans).
const IDS: [&str; 6] = ["mode", "model", "effort", "brief", "sandbox", "verbosity"];

/// Every picker of `ids` lies inside the window and can be drawn.
pub fn pickers_inside(f: &Fixture, ids: &[&str], what: &str) -> Result<(), String> {
    let (w, h) = (f.win.width() as f32, f.win.height() as f32);
    for id in ids {
        let p = picker(f, id).ok_or(format!("no picker {id}"))?;
        let b = p.compute_bounds(&f.win).ok_or(format!("{id} has no bounds"))?;
        let inside =
            b.x() >= 0.0 && b.y() >= 0.0 && b.x() + b.width() <= w + 0.5 && b.y() + b.height() <= h + 0.5;
        if !inside || !p.is_drawable() || b.width() < 8.0 {
            save_png(&f.win, &format!("pickers-outside-{what}"))?;
            return Err(format!(
                "{what}: the {id} picker lies at {:.0},{:.0} {:.0}×{:.0}, outside {w}×{h}",
                b.x(),
                b.y(),
                b.width(),
                b.height()
            ));
        }
    }
    Ok(())
}

/// Sets the window's size and waits for it.
pub fn resize(f: &Fixture, width: i32, height: i32) -> Result<(), String> {
    f.win.set_default_size(width, height);
    // Without a window manager X11 may leave a few pixels to the frame.
    spin_until(
        &format!("the window at {width} px"),
        Duration::from_secs(5),
        || f.win.width() <= width && f.win.width() >= width - 16,
    )
    .map_err(|e| format!("{e} (the window is {} px)", f.win.width()))?;
    spin(Duration::from_millis(300));
    Ok(())
}

/// The demo agent offering its first `n` options, started and shown.
pub fn with_options(app: &adw::Application, n: usize, cwd: &std::path::Path) -> Result<Fixture, String> {
    let f = open_window(app, &auth_config(&format!("options:{n}"), cwd))?;
    select_demo(&f)?;
    parley::ui::runtime::runtime()
        .block_on(f.core.agents.start("demo"))
        .map_err(|e| e.to_string())?;
    spin_until(&format!("{n} pickers"), Duration::from_secs(10), || {
        IDS[..n].iter().all(|id| picker(&f, id).is_some())
    })?;
    Ok(f)
}

pub fn every_picker_lies_inside_the_window(app: &adw::Application) -> Result<(), String> {
    let cwd = tempfile::tempdir().map_err(|e| e.to_string())?;
    for n in 1..=6 {
        let f = with_options(app, n, cwd.path())?;
        if let Some(extra) = IDS[n..].iter().find(|id| picker(&f, id).is_some()) {
            return Err(format!("with {n} options a {extra} picker is shown"));
        }
        for (width, height) in [(360, 640), (1280, 720), (1920, 1080)] {
            resize(&f, width, height)?;
            pickers_inside(&f, &IDS[..n], &format!("{n} options at {width} px"))?;
            if n == 1 || n == 6 {
                save_png(&f.win, &format!("pickers-{n}-{width}"))?;
            }
        }
        if n == 6 {
            styles(&f)?;
        }
        close(f);
    }
    Ok(())
}

/// Six pickers in dark and high contrast, narrow and wide.
fn styles(f: &Fixture) -> Result<(), String> {
    let style = adw::StyleManager::default();
    // libadwaita follows GNOME's setting (the settings portal, or here, with
    // no portal, GSettings: the memory backend in tests).
    let a11y = gtk::gio::Settings::new("org.gnome.desktop.a11y.interface");
    for (scheme, contrast, name) in [
        (adw::ColorScheme::ForceDark, false, "dark"),
        (adw::ColorScheme::ForceLight, true, "high-contrast"),
        (adw::ColorScheme::ForceDark, true, "high-contrast-dark"),
    ] {
        style.set_color_scheme(scheme);
        a11y.set_boolean("high-contrast", contrast)
            .map_err(|e| e.to_string())?;
        spin_until(&format!("{name} style"), Duration::from_secs(5), || {
            style.is_high_contrast() == contrast && style.is_dark() == (scheme == adw::ColorScheme::ForceDark)
        })?;
        for (width, height) in [(360, 640), (1280, 720), (1920, 1080)] {
            resize(f, width, height)?;
            pickers_inside(f, &IDS, &format!("{name} at {width} px"))?;
            save_png(&f.win, &format!("pickers-6-{width}-{name}"))?;
        }
    }
    a11y.reset("high-contrast");
    style.set_color_scheme(adw::ColorScheme::Default);
    Ok(())
}
