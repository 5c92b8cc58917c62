//! Notification channels of kind `command`: the program a channel names
//! runs with the event as one JSON object on its standard input. The
//! window runs them from its notifier; `parley-cli serve` from the events
//! it prints ([`Watch`]), so a script gets them without a window.

use std::collections::HashMap;

use serde::Serialize;

use crate::core::config::model::{Channel, ChannelKind};
use crate::core::events::{ElicitationRequest, Event, PermissionRequest};
use crate::core::types::AgentState;

/// What a channel is told.
#[derive(Debug, Clone, Serialize)]
pub struct Notice {
    /// `turn-ended`, `permission-requested`, `elicitation-requested` or `agent-error`.
    pub event: &'static str,
    pub agent: String,
    pub title: String,
    pub body: String,
    pub permission: Option<PermissionRequest>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<ElicitationRequest>,
}

/// Whether `channel` is for this event and agent.
pub fn wants(channel: &Channel, notice: &Notice) -> bool {
    channel.events.iter().any(|e| e == notice.event)
        && channel
            .agents
            .as_ref()
            .is_none_or(|agents| agents.contains(&notice.agent))
}

/// Runs each command channel that wants `notice`, on `runtime`.
pub fn run_commands(channels: &[Channel], notice: &Notice, runtime: &tokio::runtime::Handle) {
    for channel in channels {
        if channel.kind != ChannelKind::Command || !wants(channel, notice) {
            continue;
        }
        let Some(command) = channel.command.clone() else {
            continue;
        };
        let args = channel.args.clone();
        let payload = serde_json::to_string(notice).unwrap_or_default();
        runtime.spawn(async move {
            use tokio::io::AsyncWriteExt;
            let child = tokio::process::Command::new(&command)
                .args(&args)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::null())
                .spawn();
            match child {
                Ok(mut child) => {
                    if let Some(mut stdin) = child.stdin.take() {
                        let _ = stdin.write_all(payload.as_bytes()).await;
                    }
                    let _ = child.wait().await;
                }
                Err(e) => tracing::warn!("notification channel {command}: {e}"),
            }
        });
    }
}

/// Turns the core's events into notices, as the window's notifier does
/// from its models: a turn that ended (busy, then not), a permission or
/// elicitation request, an agent gone to `error`.
#[derive(Default)]
pub struct Watch {
    busy: HashMap<String, bool>,
    failed: HashMap<String, bool>,
}

impl Watch {
    /// `title`: an agent's title by its name.
    pub fn notice(&mut self, event: &Event, title: &dyn Fn(&str) -> String) -> Option<Notice> {
        let notice = |event: &'static str, agent: &str, body: String| Notice {
            event,
            agent: agent.to_owned(),
            title: title(agent),
            body,
            permission: None,
            elicitation: None,
        };
        match event {
            Event::TurnChanged(t) => {
                let was = self.busy.insert(t.agent.clone(), t.busy).unwrap_or(false);
                (was && !t.busy).then(|| {
                    notice(
                        "turn-ended",
                        &t.agent,
                        crate::i18n::gettext("The answer is complete."),
                    )
                })
            }
            Event::PermissionRequested(p) => Some(Notice {
                permission: Some(p.clone()),
                ..notice("permission-requested", &p.agent, p.tool_call.title.clone())
            }),
            Event::ElicitationRequested(e) => Some(Notice {
                elicitation: Some(e.clone()),
                ..notice("elicitation-requested", &e.agent, e.message.clone())
            }),
            // Only on going into `error`, not on each state event while in it.
            Event::AgentState(s) => {
                let failed = s.state == AgentState::Error;
                let was = self.failed.insert(s.agent.clone(), failed).unwrap_or(false);
                (failed && !was).then(|| notice("agent-error", &s.agent, s.error.clone().unwrap_or_default()))
            }
            _ => None,
        }
    }
}
