//! The window under Xvfb, driven as a person would: real widgets, the real
//! demo agent, PNG snapshots of each step in `target/tmp/ui/`.
//!
//! One GTK thread (GTK allows no other), so this is a `harness = false`
//! test with its own small runner and cargo's summary line format.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use adw::prelude::*;
use adw::subclass::prelude::ObjectSubclassIsExt;
use gtk::glib;
use parley::core::services::{Core, Options};
use parley::ui::window::ParleyWindow;

fn out_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ui");
    let _ = std::fs::create_dir_all(&dir);
    dir
}

/// Runs the main loop until `done` holds or `limit` passes.
fn spin_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) -> Result<(), String> {
    let ctx = glib::MainContext::default();
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        while ctx.iteration(false) {}
        if done() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Err(format!("timed out after {limit:?} waiting for {what}"))
}

fn spin(d: Duration) {
    let _ = spin_until("time", d, || false);
}

/// GTK's own snapshot of the widget, as a PNG.
fn save_png(widget: &impl IsA<gtk::Widget>, name: &str) -> Result<PathBuf, String> {
    let widget = widget.as_ref();
    let paintable = gtk::WidgetPaintable::new(Some(widget));
    // The paintable has content once the widget has been drawn in a frame.
    let mut node = None;
    spin_until("a drawn frame", Duration::from_secs(5), || {
        let snapshot = gtk::Snapshot::new();
        paintable.snapshot(&snapshot, f64::from(widget.width()), f64::from(widget.height()));
        node = snapshot.to_node();
        node.is_some()
    })?;
    let node = node.ok_or("nothing was drawn")?;
    let native = widget.native().ok_or("the widget has no native surface")?;
    let texture = native
        .renderer()
        .ok_or("no renderer")?
        .render_texture(&node, None);
    let path = out_dir().join(format!("{name}.png"));
    texture.save_to_png(&path).map_err(|e| e.to_string())?;
    println!("    screenshot: {}", path.display());
    Ok(path)
}

/// Every label's text below `w`, in order.
fn texts(w: &gtk::Widget) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(l) = w.downcast_ref::<gtk::Label>() {
        out.push(l.text().to_string());
    }
    if let Some(b) = w.downcast_ref::<gtk::Button>() {
        if let Some(l) = b.label() {
            out.push(l.to_string());
        }
    }
    let mut child = w.first_child();
    while let Some(c) = child {
        out.extend(texts(&c));
        child = c.next_sibling();
    }
    out
}

fn buttons(w: &gtk::Widget) -> Vec<gtk::Button> {
    let mut out = Vec::new();
    let mut child = w.first_child();
    while let Some(c) = child {
        if let Ok(b) = c.clone().downcast::<gtk::Button>() {
            out.push(b);
        }
        out.extend(buttons(&c));
        child = c.next_sibling();
    }
    out
}

struct Fixture {
    win: ParleyWindow,
    core: Core,
    _dir: tempfile::TempDir,
}

fn demo_config(agents: bool) -> String {
    let list = if agents {
        format!(
            r#"[{{"name": "demo", "title": "Demo Agent", "icon": "face-smile-symbolic", "command": "{}"}}]"#,
            env!("CARGO_BIN_EXE_parley-demo-agent")
        )
    } else {
        "[]".into()
    };
    format!("// test\n{{\n  \"agents\": {list},\n  \"channels\": []\n}}\n")
}

fn open_window(app: &adw::Application, text: &str) -> Result<Fixture, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path = dir.path().join("config.json");
    std::fs::write(&path, text).map_err(|e| e.to_string())?;
    let (core, rx) = parley::ui::runtime::start_core(Options {
        config_path: Some(path),
        ..Default::default()
    })?;
    let win = ParleyWindow::new(app, core.clone());
    parley::ui::bridge::attach(&win, rx);
    win.set_default_size(1100, 720);
    win.present();
    spin_until("the window to map", Duration::from_secs(10), || win.is_mapped())?;
    spin(Duration::from_millis(300));
    Ok(Fixture { win, core, _dir: dir })
}

fn close(f: Fixture) {
    f.win.close();
    parley::ui::runtime::runtime().block_on(f.core.shutdown());
    spin(Duration::from_millis(50));
}

fn smoke(app: &adw::Application) -> Result<(), String> {
    let f = open_window(app, &demo_config(false))?;
    let imp = f.win.imp();
    if f.win.title().as_deref() != Some("Parley") {
        return Err(format!("title {:?}", f.win.title()));
    }
    let page = imp.sidebar_stack.visible_child_name().unwrap_or_default();
    if page != "empty" {
        return Err(format!("the Agents sidebar shows {page}, not its empty state"));
    }
    if !texts(imp.sidebar.upcast_ref()).iter().any(|t| t == "No Agents") {
        return Err("no \"No Agents\" status page".into());
    }
    save_png(&f.win, "01-empty")?;
    close(f);
    Ok(())
}

fn select_demo(f: &Fixture) -> Result<(), String> {
    let imp = f.win.imp();
    spin_until("the demo agent in the sidebar", Duration::from_secs(5), || {
        imp.agents_view.model().is_some_and(|m| m.n_items() == 1)
    })?;
    f.win.select_agent("demo");
    spin_until("the conversation page", Duration::from_secs(5), || {
        imp.content_stack.visible_child_name().as_deref() == Some("conversation")
    })
}

fn type_and_send(f: &Fixture, text: &str) {
    let imp = f.win.imp();
    imp.composer_text.buffer().set_text(text);
    imp.send_button.emit_clicked();
}

fn conversation_texts(f: &Fixture) -> Vec<String> {
    texts(f.win.imp().messages_view.upcast_ref())
}

fn demo_turn_with_permission(app: &adw::Application) -> Result<(), String> {
    let f = open_window(app, &demo_config(true))?;
    select_demo(&f)?;
    let imp = f.win.imp();
    type_and_send(&f, "Please change the greeting");
    spin_until("the permission banner", Duration::from_secs(15), || {
        imp.permission_revealer.is_child_revealed()
    })?;
    let banner = imp.permission_buttons.get();
    let labels: Vec<String> = buttons(banner.upcast_ref())
        .iter()
        .filter_map(|b| b.label())
        .map(|l| l.to_string())
        .collect();
    if labels != ["Allow once", "Always allow", "Reject", "Always reject"] {
        return Err(format!("banner buttons {labels:?}"));
    }
    save_png(&f.win, "02-permission")?;
    let allow = buttons(banner.upcast_ref())
        .into_iter()
        .next()
        .ok_or("no button")?;
    if !allow.has_css_class("suggested-action") {
        return Err("allow is not suggested".into());
    }
    allow.emit_clicked();
    spin_until("the banner to go", Duration::from_secs(5), || {
        !imp.permission_revealer.reveals_child()
    })?;
    spin_until("the end of the turn", Duration::from_secs(20), || {
        f.win.agent("demo").is_some_and(|a| !a.answering())
    })?;
    spin(Duration::from_millis(300));
    let all = conversation_texts(&f);
    for expected in [
        "What I did",
        "Read src/greeting.rs",
        "Edit src/greeting.rs",
        "cargo test",
        "Plan",
        "failed",
    ] {
        if !all.iter().any(|t| t.contains(expected)) {
            return Err(format!("{expected:?} is not shown; shown: {all:?}"));
        }
    }
    if !all.iter().any(|t| t.contains("you allowed the edit")) {
        return Err("the answer does not follow the permission".into());
    }
    save_png(&f.win, "03-answer")?;
    close(f);
    Ok(())
}

fn cancel_a_turn(app: &adw::Application) -> Result<(), String> {
    let f = open_window(app, &demo_config(true))?;
    select_demo(&f)?;
    let imp = f.win.imp();
    type_and_send(&f, "wait");
    spin_until("the turn to run", Duration::from_secs(10), || {
        f.win.agent("demo").is_some_and(|a| a.answering())
    })?;
    if imp.send_button.icon_name().as_deref() != Some("media-playback-stop-symbolic") {
        return Err("Send did not turn into Stop".into());
    }
    spin(Duration::from_millis(300));
    imp.send_button.emit_clicked();
    spin_until("the turn to end", Duration::from_secs(10), || {
        f.win.agent("demo").is_some_and(|a| !a.answering())
    })?;
    spin(Duration::from_millis(200));
    if !conversation_texts(&f).iter().any(|t| t == "Stopped") {
        return Err(format!("no \"Stopped\": {:?}", conversation_texts(&f)));
    }
    if imp.send_button.icon_name().as_deref() != Some("mail-send-symbolic") {
        return Err("Stop did not turn back into Send".into());
    }
    close(f);
    Ok(())
}

/// A long streamed answer: the view follows it to its end, and the rows on
/// screen show their text (they are stand-ins until then), the last one
/// included.
fn a_long_stream_is_followed_to_its_end(app: &adw::Application) -> Result<(), String> {
    let f = open_window(app, &demo_config(true))?;
    select_demo(&f)?;
    // 10,000 lines of 40 bytes: ~390 rows, more than the list keeps bound,
    // so rows at the top are stand-ins again by the end.
    type_and_send(&f, "flood 10000 40");
    spin_until("the whole flood", Duration::from_secs(60), || {
        let store = f.win.imp_conversation("demo");
        let last = store
            .and_then(|s| s.item(s.n_items().saturating_sub(1)))
            .and_downcast::<parley::ui::models::MessageObject>();
        last.is_some_and(|m| m.text_len() >= 10_000 * 40)
            && f.win.agent("demo").is_some_and(|a| !a.answering())
    })?;
    spin_until("the last row on screen", Duration::from_secs(10), || {
        f.win.last_row_shown()
    })?;
    // The chunks end with their number: the last one is on screen.
    let texts = conversation_texts(&f);
    if !texts.iter().any(|t| t.contains("0009999")) {
        return Err(format!(
            "the end of the stream is not shown: {:?}",
            &texts[texts.len().saturating_sub(6)..]
        ));
    }
    save_png(&f.win, "08-long-stream")?;
    // Back to the top: the first chunks are drawn again, and the view no
    // longer follows.
    let adj = f.win.imp().messages_scroller.vadjustment();
    f.win.imp().stick_to_bottom.set(false);
    adj.set_value(0.0);
    spin_until("the start of the stream drawn", Duration::from_secs(10), || {
        conversation_texts(&f).iter().any(|t| t.contains("0000000"))
    })?;
    if f.win.last_row_shown() {
        return Err("the end is still on screen after going to the top".into());
    }
    close(f);
    Ok(())
}

fn settings_editor_shows_problems(app: &adw::Application) -> Result<(), String> {
    let f = open_window(app, &demo_config(true))?;
    WidgetExt::activate_action(&f.win, "win.edit-config", None).map_err(|e| e.to_string())?;
    let (window, buffer, save, problems) =
        parley::ui::widgets::config_editor::open_editor().ok_or("the editor did not open")?;
    spin_until("the editor", Duration::from_secs(5), || window.is_mapped())?;
    spin_until("a valid file", Duration::from_secs(5), || save.is_sensitive())?;
    let mut end = buffer.end_iter();
    buffer.insert(&mut end, "oops");
    spin_until(
        "Save to be disabled and a problem listed",
        Duration::from_secs(5),
        || !save.is_sensitive() && problems.first_child().is_some(),
    )?;
    let listed = texts(problems.upcast_ref());
    if !listed.iter().any(|t| t.contains("syntax error")) || !listed.iter().any(|t| t.starts_with("Line 6")) {
        return Err(format!("problems listed: {listed:?}"));
    }
    let tag = buffer.tag_table().lookup("problem").ok_or("no problem tag")?;
    let at = buffer.iter_at_line_offset(5, 0).ok_or("no line 6")?;
    if !at.has_tag(&tag) {
        return Err("the problem is not underlined".into());
    }
    save_png(&window, "04-editor-error")?;
    window.close();
    close(f);
    Ok(())
}

fn dark_style(app: &adw::Application) -> Result<(), String> {
    adw::StyleManager::default().set_color_scheme(adw::ColorScheme::ForceDark);
    let f = open_window(app, &demo_config(true))?;
    select_demo(&f)?;
    type_and_send(&f, "stop end_turn");
    spin_until("the answer", Duration::from_secs(10), || {
        conversation_texts(&f)
            .iter()
            .any(|t| t.contains("Stopping with end_turn"))
    })?;
    if !adw::StyleManager::default().is_dark() {
        return Err("not dark".into());
    }
    save_png(&f.win, "05-dark")?;
    close(f);
    adw::StyleManager::default().set_color_scheme(adw::ColorScheme::Default);
    Ok(())
}

fn slash_command_completion(app: &adw::Application) -> Result<(), String> {
    let f = open_window(app, &demo_config(true))?;
    select_demo(&f)?;
    let imp = f.win.imp();
    // The commands arrive with the first session.
    type_and_send(&f, "echo hi");
    spin_until("the answer", Duration::from_secs(10), || {
        conversation_texts(&f).iter().any(|t| t == "hi")
    })?;
    let completion = imp.completion.get().ok_or("no completion")?;
    imp.composer_text.buffer().set_text("/");
    spin(Duration::from_millis(100));
    if completion.shown() != ["help", "plan", "flood"] {
        return Err(format!(
            "shown for '/': {:?}; the agent's commands: {:?}",
            completion.shown(),
            f.core.chat.commands("demo")
        ));
    }
    save_png(&f.win, "06-slash-commands")?;
    imp.composer_text.buffer().set_text("/fl");
    spin(Duration::from_millis(50));
    if completion.shown() != ["flood"] {
        return Err(format!("shown for '/fl': {:?}", completion.shown()));
    }
    if !completion.key(gtk::gdk::Key::Tab) {
        return Err("Tab did not complete".into());
    }
    let buffer = imp.composer_text.buffer();
    let text = buffer.text(&buffer.start_iter(), &buffer.end_iter(), false);
    if text != "/flood " || !completion.shown().is_empty() {
        return Err(format!("completed to {text:?}"));
    }
    close(f);
    Ok(())
}

/// A `command` notification channel runs its command with the event as JSON
/// on stdin (desktop channels only notify while the window is unfocused).
fn command_channel_gets_the_event(app: &adw::Application) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let sink = dir.path().join("events.jsonl");
    let channel = format!(
        r#"[{{"name": "log", "kind": "command", "events": ["turn-ended"], "command": "/bin/sh", "args": ["-c", "cat >> {}"]}}]"#,
        sink.display()
    );
    let text = demo_config(true).replace(r#""channels": []"#, &format!(r#""channels": {channel}"#));
    let f = open_window(app, &text)?;
    select_demo(&f)?;
    type_and_send(&f, "echo notify me");
    spin_until("the channel's command to run", Duration::from_secs(10), || {
        std::fs::read_to_string(&sink).is_ok_and(|t| t.contains("turn-ended"))
    })?;
    let line = std::fs::read_to_string(&sink).map_err(|e| e.to_string())?;
    let event: serde_json::Value = serde_json::from_str(line.trim()).map_err(|e| format!("{e}: {line}"))?;
    if event["event"] != "turn-ended" || event["agent"] != "demo" {
        return Err(format!("the channel got {event}"));
    }
    close(f);
    Ok(())
}

/// `parley FILE.json` while Parley runs: the running instance opens it (the
/// second launch only forwards its command line, GApplication's way).
fn open_from_the_command_line_in_the_running_instance(_app: &adw::Application) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    std::fs::write(&a, "{\"agents\": []}").map_err(|e| e.to_string())?;
    std::fs::write(&b, "{\"agents\": []}").map_err(|e| e.to_string())?;
    let parley = env!("CARGO_BIN_EXE_parley");
    let launch = |file: &std::path::Path| {
        std::process::Command::new(parley)
            .arg(file)
            .env("XDG_STATE_HOME", dir.path())
            .env("XDG_CONFIG_HOME", dir.path())
            .env("GSETTINGS_BACKEND", "memory")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
    };
    let mut first = launch(&a).map_err(|e| e.to_string())?;
    let recent = dir.path().join("parley/recent.json");
    // The first instance is up once it owns its name; give it a moment.
    std::thread::sleep(Duration::from_millis(1500));
    let second = launch(&b)
        .map_err(|e| e.to_string())?
        .wait_with_output()
        .map_err(|e| e.to_string())?;
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut opened = false;
    while Instant::now() < deadline && !opened {
        opened = std::fs::read_to_string(&recent).is_ok_and(|t| t.contains("b.json"));
        std::thread::sleep(Duration::from_millis(100));
    }
    let first_alive = first.try_wait().map(|s| s.is_none()).unwrap_or(false);
    let _ = first.kill();
    let _ = first.wait();
    if !second.status.success() {
        return Err(format!("the second launch failed: {:?}", second.status));
    }
    if !first_alive {
        return Err("the first instance is gone".into());
    }
    if !opened {
        return Err("the running instance did not open b.json".into());
    }
    Ok(())
}

/// Every button and text field has a name in the accessibility tree (what
/// screen readers read), checked on a real `parley` with pyatspi; and
/// `parley --new-window` opens a second window in the running instance.
fn every_control_has_an_accessible_name(_app: &adw::Application) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let config = dir.path().join("config.json");
    std::fs::write(&config, demo_config(true)).map_err(|e| e.to_string())?;
    let parley = env!("CARGO_BIN_EXE_parley");
    let launch = |args: &[&std::ffi::OsStr]| {
        std::process::Command::new(parley)
            .args(args)
            .env("XDG_STATE_HOME", dir.path())
            .env("GSETTINGS_BACKEND", "memory")
            .env_remove("NO_AT_BRIDGE")
            .env_remove("GTK_A11Y")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
    };
    let mut first = launch(&[config.as_os_str()]).map_err(|e| e.to_string())?;
    std::thread::sleep(Duration::from_millis(2000));
    let _ = launch(&[std::ffi::OsStr::new("--new-window")]).and_then(|c| c.wait_with_output());
    std::thread::sleep(Duration::from_millis(1000));
    let out = std::process::Command::new("/usr/bin/python3")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/a11y-names.py"))
        .output();
    let _ = first.kill();
    let _ = first.wait();
    let out = out.map_err(|e| format!("/usr/bin/python3: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    if text.starts_with("SKIP") {
        println!("    {}", text.trim());
        return Ok(());
    }
    let unnamed: Vec<&str> = text.lines().filter(|l| !l.starts_with("windows:")).collect();
    if !unnamed.is_empty() {
        return Err(format!("controls without a name: {unnamed:?}"));
    }
    if !text.contains("windows: 2") {
        return Err(format!("--new-window did not open a second window: {text}"));
    }
    Ok(())
}

/// In a child process (the locale is the process's): the configuration's
/// `language` switches the window to German.
fn german_from_the_configuration(_app: &adw::Application) -> Result<(), String> {
    let locale = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mo_dir = locale.path().join("de/LC_MESSAGES");
    std::fs::create_dir_all(&mo_dir).map_err(|e| e.to_string())?;
    let po = concat!(env!("CARGO_MANIFEST_DIR"), "/po/de.po");
    let status = std::process::Command::new("msgfmt")
        .arg("-o")
        .arg(mo_dir.join("parley.mo"))
        .arg(po)
        .status()
        .map_err(|e| format!("msgfmt: {e}"))?;
    if !status.success() {
        return Err("msgfmt failed".into());
    }
    let out = std::process::Command::new(std::env::current_exe().map_err(|e| e.to_string())?)
        .arg("--child-german")
        .env("PARLEY_LOCALEDIR", locale.path())
        .env_remove("LANGUAGE")
        .env_remove("LC_ALL")
        .env_remove("LC_MESSAGES")
        .env("LANG", "C")
        .output()
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    if out.status.success() && text.contains("german ok") {
        print!(
            "{}",
            text.lines()
                .filter(|l| l.contains("screenshot"))
                .map(|l| format!("{l}\n"))
                .collect::<String>()
        );
        Ok(())
    } else {
        Err(format!(
            "the child said: {text} {}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn child_german() -> Result<(), String> {
    let text = demo_config(true).replacen("{\n", "{\n  \"language\": \"de_DE\",\n", 1);
    let language = parley::core::config::validate::validate(&text)
        .config
        .ok_or("invalid config")?
        .language;
    parley::i18n::apply_language(Some(&language));
    parley::i18n::init(parley::i18n::LOCALEDIR);
    gtk::init().map_err(|e| e.to_string())?;
    adw::init().map_err(|e| e.to_string())?;
    let app = adw::Application::new(
        Some("io.github.parley.ParleyTestDe"),
        gtk::gio::ApplicationFlags::NON_UNIQUE,
    );
    app.register(gtk::gio::Cancellable::NONE)
        .map_err(|e| e.to_string())?;
    let _hold = app.hold();
    parley::ui::application::load_css();
    let f = open_window(&app, &text)?;
    let shown = texts(f.win.upcast_ref());
    for expected in ["Agenten", "Kein Gespräch ausgewählt", "angehalten"] {
        if !shown.iter().any(|t| t == expected) {
            return Err(format!("{expected:?} not shown; shown: {shown:?}"));
        }
    }
    save_png(&f.win, "07-german")?;
    close(f);
    Ok(())
}

fn main() {
    if std::env::args().any(|a| a == "--child-german") {
        match child_german() {
            Ok(()) => println!("german ok"),
            Err(e) => {
                println!("german failed: {e}");
                std::process::exit(1);
            }
        }
        return;
    }
    if std::env::var_os("DISPLAY").is_none() && std::env::var_os("WAYLAND_DISPLAY").is_none() {
        eprintln!("tests/ui.rs needs a display: run it under `xvfb-run -a dbus-run-session` (see .ci/run)");
        std::process::exit(1);
    }
    let filter: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let state = tempfile::tempdir().expect("tempdir");
    std::env::set_var("GSETTINGS_BACKEND", "memory");
    std::env::set_var("XDG_STATE_HOME", state.path());
    if gtk::init().is_err() || adw::init().is_err() {
        eprintln!("GTK could not be initialised on this display");
        std::process::exit(1);
    }
    let app = adw::Application::new(
        Some("io.github.parley.ParleyTest"),
        gtk::gio::ApplicationFlags::NON_UNIQUE,
    );
    if let Err(e) = app.register(gtk::gio::Cancellable::NONE) {
        eprintln!("cannot register the application: {e}");
        std::process::exit(1);
    }
    let _hold = app.hold();
    parley::ui::application::load_css();
    type Test = fn(&adw::Application) -> Result<(), String>;
    let tests: &[(&str, Test)] = &[
        ("ui::smoke_window_opens_with_an_empty_sidebar", smoke),
        ("ui::demo_turn_with_permission_banner", demo_turn_with_permission),
        ("ui::cancel_a_turn_with_stop", cancel_a_turn),
        (
            "ui::a_long_stream_is_followed_to_its_end",
            a_long_stream_is_followed_to_its_end,
        ),
        (
            "ui::settings_editor_underlines_an_error",
            settings_editor_shows_problems,
        ),
        ("ui::dark_style", dark_style),
        ("ui::slash_command_completion", slash_command_completion),
        ("ui::german_from_the_configuration", german_from_the_configuration),
        (
            "ui::command_channel_gets_the_event",
            command_channel_gets_the_event,
        ),
        (
            "ui::open_from_the_command_line_in_the_running_instance",
            open_from_the_command_line_in_the_running_instance,
        ),
        (
            "ui::every_control_has_an_accessible_name",
            every_control_has_an_accessible_name,
        ),
    ];
    let selected: Vec<&(&str, Test)> = tests
        .iter()
        .filter(|(n, _)| filter.is_empty() || filter.iter().any(|f| n.contains(f.as_str())))
        .collect();
    println!("\nrunning {} tests", selected.len());
    let started = Instant::now();
    let (mut passed, mut failed) = (0, Vec::new());
    for (name, test) in selected {
        match test(&app) {
            Ok(()) => {
                println!("test {name} ... ok");
                passed += 1;
            }
            Err(e) => {
                println!("test {name} ... FAILED\n    {e}");
                failed.push(*name);
            }
        }
    }
    let result = if failed.is_empty() { "ok" } else { "FAILED" };
    println!(
        "\ntest result: {result}. {passed} passed; {} failed; 0 ignored; 0 measured; 0 filtered out; finished in {:.2}s\n",
        failed.len(),
        started.elapsed().as_secs_f64()
    );
    std::process::exit(if failed.is_empty() { 0 } else { 1 });
}
