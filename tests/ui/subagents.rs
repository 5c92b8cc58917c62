//! Subagents in the window (issue 63), with the demo agent's `subagents`
//! turn: each helper a card where it was started (collapsed: title, status,
//! what it does now; expanded: its thread, a helper of its own nested), a
//! helper's permission request saying which helper asks (banner and what a
//! screen reader hears), Cancel on one helper only, the header's count;
//! light, dark and 360 px.

use super::*;

/// The card of the helper titled `title`: its expander and its Cancel.
fn card(win: &ParleyWindow, title: &str) -> Option<(gtk::Expander, Option<gtk::Button>)> {
    let list = win.conversation_view().message_list();
    descendants::<gtk::Expander>(list.upcast_ref())
        .into_iter()
        .find(|e| {
            e.label_widget()
                .is_some_and(|l| texts(&l).iter().any(|t| t == title))
                && drawn(e.upcast_ref())
        })
        .map(|e| {
            let cancel = e
                .next_sibling()
                .and_downcast::<gtk::Button>()
                .filter(|b| b.action_name().as_deref() == Some("win.cancel-subagent"));
            (e, cancel)
        })
}

/// Whether `w` and every widget above it are visible (a helper linked by
/// a tool call is drawn in its card, and hidden where it was announced).
fn drawn(w: &gtk::Widget) -> bool {
    std::iter::successors(Some(w.clone()), |w| w.parent()).all(|w| w.is_visible())
}

fn card_texts(e: &gtk::Expander) -> Vec<String> {
    e.label_widget().map(|l| texts(&l)).unwrap_or_default()
}

pub fn helpers_as_threads(app: &adw::Application) -> Result<(), String> {
    let project = tempfile::tempdir().map_err(|e| e.to_string())?;
    std::fs::write(project.path().join("NOTES.md"), "Teh notes.\n").map_err(|e| e.to_string())?;
    let config = format!(
        r#"{{"agents": [{{"name": "demo", "title": "Demo Agent", "command": "{}", "cwd": "{}"}}]}}"#,
        env!("CARGO_BIN_EXE_parley-demo-agent"),
        project.path().display()
    );
    let f = open_window(app, &config)?;
    select_demo(&f)?;
    type_and_send(&f, "subagents 30");

    // A helper asks: the banner and the screen reader say which.
    spin_until("the helper's permission banner", Duration::from_secs(20), || {
        f.win.permission_banner().is_revealed()
    })?;
    let banner = texts(f.win.permission_banner().upcast_ref());
    if !banner.iter().any(|t| {
        t.contains("Its subagent Fix the typo in NOTES.md asks to run a tool") && t.contains("Edit NOTES.md")
    }) {
        return Err(format!("the banner does not say which helper asks: {banner:?}"));
    }
    spin(Duration::from_millis(300));
    let heard = parley::ui::a11y::recent_announcements();
    if !heard
        .iter()
        .any(|h| h.starts_with("Its subagent Fix the typo in NOTES.md asks to run a tool: Edit NOTES.md."))
    {
        return Err(format!(
            "the helper's request was not heard as its own: {heard:?}"
        ));
    }
    // Each helper a card where it was started; the header counts them.
    spin_until("both cards", Duration::from_secs(10), || {
        card(&f.win, "Explore the tests").is_some() && card(&f.win, "Fix the typo in NOTES.md").is_some()
    })?;
    let subtitle = f.win.conversation_subtitle();
    if !subtitle.contains(" subagents working") {
        return Err(format!("the header does not count the helpers: {subtitle:?}"));
    }
    let (explore, cancel) = card(&f.win, "Explore the tests").ok_or("no explorer card")?;
    spin_until("the explorer's summary", Duration::from_secs(10), || {
        card_texts(&explore)
            .iter()
            .any(|t| t.starts_with("Still exploring"))
    })
    .map_err(|e| format!("{e}: {:?}", card_texts(&explore)))?;
    let shown = texts(f.win.conversation_view().message_list().upcast_ref());
    if shown.iter().any(|t| t.contains("Looking at the tests")) {
        return Err("a collapsed helper's text is drawn in the conversation".into());
    }
    save_png(&f.win, "63-subagents-asking")?;
    buttons(f.win.permission_banner().upcast_ref())
        .into_iter()
        .next()
        .ok_or("no allow button")?
        .emit_clicked();

    // Cancel on one helper stops it only, and is heard.
    let cancel = cancel.ok_or("the explorer has no Cancel")?;
    if !cancel.is_visible() {
        return Err("the explorer's Cancel is hidden".into());
    }
    cancel.emit_clicked();
    spin_until("the explorer cancelled", Duration::from_secs(10), || {
        card_texts(&explore).iter().any(|t| t == "cancelled")
    })
    .map_err(|e| format!("{e}: {:?}", card_texts(&explore)))?;
    spin_until("the turn's end", Duration::from_secs(20), || {
        f.win.agent("demo").is_some_and(|a| !a.conversation().answering())
    })?;
    spin(Duration::from_millis(300));
    let heard = parley::ui::a11y::recent_announcements();
    for expected in [
        "Subagent Explore the tests, cancelled",
        "Subagent Fix the typo in NOTES.md, done",
    ] {
        if !heard.iter().any(|h| h == expected) {
            return Err(format!("{expected:?} was not heard: {heard:?}"));
        }
    }
    if cancel.is_visible() {
        return Err("Cancel stays on a cancelled helper".into());
    }
    if f.win.conversation_subtitle().contains("working") {
        return Err(format!(
            "the header still counts helpers: {}",
            f.win.conversation_subtitle()
        ));
    }
    let notes = std::fs::read_to_string(project.path().join("NOTES.md")).unwrap_or_default();
    if !notes.contains("fixed by a helper") {
        return Err(format!("the allowed helper did not write: {notes}"));
    }

    // Expanded: its thread, with its own helper nested; drawn in the tool
    // call that started it; open still once its row is drawn anew.
    let (explore, _) = card(&f.win, "Explore the tests").ok_or("no explorer card at the end")?;
    let in_tool =
        std::iter::successors(explore.parent(), |w| w.parent()).any(|w| w.has_css_class("tool-card"));
    if !in_tool {
        return Err("the explorer is not drawn in the tool call that started it".into());
    }
    explore.set_expanded(true);
    spin(Duration::from_millis(400));
    let inside = texts(explore.upcast_ref());
    for expected in ["Looking at the tests.", "Read tests/", "Read one file"] {
        if !inside.iter().any(|t| t.contains(expected)) {
            return Err(format!("{expected:?} is not in the expanded thread: {inside:?}"));
        }
    }
    let all = texts(f.win.conversation_view().message_list().upcast_ref());
    if !all
        .iter()
        .any(|t| t == "Found 3 tests in tests/." || t == "Fixed NOTES.md.")
    {
        return Err(format!("the helpers' reports are not shown: {all:?}"));
    }
    if all.iter().any(|t| t.contains("<tools-used")) {
        return Err("the harness's tags are shown".into());
    }
    f.win.conversation_view().message_list().queue_allocate();
    let again = card(&f.win, "Explore the tests").ok_or("no explorer card")?.0;
    if !again.is_expanded() {
        return Err("the explorer's card closed when drawn again".into());
    }
    let style = adw::StyleManager::default();
    for (width, dark, name) in [
        (1100, false, "63-subagents-expanded"),
        (1100, true, "63-subagents-dark"),
        (360, false, "63-subagents-narrow"),
    ] {
        style.set_color_scheme(if dark {
            adw::ColorScheme::ForceDark
        } else {
            adw::ColorScheme::ForceLight
        });
        f.win.set_default_size(width, 720);
        spin_until(&format!("the width {width}"), Duration::from_secs(5), || {
            f.win.width() <= width + 2
        })?;
        spin(Duration::from_millis(400));
        save_png(&f.win, name)?;
    }
    style.set_color_scheme(adw::ColorScheme::Default);
    f.win.set_default_size(1100, 720);
    close(f);
    Ok(())
}
