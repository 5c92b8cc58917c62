//! An agent on another host in the window (issue 44): the demo agent over
//! a real sshd on 127.0.0.1 (see tests/integration/sshd.rs). Its row and
//! the conversation's title say where it runs, and what it reads is the
//! far side's file (light, dark, 360 px).

use super::sshd::Sshd;
use super::*;

pub fn an_agent_on_another_host(app: &adw::Application) -> Result<(), String> {
    if let Some(why) = super::sshd::unavailable() {
        eprintln!("skipped: {why}");
        return Ok(());
    }
    let sshd = Sshd::start();
    // The window's core runs ssh through the fixture's configuration.
    for (k, v) in sshd.env() {
        std::env::set_var(k, v);
    }
    let far = sshd.path("far");
    let config = serde_json::json!({"agents": [{"name": "devbox", "title": "Demo Agent",
        "command": "parley-demo-agent", "cwd": far, "host": "ssh://devbox"}]});
    let path = sshd.path("config.json");
    std::fs::write(&path, config.to_string()).map_err(|e| e.to_string())?;
    let (core, rx) = parley::ui::runtime::start_core(Options {
        config_path: Some(path),
        history: Some(sshd.path("history.sqlite3")),
        ..Default::default()
    })?;
    let model = parley::ui::models::AppModel::new(&core);
    parley::ui::bridge::attach(&model, rx);
    let win = ParleyWindow::new(app, &model);
    win.set_default_size(1100, 720);
    win.present();
    spin_until("the window to map", Duration::from_secs(10), || win.is_mapped())?;
    win.select_agent("devbox");
    spin(Duration::from_millis(300));
    let all = texts(win.upcast_ref());
    if !all.iter().any(|t| t.contains("on devbox")) {
        return Err(format!("the row does not say where it runs: {all:?}"));
    }
    win.composer()
        .text_view()
        .buffer()
        .set_text(&format!("fs-read {}/secret.txt", far.display()));
    win.composer().send();
    spin(Duration::from_millis(300));
    spin_until("the far side's file", Duration::from_secs(30), || {
        texts(win.conversation_view().message_list().upcast_ref())
            .iter()
            .any(|t| t.contains("only on the far side"))
    })?;
    // The row and the conversation's title both say it.
    let all = texts(win.upcast_ref());
    if all.iter().filter(|t| *t == "ready · on devbox").count() < 2 {
        return Err(format!("the title does not say where it runs: {all:?}"));
    }
    save_png(&win, "44-remote")?;
    adw::StyleManager::default().set_color_scheme(adw::ColorScheme::ForceDark);
    spin(Duration::from_millis(300));
    save_png(&win, "44-remote-dark")?;
    adw::StyleManager::default().set_color_scheme(adw::ColorScheme::Default);
    win.set_default_size(360, 640);
    spin(Duration::from_millis(500));
    save_png(&win, "44-remote-narrow")?;
    win.close();
    parley::ui::runtime::runtime().block_on(core.shutdown());
    std::env::remove_var("PARLEY_SSH");
    Ok(())
}
