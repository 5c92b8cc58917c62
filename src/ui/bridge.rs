//! The bridge: one task on the GTK main thread drains the core's events once
//! per frame and hands them to the application model, which routes each to
//! the model it concerns (`AppModel::apply`). It never touches a widget.
//!
//! While a window shows the model, events are applied at the start of its
//! frames (the frame clock's before-paint phase, ahead of the update phase
//! in which the conversation lays out its rows). Each frame then applies
//! what came since the last one, and a frame never waits for an apply that
//! the main loop happened to start just before it: applied at a rate of
//! their own, a flood made every other frame light and the next one heavy,
//! and the heavy ones missed their refresh (docs/benchmarks-history.md).

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use gtk::gdk;
use gtk::glib;
use gtk::glib::prelude::*;

use crate::core::events::{Event, EventReceiver};
use crate::ui::models::AppModel;

/// The most events applied in one frame; the rest wait for the next. Text
/// deltas are cheap to apply (the rows are redrawn once per frame, not per
/// event), so this is high: a flooding agent's chunks arrive by the
/// thousand a frame even after `coalesce`.
const MAX_PER_FRAME: usize = 50_000;

/// How long events wait for a frame before they are applied anyway: a
/// window's frame clock may not tick while the window is hidden.
const FRAME_WAIT: Duration = Duration::from_millis(100);

/// Disconnects `id` from `clock` unless GTK has let go of its handlers
/// already: it disposes a window's frame clock, handlers and all, when the
/// window's surface is destroyed, and disconnecting one then warns.
fn disconnect_if_connected(clock: &gdk::FrameClock, id: glib::SignalHandlerId) {
    let object = clock.upcast_ref::<glib::Object>();
    // SAFETY: the object is alive (`clock` holds a reference), and `id` is
    // a handler id it was given; the call only looks the id up.
    let connected =
        unsafe { glib::gobject_ffi::g_signal_handler_is_connected(object.as_ptr(), id.as_raw()) } != 0;
    if connected {
        clock.disconnect(id);
    }
}

/// Feeds the core's events to `model` on the GTK main thread, a frame's
/// worth at a time.
pub fn attach(model: &AppModel, rx: EventReceiver) {
    let weak = model.downgrade();
    let rx = coalesce(rx);
    // Events received, waiting for the next frame.
    let pending: Rc<RefCell<Vec<Event>>> = Rc::default();
    // Told when a frame applied them.
    let (applied, frame_applied) = async_channel::bounded::<()>(1);
    glib::MainContext::default().spawn_local(async move {
        // The frame clock whose frames apply events, with its handler.
        let mut synced: Option<(gdk::FrameClock, glib::SignalHandlerId)> = None;
        while let Ok(first) = rx.recv().await {
            let Some(model) = weak.upgrade() else { return };
            let clock = model.frame_clock();
            if synced.as_ref().map(|(c, _)| c) != clock.as_ref() {
                if let Some((old, id)) = synced.take() {
                    disconnect_if_connected(&old, id);
                }
                synced = clock.map(|clock| {
                    let (weak, rx, pending, applied) =
                        (weak.clone(), rx.clone(), pending.clone(), applied.clone());
                    let id = clock.connect_before_paint(move |_| {
                        let batch = take_batch(&pending, &rx);
                        if let (false, Some(model)) = (batch.is_empty(), weak.upgrade()) {
                            model.apply(batch);
                        }
                        let _ = applied.try_send(());
                    });
                    (clock, id)
                });
            }
            pending.borrow_mut().push(first);
            match &synced {
                Some((clock, _)) => {
                    drop(model);
                    while frame_applied.try_recv().is_ok() {}
                    clock.request_phase(gdk::FrameClockPhase::BEFORE_PAINT);
                    if glib::future_with_timeout(FRAME_WAIT, frame_applied.recv())
                        .await
                        .is_ok()
                    {
                        continue;
                    }
                    let Some(model) = weak.upgrade() else { return };
                    model.apply(take_batch(&pending, &rx));
                }
                None => {
                    model.apply(take_batch(&pending, &rx));
                    drop(model);
                    glib::timeout_future(Duration::from_millis(16)).await;
                }
            }
        }
    });
}

/// What is pending, then what else has come, up to a frame's worth.
fn take_batch(pending: &RefCell<Vec<Event>>, rx: &EventReceiver) -> Vec<Event> {
    let mut batch = std::mem::take(&mut *pending.borrow_mut());
    while batch.len() < MAX_PER_FRAME {
        match rx.try_recv() {
            Ok(e) => batch.push(e),
            Err(_) => break,
        }
    }
    batch
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
/// thread cost ~8 ms a frame (docs/benchmarks-history.md). Order is kept: only
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
