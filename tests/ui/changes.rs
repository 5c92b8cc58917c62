//! The Changes window (issue 42): a turn of the demo agent that edits a
//! file by itself shows "1 file changed" in the header; the window lists
//! the file and its hunks (light, dark, 360 px); Revert of one hunk takes
//! back only that one and says "Reverted src/main.rs"; its Undo puts it
//! back; Undo Turn restores the file.

use super::*;

/// Thirty numbered lines, `changed` ones in capitals.
fn lines(changed: &[usize]) -> String {
    (1..=30)
        .map(|i| {
            if changed.contains(&i) {
                format!("LINE {i}\n")
            } else {
                format!("line {i}\n")
            }
        })
        .collect()
}

/// The agent's text for a `disk-edit` that writes `text` to `path`.
fn disk_write(path: &str, text: &str) -> String {
    format!(
        "disk-edit write:{path}={}",
        text.replace('\n', "\\n").replace(' ', "\\s")
    )
}

fn changes_window(_app: &adw::Application) -> Option<adw::Window> {
    gtk::Window::list_toplevels()
        .into_iter()
        .filter_map(|w| w.downcast::<adw::Window>().ok())
        .find(|w| w.title().as_deref() == Some("Changes") && w.is_visible())
}

fn expanders(w: &gtk::Widget) -> Vec<adw::ExpanderRow> {
    let mut out = Vec::new();
    let mut child = w.first_child();
    while let Some(c) = child {
        if let Ok(e) = c.clone().downcast::<adw::ExpanderRow>() {
            out.push(e);
        }
        out.extend(expanders(&c));
        child = c.next_sibling();
    }
    out
}

fn button_named(w: &gtk::Widget, label: &str) -> Option<gtk::Button> {
    buttons(w)
        .into_iter()
        .find(|b| b.label().as_deref() == Some(label) && b.is_sensitive())
}

/// Screenshots of `window` at each width, light or dark.
fn shots(window: &adw::Window, list: &[(i32, bool, &str)]) -> Result<(), String> {
    let style = adw::StyleManager::default();
    for &(width, dark, name) in list {
        style.set_color_scheme(if dark {
            adw::ColorScheme::ForceDark
        } else {
            adw::ColorScheme::ForceLight
        });
        window.set_default_size(width, 680);
        spin_until(&format!("the width {width}"), Duration::from_secs(5), || {
            window.width() <= width + 2
        })?;
        spin(Duration::from_millis(300));
        save_png(window, name)?;
    }
    style.set_color_scheme(adw::ColorScheme::Default);
    Ok(())
}

pub fn review_and_undo(app: &adw::Application) -> Result<(), String> {
    let project = tempfile::tempdir().map_err(|e| e.to_string())?;
    let main = project.path().join("src/main.rs");
    std::fs::create_dir_all(project.path().join("src")).map_err(|e| e.to_string())?;
    std::fs::write(&main, lines(&[])).map_err(|e| e.to_string())?;
    let f = open_window(app, &auth_config("", project.path()))?;
    select_demo(&f)?;
    type_and_send(&f, &disk_write("src/main.rs", &lines(&[2, 26])));
    let button = f.win.changes_button();
    spin_until("the Changes button", Duration::from_secs(20), || {
        button.is_visible()
    })?;
    if button.label().as_deref() != Some("1 file changed") {
        return Err(format!("the button says {:?}", button.label()));
    }
    // The header's button does not keep the window from 360 px.
    f.win.set_default_size(360, 720);
    spin_until("the main window at 360 px", Duration::from_secs(5), || {
        f.win.width() <= 362
    })?;
    f.win.set_default_size(1100, 720);
    // Opened as the keyboard would: the action behind the button.
    button.emit_clicked();
    spin_until("the Changes window", Duration::from_secs(5), || {
        changes_window(app).is_some()
    })?;
    let window = changes_window(app).ok_or("no Changes window")?;
    spin_until("the file in it", Duration::from_secs(10), || {
        expanders(window.upcast_ref())
            .iter()
            .any(|e| e.title() == "src/main.rs")
    })
    .map_err(|e| {
        let c = parley::ui::runtime::runtime().block_on(f.core.chat.changes("demo", None, None));
        format!("{e}; shown: {:?}; changes: {c:?}", texts(window.upcast_ref()))
    })?;
    let row = expanders(window.upcast_ref())
        .into_iter()
        .find(|e| e.title() == "src/main.rs")
        .ok_or("no row")?;
    row.set_expanded(true);
    spin(Duration::from_millis(300));
    let shown = texts(window.upcast_ref());
    if !shown.iter().any(|t| t.contains("+LINE 2")) || !shown.iter().any(|t| t.contains("+LINE 26")) {
        return Err(format!("the hunks are not shown: {shown:?}"));
    }
    shots(
        &window,
        &[
            (820, false, "42-changes-light"),
            (820, true, "42-changes-dark"),
            (360, false, "42-changes-narrow"),
        ],
    )?;
    window.set_default_size(820, 680);

    // Revert the second hunk only.
    let reverts: Vec<gtk::Button> = buttons(window.upcast_ref())
        .into_iter()
        .filter(|b| b.label().as_deref() == Some("_Revert"))
        .collect();
    if reverts.len() != 2 {
        return Err(format!("{} Revert buttons, not one per hunk", reverts.len()));
    }
    reverts[1].emit_clicked();
    spin_until("the second hunk reverted", Duration::from_secs(10), || {
        std::fs::read_to_string(&main).ok() == Some(lines(&[2]))
    })?;
    spin_until("the announcement", Duration::from_secs(5), || {
        parley::ui::a11y::last_announcement() == "Reverted src/main.rs"
    })?;
    spin_until("the window read again", Duration::from_secs(10), || {
        texts(window.upcast_ref()).iter().any(|t| t == "Reverted")
    })?;
    save_png(&window, "42-changes-reverted")?;
    // Undo Turn takes back the rest (the file is what the revert left).
    let undo = button_named(window.upcast_ref(), "_Undo Turn").ok_or("no Undo Turn")?;
    undo.emit_clicked();
    spin_until("the turn undone", Duration::from_secs(10), || {
        std::fs::read_to_string(&main).ok() == Some(lines(&[]))
    })?;
    window.close();
    close(f);
    Ok(())
}

/// What changed during a turn that nothing ties to the agent is shown
/// apart ("perhaps not by the agent"), and Undo Turn leaves it.
pub fn changes_beside_the_turn_are_apart(app: &adw::Application) -> Result<(), String> {
    let project = tempfile::tempdir().map_err(|e| e.to_string())?;
    let main = project.path().join("src/main.rs");
    let mine = project.path().join("notes.txt");
    std::fs::create_dir_all(project.path().join("src")).map_err(|e| e.to_string())?;
    std::fs::write(&main, lines(&[])).map_err(|e| e.to_string())?;
    std::fs::write(&mine, "mine\n").map_err(|e| e.to_string())?;
    let f = open_window(app, &auth_config("", project.path()))?;
    select_demo(&f)?;
    type_and_send(
        &f,
        &format!("{} sleep:1500", disk_write("src/main.rs", &lines(&[3]))),
    );
    // The user types in their editor while the agent works.
    spin(Duration::from_millis(700));
    std::fs::write(&mine, "typed meanwhile\n").map_err(|e| e.to_string())?;
    let button = f.win.changes_button();
    spin_until("the Changes button", Duration::from_secs(20), || {
        button.is_visible()
    })?;
    button.emit_clicked();
    spin_until("the Changes window", Duration::from_secs(5), || {
        changes_window(app).is_some()
    })?;
    let window = changes_window(app).ok_or("no Changes window")?;
    spin_until("both files", Duration::from_secs(10), || {
        let titles: Vec<String> = expanders(window.upcast_ref())
            .iter()
            .map(|e| e.title().to_string())
            .collect();
        titles.contains(&"src/main.rs".to_owned()) && titles.contains(&"notes.txt".to_owned())
    })?;
    let shown = texts(window.upcast_ref());
    if !shown
        .iter()
        .any(|t| t == "Changed during the turn, perhaps not by the agent")
    {
        return Err(format!("no heading for the files beside the turn: {shown:?}"));
    }
    shots(
        &window,
        &[
            (820, false, "61-changes-beside-the-turn"),
            (360, true, "61-changes-beside-the-turn-narrow-dark"),
        ],
    )?;
    let undo = button_named(window.upcast_ref(), "_Undo Turn").ok_or("no Undo Turn")?;
    undo.emit_clicked();
    spin_until("the turn undone", Duration::from_secs(10), || {
        std::fs::read_to_string(&main).ok() == Some(lines(&[]))
    })?;
    let kept = std::fs::read_to_string(&mine).map_err(|e| e.to_string())?;
    if kept != "typed meanwhile\n" {
        return Err(format!("Undo Turn set back the user's file: {kept:?}"));
    }
    window.close();
    close(f);
    Ok(())
}

/// A git repository with `src/main.rs` of no lines, committed on `main`.
fn git_project() -> Result<tempfile::TempDir, String> {
    let project = tempfile::tempdir().map_err(|e| e.to_string())?;
    let p = project.path();
    std::fs::create_dir_all(p.join("src")).map_err(|e| e.to_string())?;
    std::fs::write(p.join("src/main.rs"), lines(&[])).map_err(|e| e.to_string())?;
    for args in [
        vec!["init", "-q", "-b", "main"],
        vec!["add", "-A"],
        vec![
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "-m",
            "start",
        ],
    ] {
        let ok = std::process::Command::new("git")
            .args(&args)
            .current_dir(p)
            .status()
            .map_err(|e| e.to_string())?
            .success();
        if !ok {
            return Err(format!("git {args:?}"));
        }
    }
    Ok(project)
}

/// `worktree: "always"`: the plain New Conversation (Ctrl+N) makes a
/// conversation in a worktree of its own.
pub fn worktree_always_for_new_conversations(app: &adw::Application) -> Result<(), String> {
    let project = git_project()?;
    let config = auth_config("", project.path()).replacen(
        "\"title\": \"Demo Agent\",",
        "\"title\": \"Demo Agent\", \"worktree\": \"always\",",
        1,
    );
    if !config.contains("\"worktree\": \"always\"") {
        return Err(format!("the configuration was not changed: {config}"));
    }
    let f = open_window(app, &config)?;
    select_demo(&f)?;
    gtk::prelude::WidgetExt::activate_action(&f.win, "win.new-conversation", None)
        .map_err(|e| e.to_string())?;
    spin_until("the worktree", Duration::from_secs(20), || {
        !f.core.worktrees.list().is_empty()
    })?;
    close(f);
    Ok(())
}

/// New Conversation in a Worktree (Ctrl+Shift+N): the agent's next turn
/// writes in the worktree, not in the user's checkout, and the window says
/// which branch it is on.
pub fn a_conversation_in_a_worktree(app: &adw::Application) -> Result<(), String> {
    let project = git_project()?;
    let p = project.path();
    let f = open_window(app, &auth_config("", p))?;
    select_demo(&f)?;
    gtk::prelude::WidgetExt::activate_action(&f.win, "win.new-in-worktree", None)
        .map_err(|e| e.to_string())?;
    spin_until("the worktree", Duration::from_secs(20), || {
        !f.core.worktrees.list().is_empty()
    })?;
    let wt = f.core.worktrees.list().remove(0);
    spin_until("the toast", Duration::from_secs(10), || {
        texts(f.win.upcast_ref())
            .iter()
            .any(|t| t.contains("in its own worktree, on branch parley/"))
    })?;
    type_and_send(&f, &disk_write("src/main.rs", &lines(&[4])));
    let inside = std::path::Path::new(&wt.path).join("src/main.rs");
    spin_until("the edit in the worktree", Duration::from_secs(20), || {
        std::fs::read_to_string(&inside).ok() == Some(lines(&[4]))
    })?;
    let mine = std::fs::read_to_string(p.join("src/main.rs")).map_err(|e| e.to_string())?;
    if mine != lines(&[]) {
        return Err("the user's checkout was changed".into());
    }
    // The header says which branch the conversation works on.
    spin_until("the branch in the header", Duration::from_secs(5), || {
        texts(f.win.upcast_ref()).iter().any(|t| t.contains(&wt.branch))
    })?;
    save_png(&f.win, "62-new-in-worktree")?;
    // Changes: the worktree's group, and Apply to Project.
    gtk::prelude::WidgetExt::activate_action(&f.win, "win.show-changes", None).map_err(|e| e.to_string())?;
    spin_until("the Changes window", Duration::from_secs(5), || {
        changes_window(app).is_some()
    })?;
    let window = changes_window(app).ok_or("no Changes window")?;
    spin_until("the worktree's group", Duration::from_secs(10), || {
        let shown = texts(window.upcast_ref());
        shown.iter().any(|t| t == &format!("Worktree on {}", wt.branch))
            && shown.iter().any(|t| t == "src/main.rs")
    })
    .map_err(|e| format!("{e}: {:?}", texts(window.upcast_ref())))?;
    shots(
        &window,
        &[
            (820, false, "62-worktree-changes"),
            (360, true, "62-worktree-changes-narrow-dark"),
        ],
    )?;
    let apply = button_named(window.upcast_ref(), "_Apply to Project").ok_or("no Apply to Project")?;
    apply.emit_clicked();
    spin_until("the edit applied to the project", Duration::from_secs(10), || {
        std::fs::read_to_string(p.join("src/main.rs")).ok() == Some(lines(&[4]))
    })?;
    spin_until("the toast", Duration::from_secs(5), || {
        texts(window.upcast_ref())
            .iter()
            .any(|t| t == "Applied 1 file to the project")
    })?;
    window.close();
    close(f);
    Ok(())
}

/// Follow the agent: with `followAgent`, the file a tool call names opens
/// in the configured editor at its line as the call comes; a location in
/// a tool card opens it on a click.
pub fn follow_the_agent(app: &adw::Application) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let opened = dir.path().join("opened.txt");
    let script = dir.path().join("editor.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\necho \"$@\" >> '{}'\n", opened.display()),
    )
    .map_err(|e| e.to_string())?;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).map_err(|e| e.to_string())?;
    // The demo agent reads and edits src/greeting.rs of its cwd.
    let project = tempfile::tempdir().map_err(|e| e.to_string())?;
    std::fs::create_dir_all(project.path().join("src")).map_err(|e| e.to_string())?;
    std::fs::write(project.path().join("src/greeting.rs"), "fn greeting() {}\n")
        .map_err(|e| e.to_string())?;
    let text = auth_config("", project.path()).replacen(
        "{",
        &format!(
            "{{\"editor\": \"{} +{{line}} {{file}}\", \"followAgent\": true, ",
            script.display()
        ),
        1,
    );
    let f = open_window(app, &text)?;
    select_demo(&f)?;
    type_and_send(&f, "Please change the greeting");
    let read = |p: &std::path::Path| std::fs::read_to_string(p).unwrap_or_default();
    spin_until("the editor opened by following", Duration::from_secs(15), || {
        read(&opened)
            .lines()
            .any(|l| l.starts_with("+1 ") && l.ends_with("greeting.rs"))
    })
    .map_err(|e| format!("{e}; opened: {:?}", read(&opened)))?;
    // Once per call and file, however often the call is updated.
    spin(Duration::from_millis(500));
    let times = read(&opened).lines().filter(|l| l.starts_with("+1 ")).count();
    if times != 1 {
        return Err(format!("opened {times} times at line 1: {:?}", read(&opened)));
    }
    // The card's location, clicked, opens the file at its line.
    std::fs::write(&opened, "").map_err(|e| e.to_string())?;
    let list = f.win.conversation_view().message_list();
    let location = buttons(list.upcast_ref())
        .into_iter()
        .find(|b| b.has_css_class("location") && b.label().is_some_and(|l| l.ends_with("greeting.rs:1")))
        .ok_or("no location button in the tool card")?;
    save_png(&f.win, "42-tool-card-location")?;
    location.emit_clicked();
    spin_until("the editor opened by a click", Duration::from_secs(5), || {
        read(&opened)
            .lines()
            .any(|l| l.starts_with("+1 ") && l.ends_with("greeting.rs"))
    })?;
    close(f);
    Ok(())
}

/// By the keyboard and a screen reader, through AT-SPI (the script's
/// `changes` mode): the Changes open with Ctrl+Shift+R, every Tab stop is
/// named, and Undo Turn is heard as "Reverted src/main.rs" and done.
pub fn changes_by_keyboard_and_screen_reader(_app: &adw::Application) -> Result<(), String> {
    let project = tempfile::tempdir().map_err(|e| e.to_string())?;
    let main = project.path().join("src/main.rs");
    std::fs::create_dir_all(project.path().join("src")).map_err(|e| e.to_string())?;
    std::fs::write(&main, "fn main() {}\n").map_err(|e| e.to_string())?;
    keyboard_only_on("changes", None, &auth_config("", project.path()))?;
    let now = std::fs::read_to_string(&main).map_err(|e| e.to_string())?;
    if now != "fn main() {}\n" {
        return Err(format!("the turn was not undone: {now:?}"));
    }
    Ok(())
}
