//! The bridge: one task on the GTK main thread drains the core's events once
//! per frame and hands them to the application model, which routes each to
//! the model it concerns (`AppModel::apply`). It never touches a widget.

use std::time::Duration;

use gtk::glib;
use gtk::glib::prelude::*;

use crate::core::events::{Event, EventReceiver};
use crate::ui::models::AppModel;

/// The most events applied in one frame; the rest wait for the next. Text
/// deltas are cheap to apply (the rows are redrawn once per frame, not per
/// event), so this is high: a flooding agent's chunks arrive by the
/// thousand a frame even after `coalesce`.
const MAX_PER_FRAME: usize = 50_000;

/// Feeds the core's events to `model` on the GTK main thread, a frame's
/// worth at a time.
pub fn attach(model: &AppModel, rx: EventReceiver) {
    let weak = model.downgrade();
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
            let Some(model) = weak.upgrade() else { return };
            model.apply(batch);
            glib::timeout_future(Duration::from_millis(16)).await;
        }
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
