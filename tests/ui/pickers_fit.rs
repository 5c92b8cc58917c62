//! The composer's option pickers lie inside the window, at every width:
//! they wrap into rows rather than stack below the window's edge.

use super::*;

pub fn every_picker_lies_inside_the_window(app: &adw::Application) -> Result<(), String> {
    let cwd = tempfile::tempdir().map_err(|e| e.to_string())?;
    let f = open_window(app, &auth_config("", cwd.path()))?;
    select_demo(&f)?;
    parley::ui::runtime::runtime()
        .block_on(f.core.agents.start("demo"))
        .map_err(|e| e.to_string())?;
    let ids = ["mode", "model", "effort", "brief"];
    spin_until("the pickers", Duration::from_secs(10), || {
        ids.iter().all(|id| picker(&f, id).is_some())
    })?;
    for (width, height) in [(360, 640), (1280, 720), (1920, 1080)] {
        f.win.set_default_size(width, height);
        // Without a window manager X11 may leave a few pixels to the frame.
        spin_until(
            &format!("the window at {width} px"),
            Duration::from_secs(5),
            || f.win.width() <= width && f.win.width() >= width - 16,
        )
        .map_err(|e| format!("{e} (the window is {} px)", f.win.width()))?;
        spin(Duration::from_millis(300));
        let (w, h) = (f.win.width() as f32, f.win.height() as f32);
        for id in ids {
            let p = picker(&f, id).ok_or(format!("no picker {id}"))?;
            let b = p.compute_bounds(&f.win).ok_or(format!("{id} has no bounds"))?;
            let inside =
                b.x() >= 0.0 && b.y() >= 0.0 && b.x() + b.width() <= w + 0.5 && b.y() + b.height() <= h + 0.5;
            if !inside || !p.is_drawable() {
                save_png(&f.win, &format!("pickers-outside-{width}"))?;
                return Err(format!(
                    "at {width}×{height} the {id} picker lies at {:.0},{:.0} {:.0}×{:.0}, outside {w}×{h}",
                    b.x(),
                    b.y(),
                    b.width(),
                    b.height()
                ));
            }
        }
        save_png(&f.win, &format!("pickers-{width}"))?;
    }
    close(f);
    Ok(())
}
