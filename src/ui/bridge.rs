//! The bridge: one task on the GTK main thread drains the core's events once
//! per frame and applies them to the models. Text deltas that arrive within
//! a frame redraw their message once.

use std::collections::HashSet;
use std::time::Duration;

use adw::prelude::*;
use gtk::{gio, glib};

use crate::core::events::{Event, EventReceiver};
use crate::core::supervisor::lifecycle::AgentState;
use crate::ui::models::{AgentObject, MessageObject};
use crate::ui::window::ParleyWindow;

/// The most events applied in one frame; the rest wait for the next. Text
/// deltas are cheap to apply (the rows are redrawn once per frame, not per
/// event), so this is high: a flooding agent's chunks arrive by the
/// thousand a frame even after `coalesce`.
const MAX_PER_FRAME: usize = 50_000;

pub fn attach(win: &ParleyWindow, rx: EventReceiver) {
    let weak = win.downgrade();
    drain(rx, move || weak.upgrade().into_iter().collect());
}

/// Every window of the application gets every event (`--new-window`): each
/// has its own models over the one core.
pub fn attach_app(app: &adw::Application, rx: EventReceiver) {
    let weak = app.downgrade();
    drain(rx, move || {
        weak.upgrade()
            .map(|app| {
                app.windows()
                    .into_iter()
                    .filter_map(|w| w.downcast::<ParleyWindow>().ok())
                    .collect()
            })
            .unwrap_or_default()
    });
}

/// Merged text deltas are forwarded once they reach this size, so that a
/// flood still reaches the window in pieces.
const MAX_MERGED: usize = 256 * 1024;

/// Appends `next` to `into` when both are text of the same part.
fn merge(into: &mut Event, next: &Event) -> bool {
    let (Event::MessageDelta(a), Event::MessageDelta(b)) = (into, next) else {
        return false;
    };
    let (Some(text), Some(more)) = (a.text.as_mut(), b.text.as_ref()) else {
        return false;
    };
    let same = a.index == b.index && a.kind == b.kind && a.message_id == b.message_id && a.agent == b.agent;
    if !same || text.len() >= MAX_MERGED {
        return false;
    }
    text.push_str(more);
    true
}

/// A thread between the core and the main loop that joins consecutive text
/// deltas of one part into one event: a flooding agent sends some 20,000
/// chunks a frame, and receiving, applying and dropping each on the main
/// thread cost ~8 ms a frame (BENCHMARKS.md). Order is kept: only
/// neighbours are joined.
fn coalesce(rx: EventReceiver) -> EventReceiver {
    let (tx, out) = crate::core::events::channel();
    let input = rx.clone();
    let spawned = std::thread::Builder::new()
        .name("parley-coalesce".into())
        .spawn(move || {
            while let Ok(mut pending) = input.recv_blocking() {
                while let Ok(next) = input.try_recv() {
                    if !merge(&mut pending, &next)
                        && tx.send_blocking(std::mem::replace(&mut pending, next)).is_err()
                    {
                        return;
                    }
                }
                if tx.send_blocking(pending).is_err() {
                    return;
                }
            }
        });
    match spawned {
        Ok(_) => out,
        Err(e) => {
            tracing::warn!("no thread to join text deltas in ({e}); the window takes them one by one");
            rx
        }
    }
}

fn drain(rx: EventReceiver, windows: impl Fn() -> Vec<ParleyWindow> + 'static) {
    let rx = coalesce(rx);
    glib::MainContext::default().spawn_local(async move {
        while let Ok(first) = rx.recv().await {
            let mut batch = vec![first];
            while batch.len() < MAX_PER_FRAME {
                match rx.try_recv() {
                    Ok(e) => batch.push(e),
                    Err(_) => break,
                }
            }
            let targets = windows();
            if let Some((last, others)) = targets.split_last() {
                for win in others {
                    apply(win, batch.clone());
                }
                apply(last, batch);
            }
            glib::timeout_future(Duration::from_millis(16)).await;
        }
    });
}

fn find_message(store: &gio::ListStore, id: &str) -> Option<(u32, MessageObject)> {
    (0..store.n_items())
        .rev()
        .filter_map(|i| store.item(i).and_downcast::<MessageObject>().map(|m| (i, m)))
        .find(|(_, m)| m.id() == id)
}

pub fn apply(win: &ParleyWindow, batch: Vec<Event>) {
    let mut dirty: Vec<MessageObject> = Vec::new();
    let mut dirty_ids: HashSet<String> = HashSet::new();
    let mut last_delta: Option<(String, String, MessageObject)> = None;
    let mut refresh_agents = false;
    let mut header = false;
    let mut follow = false;
    let selected = win.selected_agent();
    let open = |agent: &str| -> Option<gio::ListStore> {
        // Conversations never shown are loaded whole when first shown.
        win.imp_conversation(agent)
    };
    for event in batch {
        match event {
            Event::AgentState(s) => match win.agent(&s.agent) {
                Some(a) => {
                    a.set_state(s.state.as_str());
                    a.set_error(s.error.clone().unwrap_or_default());
                    a.set_outdated(s.outdated);
                    header |= selected.as_deref() == Some(&s.agent);
                    if s.state == AgentState::Error {
                        crate::ui::application::notify(
                            win,
                            "agent-error",
                            &s.agent,
                            &a.title(),
                            s.error.as_deref().unwrap_or_default(),
                            None,
                        );
                    }
                }
                None => refresh_agents = true,
            },
            Event::AgentLog(l) => win.push_log(&l.agent, l.line),
            Event::ConfigChanged(c) => {
                refresh_agents = true;
                crate::ui::application::apply_theme(win.core().current().theme);
                crate::ui::widgets::config_editor::file_changed(win);
                if !c.valid {
                    if let Some(p) = c.problems.first() {
                        win.toast(&crate::i18n::gettext_f(
                            "The configuration has problems and was not applied: line {line}: {message}",
                            &[("line", &p.line.to_string()), ("message", &p.message)],
                        ));
                    }
                }
            }
            Event::MessageUpdated(u) => {
                last_delta = None;
                follow |= selected.as_deref() == Some(&u.agent);
                let Some(store) = open(&u.agent) else { continue };
                match find_message(&store, &u.message.id) {
                    Some((i, m)) => {
                        let was_queued = m.with(|old| old.queued).unwrap_or(false);
                        if was_queued && !u.message.queued && u.message.error.is_none() {
                            // Sent now: it moves after the answer it waited for.
                            store.remove(i);
                            store.append(&m);
                        }
                        m.replace(u.message);
                        if dirty_ids.insert(m.id()) {
                            dirty.push(m);
                        }
                    }
                    None => {
                        store.append(&MessageObject::new(u.message));
                        if selected.as_deref() == Some(&u.agent) {
                            win.update_messages_page();
                        }
                    }
                }
            }
            Event::MessageDelta(d) => {
                // A stream is thousands of deltas in a row to one message:
                // the last one found is tried first.
                if let Some((agent, id, m)) = &last_delta {
                    if *agent == d.agent && *id == d.message_id {
                        m.apply_delta(d.index, d.kind, d.text.as_deref(), d.part.as_ref());
                        continue;
                    }
                }
                follow |= selected.as_deref() == Some(&d.agent);
                let Some(store) = open(&d.agent) else { continue };
                if let Some((_, m)) = find_message(&store, &d.message_id) {
                    m.apply_delta(d.index, d.kind, d.text.as_deref(), d.part.as_ref());
                    if dirty_ids.insert(d.message_id.clone()) {
                        dirty.push(m.clone());
                    }
                    last_delta = Some((d.agent, d.message_id, m));
                }
            }
            Event::TurnChanged(t) => {
                if let Some(a) = win.agent(&t.agent) {
                    let was = a.answering();
                    a.set_answering(t.busy);
                    if was && !t.busy {
                        crate::ui::application::notify(
                            win,
                            "turn-ended",
                            &t.agent,
                            &a.title(),
                            &crate::i18n::gettext("The answer is complete."),
                            None,
                        );
                    }
                }
                if selected.as_deref() == Some(&t.agent) {
                    win.update_composer();
                }
            }
            Event::PermissionRequested(p) => {
                let title = win
                    .agent(&p.agent)
                    .map(|a: AgentObject| a.title())
                    .unwrap_or_default();
                crate::ui::application::notify(
                    win,
                    "permission-requested",
                    &p.agent,
                    &title,
                    &p.tool_call.title,
                    Some(&p),
                );
                win.add_permission(p);
            }
            Event::PermissionResolved(p) => win.remove_permission(&p.agent, &p.id),
            Event::UsageChanged(u) => {
                if let Some(a) = win.agent(&u.agent) {
                    a.set_usage_used(u.usage.used);
                    a.set_usage_size(u.usage.size);
                }
                header |= selected.as_deref() == Some(&u.agent);
            }
        }
    }
    for m in dirty {
        m.changed();
    }
    if refresh_agents {
        win.refresh_agents();
        win.refresh_recent();
    }
    if header {
        win.update_header();
    }
    if follow {
        win.follow_conversation();
    }
}
