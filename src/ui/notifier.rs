//! Notifications: a listener of the agents' signals (`failed`,
//! `turn-ended`, `permission-requested`) that tells the configured channels
//! (desktop notifications, commands).

use gtk::glib::prelude::*;
use gtk::prelude::*;
use gtk::{gio, glib};

use crate::core::config::model::ChannelKind;
use crate::core::events::PermissionRequest;
use crate::core::services::Core;
use crate::ui::models::{AgentObject, AppModel, PermissionObject};
use crate::ui::runtime;

/// Listens to every agent of `model`, present and future.
pub fn attach(model: &AppModel, app: &impl IsA<gtk::Application>) {
    let app = app.upcast_ref::<gtk::Application>().downgrade();
    let store = model.agents();
    let core = model.core().clone();
    for agent in (0..store.n_items()).filter_map(|i| store.item(i).and_downcast::<AgentObject>()) {
        listen(&agent, &app, &core);
    }
    model.connect_agent_added(move |agent| listen(agent, &app, &core));
}

fn listen(agent: &AgentObject, app: &glib::WeakRef<gtk::Application>, core: &Core) {
    let (a, c) = (app.clone(), core.clone());
    let weak = agent.downgrade();
    agent.state().connect_local("failed", false, move |args| {
        let agent = weak.upgrade()?;
        let reason = args
            .get(1)
            .and_then(|v| v.get::<String>().ok())
            .unwrap_or_default();
        notify(
            &a.upgrade()?,
            &c,
            "agent-error",
            &agent.name(),
            &agent.title(),
            &reason,
            None,
        );
        None
    });
    let (a, c) = (app.clone(), core.clone());
    let weak = agent.downgrade();
    agent.conversation().connect_local("turn-ended", false, move |_| {
        let agent = weak.upgrade()?;
        let body = crate::i18n::gettext("The answer is complete.");
        notify(
            &a.upgrade()?,
            &c,
            "turn-ended",
            &agent.name(),
            &agent.title(),
            &body,
            None,
        );
        None
    });
    let (a, c) = (app.clone(), core.clone());
    let weak = agent.downgrade();
    agent
        .conversation()
        .connect_local("elicitation-requested", false, move |args| {
            let agent = weak.upgrade()?;
            let id = args.get(1).and_then(|v| v.get::<String>().ok())?;
            let request = agent
                .conversation()
                .elicitations()
                .into_iter()
                .find(|e| e.id == id)?;
            notify_with(
                &a.upgrade()?,
                &c,
                Notice {
                    event: "elicitation-requested",
                    agent: &agent.name(),
                    title: &agent.title(),
                    body: &request.message,
                    permission: None,
                    elicitation: Some(&request),
                },
            );
            None
        });
    let (a, c) = (app.clone(), core.clone());
    let weak = agent.downgrade();
    agent
        .conversation()
        .connect_local("permission-requested", false, move |args| {
            let agent = weak.upgrade()?;
            let p = args.get(1).and_then(|v| v.get::<PermissionObject>().ok())?;
            let request = p.request();
            // Which helper asks, when one does.
            let title = match &request.subagent {
                Some(s) => format!("{}: {}", s.title, request.tool_call.title),
                None => request.tool_call.title.clone(),
            };
            notify(
                &a.upgrade()?,
                &c,
                "permission-requested",
                &agent.name(),
                &agent.title(),
                &title,
                Some(request),
            );
            None
        });
}

struct Notice<'a> {
    event: &'static str,
    agent: &'a str,
    title: &'a str,
    body: &'a str,
    permission: Option<&'a PermissionRequest>,
    elicitation: Option<&'a crate::core::events::ElicitationRequest>,
}

fn notify(
    app: &gtk::Application,
    core: &Core,
    event: &'static str,
    agent: &str,
    title: &str,
    body: &str,
    permission: Option<&PermissionRequest>,
) {
    notify_with(
        app,
        core,
        Notice {
            event,
            agent,
            title,
            body,
            permission,
            elicitation: None,
        },
    );
}

/// Tells the configured notification channels about an event. Desktop
/// notifications only while no window of Parley's is focused.
fn notify_with(app: &gtk::Application, core: &Core, notice: Notice<'_>) {
    let Notice {
        event,
        agent,
        title,
        body,
        permission,
        elicitation,
    } = notice;
    let current = core.config.current();
    for channel in &current.channels {
        if !channel.events.iter().any(|e| e == event) {
            continue;
        }
        if let Some(agents) = &channel.agents {
            if !agents.iter().any(|a| a == agent) {
                continue;
            }
        }
        match channel.kind {
            ChannelKind::Desktop => {
                if app.active_window().is_some_and(|w| w.is_active()) {
                    continue;
                }
                // Agent text, shown as the window shows it: no control or
                // bidi character reaches the notification raw.
                let n = gio::Notification::new(&crate::ui::markdown::visible(title));
                n.set_body(Some(&crate::ui::markdown::visible(body)));
                n.set_default_action_and_target_value("app.show-agent", Some(&agent.to_variant()));
                if let Some(e) = elicitation {
                    n.add_button_with_target_value(
                        &crate::i18n::gettext("Decline"),
                        "app.answer-elicitation",
                        Some(&(e.id.clone(), "decline".to_owned()).to_variant()),
                    );
                }
                if let Some(p) = permission {
                    for o in &p.options {
                        n.add_button_with_target_value(
                            &crate::ui::markdown::visible(&o.name),
                            "app.answer-permission",
                            Some(&(p.id.clone(), o.option_id.clone()).to_variant()),
                        );
                    }
                }
                app.send_notification(Some(&format!("{agent}-{event}")), &n);
            }
            ChannelKind::Command => {
                let notice = crate::core::channels::Notice {
                    event,
                    agent: agent.to_owned(),
                    title: title.to_owned(),
                    body: body.to_owned(),
                    permission: permission.cloned(),
                    elicitation: elicitation.cloned(),
                };
                crate::core::channels::run_commands(
                    std::slice::from_ref(channel),
                    &notice,
                    runtime::runtime().handle(),
                );
            }
        }
    }
}
