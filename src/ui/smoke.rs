//! The first-run check (`build-aux/run.sh --smoke`, which sets
//! `PARLEY_SMOKE`): proves that the window came up on a configuration it
//! created itself, and that the default agent answers a message typed into
//! the composer, as a newcomer's first try would. It prints what happened
//! and quits; the exit status says whether it worked.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use adw::prelude::*;
use gtk::glib;

use crate::core::config::store::Source;
use crate::core::types::message::Role;
use crate::ui::models::MessageObject;
use crate::ui::window::ParleyWindow;

/// The environment variable that turns the check on.
pub const VAR: &str = "PARLEY_SMOKE";

/// How long the whole check may take: the first start of an agent includes
/// reading the login shell's PATH.
const LIMIT: Duration = Duration::from_secs(30);

thread_local! {
    /// Set when the check failed; `application::run` turns it into the exit status.
    static FAILED: Cell<bool> = const { Cell::new(false) };
}

pub fn failed() -> bool {
    FAILED.with(Cell::get)
}

fn finish(app: &adw::Application, ok: bool, text: &str) {
    if ok {
        println!("smoke: ok: {text}");
    } else {
        eprintln!("smoke: FAILED: {text}");
        FAILED.with(|f| f.set(true));
    }
    // A moment for what the window said last (to the accessibility bus,
    // say) to leave before the application quits.
    let app = app.clone();
    glib::timeout_add_local_once(std::time::Duration::from_millis(300), move || app.quit());
}

/// Starts the check on `win` when `PARLEY_SMOKE` is set.
pub fn start(app: &adw::Application, win: &ParleyWindow) {
    if std::env::var_os(VAR).is_none() {
        return;
    }
    let current = win.core().config.current();
    if !current.created || current.source != Source::Default || !current.valid {
        let text = format!(
            "the window did not start on a default configuration it created (path {}, created {}, valid {})",
            current.path, current.created, current.valid
        );
        return finish(app, false, &text);
    }
    println!("smoke: the window created {}", current.path);
    let started = Instant::now();
    let progress = Rc::new(Progress::default());
    let app = app.clone();
    let win = win.downgrade();
    glib::timeout_add_local(Duration::from_millis(100), move || {
        let Some(win) = win.upgrade() else {
            finish(&app, false, "the window went away");
            return glib::ControlFlow::Break;
        };
        match step(&win, &progress) {
            Ok(None) if started.elapsed() < LIMIT => glib::ControlFlow::Continue,
            Ok(None) => {
                let agents: Vec<String> = win
                    .core()
                    .agents
                    .list()
                    .iter()
                    .map(|a| format!("{} {:?} {:?}", a.name, a.state, a.error))
                    .collect();
                let text = format!(
                    "no answer within {} s (agents: {}; composer: {:?})",
                    LIMIT.as_secs(),
                    agents.join(", "),
                    {
                        let b = win.composer().text_view().buffer();
                        b.text(&b.start_iter(), &b.end_iter(), false).to_string()
                    }
                );
                finish(&app, false, &text);
                glib::ControlFlow::Break
            }
            Ok(Some(answer)) => {
                let text = format!(
                    "the default agent answered in {} ms: {answer}",
                    started.elapsed().as_millis()
                );
                finish(&app, true, &text);
                glib::ControlFlow::Break
            }
            Err(e) => {
                finish(&app, false, &e);
                glib::ControlFlow::Break
            }
        }
    });
}

/// What the check has done so far.
#[derive(Default)]
struct Progress {
    sent: Cell<bool>,
    /// The permission request answered last: it stays listed until the
    /// agent's next event, and is answered only once.
    answered: RefCell<Option<String>>,
}

/// One look at the window: selects the first agent and sends a message once
/// it is listed, then waits for the agent's finished answer.
fn step(win: &ParleyWindow, progress: &Progress) -> Result<Option<String>, String> {
    let sent = &progress.sent;
    let Some(agent) = win.core().agents.list().into_iter().next() else {
        return Ok(None);
    };
    if !sent.get() {
        win.select_agent(&agent.name);
        if win.selected_agent().as_deref() != Some(agent.name.as_str()) {
            return Ok(None);
        }
        let composer = win.composer();
        composer
            .text_view()
            .buffer()
            .set_text("Hello from the first-run check");
        composer.send_button().emit_clicked();
        sent.set(true);
        println!("smoke: sent a message to {} ({})", agent.title, agent.name);
        return Ok(None);
    }
    // The demo asks before it edits; a newcomer allows it from the banner.
    let banner = win.permission_banner();
    let pending = banner.request().filter(|_| banner.is_shown());
    if let Some(request) = pending.filter(|r| progress.answered.borrow().as_ref() != Some(&r.request().id)) {
        progress.answered.replace(Some(request.request().id.clone()));
        if let Some(allow) = banner
            .option_buttons()
            .into_iter()
            .find(|b| b.has_css_class("suggested-action"))
        {
            println!("smoke: allowed {:?}", request.request().tool_call.title);
            allow.emit_clicked();
        }
    }
    let Some(object) = win.agent(&agent.name) else {
        return Ok(None);
    };
    // The turn is over only when the agent is no longer answering (after
    // the window has said so to a screen reader).
    if object.conversation().answering() {
        return Ok(None);
    }
    let store = object.conversation().messages();
    for i in 0..store.n_items() {
        let Some(m) = store.item(i).and_downcast::<MessageObject>() else {
            continue;
        };
        let seen = m.with(|m| match m.role {
            Role::System => Some(Err(format!(
                "the conversation says: {}",
                m.error.clone().unwrap_or_else(|| m.text())
            ))),
            Role::Agent if m.done => Some(match m.stop_reason {
                Some(agent_client_protocol_schema::v1::StopReason::EndTurn) => Ok(m
                    .text()
                    .lines()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("")
                    .to_owned()),
                other => Err(format!(
                    "the answer ended with {other:?}: {}",
                    m.error.clone().unwrap_or_default()
                )),
            }),
            _ => None,
        });
        if let Some(result) = seen.flatten() {
            return result.map(Some);
        }
    }
    Ok(None)
}
