//! What users of today's agents meet first, in the window: a gateway
//! sign-in is a form (never a bare button), the agent's own word on who is
//! signed in is on the page, a mode that asks nothing is shown beside the
//! pickers and said once, and the turns' tokens are in the header.

use super::*;

/// The window's texts that tell tokens ("1,275 tokens", "Context 3 % ·
/// 1275 tokens").
fn header_texts(f: &Fixture) -> Vec<String> {
    texts(f.win.upcast_ref())
        .into_iter()
        .filter(|t| t.contains(" tokens") && t.chars().any(|c| c.is_ascii_digit()))
        .collect()
}

pub fn a_gateway_a_mode_that_asks_nothing_and_tokens(app: &adw::Application) -> Result<(), String> {
    if std::env::var("PARLEY_TEST_KEYRING").as_deref() != Ok("1") {
        println!("    SKIPPED: no test keyring (run under build-aux/with-keyring.sh)");
        return Ok(());
    }
    let cwd = tempfile::tempdir().map_err(|e| e.to_string())?;
    let f = open_window(app, &auth_config("auth-gateway,legacy-modes,tokens", cwd.path()))?;
    select_demo(&f)?;
    type_and_send(&f, "echo through the gateway");
    wait_sign_in_page(&f)?;
    let page = f.win.sign_in_page();
    // The form, and the agent's own word.
    for name in ["gateway:url", "gateway:header", "gateway:value"] {
        page.key_entry(name).ok_or(format!("no {name} entry"))?;
    }
    let value = page.key_entry("gateway:value").ok_or("no value entry")?;
    if !value.control().is::<gtk::PasswordEntry>() {
        return Err("the header's value is not asked for in a password entry".into());
    }
    let shown = texts(page.upcast_ref());
    if !shown.iter().any(|t| t.contains("Not logged in")) {
        return Err(format!("the agent's word is not on the page: {shown:?}"));
    }
    // A bad address is said at once, and the page stays.
    page.key_entry("gateway:url")
        .ok_or("no url")?
        .set_value("gateway.example");
    page.method_button("demo-gateway")
        .ok_or("no button for demo-gateway")?
        .emit_clicked();
    spin(Duration::from_millis(300));
    if !page.active() {
        return Err("a gateway without an http address signed in".into());
    }
    page.key_entry("gateway:url")
        .ok_or("no url")?
        .set_value("http://127.0.0.1:9/v1");
    page.key_entry("gateway:header")
        .ok_or("no header")?
        .set_value("x-api-key");
    value.set_value("sk-demo-gateway-secret");
    save_png(&f.win, "60-gateway-form")?;
    page.method_button("demo-gateway")
        .ok_or("no button for demo-gateway")?
        .emit_clicked();
    spin_until("the page to give way", Duration::from_secs(20), || !page.active())?;
    spin_until(
        "the message sent again and answered",
        Duration::from_secs(20),
        || conversation_texts(&f).iter().any(|t| t == "through the gateway"),
    )?;
    let agent = f.win.agent("demo").ok_or("no agent")?;
    if !agent.sign_in().has_saved_keys() {
        return Err("the gateway is not listed as saved".into());
    }
    // The turn's tokens, in the header.
    spin_until("the tokens in the header", Duration::from_secs(10), || {
        !header_texts(&f).is_empty()
    })
    .map_err(|e| format!("{e}: {:?}", header_texts(&f)))?;
    save_png(&f.win, "60-tokens-in-the-header")?;

    // A mode that asks nothing: shown beside the pickers, said once.
    choose(&f, "mode", "YOLO", None)?;
    let note = || {
        descendants::<gtk::Widget>(f.win.composer().options_box().upcast_ref())
            .into_iter()
            .find(|w| w.widget_name() == "asks-nothing")
    };
    spin_until("the note beside the pickers", Duration::from_secs(10), || {
        note().is_some_and(|n| n.is_mapped())
    })?;
    let label = note()
        .and_then(|n| n.tooltip_text())
        .map(|t| t.to_string())
        .unwrap_or_default();
    if !label.contains("YOLO") || !label.contains("without asking") {
        return Err(format!("the note's name: {label:?}"));
    }
    spin_until("the conversation to say it", Duration::from_secs(10), || {
        conversation_texts(&f)
            .iter()
            .any(|t| t.contains("without asking you"))
    })?;
    save_png(&f.win, "60-asks-nothing")?;
    choose(&f, "mode", "Ask", None)?;
    spin_until("the note to go", Duration::from_secs(10), || {
        note().is_some_and(|n| !n.is_visible())
    })?;
    WidgetExt::activate_action(&f.win, "win.agent-forget-keys", Some(&"demo".to_variant()))
        .map_err(|e| e.to_string())?;
    spin_until("the gateway forgotten", Duration::from_secs(20), || {
        !agent.sign_in().has_saved_keys()
    })?;
    close(f);
    Ok(())
}
