//! The window under Xvfb, driven as a person would: real widgets, the real
//! demo agent, PNG snapshots of each step in `target/tmp/ui/`.
//!
//! One GTK thread (GTK allows no other), so this is a `harness = false`
//! test with its own small runner and cargo's summary line format.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use adw::prelude::*;
use gtk::glib;
use parley::core::services::{Core, Options};
use parley::ui::widgets::code_block::{code_block, code_of, highlighted};
use parley::ui::widgets::text_block::TextBlock;
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

/// What `widget` draws, as RGBA bytes.
fn pixels(widget: &gtk::Widget) -> Result<Vec<u8>, String> {
    let snapshot = gtk::Snapshot::new();
    let (width, height) = (widget.width(), widget.height());
    gtk::WidgetPaintable::new(Some(widget)).snapshot(&snapshot, f64::from(width), f64::from(height));
    let node = snapshot.to_node().ok_or("nothing was drawn")?;
    let native = widget.native().ok_or("the widget has no native surface")?;
    let texture = native.renderer().ok_or("no renderer")?.render_texture(
        &node,
        Some(&gtk::graphene::Rect::new(0.0, 0.0, width as f32, height as f32)),
    );
    let stride = 4 * texture.width() as usize;
    let mut data = vec![0; stride * texture.height() as usize];
    texture.download(&mut data, stride);
    Ok(data)
}

/// Every label's text below `w`, in order.
fn texts(w: &gtk::Widget) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(l) = w.downcast_ref::<gtk::Label>() {
        out.push(l.text().to_string());
    }
    // A block the pointer has not touched draws its text itself.
    if let Some(b) = w.downcast_ref::<TextBlock>() {
        if !b.has_label() {
            out.push(b.text());
        }
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
        history: Some(dir.path().join("history.sqlite3")),
        ..Default::default()
    })?;
    let model = parley::ui::models::AppModel::new(&core);
    parley::ui::bridge::attach(&model, rx);
    parley::ui::notifier::attach(&model, app);
    let win = ParleyWindow::new(app, &model);
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

/// The demo agent in a sign-in mode (`PARLEY_DEMO_MODE`), in `cwd`.
fn auth_config(mode: &str, cwd: &std::path::Path) -> String {
    format!(
        r#"{{"agents": [{{"name": "demo", "title": "Demo Agent", "command": "{}", "cwd": "{}", "env": {{"PARLEY_DEMO_MODE": "{mode}"}}}}]}}"#,
        env!("CARGO_BIN_EXE_parley-demo-agent"),
        cwd.display()
    )
}

fn wait_sign_in_page(f: &Fixture) -> Result<(), String> {
    spin_until("the sign-in page", Duration::from_secs(20), || {
        let page = f.win.sign_in_page();
        page.active() && page.is_mapped()
    })?;
    // Past the crossfade from the conversation.
    spin(Duration::from_millis(500));
    Ok(())
}

fn sign_in_with_an_agent_method(app: &adw::Application) -> Result<(), String> {
    let cwd = tempfile::tempdir().map_err(|e| e.to_string())?;
    let f = open_window(app, &auth_config("auth-agent", cwd.path()))?;
    select_demo(&f)?;
    type_and_send(&f, "echo after sign-in");
    wait_sign_in_page(&f)?;
    let page = f.win.sign_in_page();
    let shown = texts(page.upcast_ref());
    for expected in [
        "Sign in to Demo Agent",
        "Authentication required",
        "Demo sign-in",
        "Signs in at once",
        "Refused sign-in",
    ] {
        if !shown.iter().any(|t| t == expected) {
            return Err(format!("{expected:?} is not on the page: {shown:?}"));
        }
    }
    let row = texts(&f.win.sidebar());
    if !row.iter().any(|t| t.contains("sign-in needed")) {
        return Err(format!(
            "the sidebar does not say the agent needs a sign-in: {row:?}"
        ));
    }
    save_png(&f.win, "sign-in-page")?;
    adw::StyleManager::default().set_color_scheme(adw::ColorScheme::ForceDark);
    spin(Duration::from_millis(200));
    save_png(&f.win, "sign-in-page-dark")?;
    adw::StyleManager::default().set_color_scheme(adw::ColorScheme::Default);
    // At phone width the page still fits: nothing wider than the window.
    f.win.set_default_size(360, 720);
    spin_until("the narrow layout", Duration::from_secs(5), || {
        f.win.width() <= 400
    })?;
    spin(Duration::from_millis(300));
    if page.width() > f.win.width() {
        return Err(format!(
            "the page is {} px wide in a {} px window",
            page.width(),
            f.win.width()
        ));
    }
    save_png(&f.win, "sign-in-page-narrow")?;
    f.win.set_default_size(1100, 720);
    spin(Duration::from_millis(300));
    // A refusal shows the agent's words and keeps the page, and the
    // keyboard's focus ring on it (issue 47).
    let refuse = page
        .method_button("demo-refuse")
        .ok_or("no button for demo-refuse")?;
    refuse.grab_focus();
    f.win.set_focus_visible(false);
    refuse.emit_clicked();
    spin_until("the refusal", Duration::from_secs(10), || {
        texts(page.upcast_ref())
            .iter()
            .any(|t| t.contains("Wrong password"))
    })?;
    spin_until("the focus ring after the refusal", Duration::from_secs(5), || {
        f.win.gets_focus_visible()
    })?;
    page.method_button("demo-login")
        .ok_or("no button for demo-login")?
        .emit_clicked();
    spin_until("the page to give way", Duration::from_secs(15), || !page.active())?;
    spin_until(
        "the message sent again and answered",
        Duration::from_secs(15),
        || {
            conversation_texts(&f).iter().any(|t| t == "after sign-in")
                && f.win.agent("demo").is_some_and(|a| !a.conversation().answering())
        },
    )?;
    close(f);
    Ok(())
}

fn sign_in_in_a_terminal(app: &adw::Application) -> Result<(), String> {
    let cwd = tempfile::tempdir().map_err(|e| e.to_string())?;
    let f = open_window(app, &auth_config("auth-terminal", cwd.path()))?;
    select_demo(&f)?;
    type_and_send(&f, "echo signed in by terminal");
    wait_sign_in_page(&f)?;
    let page = f.win.sign_in_page();
    page.method_button("demo-terminal")
        .ok_or("no button for demo-terminal")?
        .emit_clicked();
    spin_until("the prompt in the terminal", Duration::from_secs(15), || {
        page.terminal()
            .is_some_and(|t| t.text().contains("Type yes to sign in"))
    })?;
    let terminal = page.terminal().ok_or("no terminal")?;
    // A screen reader gets the prompt too: the terminal's last lines are
    // its accessible description (VTE 0.70 exposes no text).
    spin_until(
        "the prompt given to a screen reader",
        Duration::from_secs(5),
        || terminal.spoken().contains("Type yes to sign in"),
    )?;
    if !terminal.text().starts_with("Demo sign-in for Parley") {
        return Err(format!("the terminal shows {:?}", terminal.text()));
    }
    save_png(&f.win, "sign-in-terminal")?;
    // Its Cancel is on the page as it opens (at 1100×720), not behind the
    // composer or below the fold.
    let cancel = page.method_button("cancel").ok_or("no Cancel")?;
    let at = cancel.compute_bounds(&f.win).ok_or("Cancel has no bounds")?;
    let composer = f
        .win
        .composer()
        .compute_bounds(&f.win)
        .ok_or("no composer bounds")?;
    let shown = page.compute_bounds(&f.win).ok_or("the page has no bounds")?;
    if at.y() + at.height() > composer.y().min(shown.y() + shown.height()) {
        return Err(format!(
            "Cancel at {at:?} is not above the composer at {composer:?} within the page {shown:?}"
        ));
    }
    terminal.feed_child("yes\n");
    spin_until("the page to give way", Duration::from_secs(20), || !page.active())?;
    spin_until("\"Signed in to Demo Agent\" said", Duration::from_secs(5), || {
        parley::ui::a11y::recent_announcements()
            .iter()
            .any(|a| a == "Signed in to Demo Agent")
    })
    .map_err(|e| format!("{e}: {:?}", parley::ui::a11y::recent_announcements()))?;
    spin_until(
        "the message sent again and answered",
        Duration::from_secs(20),
        || {
            conversation_texts(&f)
                .iter()
                .any(|t| t == "signed in by terminal")
        },
    )?;
    close(f);
    Ok(())
}

fn sign_in_with_a_key(app: &adw::Application) -> Result<(), String> {
    if std::env::var("PARLEY_TEST_KEYRING").as_deref() != Ok("1") {
        println!("    SKIPPED: no test keyring (run under build-aux/with-keyring.sh)");
        return Ok(());
    }
    let cwd = tempfile::tempdir().map_err(|e| e.to_string())?;
    let f = open_window(app, &auth_config("auth-env", cwd.path()))?;
    select_demo(&f)?;
    type_and_send(&f, "echo with a key");
    wait_sign_in_page(&f)?;
    let page = f.win.sign_in_page();
    let entry = page
        .key_entry("DEMO_API_KEY")
        .ok_or("no entry for DEMO_API_KEY")?;
    let control = entry.control();
    if !control.is::<gtk::PasswordEntry>() {
        return Err("the key is not asked for in a password entry".into());
    }
    entry.set_value("sk-demo-window-secret");
    // What a screen reader reads of it (its text) holds no part of the key.
    let shown = control
        .downcast_ref::<gtk::Editable>()
        .map(|e| e.text())
        .unwrap_or_default();
    if shown.contains("demo") || shown.chars().count() != "sk-demo-window-secret".len() {
        return Err(format!("the entry's text is not the key's bullets: {shown:?}"));
    }
    if entry.value() != "sk-demo-window-secret" {
        return Err(format!("the key typed is not the key kept: {:?}", entry.value()));
    }
    save_png(&f.win, "sign-in-key")?;
    page.method_button("demo-key")
        .ok_or("no button for demo-key")?
        .emit_clicked();
    spin_until("the page to give way", Duration::from_secs(20), || !page.active())?;
    spin_until(
        "the message sent again and answered",
        Duration::from_secs(20),
        || conversation_texts(&f).iter().any(|t| t == "with a key"),
    )?;
    let agent = f.win.agent("demo").ok_or("no agent")?;
    if !agent.sign_in().has_saved_keys() {
        return Err("the key is not listed as saved".into());
    }
    WidgetExt::activate_action(&f.win, "win.agent-forget-keys", Some(&"demo".to_variant()))
        .map_err(|e| e.to_string())?;
    spin_until("the key forgotten", Duration::from_secs(20), || {
        !agent.sign_in().has_saved_keys()
    })?;
    close(f);
    Ok(())
}

/// claude-agent-acp (from build-aux/install-test-agents.sh): its terminal
/// login starts in the window's terminal and shows its first line.
fn claude_login_in_the_window(app: &adw::Application) -> Result<(), String> {
    let Some(claude) = std::env::var("PARLEY_TEST_AGENTS")
        .ok()
        .map(|c| PathBuf::from(c).join("claude/node_modules/.bin/claude-agent-acp"))
        .filter(|p| p.exists())
    else {
        println!("    SKIPPED: claude-agent-acp is not installed (no npm registry?)");
        return Ok(());
    };
    let home = tempfile::tempdir().map_err(|e| e.to_string())?;
    let config = format!(
        r#"{{"agents": [{{"name": "claude", "title": "Claude", "command": "{}", "cwd": "{}", "env": {{"HOME": "{}", "ANTHROPIC_API_KEY": ""}}}}]}}"#,
        claude.display(),
        home.path().display(),
        home.path().display()
    );
    let f = open_window(app, &config)?;
    spin_until("claude in the sidebar", Duration::from_secs(5), || {
        f.win.model().agents().n_items() == 1
    })?;
    let agent = f.win.agent("claude").ok_or("no agent")?;
    f.win.show_sign_in(&agent);
    let page = f.win.sign_in_page();
    spin_until("claude's methods", Duration::from_secs(60), || {
        page.method_button("claude-ai-login").is_some()
    })?;
    save_png(&f.win, "sign-in-claude-methods")?;
    page.method_button("claude-ai-login")
        .ok_or("no button")?
        .emit_clicked();
    spin_until(
        "claude's first line in the terminal",
        Duration::from_secs(60),
        || {
            page.terminal().is_some_and(|t| {
                t.text()
                    .lines()
                    .any(|l| l.chars().filter(|c| c.is_alphabetic()).count() > 5)
            })
        },
    )?;
    spin(Duration::from_millis(800));
    let first = page.terminal().map(|t| t.text()).unwrap_or_default();
    println!(
        "    claude's login shows: {:?}",
        first.lines().find(|l| !l.trim().is_empty())
    );
    save_png(&f.win, "sign-in-claude-terminal")?;
    page.method_button("cancel").ok_or("no Cancel")?.emit_clicked();
    spin_until("the terminal to go", Duration::from_secs(15), || {
        page.terminal().is_none()
    })?;
    close(f);
    Ok(())
}

/// The VTE terminals below `w`.
fn terminals_in(w: &gtk::Widget) -> Vec<parley::ui::widgets::terminal::Terminal> {
    let mut out = Vec::new();
    parley::ui::a11y::for_each_descendant(w, &mut |c| {
        if c.type_().name() == "VteTerminal" {
            out.push(parley::ui::widgets::terminal::Terminal::from_widget(c.clone()));
        }
    });
    out
}

/// A tool call whose content is an ACP terminal shows it live, with its
/// colours and its exit status.
fn terminal_in_a_tool_card(app: &adw::Application) -> Result<(), String> {
    let f = open_window(app, &demo_config(true))?;
    select_demo(&f)?;
    type_and_send(&f, "terminal-colors");
    let list: gtk::Widget = f.win.conversation_view().message_list().upcast();
    spin_until(
        "the terminal's output in the tool card",
        Duration::from_secs(20),
        || terminals_in(&list).iter().any(|t| t.text().contains("compiled")),
    )?;
    spin_until("the end of the turn", Duration::from_secs(20), || {
        f.win.agent("demo").is_some_and(|a| !a.conversation().answering())
    })?;
    spin_until("the exit status", Duration::from_secs(10), || {
        texts(&list).iter().any(|t| t == "Exited with status 1")
    })?;
    // A card drawn again starts a new view, fed from what was kept.
    let mut shown = String::new();
    let _ = spin_until(
        "the output in the card drawn last",
        Duration::from_secs(5),
        || {
            shown = terminals_in(&list)
                .iter()
                .map(|t| t.text())
                .find(|t| t.contains("error[E0425]"))
                .unwrap_or_default();
            !shown.is_empty()
        },
    );
    for expected in [
        "✔ compiled parley v0.1.0",
        "warning: unused import",
        "error[E0425]",
    ] {
        if !shown.contains(expected) {
            return Err(format!("{expected:?} is not in the terminal: {shown:?}"));
        }
    }
    // Finished, it is as tall as its lines, not a screenful of blank rows.
    spin(Duration::from_millis(300));
    let tallest = terminals_in(&list)
        .iter()
        .filter(|t| t.text().contains("error[E0425]"))
        .map(|t| t.widget().height())
        .max()
        .unwrap_or(0);
    if !(1..=120).contains(&tallest) {
        return Err(format!("a finished terminal of three lines is {tallest} px tall"));
    }
    save_png(&f.win, "terminal-tool-card")?;
    adw::StyleManager::default().set_color_scheme(adw::ColorScheme::ForceDark);
    spin(Duration::from_millis(300));
    save_png(&f.win, "terminal-tool-card-dark")?;
    adw::StyleManager::default().set_color_scheme(adw::ColorScheme::Default);
    close(f);
    Ok(())
}

fn smoke(app: &adw::Application) -> Result<(), String> {
    let f = open_window(app, &demo_config(false))?;
    if f.win.title().as_deref() != Some("Parley") {
        return Err(format!("title {:?}", f.win.title()));
    }
    let page = f.win.sidebar_page();
    if page != "empty" {
        return Err(format!("the Agents sidebar shows {page}, not its empty state"));
    }
    if !texts(&f.win.sidebar()).iter().any(|t| t == "No Agents") {
        return Err("no \"No Agents\" status page".into());
    }
    save_png(&f.win, "01-empty")?;
    close(f);
    Ok(())
}

fn select_demo(f: &Fixture) -> Result<(), String> {
    spin_until("the demo agent in the sidebar", Duration::from_secs(5), || {
        f.win.model().agents().n_items() == 1
    })?;
    f.win.select_agent("demo");
    spin_until("the conversation page", Duration::from_secs(5), || {
        f.win.content_page() == "conversation"
    })
}

fn type_and_send(f: &Fixture, text: &str) {
    f.win.composer().text_view().buffer().set_text(text);
    f.win.composer().send_button().emit_clicked();
}

fn conversation_texts(f: &Fixture) -> Vec<String> {
    texts(f.win.conversation_view().message_list().upcast_ref())
}

/// Calls `each` with the conversation's list on every page of it, from the
/// top down to the end (the list binds only the rows of its page), and
/// leaves it at the top, not following the end.
fn for_each_page(
    f: &Fixture,
    mut each: impl FnMut(&parley::ui::widgets::message_list::MessageList),
) -> Result<(), String> {
    let view = f.win.conversation_view();
    let list = view.message_list();
    let adj = view.scroller().vadjustment();
    view.set_sticky(false);
    adj.set_value(0.0);
    spin(Duration::from_millis(150));
    for _ in 0..200 {
        each(&list);
        if list.last_row_shown() {
            view.set_sticky(false);
            adj.set_value(0.0);
            spin(Duration::from_millis(150));
            return Ok(());
        }
        adj.set_value(adj.value() + adj.page_size() * 0.8);
        spin(Duration::from_millis(100));
    }
    Err("the end of the conversation was not reached in 200 pages".into())
}

fn demo_turn_with_permission(app: &adw::Application) -> Result<(), String> {
    let f = open_window(app, &demo_config(true))?;
    select_demo(&f)?;
    type_and_send(&f, "Please change the greeting");
    spin_until("the permission banner", Duration::from_secs(15), || {
        f.win.permission_banner().is_revealed()
    })?;
    let banner = f.win.permission_banner();
    let labels: Vec<String> = buttons(banner.upcast_ref())
        .iter()
        .filter_map(|b| b.label())
        .map(|l| l.to_string())
        .collect();
    if labels != ["Allow once", "Always allow", "Reject", "Always reject"] {
        return Err(format!("banner buttons {labels:?}"));
    }
    // The reviewer sees the change asked for, not only its title.
    let diffs = banner.diff_titles();
    if !(diffs.len() == 1 && diffs[0].starts_with("Changes to ") && diffs[0].ends_with("/src/greeting.rs")) {
        return Err(format!("the banner shows the diffs {diffs:?}"));
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
        !f.win.permission_banner().is_shown()
    })?;
    spin_until("the end of the turn", Duration::from_secs(20), || {
        f.win.agent("demo").is_some_and(|a| !a.conversation().answering())
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

/// A tool title with a NUL and a right-to-left override: the banner shows
/// both as visible marks (before, the NUL panicked on its way into GTK and
/// the override reversed the file name), and the turn goes on.
fn hostile_permission_title(app: &adw::Application) -> Result<(), String> {
    let f = open_window(app, &demo_config(true))?;
    select_demo(&f)?;
    type_and_send(&f, "permission-hostile");
    spin_until("the permission banner", Duration::from_secs(15), || {
        f.win.permission_banner().is_revealed()
    })?;
    let shown = f.win.permission_banner().text();
    if !shown.contains("file\u{2400}name") || !shown.contains("invoice\u{27E8}U+202E\u{27E9}gnp.exe") {
        return Err(format!("the banner shows {shown:?}"));
    }
    let reject = f
        .win
        .permission_banner()
        .option_buttons()
        .into_iter()
        .find(|b| b.label().as_deref() == Some("Reject"))
        .ok_or("no Reject button")?;
    reject.emit_clicked();
    spin_until("the end of the turn", Duration::from_secs(20), || {
        f.win.agent("demo").is_some_and(|a| !a.conversation().answering())
    })?;
    close(f);
    Ok(())
}

fn cancel_a_turn(app: &adw::Application) -> Result<(), String> {
    let f = open_window(app, &demo_config(true))?;
    select_demo(&f)?;
    type_and_send(&f, "wait");
    spin_until("the turn to run", Duration::from_secs(10), || {
        f.win.agent("demo").is_some_and(|a| a.conversation().answering())
    })?;
    if f.win.composer().send_button().icon_name().as_deref() != Some("media-playback-stop-symbolic") {
        return Err("Send did not turn into Stop".into());
    }
    spin(Duration::from_millis(300));
    f.win.composer().send_button().emit_clicked();
    spin_until("the turn to end", Duration::from_secs(10), || {
        f.win.agent("demo").is_some_and(|a| !a.conversation().answering())
    })?;
    spin(Duration::from_millis(200));
    if !conversation_texts(&f).iter().any(|t| t == "Stopped") {
        return Err(format!("no \"Stopped\": {:?}", conversation_texts(&f)));
    }
    if f.win.composer().send_button().icon_name().as_deref() != Some("mail-send-symbolic") {
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
        whole_flood_in_model(&f, 10_000)
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
    text_blocks_become_labels(&f)?;
    // Back to the top: the first chunks are drawn again, and the view no
    // longer follows.
    let adj = f.win.conversation_view().scroller().vadjustment();
    f.win.conversation_view().set_sticky(false);
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

/// The demo agent's flood of `n` chunks of 40 bytes is all in its last
/// message, and the turn is over.
fn whole_flood_in_model(f: &Fixture, n: usize) -> bool {
    let store = f
        .win
        .agent("demo")
        .and_then(|a| a.conversation().loaded_messages());
    let last = store
        .and_then(|s| s.item(s.n_items().saturating_sub(1)))
        .and_downcast::<parley::ui::models::MessageObject>();
    last.is_some_and(|m| m.text_len() >= n * 40)
        && f.win.agent("demo").is_some_and(|a| !a.conversation().answering())
}

/// While a window shows the model, events are applied in its frames; a
/// hidden window's frame clock does not tick, and the stream still reaches
/// the model (the bridge stops waiting for a frame), then the window.
fn a_hidden_window_still_takes_the_stream(app: &adw::Application) -> Result<(), String> {
    let f = open_window(app, &demo_config(true))?;
    select_demo(&f)?;
    f.win.set_visible(false);
    spin_until("the window to unmap", Duration::from_secs(5), || {
        !f.win.is_mapped()
    })?;
    type_and_send(&f, "flood 2000 40");
    let t = std::time::Instant::now();
    spin_until(
        "the flood in the model of a hidden window",
        Duration::from_secs(20),
        || whole_flood_in_model(&f, 2000),
    )?;
    // A frame that never comes is waited for a tenth of a second a batch.
    if t.elapsed() > Duration::from_secs(5) {
        return Err(format!(
            "the flood took {:?} to reach a hidden window's model",
            t.elapsed()
        ));
    }
    f.win.present();
    spin_until("the last row on screen", Duration::from_secs(10), || {
        f.win.last_row_shown()
    })?;
    if !conversation_texts(&f).iter().any(|t| t.contains("0001999")) {
        return Err("the end of the stream is not shown once the window is back".into());
    }
    close(f);
    Ok(())
}

/// The answer's paragraphs are drawn by text blocks, with no label until
/// the pointer or the focus comes; the label that then takes a block's
/// place holds the same text, selectable, at the same height, so nothing
/// moves.
fn text_blocks_become_labels(f: &Fixture) -> Result<(), String> {
    let mut blocks = Vec::new();
    let list = f.win.conversation_view().message_list();
    parley::ui::a11y::for_each_descendant(list.upcast_ref(), &mut |w| {
        if let Some(b) = w.downcast_ref::<TextBlock>() {
            if b.is_mapped() {
                blocks.push(b.clone());
            }
        }
    });
    if blocks.len() < 2 {
        return Err(format!("{} text blocks on screen", blocks.len()));
    }
    if let Some(b) = blocks.iter().find(|b| b.has_label()) {
        return Err(format!("a block nobody touched has a label: {:?}", b.text()));
    }
    for block in &blocks[..2] {
        // Its width on screen, and narrow ones where words must wrap.
        let widths = [block.width(), 240, 160];
        let heights: Vec<i32> = widths
            .iter()
            .map(|w| block.measure(gtk::Orientation::Vertical, *w).0)
            .collect();
        let text = block.text();
        let label = block.label();
        if label.text() != text || !label.is_selectable() {
            return Err(format!(
                "the label is not the block's text, selectable: {:?}",
                label.text()
            ));
        }
        for (width, height) in widths.iter().zip(&heights) {
            let (label_height, ..) = label.measure(gtk::Orientation::Vertical, *width);
            if label_height != *height || *height < 20 {
                return Err(format!(
                    "at {width} px the block is {height} px high, its label {label_height} px"
                ));
            }
        }
    }
    // The focus that comes to a block goes to its label.
    let last = blocks.last().ok_or("no block")?;
    last.grab_focus();
    let focus = gtk::prelude::GtkWindowExt::focus(&f.win);
    if focus.as_ref() != Some(last.label().upcast_ref()) {
        return Err(format!("the focus is on {focus:?}, not the block's label"));
    }
    Ok(())
}

/// The code block of `a_text_block_draws_as_its_label`, and its text.
const CODE: &str = "```rust\nfn main() {\n    let answer = 42; // the answer\n}\n```";
const CODE_TEXT: &str = "fn main() {\n    let answer = 42; // the answer\n}";

/// A text block draws what the label that takes its place draws, pixel for
/// pixel: left-to-right and right-to-left text, short and wrapped lines,
/// Markdown, links, in the light and the dark style, and in a window laid
/// out right to left. A code block too, whose colours follow the style.
fn a_text_block_draws_as_its_label(_app: &adw::Application) -> Result<(), String> {
    let md = [
        "A short line.",
        "שלום עולם",
        "A longer paragraph with *emphasis*, `code` and **bold** that wraps over more than one line at this width, and then some.",
        "مرحبا بالعالم، هذه فقرة أطول تلتف على أكثر من سطر واحد عند هذا العرض، ثم المزيد من الكلمات.",
        "Sign in at [the site](https://example.org/login) to go on.",
        CODE,
    ];
    let window = gtk::Window::new();
    window.set_default_size(360, 600);
    let column = gtk::Box::new(gtk::Orientation::Vertical, 8);
    window.set_child(Some(&column));
    // The focus starts elsewhere, as in Parley's window (GTK 4.8's label
    // asks where the focus was when it takes it, and warns on none).
    let button = gtk::Button::with_label("Start");
    column.append(&button);
    gtk::prelude::GtkWindowExt::set_focus(&window, Some(&button));
    // A block of each paragraph, appended to the column.
    let new_blocks = || {
        let mut blocks = Vec::new();
        for text in md {
            for block in parley::ui::markdown::render(text) {
                let b = match block {
                    parley::ui::markdown::Block::Markup { markup, links } => TextBlock::new(&markup, links),
                    parley::ui::markdown::Block::Code { lang, text } => highlighted(&lang, &text),
                };
                column.append(&b);
                blocks.push(b);
            }
        }
        blocks
    };
    let mut blocks = new_blocks();
    // A block with a link that stays through every round, laid out in the
    // style and direction before: it must draw as a fresh one does.
    let kept = blocks
        .iter()
        .find(|b| b.markup().contains("<a "))
        .map(|b| TextBlock::new(&b.markup(), Vec::new()))
        .ok_or("no blocks")?;
    column.append(&kept);
    // A code block kept through every round, made in the light style.
    let kept_code = highlighted("rust", CODE_TEXT);
    column.append(&kept_code);
    window.present();
    let manager = adw::StyleManager::default();
    // Put back for the tests after this one, however it ends.
    struct Restore(gtk::Window);
    impl Drop for Restore {
        fn drop(&mut self) {
            adw::StyleManager::default().set_color_scheme(adw::ColorScheme::Default);
            gtk::Widget::set_default_direction(gtk::TextDirection::Ltr);
            self.0.destroy();
        }
    }
    let _restore = Restore(window.clone());
    let mut result = Ok(());
    // Light, dark, and dark in a right-to-left window.
    for (dark, rtl) in [(false, false), (true, false), (true, true)] {
        manager.set_color_scheme(if dark {
            adw::ColorScheme::ForceDark
        } else {
            adw::ColorScheme::ForceLight
        });
        // As in a right-to-left language: the default direction, which
        // widgets of no direction of their own follow.
        gtk::Widget::set_default_direction(if rtl {
            gtk::TextDirection::Rtl
        } else {
            gtk::TextDirection::Ltr
        });
        spin_until("the blocks drawn", Duration::from_secs(5), || {
            blocks.iter().all(|b| b.is_mapped() && b.width() > 0)
        })?;
        spin_until("a frame", Duration::from_millis(300), || false).ok();
        let drawn: Vec<Vec<u8>> = blocks
            .iter()
            .map(|b| pixels(b.upcast_ref()))
            .collect::<Result<_, _>>()?;
        let fresh = blocks
            .iter()
            .zip(&drawn)
            .find(|(b, _)| b.markup() == kept.markup());
        if let Some((_, fresh)) = fresh {
            if pixels(kept.upcast_ref())? != *fresh {
                result = Err(format!(
                    "{} style{}: a block laid out before the change is drawn otherwise than a new one",
                    if dark { "dark" } else { "light" },
                    if rtl { ", right to left" } else { "" }
                ));
            }
        }
        // The kept code block's colours followed the style: it draws as a
        // fresh one does, highlighted.
        let (code, fresh_code) = blocks
            .iter()
            .zip(&drawn)
            .find(|(b, _)| b.has_css_class("code"))
            .ok_or("no code block")?;
        let style = if dark { "dark" } else { "light" };
        save_png(
            &window,
            &format!("13-text-blocks-{style}{}", if rtl { "-rtl" } else { "" }),
        )?;
        if !code.markup().contains("<span foreground=") {
            result = Err(format!(
                "{style} style: the code is not highlighted: {}",
                code.markup()
            ));
        } else if kept_code.markup() != code.markup() {
            result = Err(format!(
                "{style} style: the kept code block's colours did not follow the style"
            ));
        } else if pixels(kept_code.upcast_ref())? != *fresh_code {
            result = Err(format!(
                "{style} style: the kept code block is drawn otherwise than a new one"
            ));
        }
        for (b, before) in blocks.iter().zip(&drawn) {
            let label = b.label();
            spin_until("the label drawn", Duration::from_secs(5), || {
                label.is_mapped() && label.width() > 0
            })?;
            let after = pixels(b.upcast_ref())?;
            let differ = before.iter().zip(&after).filter(|(x, y)| x != y).count();
            if before.len() != after.len() || differ > 0 || before.iter().all(|x| *x == before[0]) {
                result = Err(format!(
                    "{} style{}: {:?} is drawn otherwise by its label: {differ} of {} bytes differ",
                    if dark { "dark" } else { "light" },
                    if rtl { ", right to left" } else { "" },
                    b.text(),
                    before.len()
                ));
            }
        }
        // Fresh blocks for the next round.
        for b in blocks.drain(..) {
            column.remove(&b);
        }
        blocks = new_blocks();
    }
    result
}

/// A code block is a highlighted text block; a long one (over 4 KiB) is a
/// source view, which lays out and highlights only what it shows.
fn a_long_code_block_is_a_source_view(_app: &adw::Application) -> Result<(), String> {
    let short = code_block("rust", CODE_TEXT);
    if !short.is::<TextBlock>() || code_of(&short).as_deref() != Some(CODE_TEXT) {
        return Err(format!(
            "a short block is a {} showing {:?}",
            short.type_(),
            code_of(&short)
        ));
    }
    let long = format!("{CODE_TEXT}\n").repeat(200);
    let view = code_block("rust", &long);
    if !view.is::<gtk::TextView>() || code_of(&view) != Some(long) {
        return Err(format!("a long block is a {}", view.type_()));
    }
    Ok(())
}

/// 2,000 messages in the conversation: its list binds about a page of
/// rows, not hundreds; shows the end, then the top; the arrow keys walk
/// the rows past the page's edge, each brought into view as it takes the
/// focus; rows are children in the order they are read, and are exposed
/// as a list's items.
fn a_long_conversation_binds_only_its_page(app: &adw::Application) -> Result<(), String> {
    use parley::core::types::message::{Message, Part, Role};
    use parley::ui::models::MessageObject;
    let f = open_window(app, &demo_config(true))?;
    select_demo(&f)?;
    let store = f.win.agent("demo").ok_or("no agent")?.conversation().messages();
    let objects: Vec<MessageObject> = (0..2000)
        .map(|i| {
            let role = if i % 2 == 0 { Role::User } else { Role::Agent };
            let mut m = Message::new(format!("m{i}"), "demo", role);
            m.done = true;
            m.parts.push(Part::Text {
                text: format!(
                    "Message number {i:04}: {}",
                    "lorem ipsum dolor sit amet ".repeat(i % 7 + 1)
                ),
            });
            MessageObject::new(m)
        })
        .collect();
    store.splice(0, 0, &objects);
    let view = f.win.conversation_view();
    let list = view.message_list();
    spin_until("the last message on screen", Duration::from_secs(10), || {
        list.last_row_shown()
    })?;
    spin(Duration::from_millis(300));
    let shown = |list: &parley::ui::widgets::message_list::MessageList| -> Vec<String> {
        list.bound_rows()
            .iter()
            .filter_map(|(r, _)| r.message().map(|m| m.id()))
            .collect()
    };
    let bound = list.bound_rows().len();
    if bound > 80 {
        return Err(format!("{bound} rows are bound for one page of 2,000 messages"));
    }
    if !shown(&list).iter().any(|id| id == "m1999") {
        return Err(format!("the last message is not bound: {:?}", shown(&list)));
    }
    if list.property::<gtk::AccessibleRole>("accessible-role") != gtk::AccessibleRole::List {
        return Err(format!(
            "the list's role is {:?}",
            list.property::<gtk::AccessibleRole>("accessible-role")
        ));
    }
    // To the top.
    view.set_sticky(false);
    view.scroller().vadjustment().set_value(0.0);
    spin_until("the first message on screen", Duration::from_secs(5), || {
        conversation_texts(&f)
            .iter()
            .any(|t| t.contains("Message number 0000"))
    })?;
    if list.last_row_shown() {
        return Err("the end is still on screen at the top".into());
    }
    let first = list
        .bound_rows()
        .into_iter()
        .find(|(r, _)| r.message().is_some_and(|m| m.id() == "m0"))
        .map(|(_, w)| w)
        .ok_or("the first row is not bound")?;
    if first.property::<gtk::AccessibleRole>("accessible-role") != gtk::AccessibleRole::ListItem {
        return Err(format!(
            "a row's role is {:?}",
            first.property::<gtk::AccessibleRole>("accessible-role")
        ));
    }
    first.grab_focus();
    // Down, forty rows: far past the first page.
    for k in 1..=40 {
        list.child_focus(gtk::DirectionType::Down);
        spin(Duration::from_millis(40));
        let focus = gtk::prelude::GtkWindowExt::focus(&f.win).ok_or("no focus")?;
        let row = focus
            .downcast_ref::<parley::ui::widgets::MessageRow>()
            .ok_or_else(|| format!("the focus is on a {}", focus.type_().name()))?;
        let id = row
            .row()
            .and_then(|r| r.message())
            .map(|m| m.id())
            .unwrap_or_default();
        if id != format!("m{k}") {
            return Err(format!("Down {k} times focused {id}"));
        }
        let b = row.compute_bounds(&list).ok_or("the focused row has no bounds")?;
        if b.y() < -0.5 || b.y() + b.height() > list.height() as f32 + 0.5 {
            return Err(format!(
                "row m{k} is not in view: {}..{} of {}",
                b.y(),
                b.y() + b.height(),
                list.height()
            ));
        }
    }
    list.child_focus(gtk::DirectionType::Up);
    spin(Duration::from_millis(40));
    let back = gtk::prelude::GtkWindowExt::focus(&f.win)
        .and_downcast::<parley::ui::widgets::MessageRow>()
        .and_then(|r| r.row())
        .and_then(|r| r.message())
        .map(|m| m.id());
    if back.as_deref() != Some("m39") {
        return Err(format!("Up focused {back:?}"));
    }
    // The children in reading order.
    let mut order = Vec::new();
    let mut child = list.first_child();
    while let Some(c) = child {
        if c.is_child_visible() {
            if let Some(n) = c
                .downcast_ref::<parley::ui::widgets::MessageRow>()
                .and_then(|r| r.row())
                .and_then(|r| r.message())
                .and_then(|m| m.id()[1..].parse::<u32>().ok())
            {
                order.push(n);
            }
        }
        child = c.next_sibling();
    }
    if order.is_empty() || order.windows(2).any(|w| w[0] > w[1]) {
        return Err(format!("the rows are not in order: {order:?}"));
    }
    save_png(&f.win, "24-long-conversation-keyboard")?;
    close(f);
    Ok(())
}

/// The code of every code block below `w`, in order.
fn code_texts(w: &gtk::Widget) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(code) = code_of(w) {
        out.push(code);
    }
    let mut child = w.first_child();
    while let Some(c) = child {
        out.extend(code_texts(&c));
        child = c.next_sibling();
    }
    out
}

/// Every label's markup and tooltip below `w`.
fn markups(w: &gtk::Widget) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(l) = w.downcast_ref::<gtk::Label>() {
        out.push(l.label().to_string());
        if let Some(t) = l.tooltip_text() {
            out.push(t.to_string());
        }
    }
    if let Some(b) = w.downcast_ref::<TextBlock>() {
        // The label that takes its place as the pointer comes, walked
        // below.
        b.label();
    }
    let mut child = w.first_child();
    while let Some(c) = child {
        out.extend(markups(&c));
        child = c.next_sibling();
    }
    out
}

/// Sends `text-fixture NAME` to the demo agent and waits until the answer
/// is over and its last row drawn on screen.
fn answer_fixture(f: &Fixture, name: &str) -> Result<(), String> {
    let messages = || {
        f.win
            .agent("demo")
            .and_then(|a| a.conversation().loaded_messages())
            .map_or(0, |s| s.n_items())
    };
    let before = messages();
    type_and_send(f, &format!("text-fixture {name}"));
    // The question and the answer.
    spin_until("the fixture's answer", Duration::from_secs(15), || {
        messages() >= before + 2 && f.win.agent("demo").is_some_and(|a| !a.conversation().answering())
    })?;
    spin_until("the last row on screen", Duration::from_secs(10), || {
        f.win.last_row_shown()
    })?;
    spin(Duration::from_millis(300));
    Ok(())
}

/// The four code blocks of the `four-fences` fixture, as Markdown reads
/// them (see `src/demo_agent/hostile_text.rs`).
const FOUR_FENCES: [&str; 4] = [
    "fn alpha_block() {}",
    "# beta_block\n```sh\nmake beta\n```",
    "```\ngamma_block",
    "delta_block",
];

/// Checks that the conversation shows the four code blocks of the
/// `four-fences` fixture in their views, and no other.
fn four_fences_drawn(f: &Fixture, png: &str) -> Result<(), String> {
    let view = f.win.conversation_view().message_list();
    spin_until("four code blocks drawn", Duration::from_secs(10), || {
        code_texts(view.upcast_ref()).len() >= 4
    })
    .map_err(|e| format!("{e}: {:?}", code_texts(view.upcast_ref())))?;
    save_png(&f.win, png)?;
    let code = code_texts(view.upcast_ref());
    if code != FOUR_FENCES {
        return Err(format!("the code blocks hold {code:?}, not {FOUR_FENCES:?}"));
    }
    let shown = conversation_texts(f);
    for prose in ["A README shows its own fence:", "is inline code", "The end."] {
        if !shown.iter().any(|t| t.contains(prose)) {
            return Err(format!("{prose:?} is not shown: {shown:?}"));
        }
    }
    Ok(())
}

/// An answer of four fenced code blocks that arrives in one chunk: each
/// block's view holds its code, and the same answer streamed in pieces is
/// drawn the same. Fences that only look like fences (inside a longer
/// fence, backticks in a tilde block, inline triple backticks) used to end
/// a row, which drew an empty code block.
fn code_blocks_of_a_whole_message_show_their_code(app: &adw::Application) -> Result<(), String> {
    for (answer, png) in [
        ("text-fixture four-fences", "09-four-fences"),
        ("text-fixture four-fences pieces", "09-four-fences-streamed"),
    ] {
        let f = open_window(app, &demo_config(true))?;
        select_demo(&f)?;
        type_and_send(&f, answer);
        spin_until("the answer", Duration::from_secs(15), || {
            conversation_texts(&f).iter().any(|t| t == "The end.")
                && f.win.agent("demo").is_some_and(|a| !a.conversation().answering())
        })?;
        spin_until("the last row on screen", Duration::from_secs(10), || {
            f.win.last_row_shown()
        })?;
        four_fences_drawn(&f, png).map_err(|e| format!("{answer}: {e}"))?;
        close(f);
    }
    Ok(())
}

/// Whether `c` is a character that must never reach a widget raw: a
/// control character other than a line break or tab, or a character that
/// reorders text (bidirectional controls).
fn hidden_char(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// Agent text with NUL and other control characters, or with
/// bidirectional overrides, in a message, a thought, a plan entry and a
/// tool call (title, location, diff, output): the view keeps working and
/// shows each such character visibly, never raw.
fn control_and_bidi_characters_are_shown_visibly(app: &adw::Application) -> Result<(), String> {
    let f = open_window(app, &demo_config(true))?;
    select_demo(&f)?;
    answer_fixture(&f, "nul")?;
    answer_fixture(&f, "bidi")?;
    // The view still follows new answers after them.
    type_and_send(&f, "echo still alive");
    spin_until("the next answer", Duration::from_secs(10), || {
        conversation_texts(&f).iter().any(|t| t == "still alive")
    })?;
    // The list lays out only the rows on its page: it is read a page at
    // a time from the top, with collapsed parts (the thought) opened.
    let view = f.win.conversation_view().message_list();
    let mut all = Vec::new();
    let mut first_page = true;
    for_each_page(&f, |view| {
        let mut expanders = Vec::new();
        let mut stack = vec![view.clone().upcast::<gtk::Widget>()];
        while let Some(w) = stack.pop() {
            if let Ok(e) = w.clone().downcast::<gtk::Expander>() {
                expanders.push(e);
            }
            let mut child = w.first_child();
            while let Some(c) = child {
                stack.push(c.clone());
                child = c.next_sibling();
            }
        }
        for e in &expanders {
            e.set_expanded(true);
        }
        spin(Duration::from_millis(200));
        if std::mem::take(&mut first_page) {
            let _ = save_png(&f.win, "10-hostile-text");
        }
        all.extend(texts(view.upcast_ref()));
        all.extend(code_texts(view.upcast_ref()));
        all.extend(markups(view.upcast_ref()));
    })?;
    if view.last_row_shown() {
        return Err("the view stayed at the end while paging from the top".into());
    }
    if let Some(raw) = all.iter().find(|t| t.chars().any(hidden_char)) {
        return Err(format!("a raw control character is shown: {raw:?}"));
    }
    let joined = all.join("\n");
    for expected in [
        "nul:[\u{2400}]",
        "bell:[\u{2407}]",
        "esc:[\u{241B}[31m]",
        "del:[\u{2421}]",
        "inline\u{2400}code",
        "block\u{2400}code\u{241B}",
        "thinking about file\u{2400}name",
        "Rename invoice",
        "Edit invoice",
        "output invoice",
        "U+202E",
    ] {
        if !joined.contains(expected) {
            return Err(format!("{expected:?} is not shown; shown: {all:?}"));
        }
    }
    if !joined.contains("nel:[\u{27E8}U+0085\u{27E9}]") {
        return Err(format!("the C1 control is not shown visibly: {all:?}"));
    }
    close(f);
    Ok(())
}

/// Activates the link to `target` in `label` as a click does: a
/// confirmation must show the link's text and its target; Cancel closes it.
/// The dialog is let go before its window closes (GTK 4.8 warns when a
/// dialog outlives the window it belongs to).
fn confirm_and_cancel(label: &gtk::Label, target: &str) -> Result<(), String> {
    let before = gtk::Window::list_toplevels().len();
    let handled: bool = label.emit_by_name("activate-link", &[&target]);
    if !handled {
        return Err("the link was opened without asking".into());
    }
    let mut dialog = None;
    spin_until("the confirmation", Duration::from_secs(5), || {
        dialog = gtk::Window::list_toplevels()
            .into_iter()
            .find_map(|w| w.downcast::<adw::MessageDialog>().ok());
        dialog.is_some()
    })?;
    let dialog = dialog.ok_or("no confirmation")?;
    let body = dialog.body().to_string();
    if !body.contains(target) || !body.contains("https://github.com") {
        return Err(format!("the confirmation does not show both addresses: {body:?}"));
    }
    save_png(&dialog, "12-confirm-link")?;
    let cancel = buttons(dialog.upcast_ref())
        .into_iter()
        .find(|b| b.label().is_some_and(|l| l.replace('_', "") == "Cancel"))
        .ok_or("no Cancel button")?;
    cancel.emit_clicked();
    spin_until("the confirmation to close", Duration::from_secs(5), || {
        gtk::Window::list_toplevels().len() <= before
    })?;
    Ok(())
}

/// A link whose text is a URL other than its target: the real target is
/// the link's tooltip, and following it asks first, showing where it leads.
fn a_misleading_link_shows_its_real_target(app: &adw::Application) -> Result<(), String> {
    let f = open_window(app, &demo_config(true))?;
    select_demo(&f)?;
    answer_fixture(&f, "link")?;
    let target = "https://evil.example/login";
    let view = f.win.conversation_view().message_list();
    let mut found = None;
    let mut stack = vec![view.clone().upcast::<gtk::Widget>()];
    while let Some(w) = stack.pop() {
        // As the pointer comes over it, the block becomes a label with
        // its links.
        if let Some(b) = w.downcast_ref::<TextBlock>() {
            if b.text().contains("Sign in at") {
                found = Some(b.clone());
            }
        }
        let mut child = w.first_child();
        while let Some(c) = child {
            stack.push(c.clone());
            child = c.next_sibling();
        }
    }
    let block =
        found.ok_or_else(|| format!("the link's paragraph is not shown: {:?}", conversation_texts(&f)))?;
    // Drawn by the block itself until the pointer comes, then by the label
    // in its place: the same pixels, link colour and underline included.
    save_png(&f.win, "11-link-drawn")?;
    let drawn = pixels(block.upcast_ref())?;
    let label = block.label();
    spin_until("the label drawn", Duration::from_secs(5), || {
        label.is_mapped() && label.width() > 0
    })?;
    let by_label = pixels(block.upcast_ref())?;
    let differ = drawn.iter().zip(&by_label).filter(|(a, b)| a != b).count();
    if drawn.len() != by_label.len() || differ > 0 {
        return Err(format!(
            "the label draws the text otherwise: {differ} of {} bytes differ",
            drawn.len()
        ));
    }
    // GtkLabel shows a link's title as its tooltip (and sets has-tooltip
    // only when one of its links has a title).
    let markup = label.label().to_string();
    if !markup.contains(&format!("title=\"{target}\"")) || !label.has_tooltip() {
        return Err(format!("the link's tooltip is not its target: {markup:?}"));
    }
    save_png(&f.win, "11-misleading-link")?;
    confirm_and_cancel(&label, target)?;
    close(f);
    Ok(())
}

fn settings_editor_shows_problems(app: &adw::Application) -> Result<(), String> {
    let f = open_window(app, &demo_config(true))?;
    WidgetExt::activate_action(&f.win, "win.edit-config", None).map_err(|e| e.to_string())?;
    let editor = f.win.config_editor().ok_or("the editor did not open")?;
    let window = editor.window();
    let (buffer, save, problems) = editor.parts();
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
    // Quitting (Ctrl+Q) with unsaved edits asks instead of quitting, and
    // so does closing; Discard then closes.
    if parley::ui::application::quit_or_ask(app) {
        return Err("Parley quit over unsaved edits".into());
    }
    spin(Duration::from_millis(200));
    let asked = gtk::Window::list_toplevels()
        .into_iter()
        .filter_map(|w| w.downcast::<adw::MessageDialog>().ok())
        .filter(|d| d.transient_for().as_ref() == Some(window.upcast_ref::<gtk::Window>()))
        .collect::<Vec<_>>();
    if asked.len() != 1 {
        return Err(format!("quitting asked {} time(s)", asked.len()));
    }
    asked[0].response("cancel");
    spin(Duration::from_millis(100));
    window.close();
    spin(Duration::from_millis(200));
    if !window.is_visible() {
        return Err("the editor closed with unsaved edits without asking".into());
    }
    let dialog = gtk::Window::list_toplevels()
        .into_iter()
        .filter_map(|w| w.downcast::<adw::MessageDialog>().ok())
        .find(|d| d.transient_for().as_ref() == Some(window.upcast_ref::<gtk::Window>()))
        .ok_or("no Save Changes? dialog")?;
    if dialog.is_response_enabled("save") {
        return Err("Save is offered for an invalid configuration".into());
    }
    dialog.response("discard");
    spin_until("the editor to close", Duration::from_secs(5), || {
        !window.is_visible()
    })?;
    close(f);
    Ok(())
}

/// From phone to ultrawide, light and dark: nothing grows the window, the
/// permission options lie inside it at 360 px, and at 1920 px the
/// conversation is clamped to a readable width.
fn layout_from_phone_to_wide(app: &adw::Application) -> Result<(), String> {
    let f = open_window(app, &demo_config(true))?;
    select_demo(&f)?;
    type_and_send(&f, "Please change the greeting");
    let banner = f.win.permission_banner();
    spin_until("the permission banner", Duration::from_secs(15), || {
        banner.is_revealed()
    })?;
    let style = adw::StyleManager::default();
    for (width, dark) in [(360, false), (360, true), (1920, false), (1920, true)] {
        style.set_color_scheme(if dark {
            adw::ColorScheme::ForceDark
        } else {
            adw::ColorScheme::ForceLight
        });
        f.win.set_default_size(width, 720);
        // Without a window manager X11 may leave a few pixels to the
        // frame; what matters is that nothing grows the window.
        let near = |w: i32| w <= width && w >= width - 16;
        spin_until(&format!("the new width {width}"), Duration::from_secs(5), || {
            near(f.win.width())
        })
        .map_err(|e| format!("{e} (the window is {} px)", f.win.width()))?;
        spin(Duration::from_millis(400));
        if !near(f.win.width()) {
            return Err(format!(
                "asked for {width} px, the window is {} px",
                f.win.width()
            ));
        }
        for b in banner.option_buttons() {
            let bounds = b.compute_bounds(&f.win).ok_or("an option has no bounds")?;
            let right = f.win.width() as f32 + 0.5;
            if !b.is_mapped() || bounds.x() < 0.0 || bounds.x() + bounds.width() > right {
                return Err(format!(
                    "at {width} px, {:?} lies at {}..{}",
                    b.label(),
                    bounds.x(),
                    bounds.x() + bounds.width()
                ));
            }
        }
        let list = f.win.conversation_view().message_list();
        if width == 1920 && list.width() > 1000 {
            return Err(format!("at 1920 px the conversation is {} px wide", list.width()));
        }
        let name = format!("08-{width}-{}", if dark { "dark" } else { "light" });
        save_png(&f.win, &name)?;
    }
    style.set_color_scheme(adw::ColorScheme::Default);
    f.win.set_default_size(1100, 720);
    let reject = banner
        .option_buttons()
        .into_iter()
        .find(|b| b.label().as_deref() == Some("Reject"))
        .ok_or("no Reject")?;
    reject.emit_clicked();
    spin_until("the end of the turn", Duration::from_secs(20), || {
        f.win.agent("demo").is_some_and(|a| !a.conversation().answering())
    })?;
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
    // The commands arrive with the first session.
    type_and_send(&f, "echo hi");
    spin_until("the answer", Duration::from_secs(10), || {
        conversation_texts(&f).iter().any(|t| t == "hi")
    })?;
    let completion = f.win.composer().completion().ok_or("no completion")?;
    f.win.composer().text_view().buffer().set_text("/");
    spin(Duration::from_millis(100));
    if completion.shown() != ["help", "plan", "flood"] {
        return Err(format!(
            "shown for '/': {:?}; the agent's commands: {:?}",
            completion.shown(),
            f.core.chat.commands("demo")
        ));
    }
    save_png(&f.win, "06-slash-commands")?;
    f.win.composer().text_view().buffer().set_text("/fl");
    spin(Duration::from_millis(50));
    if completion.shown() != ["flood"] {
        return Err(format!("shown for '/fl': {:?}", completion.shown()));
    }
    if !completion.key(gtk::gdk::Key::Tab) {
        return Err("Tab did not complete".into());
    }
    let buffer = f.win.composer().text_view().buffer();
    let text = buffer.text(&buffer.start_iter(), &buffer.end_iter(), false);
    if text != "/flood " || !completion.shown().is_empty() {
        return Err(format!("completed to {text:?}"));
    }
    close(f);
    Ok(())
}

/// Widgets below `w` of type `T`, in order.
fn descendants<T: IsA<gtk::Widget>>(w: &gtk::Widget) -> Vec<T> {
    let mut out = Vec::new();
    let mut child = w.first_child();
    while let Some(c) = child {
        if let Ok(t) = c.clone().downcast::<T>() {
            out.push(t);
        }
        out.extend(descendants::<T>(&c));
        child = c.next_sibling();
    }
    out
}

/// The composer's picker of option `id` (named `option-ID`).
fn picker(f: &Fixture, id: &str) -> Option<gtk::Widget> {
    let name = format!("option-{id}");
    descendants::<gtk::Widget>(f.win.composer().options_box().upcast_ref())
        .into_iter()
        .find(|w| w.widget_name() == name)
}

/// Opens a select picker and activates the choice labelled `choice`.
fn choose(f: &Fixture, id: &str, choice: &str, png: Option<&str>) -> Result<(), String> {
    let button = picker(f, id)
        .and_then(|w| w.downcast::<gtk::MenuButton>().ok())
        .ok_or(format!("no picker {id}"))?;
    // Insensitive while an earlier change waits for the agent's answer.
    spin_until("the picker free", Duration::from_secs(5), || {
        button.is_sensitive()
    })?;
    button.popup();
    let popover = button.popover().ok_or("no popover")?;
    spin_until("the popover", Duration::from_secs(3), || popover.is_mapped())?;
    spin(Duration::from_millis(200));
    if let Some(png) = png {
        save_png(&popover, png)?;
    }
    let row = descendants::<gtk::ListBoxRow>(popover.upcast_ref())
        .into_iter()
        .find(|r| texts(r.upcast_ref()).first().is_some_and(|t| t == choice))
        .ok_or(format!("no choice {choice} in {id}"))?;
    row.emit_by_name::<()>("activate", &[]);
    Ok(())
}

fn picker_says(f: &Fixture, id: &str) -> String {
    picker(f, id)
        .map(|w| {
            let t = texts(&w);
            t.join(" ")
        })
        .unwrap_or_default()
}

/// Issue 17 in the window: the demo agent's pickers (select and boolean),
/// a refusal, two attachments as chips, an @-mention, and what was sent.
fn pickers_and_attachments(app: &adw::Application) -> Result<(), String> {
    let cwd = tempfile::tempdir().map_err(|e| e.to_string())?;
    let notes = cwd.path().join("notes.md");
    std::fs::write(&notes, "# Notes\nThe plan.\n").map_err(|e| e.to_string())?;
    std::fs::create_dir_all(cwd.path().join("src")).map_err(|e| e.to_string())?;
    std::fs::write(cwd.path().join("src/controls.rs"), "// x\n").map_err(|e| e.to_string())?;
    let f = open_window(app, &auth_config("images,embedded", cwd.path()))?;
    select_demo(&f)?;
    parley::ui::runtime::runtime()
        .block_on(f.core.agents.start("demo"))
        .map_err(|e| e.to_string())?;
    spin_until("the pickers", Duration::from_secs(10), || {
        picker(&f, "model").is_some() && picker(&f, "brief").is_some()
    })?;
    let said = picker_says(&f, "model");
    if !said.contains("Demo Mini") {
        return Err(format!("the model picker says {said:?}"));
    }
    // Its tooltip starts with what its accessible name says.
    let tip = picker(&f, "model")
        .and_then(|w| w.tooltip_text())
        .unwrap_or_default();
    if !tip.starts_with("Model: Demo Mini") {
        return Err(format!("the model picker tells {tip:?}"));
    }
    save_png(&f.win, "17-pickers")?;
    choose(&f, "model", "Demo Large", Some("17-model-picker-open"))?;
    spin_until("Demo Large shown", Duration::from_secs(5), || {
        picker_says(&f, "model").contains("Demo Large")
    })?;
    // A refusal leaves the old value.
    choose(&f, "model", "Demo Unavailable", None)?;
    spin(Duration::from_millis(800));
    if !picker_says(&f, "model").contains("Demo Large") {
        return Err(format!(
            "after a refusal the picker says {:?}",
            picker_says(&f, "model")
        ));
    }
    let brief = picker(&f, "brief")
        .and_then(|w| w.downcast::<gtk::ToggleButton>().ok())
        .ok_or("no brief toggle")?;
    brief.set_active(true);
    spin_until("brief on", Duration::from_secs(5), || {
        f.core
            .chat
            .options("demo")
            .iter()
            .any(|o| o.id == "brief" && o.current_text() == "true")
    })?;

    // Two attachments: a file dropped on the conversation, and a picture
    // pasted into the composer.
    let composer = f.win.composer();
    // (The drop target's own signal cannot be emitted without a drag under
    // way: GTK asks the pointer's surface. What it hands on is the same.)
    let has_target = f
        .win
        .conversation_view()
        .observe_controllers()
        .iter::<glib::Object>()
        .flatten()
        .any(|c| c.is::<gtk::DropTarget>());
    let files = gtk::gdk::FileList::from_array(&[gtk::gio::File::for_path(&notes)]);
    if !has_target || !composer.take_drop(&files.to_value()) || composer.pending().len() != 1 {
        return Err(format!(
            "drop target: {has_target}; {} attachments",
            composer.pending().len()
        ));
    }
    let texture = gtk::gdk::Texture::from_bytes(&glib::Bytes::from_static(include_bytes!(
        "../data/icons/hicolor/scalable/apps/io.github.parley.Parley.svg"
    )))
    .map_err(|e| e.to_string())?;
    let text_view = composer.text_view();
    text_view.clipboard().set_texture(&texture);
    text_view.emit_by_name::<()>("paste-clipboard", &[]);
    spin_until("the pasted picture", Duration::from_secs(5), || {
        composer.pending().len() == 2
    })?;
    let typed = text_view.buffer().text(
        &text_view.buffer().start_iter(),
        &text_view.buffer().end_iter(),
        false,
    );
    if !typed.is_empty() {
        return Err(format!("the paste also wrote {typed:?}"));
    }
    // An @-mention becomes a third.
    let mentions = composer.mentions().ok_or("no mention completion")?;
    composer.text_view().buffer().set_text("Read @ctrl");
    spin_until("the file completion", Duration::from_secs(5), || {
        mentions.shown() == ["src/controls.rs"]
    })?;
    save_png(&f.win, "17-mention-completion")?;
    mentions.key(gtk::gdk::Key::Tab);
    let buffer = composer.text_view().buffer();
    let typed = buffer.text(&buffer.start_iter(), &buffer.end_iter(), false);
    if typed != "Read @src/controls.rs " || composer.pending().len() != 3 {
        return Err(format!(
            "after the mention: {typed:?}, {} attachments",
            composer.pending().len()
        ));
    }
    save_png(&f.win, "17-composer-attachments")?;
    let chips = descendants::<gtk::Button>(composer.upcast_ref())
        .into_iter()
        .filter(|b| {
            b.tooltip_text()
                .is_some_and(|t| t.starts_with("Remove attachment"))
        })
        .count();
    if chips != 3 {
        return Err(format!("{chips} removable chips"));
    }
    buffer.set_text("received");
    composer.send_button().emit_clicked();
    spin_until("the answer", Duration::from_secs(10), || {
        conversation_texts(&f)
            .iter()
            .any(|t| t.contains("blocks: text | resource"))
    })?;
    let answer = conversation_texts(&f)
        .into_iter()
        .find(|t| t.contains("blocks:"))
        .unwrap_or_default();
    for want in [
        "resource file:///",
        "image image/png",
        "resource_link controls.rs",
        r#""model":"demo-large""#,
    ] {
        if !answer.contains(want) {
            return Err(format!("{want} not in {answer:?}"));
        }
    }
    if !composer.pending().is_empty() {
        return Err("the chips stayed after sending".into());
    }
    spin(Duration::from_millis(300));
    save_png(&f.win, "17-sent-attachments")?;

    // The session's title and cost in the header.
    spin_until("the answer's end", Duration::from_secs(10), || {
        f.win
            .model()
            .agents()
            .item(0)
            .and_downcast::<parley::ui::models::AgentObject>()
            .is_some_and(|a| !a.conversation().answering())
    })?;
    type_and_send(&f, "session-info Fix the build");
    spin_until("the title", Duration::from_secs(10), || {
        f.win
            .model()
            .agents()
            .item(0)
            .and_downcast::<parley::ui::models::AgentObject>()
            .is_some_and(|a| a.session().session_title() == "Fix the build")
    })?;
    // Send turns into Stop while the agent answers: wait for the turn's end.
    let demo = || {
        f.win
            .model()
            .agents()
            .item(0)
            .and_downcast::<parley::ui::models::AgentObject>()
    };
    spin_until("the turn's end", Duration::from_secs(10), || {
        demo().is_some_and(|a| !a.conversation().answering())
    })?;
    type_and_send(&f, "cost 0.42");
    spin_until("the cost", Duration::from_secs(10), || {
        f.win
            .model()
            .agents()
            .item(0)
            .and_downcast::<parley::ui::models::AgentObject>()
            .is_some_and(|a| a.session().cost() == "0.42 USD")
    })?;
    spin(Duration::from_millis(300));
    let header = texts(f.win.upcast_ref());
    for want in ["Fix the build", "Context 3 % · 0.42 USD"] {
        if !header.iter().any(|t| t == want) {
            return Err(format!("{want:?} is not shown"));
        }
    }
    save_png(&f.win, "17-title-and-cost")?;
    // Narrow and dark: the pickers wrap under the message field.
    adw::StyleManager::default().set_color_scheme(adw::ColorScheme::ForceDark);
    f.win.set_default_size(360, 720);
    spin(Duration::from_millis(800));
    save_png(&f.win, "17-pickers-narrow-dark")?;
    adw::StyleManager::default().set_color_scheme(adw::ColorScheme::Default);
    close(f);
    Ok(())
}

/// claude-agent-acp's own pickers in the window, and Sonnet chosen.
fn descendant_search_entry(w: &gtk::Widget) -> Option<gtk::SearchEntry> {
    descendants::<gtk::SearchEntry>(w).into_iter().next()
}

/// Sends `echo WORDS` and waits for the answer (the words, twice shown).
fn send_and_wait(f: &Fixture, text: &str) -> Result<(), String> {
    type_and_send(f, text);
    let answer = text.trim_start_matches("echo ").to_owned();
    spin_until("the answer", Duration::from_secs(20), || {
        conversation_texts(f)
            .iter()
            .filter(|t| t.contains(&answer))
            .count()
            >= 2
            && f.win.agent("demo").is_some_and(|a| !a.conversation().answering())
    })
}

/// Issue 16 in the window: the sidebar lists 1,000 conversations fast,
/// New and Open switch, a conversation the agent cannot take up again is
/// read-only with "Continue in a New Conversation", search finds a word
/// and jumps to it, and Ctrl+F finds in the conversation.
fn conversations_list_search_and_find(app: &adw::Application) -> Result<(), String> {
    use parley::core::history::Op;
    use parley::core::types::message::{Message, Part, Role};
    let f = open_window(app, &demo_config(true))?;
    select_demo(&f)?;
    // A thousand older conversations, as months of use leave them.
    let history = f.core.history.store().ok_or("no history")?;
    let config = f.core.config.current().path;
    for i in 0..1000 {
        let id = format!("old-{i:04}");
        history.writer().send(Op::Conversation {
            id: id.clone(),
            config: config.clone(),
            agent: "demo".into(),
            created_at: "2026-06-01T10:00:00.000Z".into(),
        });
        let mut m = Message::new(format!("m{i}"), "demo", Role::User);
        m.parts.push(Part::Text {
            text: format!("Old question number {i} about the parser"),
        });
        history.writer().send(Op::Message {
            conversation: id,
            message: m,
        });
    }
    history.writer().flush()?;
    let list = f.win.conversation_list();
    let started = Instant::now();
    list.refresh();
    spin_until("1,000 conversations listed", Duration::from_secs(10), || {
        list.titles().len() == 1000
    })?;
    let listed = started.elapsed();
    println!("    1,000 conversations listed in {listed:?}");
    if listed > Duration::from_secs(1) {
        return Err(format!("listing 1,000 conversations took {listed:?}"));
    }

    send_and_wait(&f, "echo the quick brown fox")?;
    let first = f
        .win
        .agent("demo")
        .map(|a| a.conversation().conversation_id())
        .unwrap_or_default();
    if first.is_empty() {
        return Err("the conversation has no id after its first message".into());
    }
    gtk::prelude::WidgetExt::activate_action(&f.win, "win.new-conversation", None)
        .map_err(|e| e.to_string())?;
    spin_until("an empty conversation", Duration::from_secs(5), || {
        conversation_texts(&f)
            .iter()
            .all(|t| !t.contains("quick brown fox"))
            && f.win
                .agent("demo")
                .is_some_and(|a| a.conversation().conversation_id().is_empty())
    })?;
    send_and_wait(&f, "echo a lazy dog sleeps")?;
    spin_until("both new ones listed first", Duration::from_secs(5), || {
        let t = list.titles();
        t.len() == 1002 && t[0] == "echo a lazy dog sleeps" && t[1] == "echo the quick brown fox"
    })?;
    save_png(&f.win, "20-conversation-list")?;

    // Back to the first: its session is still open in the agent.
    gtk::prelude::WidgetExt::activate_action(&f.win, "win.open-conversation", Some(&first.to_variant()))
        .map_err(|e| e.to_string())?;
    spin_until("the first conversation", Duration::from_secs(5), || {
        conversation_texts(&f)
            .iter()
            .any(|t| t.contains("quick brown fox"))
    })?;
    if f.win
        .agent("demo")
        .is_some_and(|a| !a.conversation().read_only().is_empty())
    {
        return Err("a session still open in the agent was not taken up".into());
    }
    // Once the agent restarted, an older conversation cannot go on.
    gtk::prelude::WidgetExt::activate_action(&f.win, "win.new-conversation", None)
        .map_err(|e| e.to_string())?;
    parley::ui::runtime::runtime()
        .block_on(f.core.agents.restart("demo"))
        .map_err(|e| e.to_string())?;
    gtk::prelude::WidgetExt::activate_action(&f.win, "win.open-conversation", Some(&first.to_variant()))
        .map_err(|e| e.to_string())?;
    spin_until("the read-only banner", Duration::from_secs(5), || {
        texts(f.win.upcast_ref())
            .iter()
            .any(|t| t.contains("Continue in a New Conversation"))
            && f.win.agent("demo").is_some_and(|a| !a.conversation().read_only().is_empty())
            && !f.win.composer().is_sensitive()
            // The banner has slid in: the picture shows it whole.
            && descendants::<gtk::Revealer>(f.win.upcast_ref())
                .iter()
                .all(|r| r.reveals_child() == r.is_child_revealed())
    })?;
    save_png(&f.win, "21-read-only")?;

    // Search everything, and jump to the hit.
    gtk::prelude::WidgetExt::activate_action(&f.win, "win.search-conversations", None)
        .map_err(|e| e.to_string())?;
    let search = spin_find_window(app, "Search Conversations")?;
    let entry = descendant_search_entry(search.upcast_ref()).ok_or("no search entry")?;
    entry.set_text("lazy");
    spin_until("a hit", Duration::from_secs(5), || {
        parley::ui::widgets::history_search::rows(&search)
            .iter()
            .any(|(_, snippet)| snippet.contains("<b>lazy</b>"))
    })
    .map_err(|e| format!("{e}: {:?}", parley::ui::widgets::history_search::rows(&search)))?;
    save_png(&search, "22-search")?;
    let row = descendants::<adw::ActionRow>(search.upcast_ref())
        .into_iter()
        .next()
        .ok_or("no result row")?;
    row.emit_by_name::<()>("activated", &[]);
    spin_until("the hit's conversation", Duration::from_secs(5), || {
        conversation_texts(&f).iter().any(|t| t.contains("lazy dog"))
    })?;

    // Find in the conversation.
    gtk::prelude::WidgetExt::activate_action(&f.win, "win.find", None).map_err(|e| e.to_string())?;
    let find = descendant_search_entry(f.win.upcast_ref()).ok_or("no find entry")?;
    find.set_text("DOG");
    spin_until("the last match", Duration::from_secs(5), || {
        f.win.find_count() == "2 of 2"
    })?;
    save_png(&f.win, "23-find")?;
    close(f);
    Ok(())
}

/// Three agents want the user at once: the inbox lists them, a form
/// elicitation is filled in, a silent turn is marked "not responding",
/// and an "always" answer saved as a rule answers the next request.
fn attention_inbox_and_rules(app: &adw::Application) -> Result<(), String> {
    let demo = env!("CARGO_BIN_EXE_parley-demo-agent");
    let cwd = tempfile::tempdir().map_err(|e| e.to_string())?;
    let agents: Vec<String> = [("alpha", "Alpha"), ("beta", "Beta"), ("gamma", "Gamma")]
        .iter()
        .map(|(name, title)| {
            format!(
                r#"{{"name": "{name}", "title": "{title} Agent", "icon": "face-smile-symbolic", "command": "{demo}", "cwd": "{}"}}"#,
                cwd.path().display()
            )
        })
        .collect();
    let text = format!(
        "// test\n{{\n  \"limits\": {{\"turnSilenceWarning\": \"1s\"}},\n  \"agents\": [{}],\n  \"channels\": []\n}}\n",
        agents.join(", ")
    );
    let f = open_window(app, &text)?;
    // `Send` from this thread, as the composer does from the runtime.
    let _runtime = parley::ui::runtime::runtime().enter();
    spin_until("three agents", Duration::from_secs(5), || {
        f.win.model().agents().n_items() == 3
    })?;
    f.win.select_agent("alpha");
    let edit = format!("ask edit {}/src/main.rs Edit src/main.rs", cwd.path().display());
    f.core.chat.send("alpha", &edit).map_err(|e| e.to_string())?;
    f.core
        .chat
        .send("beta", "elicit-form")
        .map_err(|e| e.to_string())?;
    f.core
        .chat
        .send("gamma", "echo all done")
        .map_err(|e| e.to_string())?;
    let waiting = |name: &str| f.win.agent(name).map(|a| a.waiting_count()).unwrap_or(0);
    spin_until("one thing waiting at each agent", Duration::from_secs(20), || {
        waiting("alpha") == 1 && waiting("beta") == 1 && waiting("gamma") == 1
    })?;
    if f.win.elicitation_dialog().is_some() {
        return Err("beta's form opened while alpha was shown".into());
    }
    save_png(&f.win.sidebar(), "40-sidebar-badges")?;
    // Alt+Down goes to the next agent that waits.
    gtk::prelude::WidgetExt::activate_action(&f.win, "win.next-waiting", None).map_err(|e| e.to_string())?;
    spin_until("beta selected", Duration::from_secs(5), || {
        f.win.selected_agent().as_deref() == Some("beta")
    })?;
    // Beta is shown: its waiting form opens.
    spin_until("beta's form", Duration::from_secs(5), || {
        f.win.elicitation_dialog().is_some()
    })?;
    let form = f.win.elicitation_dialog().ok_or("no form")?;
    form.set_default_size(520, 620);
    spin(Duration::from_millis(300));
    save_png(&form, "41-elicitation-form")?;
    // Submit without the required name: refused in the dialog.
    let submit = buttons(form.upcast_ref())
        .into_iter()
        .find(|b| b.label().as_deref() == Some("_Submit"))
        .ok_or("no Submit")?;
    submit.emit_clicked();
    spin_until("the problem shown", Duration::from_secs(5), || {
        texts(form.upcast_ref())
            .iter()
            .any(|t| t.contains("Name is required"))
    })?;
    let entry = descendants::<gtk::Entry>(form.upcast_ref())
        .into_iter()
        .next()
        .ok_or("no entry")?;
    entry.set_text("Ada");
    submit.emit_clicked();
    spin_until("the form answered", Duration::from_secs(10), || {
        f.win
            .agent("beta")
            .is_some_and(|a| a.conversation().elicitation_count() == 0)
            && f.win.elicitation_dialog().is_none()
    })?;
    drop(form);
    spin_until("beta's answer", Duration::from_secs(10), || {
        conversation_texts(&f)
            .iter()
            .any(|t| t.contains("\"name\":\"Ada\""))
    })?;

    // The inbox: alpha's permission and gamma's unseen answer.
    gtk::prelude::WidgetExt::activate_action(&f.win, "win.inbox", None).map_err(|e| e.to_string())?;
    let inbox = spin_find_window(app, "")?;
    let rows = parley::ui::widgets::inbox::rows(&inbox);
    if !rows
        .iter()
        .any(|(t, s)| t == "Alpha Agent" && s.contains("asks to run a tool: Edit src/main.rs"))
        || !rows
            .iter()
            .any(|(t, s)| t == "Gamma Agent" && s.contains("answered while you were away"))
    {
        return Err(format!("inbox rows: {rows:?}"));
    }
    save_png(&inbox, "42-inbox")?;
    let alpha_row = descendants::<adw::ActionRow>(inbox.upcast_ref())
        .into_iter()
        .find(|r| r.title() == "Alpha Agent")
        .ok_or("no alpha row")?;
    alpha_row.emit_by_name::<()>("activated", &[]);
    spin_until("alpha and its banner", Duration::from_secs(5), || {
        f.win.selected_agent().as_deref() == Some("alpha") && f.win.permission_banner().is_revealed()
    })?;
    drop(inbox);
    // Always allow, then keep it as a rule (the toast's button's action).
    let always = f
        .win
        .permission_banner()
        .option_buttons()
        .into_iter()
        .find(|b| b.label().as_deref().is_some_and(|l| l.contains("Always allow")))
        .ok_or("no Always allow")?;
    always.emit_clicked();
    let rule = serde_json::json!({"agents": ["alpha"], "kind": "edit", "path": format!("{}/src/**", cwd.path().display()), "decision": "allow"});
    // From a control that goes away (as the toast's button does), the
    // keyboard comes back to the composer (issue 47), not to the Inbox.
    let elsewhere = buttons(&f.win.sidebar())
        .into_iter()
        .find(|b| b.is_mapped() && b.grab_focus())
        .ok_or("no button in the sidebar to focus")?;
    if gtk::prelude::GtkWindowExt::focus(&f.win).as_ref() != Some(elsewhere.upcast_ref()) {
        return Err("the sidebar's button did not take the focus".into());
    }
    gtk::prelude::WidgetExt::activate_action(
        &f.win,
        "win.save-permission-rule",
        Some(&rule.to_string().to_variant()),
    )
    .map_err(|e| e.to_string())?;
    spin_until("the rule in use", Duration::from_secs(10), || {
        f.core.config.current().permissions.len() == 1
    })?;
    let text_view = f.win.composer().text_view();
    spin(Duration::from_millis(100));
    if gtk::prelude::GtkWindowExt::focus(&f.win).as_ref() != Some(text_view.upcast_ref()) {
        return Err(format!(
            "after Save as Rule the focus is on {:?}",
            gtk::prelude::GtkWindowExt::focus(&f.win).map(|w| w.type_().name())
        ));
    }
    let saved = std::fs::read_to_string(&f.core.config.current().path).map_err(|e| e.to_string())?;
    if !saved.starts_with("// test\n") || !saved.contains("\"permissions\"") {
        return Err(format!("the configuration: {saved}"));
    }
    // Restarted (the agent's own "always" is gone), the rule answers.
    parley::ui::runtime::runtime()
        .block_on(f.core.agents.restart("alpha"))
        .map_err(|e| e.to_string())?;
    f.core.chat.send("alpha", &edit).map_err(|e| e.to_string())?;
    spin_until("answered by the rule", Duration::from_secs(20), || {
        texts(f.win.upcast_ref())
            .iter()
            .any(|t| t.starts_with("Allowed by rule 1"))
            && conversation_texts(&f)
                .iter()
                .any(|t| t.contains("permission answer: allow-once"))
    })?;
    spin(Duration::from_millis(300));
    save_png(&f.win, "43-allowed-by-rule")?;

    // Preferences lists the rule, at its Permissions page.
    parley::ui::preferences::show(f.win.upcast_ref(), &f.core, true);
    let prefs = spin_find_window(app, "")?;
    spin_until("the rule listed", Duration::from_secs(5), || {
        texts(prefs.upcast_ref()).iter().any(|t| t == "Rule 1")
    })?;
    prefs.set_default_size(720, 520);
    spin(Duration::from_millis(300));
    save_png(&prefs, "46-permission-rules")?;
    prefs.close();
    drop(prefs);

    // Gamma: a silent turn is marked, with Cancel and Restart at hand.
    f.win.select_agent("gamma");
    f.core.chat.send("gamma", "silent 4").map_err(|e| e.to_string())?;
    spin_until("not responding", Duration::from_secs(10), || {
        texts(f.win.upcast_ref())
            .iter()
            .any(|t| t.contains("is not responding"))
            && f.win.agent("gamma").is_some_and(|a| a.conversation().stalled())
    })?;
    spin(Duration::from_millis(400));
    save_png(&f.win, "44-not-responding")?;
    spin_until("gamma again", Duration::from_secs(10), || {
        f.win.agent("gamma").is_some_and(|a| !a.conversation().stalled())
    })?;

    // A link to open: shown whole; settled elsewhere, the dialog goes.
    f.win.select_agent("beta");
    f.core
        .chat
        .send("beta", "elicit-url")
        .map_err(|e| e.to_string())?;
    spin_until("the link dialog", Duration::from_secs(10), || {
        f.win.elicitation_dialog().is_some()
    })?;
    let dialog = f.win.elicitation_dialog().ok_or("no dialog")?;
    if !texts(dialog.upcast_ref())
        .iter()
        .any(|t| t == "https://example.org/demo/authorize?client=parley&state=42")
    {
        return Err(format!(
            "the whole address is not shown: {:?}",
            texts(dialog.upcast_ref())
        ));
    }
    save_png(&dialog, "45-elicitation-url")?;
    let id = f
        .win
        .agent("beta")
        .and_then(|a| a.conversation().elicitations().first().map(|e| e.id.clone()))
        .ok_or("no pending elicitation")?;
    f.core
        .chat
        .answer_elicitation(&id, "decline", None)
        .map_err(|e| e.to_string())?;
    spin_until("the dialog closed", Duration::from_secs(5), || {
        f.win.elicitation_dialog().is_none()
    })?;
    drop(dialog);
    spin_until("beta's answer", Duration::from_secs(10), || {
        conversation_texts(&f).iter().any(|t| t.contains("decline"))
    })?;
    close(f);
    Ok(())
}

#[path = "support/registry_server.rs"]
mod registry_server;

#[path = "support/model_api.rs"]
mod model_api;

#[path = "ui/real_agents.rs"]
mod real_agents;

#[path = "ui/agent_rows.rs"]
mod agent_rows;
#[path = "ui/changes.rs"]
mod changes;
#[path = "ui/pickers_fit.rs"]
mod pickers_fit;
#[path = "ui/remote.rs"]
mod remote;
#[path = "integration/sshd.rs"]
mod sshd;
#[path = "ui/steering.rs"]
mod steering;
#[path = "ui/subagents.rs"]
mod subagents;
#[path = "ui/tab_order.rs"]
mod tab_order;
#[path = "ui/text_and_direction.rs"]
mod text_and_direction;
#[path = "ui/todays_agents.rs"]
mod todays_agents;

/// Add Agent: the empty sidebar's button, the registry's list (icons,
/// versions, licences, "Added"), search, an install that ends on the
/// agent's sign-in page, and Remove Agent… putting the file back.
fn add_agent_from_the_registry(app: &adw::Application) -> Result<(), String> {
    use registry_server::*;
    use serde_json::{json, Value};
    let demo = env!("CARGO_BIN_EXE_parley-demo-agent");
    let server = Server::start();
    let cache = tempfile::tempdir().map_err(|e| e.to_string())?;
    // Read by the core's threads when the registry is asked for.
    std::env::set_var("XDG_CACHE_HOME", cache.path());
    std::env::set_var("PARLEY_REGISTRY_URL", server.url("/registry.json"));
    let archive = good_archive(demo);
    server.put("/demo.tar.gz", Route::Bytes(archive.clone()));
    let bundled: Value = serde_json::from_str(parley::core::registry::BUNDLED).map_err(|e| e.to_string())?;
    let mut agents: Vec<Value> = bundled["agents"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|x| {
                    [
                        "claude-code-acp",
                        "codex-acp",
                        "gemini",
                        "opencode",
                        "mistral-vibe",
                    ]
                    .contains(&x["id"].as_str().unwrap_or(""))
                })
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    agents.push(json!({
        "id": "demo-signin", "name": "Demo (Sign-in)", "version": "1.0.0",
        "description": "The demo agent, asking to be signed in in a terminal",
        "license": "GPL-3.0-or-later", "repository": "https://example.invalid/parley",
        "distribution": {"binary": {parley::core::registry::platform(): {
            "archive": server.url("/demo.tar.gz"), "cmd": "./demo/current/demo-agent",
            "env": {"PARLEY_DEMO_MODE": "auth-terminal"}, "sha256": sha256(&archive)
        }}}
    }));
    server.put(
        "/registry.json",
        Route::Bytes(
            json!({"version": "1.0.0", "agents": agents})
                .to_string()
                .into_bytes(),
        ),
    );
    // Codex is configured already, by hand: the dialog marks it.
    let original = "// mine\n{\n  \"agents\": [\n    // by hand\n    {\"name\": \"codex\", \"command\": \"codex-acp\"}\n  ],\n  \"channels\": []\n}\n";
    let f = open_window(app, "{\"agents\": [], \"channels\": []}")?;
    let add_button = buttons(&f.win.sidebar())
        .into_iter()
        .find(|b| b.label().as_deref() == Some("_Add Agent…"))
        .ok_or("no Add Agent… on the empty sidebar")?;
    save_png(&f.win, "30-empty-sidebar-add-agent")?;
    std::fs::write(&f.core.config.current().path, original).map_err(|e| e.to_string())?;
    f.core.config.reload();
    spin_until("codex in the sidebar", Duration::from_secs(5), || {
        f.win.agent("codex").is_some()
    })?;
    if !f.win.is_action_enabled("add-agent") {
        return Err("win.add-agent is disabled".into());
    }
    add_button.emit_clicked();
    let dialog = spin_find_window(app, "Add Agent")?;
    spin_until("the registry's rows", Duration::from_secs(10), || {
        parley::ui::widgets::add_agent::rows(&dialog).len() == 6
    })?;
    let rows = parley::ui::widgets::add_agent::rows(&dialog);
    let state = |title: &str| {
        rows.iter()
            .find(|(t, _)| t == title)
            .map(|(_, s)| s.clone())
            .unwrap_or_default()
    };
    if state("Codex CLI") != "added" || state("Demo (Sign-in)") != "add" || state("Gemini CLI") != "add" {
        return Err(format!("rows: {rows:?}"));
    }
    let shown = texts(dialog.upcast_ref());
    // The description and the version on lines of their own, never run
    // together ("…context engineVersion 0.15.0").
    if !shown.iter().any(|t| t.contains("\nVersion "))
        || shown
            .iter()
            .any(|t| t.contains("Version") && !t.starts_with("Version") && !t.contains("\nVersion"))
    {
        return Err(format!("a description runs into its version: {shown:?}"));
    }
    if !shown.iter().any(|t| t.starts_with("The ACP registry, fetched")) {
        return Err(format!("no word of where the list comes from: {shown:?}"));
    }
    if !shown
        .iter()
        .any(|t| t.contains("Version 0.9.2 · Apache-2.0 · download"))
    {
        return Err(format!("no version and licence: {shown:?}"));
    }
    dialog.set_default_size(720, 760);
    spin(Duration::from_millis(300));
    save_png(&dialog, "31-add-agent")?;
    let style = adw::StyleManager::default();
    style.set_color_scheme(adw::ColorScheme::ForceDark);
    dialog.set_default_size(360, 640);
    spin(Duration::from_millis(400));
    save_png(&dialog, "31-add-agent-narrow-dark")?;
    style.set_color_scheme(adw::ColorScheme::Default);
    dialog.set_default_size(720, 760);
    let search = descendant_search_entry(dialog.upcast_ref()).ok_or("no search entry")?;

    // Run on Another Host (issue 44): what is typed there goes with Add; a
    // host Parley cannot read is refused in the dialog, which stays open.
    let expander = descendants::<adw::ExpanderRow>(dialog.upcast_ref())
        .into_iter()
        .next()
        .ok_or("no Run on Another Host")?;
    expander.set_enable_expansion(true);
    expander.set_expanded(true);
    let entries = descendants::<adw::EntryRow>(dialog.upcast_ref());
    let [host, folder] = entries.as_slice() else {
        return Err(format!("{} entries under Run on Another Host", entries.len()));
    };
    search.set_text("gemini");
    spin(Duration::from_millis(400));
    let add = buttons(dialog.upcast_ref())
        .into_iter()
        .find(|b| b.is_mapped() && b.label().as_deref() == Some("_Add"))
        .ok_or("no Add button for Gemini")?;
    // Switched on with no host: said, and nothing added here instead.
    add.emit_clicked();
    spin_until("the missing host said", Duration::from_secs(5), || {
        texts(dialog.upcast_ref())
            .iter()
            .any(|t| t.starts_with("Type the host to run the agent on"))
    })?;
    host.set_text("ssh://-oProxyCommand=x");
    folder.set_text("/home/me/src/app");
    spin(Duration::from_millis(300));
    save_png(&dialog, "44-add-agent-to-host")?;
    add.emit_clicked();
    spin_until("the host refused", Duration::from_secs(10), || {
        texts(dialog.upcast_ref())
            .iter()
            .any(|t| t.contains("is not a name Parley can pass on"))
    })?;
    if !dialog.is_visible() {
        return Err("the dialog closed on a refused host".into());
    }
    expander.set_enable_expansion(false);
    search.set_text("sign-in demo");
    spin_until("one row left", Duration::from_secs(5), || {
        descendants::<adw::ActionRow>(dialog.upcast_ref())
            .iter()
            .filter(|r| r.is_child_visible() && r.ancestor(adw::ExpanderRow::static_type()).is_none())
            .count()
            == 1
    })?;
    let add = buttons(dialog.upcast_ref())
        .into_iter()
        .find(|b| b.is_mapped() && b.label().as_deref() == Some("_Add"))
        .ok_or("no Add button")?;
    add.emit_clicked();
    spin_until("the dialog to close", Duration::from_secs(20), || {
        !dialog.is_visible()
    })?;
    spin_until("the new agent selected", Duration::from_secs(10), || {
        f.win.agent("demo-signin").is_some() && f.win.content_page() != "empty"
    })?;
    wait_sign_in_page(&f)?;
    if !texts(f.win.sign_in_page().upcast_ref())
        .iter()
        .any(|t| t == "Sign in to Demo (Sign-in)")
    {
        return Err("the sign-in page is not for the new agent".into());
    }
    save_png(&f.win, "32-added-then-sign-in")?;
    let text = std::fs::read_to_string(&f.core.config.current().path).map_err(|e| e.to_string())?;
    if !text.starts_with("// mine\n{\n  \"agents\": [\n    // by hand\n    {\"name\": \"codex\", \"command\": \"codex-acp\"},\n    {\n      \"name\": \"demo-signin\"") {
        return Err(format!("the configuration: {text}"));
    }

    // A newer version: the sidebar says so, and Update takes it.
    if let Some(demo) = agents.last_mut() {
        demo["version"] = json!("1.1.0");
    }
    server.put(
        "/registry.json",
        Route::Bytes(
            json!({"version": "1.0.0", "agents": agents})
                .to_string()
                .into_bytes(),
        ),
    );
    parley::ui::runtime::runtime().block_on(f.core.registry.list(true));
    spin_until("update available in the sidebar", Duration::from_secs(5), || {
        f.win
            .agent("demo-signin")
            .is_some_and(|a| a.update_available() == "1.1.0")
    })?;
    save_png(&f.win.sidebar(), "34-update-available")?;
    gtk::prelude::WidgetExt::activate_action(&f.win, "win.agent-update", Some(&"demo-signin".to_variant()))
        .map_err(|e| e.to_string())?;
    spin_until("the update done", Duration::from_secs(20), || {
        f.win
            .agent("demo-signin")
            .is_some_and(|a| a.update_available().is_empty())
            && std::fs::read_to_string(&f.core.config.current().path)
                .is_ok_and(|t| t.contains("\"version\": \"1.1.0\""))
    })?;

    // Remove Agent…, with its files.
    gtk::prelude::WidgetExt::activate_action(&f.win, "win.agent-remove", Some(&"demo-signin".to_variant()))
        .map_err(|e| e.to_string())?;
    let confirm = spin_find_window(app, "")?;
    let message = confirm
        .downcast::<adw::MessageDialog>()
        .map_err(|_| "not a message dialog")?;
    save_png(&message, "33-remove-agent")?;
    message.response("remove");
    spin_until("the agent gone", Duration::from_secs(10), || {
        f.win.agent("demo-signin").is_none()
    })?;
    let after = std::fs::read_to_string(&f.core.config.current().path).map_err(|e| e.to_string())?;
    if after != original {
        return Err(format!("not the file as it was: {after}"));
    }
    let installed = std::path::PathBuf::from(std::env::var_os("XDG_DATA_HOME").unwrap_or_default())
        .join("parley/agents/demo-signin");
    if installed.exists() {
        return Err(format!("{} is still there", installed.display()));
    }
    std::env::remove_var("PARLEY_REGISTRY_URL");
    // Dialogs let go before the window they were transient for.
    drop(message);
    drop(dialog);
    close(f);
    Ok(())
}

/// The newest other toplevel whose title is `title` ("" for any), once shown.
fn spin_find_window(app: &adw::Application, title: &str) -> Result<gtk::Window, String> {
    let mut found = None;
    spin_until(&format!("the window {title:?}"), Duration::from_secs(10), || {
        let _ = app;
        found = gtk::Window::list_toplevels()
            .into_iter()
            .filter_map(|w| w.downcast::<gtk::Window>().ok())
            .find(|w| {
                !w.is::<ParleyWindow>()
                    && w.is_visible()
                    && (title.is_empty() || w.title().as_deref() == Some(title))
            });
        found.as_ref().is_some_and(|w| w.is_mapped())
    })?;
    spin(Duration::from_millis(300));
    found.ok_or_else(|| "no window".into())
}

fn claude_pickers(app: &adw::Application) -> Result<(), String> {
    let Some(dir) = std::env::var_os("PARLEY_TEST_AGENTS") else {
        println!("    SKIPPED: PARLEY_TEST_AGENTS is not set (build-aux/install-test-agents.sh)");
        return Ok(());
    };
    let bin = PathBuf::from(dir).join("claude/node_modules/.bin/claude-agent-acp");
    if !bin.exists() {
        println!("    SKIPPED: claude-agent-acp is not installed");
        return Ok(());
    }
    let home = tempfile::tempdir().map_err(|e| e.to_string())?;
    let config = serde_json::json!({"agents": [{"name": "demo", "title": "Claude", "command": bin.display().to_string(),
        "cwd": home.path().display().to_string(),
        // Claude Code runs as root only when told it is in a sandbox.
        "env": {"HOME": home.path().display().to_string(), "ANTHROPIC_API_KEY": "", "IS_SANDBOX": "1"}}]});
    let f = open_window(app, &config.to_string())?;
    select_demo(&f)?;
    parley::ui::runtime::runtime()
        .block_on(f.core.agents.start("demo"))
        .map_err(|e| e.to_string())?;
    spin_until("claude's pickers", Duration::from_secs(30), || {
        picker(&f, "mode").is_some() && picker(&f, "model").is_some() && picker(&f, "effort").is_some()
    })?;
    // claude-agent-acp 0.101 names it "Sonnet 5.5".
    choose(&f, "model", "Sonnet 5.5", Some("17-claude-model-picker"))?;
    spin_until("Sonnet shown", Duration::from_secs(20), || {
        picker_says(&f, "model").contains("Sonnet")
    })?;
    save_png(&f.win, "17-claude-pickers")?;
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

/// Waits until a `parley` owns its name on the session bus (a launch after
/// that forwards its command line to it; one before becomes another first
/// instance). A fixed wait was too short on a loaded machine.
fn wait_for_the_first_instance(limit: Duration) -> Result<(), String> {
    let bus = gtk::gio::bus_get_sync(gtk::gio::BusType::Session, gtk::gio::Cancellable::NONE)
        .map_err(|e| e.to_string())?;
    let deadline = Instant::now() + limit;
    loop {
        let owned = bus
            .call_sync(
                Some("org.freedesktop.DBus"),
                "/org/freedesktop/DBus",
                "org.freedesktop.DBus",
                "NameHasOwner",
                Some(&(parley::ui::APP_ID,).to_variant()),
                Some(glib::VariantTy::new("(b)").map_err(|e| e.to_string())?),
                gtk::gio::DBusCallFlags::NONE,
                1000,
                gtk::gio::Cancellable::NONE,
            )
            .ok()
            .and_then(|v| v.get::<(bool,)>())
            .is_some_and(|(b,)| b);
        if owned {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("no parley owned {} within {limit:?}", parley::ui::APP_ID));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
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
            .env("XDG_DATA_HOME", dir.path())
            .env("XDG_CONFIG_HOME", dir.path())
            .env("GSETTINGS_BACKEND", "memory")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
    };
    let mut first = launch(&a).map_err(|e| e.to_string())?;
    let recent = dir.path().join("parley/recent.json");
    if let Err(e) = wait_for_the_first_instance(Duration::from_secs(20)) {
        let _ = first.kill();
        let _ = first.wait();
        return Err(e);
    }
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
            .env("XDG_DATA_HOME", dir.path())
            .env("GSETTINGS_BACKEND", "memory")
            .env_remove("NO_AT_BRIDGE")
            .env_remove("GTK_A11Y")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
    };
    let mut first = launch(&[config.as_os_str()]).map_err(|e| e.to_string())?;
    if let Err(e) = wait_for_the_first_instance(Duration::from_secs(20)) {
        let _ = first.kill();
        let _ = first.wait();
        return Err(e);
    }
    let _ = launch(&[std::ffi::OsStr::new("--new-window")]).and_then(|c| c.wait_with_output());
    std::thread::sleep(Duration::from_millis(1000));
    // The tree once it shows both windows (a loaded machine maps the second
    // one later), or as it is after 20 s.
    let deadline = Instant::now() + Duration::from_secs(20);
    let out = loop {
        let out = std::process::Command::new("/usr/bin/python3")
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/a11y-names.py"))
            .output();
        let done = out.as_ref().is_ok_and(|o| {
            let text = String::from_utf8_lossy(&o.stdout);
            text.contains("windows: 2") || text.starts_with("SKIP")
        });
        if done || Instant::now() > deadline {
            break out;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
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

/// WCAG's relative luminance of an sRGB colour.
fn luminance(rgb: [u8; 3]) -> f64 {
    let lin = |c: u8| {
        let c = f64::from(c) / 255.0;
        if c <= 0.04045 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * lin(rgb[0]) + 0.7152 * lin(rgb[1]) + 0.0722 * lin(rgb[2])
}

fn contrast(a: [u8; 3], b: [u8; 3]) -> f64 {
    let (la, lb) = (luminance(a), luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

/// Every custom colour of style.css, drawn by GTK in light and dark style,
/// against what it is drawn on: text at least 4.5:1 (WCAG AA), the
/// attention mark (a graphic) at least 3:1. The pixels are read from the
/// rendered window: a full block "█" gives the text's colour, a spot
/// beside it the background's.
fn custom_colours_have_enough_contrast(app: &adw::Application) -> Result<(), String> {
    let win = adw::ApplicationWindow::new(app);
    win.set_default_size(400, 600);
    let column = gtk::Box::new(gtk::Orientation::Vertical, 12);
    column.set_margin_start(12);
    let mut samples: Vec<(&str, gtk::Label, f64)> = Vec::new();
    let mut sample = |name: &'static str, classes: &[&[&str]], need: f64| {
        // classes[0] on the outer box, classes[1] on an inner box, the
        // last on the label.
        let label = gtk::Label::new(None);
        label.set_markup("<span size=\"xx-large\">██████</span>");
        const NONE: &[&str] = &[];
        let (label_classes, boxes) = classes.split_last().unwrap_or((&NONE, &[]));
        for c in *label_classes {
            label.add_css_class(c);
        }
        let mut child: gtk::Widget = label.clone().upcast();
        for classes in boxes.iter().rev() {
            let b = gtk::Box::new(gtk::Orientation::Horizontal, 0);
            b.set_margin_top(4);
            for c in *classes {
                b.add_css_class(c);
            }
            // Room for the background beside the text.
            child.set_margin_start(12);
            b.append(&child);
            child = b.upcast();
        }
        child.set_halign(gtk::Align::Start);
        column.append(&child);
        samples.push((name, label, need));
    };
    sample("permission banner text", &[&["permission-banner"], &[]], 4.5);
    sample(
        "failed tool status",
        &[&["tool-card"], &["status", "failed"]],
        4.5,
    );
    sample(
        "completed tool status",
        &[&["tool-card"], &["status", "completed"]],
        4.5,
    );
    sample("agent state", &[&["agent-state"]], 4.5);
    sample("agent error state", &[&["agent-state", "error"]], 4.5);
    sample("message role", &[&["message"], &["role"]], 4.5);
    sample("system message", &[&["message", "system"], &[]], 4.5);
    sample("user bubble", &[&["message", "user"], &["bubble"], &[]], 4.5);
    sample("queued message", &[&["queued"]], 4.5);
    sample("attention mark", &[&["attention"]], 3.0);
    win.set_content(Some(&column));
    win.present();
    spin_until("the window to map", Duration::from_secs(10), || win.is_mapped())?;
    let mut report = Vec::new();
    let mut failures = Vec::new();
    for (scheme, style) in [
        (adw::ColorScheme::ForceLight, "light"),
        (adw::ColorScheme::ForceDark, "dark"),
    ] {
        adw::StyleManager::default().set_color_scheme(scheme);
        spin(Duration::from_millis(300));
        let path = save_png(&win, &format!("contrast-{style}"))?;
        let texture = gtk::gdk::Texture::from_filename(&path).map_err(|e| e.to_string())?;
        let (w, h) = (texture.width() as usize, texture.height() as usize);
        let mut pixels = vec![0u8; w * h * 4];
        texture.download(&mut pixels, w * 4);
        // GDK_MEMORY_DEFAULT: B, G, R, A (premultiplied; the window is opaque).
        let at = |x: f32, y: f32| -> [u8; 3] {
            let (x, y) = ((x.max(0.0) as usize).min(w - 1), (y.max(0.0) as usize).min(h - 1));
            let i = (y * w + x) * 4;
            [pixels[i + 2], pixels[i + 1], pixels[i]]
        };
        for (name, label, need) in &samples {
            let b = label.compute_bounds(&win).ok_or("no bounds")?;
            let fg = at(b.x() + b.width() / 2.0, b.y() + b.height() / 2.0);
            let bg = at(b.x() - 6.0, b.y() + b.height() / 2.0);
            let ratio = contrast(fg, bg);
            report.push(format!("{style} {name}: {ratio:.1}"));
            if ratio < *need {
                failures.push(format!(
                    "{style} {name}: {ratio:.2} < {need} (fg {fg:?} on {bg:?})"
                ));
            }
        }
    }
    adw::StyleManager::default().set_color_scheme(adw::ColorScheme::Default);
    win.close();
    println!("    {}", report.join(", "));
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    }
}

/// Runs `tests/a11y-keyboard.py MODE` against a real `parley` (on the demo
/// agent; `width` set through GSettings' keyfile backend), as a person with
/// a screen reader and only a keyboard: see the script for each mode.
fn keyboard_only(mode: &str, width: Option<i32>) -> Result<(), String> {
    keyboard_only_on(mode, width, &demo_config(true))
}

fn keyboard_only_on(mode: &str, width: Option<i32>, config_text: &str) -> Result<(), String> {
    atspi_script("a11y-keyboard.py", mode, width, config_text, &[])
}

/// Runs `tests/SCRIPT MODE` against a real `parley` on `config_text`.
fn atspi_script(
    script: &str,
    mode: &str,
    width: Option<i32>,
    config_text: &str,
    env: &[(&str, &std::ffi::OsStr)],
) -> Result<(), String> {
    let home = tempfile::tempdir().map_err(|e| e.to_string())?;
    let h = home.path();
    let config = h.join("config.json");
    std::fs::write(&config, config_text).map_err(|e| e.to_string())?;
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_parley"));
    cmd.arg(&config)
        .env("XDG_STATE_HOME", h.join("state"))
        .env("XDG_DATA_HOME", h.join("data"))
        .env_remove("NO_AT_BRIDGE")
        .env_remove("GTK_A11Y")
        // Add Agent stays offline: nothing listens on port 9 here.
        .env("PARLEY_REGISTRY_URL", "http://127.0.0.1:9/registry.json")
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    match width {
        Some(w) => {
            let dir = h.join("config/glib-2.0/settings");
            std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            std::fs::write(
                dir.join("keyfile"),
                format!("[io/github/parley/Parley]\nwindow-width={w}\nwindow-height=720\n"),
            )
            .map_err(|e| e.to_string())?;
            cmd.env("GSETTINGS_BACKEND", "keyfile")
                .env("XDG_CONFIG_HOME", h.join("config"));
        }
        None => {
            cmd.env("GSETTINGS_BACKEND", "memory");
        }
    }
    let mut parley = cmd.spawn().map_err(|e| e.to_string())?;
    std::thread::sleep(Duration::from_millis(2500));
    let out = std::process::Command::new("/usr/bin/python3")
        .arg(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests")
                .join(script),
        )
        .arg(mode)
        .output();
    let _ = parley.kill();
    let _ = parley.wait();
    let out = out.map_err(|e| format!("/usr/bin/python3: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    for line in text.lines() {
        println!("    {}", line.chars().take(300).collect::<String>());
    }
    if text.starts_with("SKIP") || text.lines().last() == Some("ok") {
        Ok(())
    } else {
        Err(format!(
            "{}{}",
            text.lines().last().unwrap_or("no output"),
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .map(|l| format!(" ({l})"))
                .unwrap_or_default()
        ))
    }
}

/// The views added since the first rounds, by keyboard and screen reader
/// (see `tests/a11y-views.py` for what each mode does).
fn views_by_keyboard_and_screen_reader(_app: &adw::Application) -> Result<(), String> {
    let cwd = tempfile::tempdir().map_err(|e| e.to_string())?;
    for (name, text) in [
        ("notes.md", "# Notes\n"),
        ("notebook.txt", "pages\n"),
        ("Cargo.toml", ""),
    ] {
        std::fs::write(cwd.path().join(name), text).map_err(|e| e.to_string())?;
    }
    let in_cwd = format!(
        r#"{{"agents": [{{"name": "demo", "title": "Demo Agent", "command": "{}", "cwd": "{}"}}]}}"#,
        env!("CARGO_BIN_EXE_parley-demo-agent"),
        cwd.path().display()
    );
    let signing = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut failures = Vec::new();
    for (mode, config) in [
        ("both-ways", demo_config(true)),
        ("mention", in_cwd),
        ("elicitation", demo_config(true)),
        ("inbox", demo_config(true)),
        ("terminal", auth_config("auth-terminal", signing.path())),
    ] {
        // (PARLEY_VIEWS=mode,… runs only those.)
        if std::env::var("PARLEY_VIEWS").is_ok_and(|only| !only.split(',').any(|m| m == mode)) {
            continue;
        }
        println!("    {mode}:");
        if let Err(e) = atspi_script("a11y-views.py", mode, None, &config, &[]) {
            failures.push(format!("{mode}: {e}"));
        }
    }
    // Right to left, as a Hebrew locale makes it: GTK takes the direction
    // from its own translation of "default:LTR" (Debian's gtk40.mo), so
    // the locale must exist; it is compiled here, not installed. And GLib
    // leaves GTK's strings untranslated while the program itself has no
    // translation for the locale (an English window stays left to right),
    // so Parley gets a Hebrew catalogue of one string, through
    // PARLEY_LOCALEDIR.
    if std::env::var("PARLEY_VIEWS").is_ok_and(|only| !only.split(',').any(|m| m == "rtl")) {
        return if failures.is_empty() {
            Ok(())
        } else {
            Err(failures.join("; "))
        };
    }
    let locales = tempfile::tempdir().map_err(|e| e.to_string())?;
    let made = std::process::Command::new("localedef")
        .args(["-i", "he_IL", "-f", "UTF-8"])
        .arg(locales.path().join("he_IL.UTF-8"))
        .output()
        .map_err(|e| format!("localedef: {e}"))?;
    if !locales.path().join("he_IL.UTF-8").exists() {
        return Err(format!(
            "the Hebrew locale could not be compiled (the locales package?): {}",
            String::from_utf8_lossy(&made.stderr).trim()
        ));
    }
    let catalogue = locales.path().join("he/LC_MESSAGES");
    std::fs::create_dir_all(&catalogue).map_err(|e| e.to_string())?;
    let po = locales.path().join("he.po");
    std::fs::write(
        &po,
        "msgid \"\"\nmsgstr \"Content-Type: text/plain; charset=UTF-8\\n\"\n\nmsgid \"Required\"\nmsgstr \"\u{5d7}\u{5d5}\u{5d1}\u{5d4}\"\n",
    )
    .map_err(|e| e.to_string())?;
    let compiled = std::process::Command::new("msgfmt")
        .arg("-o")
        .arg(catalogue.join("parley.mo"))
        .arg(&po)
        .status()
        .map_err(|e| format!("msgfmt: {e}"))?;
    if !compiled.success() {
        return Err("msgfmt could not compile the Hebrew catalogue".into());
    }
    println!("    rtl:");
    let env = [
        ("PARLEY_LOCALEDIR", locales.path().as_os_str()),
        ("LOCPATH", locales.path().as_os_str()),
        ("LANG", std::ffi::OsStr::new("he_IL.UTF-8")),
        ("LC_ALL", std::ffi::OsStr::new("he_IL.UTF-8")),
    ];
    if let Err(e) = atspi_script("a11y-views.py", "rtl", None, &demo_config(true), &env) {
        failures.push(format!("rtl: {e}"));
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    }
}

fn keyboard_only_flow(_app: &adw::Application) -> Result<(), String> {
    keyboard_only("flow", None)
}

fn keyboard_only_other_windows(_app: &adw::Application) -> Result<(), String> {
    // One rule, so the Permissions page has controls to Tab through.
    let config = demo_config(true).replacen(
        "{\n",
        "{\n  \"permissions\": [{\"kind\": \"delete\", \"decision\": \"reject\"}],\n",
        1,
    );
    keyboard_only_on("windows", None, &config)
}

/// Signing in with a key, by keyboard and screen reader (see the script's
/// `sign-in` mode).
fn sign_in_by_keyboard_and_screen_reader(_app: &adw::Application) -> Result<(), String> {
    let cwd = tempfile::tempdir().map_err(|e| e.to_string())?;
    keyboard_only_on("sign-in", None, &auth_config("auth-env", cwd.path()))
}

fn permission_fits_at_360_px_through_atspi(_app: &adw::Application) -> Result<(), String> {
    keyboard_only("narrow", Some(360))
}

/// A screen-reader user hears, through AT-SPI, a permission request the
/// moment it comes (with the keys that answer it) and the answer when the
/// turn ends, without leaving the composer: a real `parley` runs its
/// first-run check (which sends a message from the composer and allows the
/// demo agent's request) while `tests/a11y-events.py` listens as Orca
/// would. GTK 4.8 has no announcements; the text arrives as a description
/// change of the focused control.
fn a_screen_reader_hears_the_permission_and_the_answer(_app: &adw::Application) -> Result<(), String> {
    use std::io::BufRead;
    let home = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut listener = std::process::Command::new("/usr/bin/python3")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/a11y-events.py"))
        .arg("90")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("/usr/bin/python3: {e}"))?;
    let stdout = listener.stdout.take().ok_or("no listener output")?;
    let mut lines = std::io::BufReader::new(stdout).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    if first.starts_with("SKIP") {
        println!("    {first}");
        let _ = listener.wait();
        return Ok(());
    }
    if first != "listening" {
        let _ = listener.kill();
        return Err(format!("the listener said {first:?}"));
    }
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let h = home.path();
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_parley"))
        .env("HOME", h)
        .env("XDG_CONFIG_HOME", h.join("config"))
        .env("XDG_DATA_HOME", h.join("data"))
        .env("XDG_CACHE_HOME", h.join("cache"))
        .env("XDG_STATE_HOME", h.join("state"))
        .env("XDG_DATA_HOME", h.join("state"))
        .env("PARLEY_SMOKE", "1")
        .env("GSETTINGS_BACKEND", "memory")
        .env_remove("NO_AT_BRIDGE")
        .env_remove("GTK_A11Y")
        .output()
        .map_err(|e| e.to_string())?;
    std::thread::sleep(Duration::from_millis(1000));
    let _ = listener.kill();
    let _ = listener.wait();
    let heard: Vec<String> = rx.try_iter().collect();
    let said = String::from_utf8_lossy(&run.stdout);
    if !said.contains("smoke: ok") {
        return Err(format!("the first-run check failed: {said}"));
    }
    let permission = heard
        .iter()
        .any(|l| l.contains("asks to run a tool") && l.contains("Alt+1"));
    let answer = heard.iter().any(|l| l.contains("answered:"));
    for l in heard
        .iter()
        .filter(|l| l.contains("asks to run") || l.contains("answered:"))
    {
        println!("    heard: {l}");
    }
    if !permission || !answer {
        return Err(format!(
            "heard permission {permission}, answer {answer}; events: {heard:?}"
        ));
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
    std::env::set_var("XDG_DATA_HOME", state.path());
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
        (
            "ui::an_agent_rows_menu_is_made_when_it_opens",
            agent_rows::an_agent_rows_menu_is_made_when_it_opens,
        ),
        ("ui::demo_turn_with_permission_banner", demo_turn_with_permission),
        ("ui::hostile_permission_title", hostile_permission_title),
        ("ui::layout_from_phone_to_wide", layout_from_phone_to_wide),
        (
            "ui::a_screen_reader_hears_the_permission_and_the_answer",
            a_screen_reader_hears_the_permission_and_the_answer,
        ),
        ("ui::cancel_a_turn_with_stop", cancel_a_turn),
        ("ui::terminal_in_a_tool_card", terminal_in_a_tool_card),
        ("ui::sign_in_with_an_agent_method", sign_in_with_an_agent_method),
        ("ui::sign_in_in_a_terminal", sign_in_in_a_terminal),
        ("ui::sign_in_with_a_key", sign_in_with_a_key),
        (
            "ui::a_gateway_a_mode_that_asks_nothing_and_tokens",
            todays_agents::a_gateway_a_mode_that_asks_nothing_and_tokens,
        ),
        ("ui::claude_login_in_the_window", claude_login_in_the_window),
        (
            "ui::a_long_stream_is_followed_to_its_end",
            a_long_stream_is_followed_to_its_end,
        ),
        (
            "ui::a_hidden_window_still_takes_the_stream",
            a_hidden_window_still_takes_the_stream,
        ),
        (
            "ui::a_long_conversation_binds_only_its_page",
            a_long_conversation_binds_only_its_page,
        ),
        (
            "ui::code_blocks_of_a_whole_message_show_their_code",
            code_blocks_of_a_whole_message_show_their_code,
        ),
        (
            "ui::control_and_bidi_characters_are_shown_visibly",
            control_and_bidi_characters_are_shown_visibly,
        ),
        (
            "ui::a_misleading_link_shows_its_real_target",
            a_misleading_link_shows_its_real_target,
        ),
        (
            "ui::a_text_block_draws_as_its_label",
            a_text_block_draws_as_its_label,
        ),
        (
            "ui::a_long_code_block_is_a_source_view",
            a_long_code_block_is_a_source_view,
        ),
        (
            "ui::settings_editor_underlines_an_error",
            settings_editor_shows_problems,
        ),
        ("ui::dark_style", dark_style),
        ("ui::changes_review_and_undo", changes::review_and_undo),
        ("ui::follow_the_agent", changes::follow_the_agent),
        (
            "ui::changes_beside_the_turn_are_apart",
            changes::changes_beside_the_turn_are_apart,
        ),
        (
            "ui::a_conversation_in_a_worktree",
            changes::a_conversation_in_a_worktree,
        ),
        (
            "ui::worktree_always_for_new_conversations",
            changes::worktree_always_for_new_conversations,
        ),
        (
            "ui::changes_by_keyboard_and_screen_reader",
            changes::changes_by_keyboard_and_screen_reader,
        ),
        (
            "ui::custom_colours_have_enough_contrast",
            custom_colours_have_enough_contrast,
        ),
        ("ui::slash_command_completion", slash_command_completion),
        ("ui::pickers_and_attachments", pickers_and_attachments),
        (
            "ui::every_picker_lies_inside_the_window",
            pickers_fit::every_picker_lies_inside_the_window,
        ),
        (
            "ui::large_text_and_right_to_left",
            text_and_direction::large_text_and_right_to_left,
        ),
        ("ui::steering_in_the_window", steering::steering_in_the_window),
        ("ui::subagents_as_threads", subagents::helpers_as_threads),
        (
            "ui::steering_by_keyboard_and_screen_reader",
            steering::steering_by_keyboard_and_screen_reader,
        ),
        ("ui::an_agent_on_another_host", remote::an_agent_on_another_host),
        (
            "ui::tab_and_shift_tab_go_through_the_window",
            tab_order::tab_and_shift_tab_go_through_the_window,
        ),
        ("ui::claude_pickers", claude_pickers),
        ("ui::claude_full_turn", real_agents::claude_full_turn),
        (
            "ui::conversations_list_search_and_find",
            conversations_list_search_and_find,
        ),
        ("ui::german_from_the_configuration", german_from_the_configuration),
        ("ui::add_agent_from_the_registry", add_agent_from_the_registry),
        ("ui::attention_inbox_and_rules", attention_inbox_and_rules),
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
        ("ui::keyboard_only_flow", keyboard_only_flow),
        (
            "ui::views_by_keyboard_and_screen_reader",
            views_by_keyboard_and_screen_reader,
        ),
        ("ui::keyboard_only_other_windows", keyboard_only_other_windows),
        (
            "ui::sign_in_by_keyboard_and_screen_reader",
            sign_in_by_keyboard_and_screen_reader,
        ),
        (
            "ui::permission_fits_at_360_px_through_atspi",
            permission_fits_at_360_px_through_atspi,
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
