//! Tab and Shift+Tab through the whole window (issue 47, fault 2): from
//! the message field, Shift+Tab goes into the conversation, through a
//! message's own controls, and out again; Tab does the same forwards. No
//! trap either way.

use super::*;

/// What has the focus: the window's focus widget.
fn focus_of(win: &ParleyWindow) -> Option<gtk::Widget> {
    gtk::prelude::GtkWindowExt::focus(win)
}

fn in_list(win: &ParleyWindow, w: &gtk::Widget) -> bool {
    w.is_ancestor(&win.conversation_view().message_list())
}

/// Presses (as GTK does for Tab) `direction` until the focus has gone into
/// the message list and out of it again; how many presses that took.
fn through_the_list(win: &ParleyWindow, direction: gtk::DirectionType) -> Result<usize, String> {
    let mut entered = false;
    let mut trail = Vec::new();
    for press in 1..=80 {
        if !win.child_focus(direction) {
            // Wrapped around the window: GTK starts again from the edge.
            win.child_focus(direction);
        }
        let Some(now) = focus_of(win) else { continue };
        trail.push(now.type_().name().to_owned());
        match (entered, in_list(win, &now)) {
            (false, true) => entered = true,
            (true, false) => {
                println!("    {direction:?}: out after {press} presses: {trail:?}");
                return Ok(press);
            }
            _ => {}
        }
    }
    Err(format!(
        "{direction:?}: the focus {} the message list in 80 presses: {:?}",
        if entered { "never left" } else { "never entered" },
        &trail[trail.len().saturating_sub(12)..]
    ))
}

pub fn tab_and_shift_tab_go_through_the_window(app: &adw::Application) -> Result<(), String> {
    let f = open_window(app, &demo_config(true))?;
    select_demo(&f)?;
    // Answers with controls of their own (a tool call, plans, a
    // compaction's expander, message actions).
    type_and_send(&f, "timeline");
    spin(Duration::from_millis(500));
    spin_until("the answer", Duration::from_secs(20), || {
        f.win.agent("demo").is_some_and(|a| !a.conversation().answering())
    })?;
    for direction in [gtk::DirectionType::TabBackward, gtk::DirectionType::TabForward] {
        f.win.composer().text_view().grab_focus();
        through_the_list(&f.win, direction)?;
    }
    // A turn with tool calls, each with its Output expander (where Tab
    // once stayed, pressed by a person, not only by `child_focus`).
    type_and_send(&f, "hello");
    spin_until("the permission banner", Duration::from_secs(15), || {
        f.win.permission_banner().is_revealed()
    })?;
    buttons(f.win.permission_banner().upcast_ref())
        .into_iter()
        .next()
        .ok_or("no Allow button")?
        .emit_clicked();
    spin_until("the end of the turn", Duration::from_secs(20), || {
        f.win.agent("demo").is_some_and(|a| !a.conversation().answering())
    })?;
    spin(Duration::from_millis(300));
    for direction in [gtk::DirectionType::TabForward, gtk::DirectionType::TabBackward] {
        f.win.composer().text_view().grab_focus();
        through_the_list(&f.win, direction)?;
    }
    close(f);
    Ok(())
}
