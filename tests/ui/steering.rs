//! Steering a conversation in the window (issue 43), with the demo agent:
//! a notice (heard by a screen reader), a compaction divider and plans
//! (light, dark, 360 px); Steer into a running turn; the queue moved,
//! edited and sent now; Retry after a refusal; Edit and Send Again, which
//! opens a forked conversation with the earlier turns in the composer; and
//! drafts that come back, with the conversation, after a restart.

use super::*;

/// A window on `config` whose history is `dir`/history.sqlite3 (kept
/// between windows, as between runs of Parley).
fn open_window_in(
    app: &adw::Application,
    dir: &std::path::Path,
    config: &str,
) -> Result<(ParleyWindow, Core), String> {
    let path = dir.join("config.json");
    std::fs::write(&path, config).map_err(|e| e.to_string())?;
    let (core, rx) = parley::ui::runtime::start_core(Options {
        config_path: Some(path),
        history: Some(dir.join("history.sqlite3")),
        ..Default::default()
    })?;
    let model = parley::ui::models::AppModel::new(&core);
    parley::ui::bridge::attach(&model, rx);
    let win = ParleyWindow::new(app, &model);
    win.set_default_size(1100, 720);
    win.present();
    spin_until("the window to map", Duration::from_secs(10), || win.is_mapped())?;
    spin(Duration::from_millis(300));
    Ok((win, core))
}

fn idle(win: &ParleyWindow, what: &str) -> Result<(), String> {
    spin(Duration::from_millis(200));
    spin_until(what, Duration::from_secs(30), || {
        win.agent("demo").is_some_and(|a| !a.conversation().answering())
    })
}

fn shown(win: &ParleyWindow) -> Vec<String> {
    texts(win.conversation_view().message_list().upcast_ref())
}

fn composer_text(win: &ParleyWindow) -> String {
    let buffer = win.composer().text_view().buffer();
    buffer
        .text(&buffer.start_iter(), &buffer.end_iter(), false)
        .to_string()
}

/// As Enter does: sent, or queued while the agent answers.
fn send(win: &ParleyWindow, text: &str) {
    win.composer().text_view().buffer().set_text(text);
    win.composer().send();
}

fn act(win: &ParleyWindow, action: &str, target: Option<&str>) {
    let target = target.map(|t| t.to_variant());
    let _ = WidgetExt::activate_action(win, action, target.as_ref());
}

pub fn steering_in_the_window(app: &adw::Application) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let project = tempfile::tempdir().map_err(|e| e.to_string())?;
    let sessions = dir.path().join("sessions");
    let config = format!(
        r#"{{"agents": [{{"name": "demo", "title": "Demo Agent", "command": "{}", "cwd": "{}",
            "env": {{"PARLEY_DEMO_MODE": "steer,resume,fork", "PARLEY_DEMO_SESSIONS": "{}"}}}}]}}"#,
        env!("CARGO_BIN_EXE_parley-demo-agent"),
        project.path().display(),
        sessions.display()
    );
    let (win, core) = open_window_in(app, dir.path(), &config)?;
    win.select_agent("demo");
    spin_until("the conversation page", Duration::from_secs(5), || {
        win.content_page() == "conversation"
    })?;

    // The protocol's newer updates, shown and heard.
    send(&win, "timeline");
    idle(&win, "the timeline's end")?;
    let all = shown(&win);
    for expected in [
        "Rate limited",
        "The agent compacted the conversation",
        "What the agent kept",
        "Read the parser",
        "Second message of the agent.",
    ] {
        if !all.iter().any(|t| t.contains(expected)) {
            return Err(format!("{expected:?} is not shown: {all:?}"));
        }
    }
    if all.iter().any(|t| t.contains("check the tests after the fix")) {
        return Err("the removed plan is still shown".into());
    }
    let heard = parley::ui::a11y::recent_announcements();
    if !heard
        .iter()
        .any(|h| h == "Warning: Rate limited. The demo agent waits a moment before going on.")
    {
        return Err(format!("the notice was not heard: {heard:?}"));
    }
    let style = adw::StyleManager::default();
    for (width, dark, name) in [
        (1100, false, "43-timeline-light"),
        (1100, true, "43-timeline-dark"),
        (360, false, "43-timeline-narrow"),
    ] {
        style.set_color_scheme(if dark {
            adw::ColorScheme::ForceDark
        } else {
            adw::ColorScheme::ForceLight
        });
        win.set_default_size(width, 720);
        spin_until(&format!("the width {width}"), Duration::from_secs(5), || {
            win.width() <= width + 2
        })?;
        spin(Duration::from_millis(400));
        win.conversation_view().scroll_to_bottom();
        spin(Duration::from_millis(300));
        save_png(&win, name)?;
    }
    style.set_color_scheme(adw::ColorScheme::Default);
    win.set_default_size(1100, 720);

    // Steer: the button shows while the agent answers, and the message
    // goes into the running turn.
    send(&win, "slow 40 50");
    let steer = win.composer().steer_button();
    spin_until("the Steer button", Duration::from_secs(10), || steer.is_visible())?;
    // Taken once the turn's prompt is with the agent (its answer begins).
    spin_until("the answer", Duration::from_secs(10), || {
        shown(&win).iter().any(|t| t.contains("chunk 1"))
    })?;
    win.composer().text_view().buffer().set_text("use tabs");
    save_png(&win, "43-steer")?;
    steer.emit_clicked();
    idle(&win, "the steered turn's end").map_err(|e| {
        let c = core.chat.conversation("demo").map(|c| {
            let m: Vec<String> = c
                .messages
                .iter()
                .map(|m| format!("{:?}/{}/{}", m.role, m.done, m.text()))
                .collect();
            format!("busy {} {m:?}", c.busy)
        });
        format!("{e}: {c:?}; log {:?}", core.agents.logs("demo"))
    })?;
    if !shown(&win).iter().any(|t| t.contains("Steered: use tabs.")) {
        return Err(format!("the steer was not taken: {:?}", shown(&win)));
    }
    if steer.is_visible() {
        return Err("Steer is offered between turns".into());
    }

    // The queue: moved, edited, then sent now.
    send(&win, "wait");
    spin_until("the turn", Duration::from_secs(10), || {
        win.agent("demo").is_some_and(|a| a.conversation().answering())
    })?;
    let agent = win.agent("demo").ok_or("no agent")?;
    // One after the other: each send is a call of its own on the runtime.
    send(&win, "echo one");
    spin_until("one queued", Duration::from_secs(5), || {
        agent.conversation().queued_ids().len() == 1
    })?;
    send(&win, "echo two");
    spin_until("two queued", Duration::from_secs(5), || {
        agent.conversation().queued_ids().len() == 2
    })?;
    let queued = agent.conversation().queued_ids();
    act(&win, "win.queued-up", Some(&queued[1]));
    spin_until("two first", Duration::from_secs(5), || {
        agent.conversation().queued_ids() == [queued[1].clone(), queued[0].clone()]
    })?;
    act(&win, "win.queued-edit", Some(&queued[0]));
    let dialog = spin_for_dialog("Edit Queued Message")?;
    let view = first_text_view(dialog.upcast_ref()).ok_or("no text in the dialog")?;
    view.buffer().set_text("echo one, edited");
    save_png(&dialog, "43-queue-edit")?;
    dialog.response("save");
    spin_until("the edit", Duration::from_secs(5), || {
        agent.conversation().message_text(&queued[0]).as_deref() == Some("echo one, edited")
    })?;
    spin(Duration::from_millis(300));
    save_png(&win, "43-queue")?;
    act(&win, "win.queued-send-now", Some(&queued[0]));
    idle(&win, "the queue's end")?;
    let conversation = core.chat.conversation("demo").map_err(|e| e.to_string())?;
    let answers: Vec<String> = conversation
        .messages
        .iter()
        .rev()
        .filter(|m| m.role == parley::core::types::message::Role::Agent)
        .take(2)
        .map(|m| m.text())
        .collect();
    if answers != ["two", "one, edited"] {
        let all: Vec<String> = conversation
            .messages
            .iter()
            .map(|m| format!("{}:{:?}:{}", m.id, m.role, m.text()))
            .collect();
        return Err(format!("the queue went {answers:?}: {all:?}"));
    }

    // Retry after a refusal.
    send(&win, "stop refusal");
    idle(&win, "the refusal")?;
    spin_until("the Retry banner", Duration::from_secs(5), || win.retry_shown())?;
    save_png(&win, "43-retry")?;
    act(&win, "win.retry", None);
    idle(&win, "the retry")?;
    let refusals = core
        .chat
        .conversation("demo")
        .map_err(|e| e.to_string())?
        .messages
        .iter()
        .filter(|m| m.text() == "Stopping with refusal.")
        .count();
    if refusals != 2 {
        return Err(format!("{refusals} answers to the retried prompt"));
    }

    // Edit and Send Again: a fork before the message, the earlier turns
    // and the message in the composer to edit.
    let original = core.chat.conversation("demo").map_err(|e| e.to_string())?;
    let edited = original
        .messages
        .iter()
        .find(|m| m.text() == "echo two")
        .map(|m| m.id.clone())
        .ok_or("no message to edit")?;
    act(&win, "win.edit-message", Some(&edited));
    spin_until("the forked conversation", Duration::from_secs(10), || {
        win.forked_banner().is_some() && composer_text(&win).ends_with("echo two")
    })?;
    if win.forked_banner().as_deref() != Some("Forked from “timeline”") {
        return Err(format!("the banner says {:?}", win.forked_banner()));
    }
    spin(Duration::from_millis(300));
    if win.retry_shown() {
        return Err("the fork offers Retry for an answer that finished".into());
    }
    let text = composer_text(&win);
    if !text.starts_with("Earlier in this conversation (for context):")
        || !text.contains("**User:** timeline")
    {
        return Err(format!("the composer holds {text:?}"));
    }
    spin(Duration::from_millis(300));
    save_png(&win, "43-forked")?;

    // A draft, kept and put back: in the fork, then in the original, and
    // after a restart.
    win.composer().text_view().buffer().set_text("half a thought");
    spin(Duration::from_millis(800));
    let fork_id = agent.conversation().conversation_id();
    act(&win, "win.open-original", None);
    spin_until("the original", Duration::from_secs(10), || {
        agent.conversation().conversation_id() == original.id.clone().unwrap_or_default()
    })?;
    spin_until("its empty draft", Duration::from_secs(5), || {
        composer_text(&win).is_empty()
    })?;
    act(&win, "win.open-conversation", Some(&fork_id));
    spin_until("the fork's draft", Duration::from_secs(10), || {
        composer_text(&win) == "half a thought"
    })?;
    win.close();
    parley::ui::runtime::runtime().block_on(core.shutdown());
    spin(Duration::from_millis(300));

    let (win, core) = open_window_in(app, dir.path(), &config)?;
    win.select_agent("demo");
    spin_until("the fork again, with its draft", Duration::from_secs(10), || {
        win.agent("demo")
            .is_some_and(|a| a.conversation().conversation_id() == fork_id)
            && composer_text(&win) == "half a thought"
    })?;
    save_png(&win, "43-restored")?;
    win.close();
    parley::ui::runtime::runtime().block_on(core.shutdown());
    Ok(())
}

fn spin_for_dialog(heading: &str) -> Result<adw::MessageDialog, String> {
    let mut found = None;
    spin_until(heading, Duration::from_secs(5), || {
        found = gtk::Window::list_toplevels()
            .into_iter()
            .filter_map(|w| w.downcast::<adw::MessageDialog>().ok())
            .find(|d| d.heading().as_deref() == Some(heading) && d.is_visible());
        found.is_some()
    })?;
    found.ok_or_else(|| format!("no dialog {heading:?}"))
}

fn first_text_view(w: &gtk::Widget) -> Option<gtk::TextView> {
    let mut child = w.first_child();
    while let Some(c) = child {
        if let Ok(t) = c.clone().downcast::<gtk::TextView>() {
            return Some(t);
        }
        if let Some(t) = first_text_view(&c) {
            return Some(t);
        }
        child = c.next_sibling();
    }
    None
}

/// The same by keyboard and screen reader (`tests/a11y-keyboard.py
/// steering`), against a real `parley`.
pub fn steering_by_keyboard_and_screen_reader(_app: &adw::Application) -> Result<(), String> {
    let project = tempfile::tempdir().map_err(|e| e.to_string())?;
    keyboard_only_on("steering", None, &auth_config("steer", project.path()))
}
