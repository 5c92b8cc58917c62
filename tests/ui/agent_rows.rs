//! An agent row's menu (issue 45): made when it opens, not when the row is
//! bound (a menu button with a model makes its popover at once, which was
//! half the start-up with 100 agents configured), and then whole: Restart,
//! Show Logs, Sign In, Remove, for the agent the row shows.

use super::*;

/// The labels of a menu's items, its sections' included.
fn labels(menu: &gtk::gio::MenuModel) -> Vec<String> {
    let mut out = Vec::new();
    for i in 0..menu.n_items() {
        if let Some(section) = menu.item_link(i, "section") {
            out.extend(labels(&section));
        } else if let Some(label) = menu
            .item_attribute_value(i, "label", None)
            .and_then(|v| v.get::<String>())
        {
            out.push(label);
        }
    }
    out
}

pub fn an_agent_rows_menu_is_made_when_it_opens(app: &adw::Application) -> Result<(), String> {
    let f = open_window(app, &demo_config(true))?;
    let rows: Vec<parley::ui::widgets::AgentRow> = descendants(f.win.upcast_ref());
    let row = rows.first().ok_or("no agent row")?;
    let button = descendants::<gtk::MenuButton>(row.upcast_ref())
        .into_iter()
        .next()
        .ok_or("no menu button in the row")?;
    if button.menu_model().is_some() {
        return Err("the row's menu was made when the row was bound".into());
    }
    if !button.is_sensitive() {
        return Err("the menu button is not sensitive without a menu yet".into());
    }
    button.popup();
    spin_until("the menu to open", Duration::from_secs(5), || {
        button.popover().is_some_and(|p| p.is_visible())
    })?;
    let menu = button.menu_model().ok_or("no menu after opening")?;
    let got = labels(&menu);
    for want in ["_Restart", "Show _Logs", "_Sign In…", "Re_move Agent…"] {
        if !got.iter().any(|l| l == want) {
            return Err(format!("the menu lacks {want}: {got:?}"));
        }
    }
    button.popdown();
    close(f);
    Ok(())
}
