//! Permission requests: asking the user on the agent's behalf, and the
//! answer, built from the protocol's own types.

use super::state::*;
use super::updates::find_tool;
use crate::core::config::rules;

impl ChatService {
    /// `AnswerPermission(id, optionId)`.
    pub fn answer_permission(&self, id: &str, option_id: &str) -> Result<(), ChatError> {
        let mut convs = lock(&self.inner.convs);
        for (agent, c) in convs.iter_mut() {
            let Some(i) = c.permissions.iter().position(|p| p.request.id == id) else {
                continue;
            };
            let Some(option) = c.permissions[i]
                .request
                .options
                .iter()
                .find(|o| o.option_id == option_id)
                .cloned()
            else {
                return Err(ChatError::NoSuchOption(id.to_owned(), option_id.to_owned()));
            };
            let p = c.permissions.remove(i);
            if option.rejects() {
                c.rejections += 1;
                c.rejected.push(p.request.tool_call.id.clone());
            }
            let agent = agent.clone();
            drop(convs);
            p.responder
                .respond(Ok(permission_outcome(acp::RequestPermissionOutcome::Selected(
                    acp::SelectedPermissionOutcome::new(option.option_id.clone()),
                ))));
            self.emit(Event::PermissionResolved(PermissionResolved {
                id: id.to_owned(),
                agent,
            }));
            return Ok(());
        }
        Err(ChatError::NoSuchPermission(id.to_owned()))
    }

    pub(super) fn permission_request(&self, agent: &str, params: &RawValue, responder: Responder) {
        let req: acp::RequestPermissionRequest = match serde_json::from_str(params.get()) {
            Ok(r) => r,
            Err(e) => {
                responder.respond(Err(RpcError::remote(
                    crate::core::acp::connection::INVALID_PARAMS,
                    e.to_string(),
                )));
                return;
            }
        };
        let mut convs = lock(&self.inner.convs);
        let c = convs.entry(agent.to_owned()).or_default();
        // A request for a session this conversation does not hold (its
        // own or a helper's) is not part of it: refused, never shown.
        let session = req.session_id.0.as_ref();
        let own = c.session.as_ref().is_some_and(|(s, _)| &*s.0 == session);
        let child = c.subagents.iter().position(|s| s.info.session_id == session);
        if !own && child.is_none() {
            drop(convs);
            let message = format!("unknown session {session}");
            self.inner.supervisor.log(
                agent,
                format!("parley: refused a permission request for an unknown session {session}"),
            );
            responder.respond(Err(RpcError::remote(
                crate::core::acp::connection::INVALID_PARAMS,
                message,
            )));
            return;
        }
        // A helper may ask after its parent's turn ended (codex-acp's do):
        // it is answered unless the user cancelled it.
        let over = match child {
            Some(i) => c.subagents[i].info.status == crate::core::types::subagent::SubagentStatus::Cancelled,
            None => c.cancelling || !c.busy,
        };
        if over {
            drop(convs);
            responder.respond(Ok(permission_outcome(acp::RequestPermissionOutcome::Cancelled)));
            return;
        }
        self.heard_from(agent, c);
        let asker = child.map(|i| events::Asker {
            session_id: c.subagents[i].info.session_id.clone(),
            title: c.subagents[i].info.title.clone(),
        });
        let (call, message_id) = {
            let thread: &mut Conv = match child {
                Some(i) => &mut c.subagents[i].conv,
                None => c,
            };
            let call = match find_tool(thread, &req.tool_call.tool_call_id.to_string()) {
                Some(mut call) => {
                    call.merge(&req.tool_call);
                    call
                }
                None => ToolCall::from_update(&req.tool_call),
            };
            let mut next_id = || self.next_id("m");
            match &asker {
                Some(a) => {
                    let sid = a.session_id.clone();
                    thread.put_tool(agent, call.clone(), false, &mut next_id, &mut |e| {
                        self.child_event(&sid, e)
                    })
                }
                None => thread.put_tool(agent, call.clone(), false, &mut next_id, &mut |e| self.emit(e)),
            }
            let message_id = thread
                .current
                .and_then(|i| thread.messages.get(i))
                .or_else(|| thread.messages.iter().rev().find(|m| m.role == Role::Agent))
                .map(|m| m.id.clone())
                .unwrap_or_default();
            (call, message_id)
        };
        // The call as asked about names what it changes too (codex-acp
        // shows its patch's diff here).
        self.note_tool(agent, &call);
        let options: Vec<PermissionOption> = req
            .options
            .iter()
            .map(|o| PermissionOption {
                option_id: o.option_id.to_string(),
                name: o.name.clone(),
                kind: o.kind,
            })
            .collect();
        // A rule answers at once, with the agent's own option.
        let paths: Vec<String> = call
            .locations
            .iter()
            .map(|l| l.path.clone())
            .chain(call.diffs.iter().map(|d| d.path.clone()))
            .collect();
        let ruled = {
            let rules = lock(&self.inner.rules);
            rules::decide(
                &rules,
                &rules::Request {
                    agent,
                    // As the request or the call's announcement gave it.
                    kind: call.kind_given.then_some(call.kind),
                    title: &call.title,
                    paths: &paths,
                },
                &options,
            )
            .and_then(|(i, option)| rules.get(i).map(|r| (i, option, r.clone())))
        };
        if let Some((index, option_id, rule)) = ruled {
            let allowed = rule.decision == crate::core::config::model::Decision::Allow;
            if !allowed {
                c.rejections += 1;
                c.rejected.push(call.id.clone());
            }
            drop(convs);
            responder.respond(Ok(permission_outcome(acp::RequestPermissionOutcome::Selected(
                acp::SelectedPermissionOutcome::new(option_id),
            ))));
            let n = (index + 1).to_string();
            let described = rules::describe(&rule);
            let text = if allowed {
                gettext_f(
                    "Allowed by rule {n} ({rule}): {title}",
                    &[("n", &n), ("rule", &described), ("title", &call.title)],
                )
            } else {
                gettext_f(
                    "Rejected by rule {n} ({rule}): {title}",
                    &[("n", &n), ("rule", &described), ("title", &call.title)],
                )
            };
            self.inner.supervisor.log(agent, format!("parley: {text}"));
            self.system_message(agent, MessageCode::PermissionRule, Some(text));
            return;
        }
        let request = PermissionRequest {
            id: self.next_id("p"),
            agent: agent.to_owned(),
            message_id,
            tool_call: call,
            options,
            rejections: c.rejections,
            subagent: asker,
        };
        c.permissions.push(PendingPermission {
            request: request.clone(),
            responder,
            since: std::time::SystemTime::now(),
        });
        self.emit(Event::PermissionRequested(request));
    }
}

/// The answer to `session/request_permission`, built from the protocol's own
/// types.
pub(super) fn permission_outcome(outcome: acp::RequestPermissionOutcome) -> serde_json::Value {
    serde_json::to_value(acp::RequestPermissionResponse::new(outcome)).unwrap_or_default()
}
