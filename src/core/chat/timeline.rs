//! The protocol's newer session updates, applied to a conversation: several
//! plans (`plan_update`, `plan_removed`), session notices, and context
//! compactions. Pure, like `updates.rs`, whose `apply` calls these.

use agent_client_protocol_schema::v1 as acp;

use super::state::Conv;
use super::updates::{set_part, target_message};
use crate::core::events::{Event, MessageDelta, MessageUpdated};
use crate::core::types::message::{self, Part, PlanEntry};
use crate::core::types::notice::{Compaction, Notice};

impl Conv {
    /// Puts `part` at (message, index), telling the window with a delta.
    fn put_part(&mut self, agent: &str, at: (usize, usize), part: Part, out: &mut impl FnMut(Event)) {
        let (mi, index) = at;
        let Some(m) = self.messages.get_mut(mi) else {
            return;
        };
        let kind = part.kind();
        set_part(m, index, part.clone());
        out(Event::MessageDelta(MessageDelta {
            agent: agent.to_owned(),
            message_id: m.id.clone(),
            index,
            kind,
            text: None,
            part: Some(part),
        }));
    }

    /// Where a new part of the message being streamed goes.
    fn new_part_at(&mut self, agent: &str, next_id: &mut impl FnMut() -> String) -> (usize, usize) {
        let (mi, m) = target_message(self, agent, next_id);
        (mi, m.parts.len())
    }

    /// The part a predicate finds, newest message first.
    fn find_part(&self, found: impl Fn(&Part) -> bool) -> Option<(usize, usize)> {
        self.messages
            .iter()
            .enumerate()
            .rev()
            .find_map(|(mi, m)| m.parts.iter().position(&found).map(|pi| (mi, pi)))
    }

    /// `plan`: the session's one plan (no id), replaced where it is in the
    /// message being streamed, else a new part of it.
    pub(super) fn apply_plan(
        &mut self,
        agent: &str,
        entries: Vec<PlanEntry>,
        next_id: &mut impl FnMut() -> String,
        out: &mut impl FnMut(Event),
    ) {
        let (mi, m) = target_message(self, agent, next_id);
        let index = m
            .parts
            .iter()
            .position(|p| matches!(p, Part::Plan { id: None, .. }))
            .unwrap_or(m.parts.len());
        let part = Part::Plan {
            entries,
            id: None,
            markdown: None,
        };
        self.put_part(agent, (mi, index), part, out);
    }

    /// `plan_update`: replaces the plan with that id wherever it is in the
    /// conversation, else starts it in the message being streamed.
    pub(super) fn apply_plan_update(
        &mut self,
        agent: &str,
        u: acp::PlanUpdate,
        next_id: &mut impl FnMut() -> String,
        out: &mut impl FnMut(Event),
    ) {
        let (id, entries, markdown) = match u.plan {
            acp::PlanUpdateContent::Items(p) => (p.plan_id.to_string(), plan_items(&p.entries), None),
            acp::PlanUpdateContent::Markdown(p) => (p.plan_id.to_string(), Vec::new(), Some(p.content)),
            _ => return,
        };
        let at = match self.find_part(|p| matches!(p, Part::Plan { id: Some(i), .. } if *i == id)) {
            Some(at) => at,
            None => self.new_part_at(agent, next_id),
        };
        let part = Part::Plan {
            entries,
            id: Some(id),
            markdown,
        };
        self.put_part(agent, at, part, out);
    }

    /// `plan_removed`: the plan's part goes (`message:updated` with the
    /// message whole); an unknown id is ignored, as the protocol says.
    pub(super) fn apply_plan_removed(&mut self, agent: &str, plan: &str, out: &mut impl FnMut(Event)) {
        let Some((mi, pi)) = self.find_part(|p| matches!(p, Part::Plan { id: Some(i), .. } if i == plan))
        else {
            return;
        };
        let m = &mut self.messages[mi];
        m.parts.remove(pi);
        out(Event::MessageUpdated(MessageUpdated {
            agent: agent.to_owned(),
            message: m.clone(),
        }));
    }

    /// `notice`: a part of its own in the message being streamed (or the
    /// last answer, between turns).
    pub(super) fn apply_notice(
        &mut self,
        agent: &str,
        n: &acp::Notice,
        next_id: &mut impl FnMut() -> String,
        out: &mut impl FnMut(Event),
    ) {
        let notice = Notice::from(n);
        if notice.title.is_empty() {
            return;
        }
        let at = self.new_part_at(agent, next_id);
        self.put_part(agent, at, Part::Notice(notice), out);
    }

    /// `compaction_update` and `compaction_summary_chunk`: the first one
    /// for an id fixes where the compaction stands; later ones change it
    /// in place.
    pub(super) fn apply_compaction(
        &mut self,
        agent: &str,
        id: String,
        change: impl FnOnce(&mut Compaction),
        next_id: &mut impl FnMut() -> String,
        out: &mut impl FnMut(Event),
    ) {
        let found = self.find_part(|p| matches!(p, Part::Compaction(c) if c.id == id));
        let (at, mut compaction) = match found {
            Some((mi, pi)) => match &self.messages[mi].parts[pi] {
                Part::Compaction(c) => ((mi, pi), c.clone()),
                _ => return,
            },
            None => (self.new_part_at(agent, next_id), Compaction::new(id)),
        };
        let before = compaction.clone();
        change(&mut compaction);
        // A chunk past the summary's limit changes nothing: nothing is sent.
        if found.is_some() && compaction == before {
            return;
        }
        self.put_part(agent, at, Part::Compaction(compaction), out);
    }
}

fn plan_items(entries: &[acp::PlanEntry]) -> Vec<PlanEntry> {
    message::plan_entries(&acp::Plan::new(entries.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::types::message::{Message, Role};
    use serde_json::json;

    fn conv() -> Conv {
        let mut c = Conv::default();
        c.messages.push(Message::new("u1".into(), "a", Role::User));
        c.messages.push(Message::new("m1".into(), "a", Role::Agent));
        c.current = Some(1);
        c
    }

    fn apply(c: &mut Conv, updates: Vec<serde_json::Value>) -> Vec<Event> {
        let mut events = Vec::new();
        let mut n = 0;
        for u in updates {
            let u: acp::SessionUpdate = serde_json::from_value(u).expect("a session update");
            let mut ids = || {
                n += 1;
                format!("new{n}")
            };
            assert_eq!(c.apply("a", u, &mut ids, &mut |e| events.push(e)), None);
        }
        events
    }

    fn items(id: &str, status: &str) -> serde_json::Value {
        json!({"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": id,
            "entries": [{"content": id, "priority": "high", "status": status}]}})
    }

    #[test]
    fn plans_by_id_are_replaced_in_place_and_removed() {
        let mut c = conv();
        apply(&mut c, vec![items("p1", "pending"), items("p2", "pending")]);
        // The next turn: the update of p1 replaces the part where it stands.
        c.messages.push(Message::new("u2".into(), "a", Role::User));
        c.messages.push(Message::new("m2".into(), "a", Role::Agent));
        c.current = Some(3);
        let events = apply(
            &mut c,
            vec![
                items("p1", "completed"),
                json!({"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "p3", "content": "# Plan"}}),
                json!({"sessionUpdate": "plan_removed", "planId": "p2"}),
                json!({"sessionUpdate": "plan_removed", "planId": "unknown"}),
            ],
        );
        let ids = |m: &Message| -> Vec<String> {
            m.parts
                .iter()
                .filter_map(|p| match p {
                    Part::Plan { id, .. } => id.clone(),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(ids(&c.messages[1]), ["p1"]);
        assert_eq!(ids(&c.messages[3]), ["p3"]);
        assert!(matches!(&c.messages[1].parts[0], Part::Plan { entries, .. }
            if entries[0].status == acp::PlanEntryStatus::Completed));
        assert!(matches!(&c.messages[3].parts[0], Part::Plan { markdown: Some(m), .. } if m == "# Plan"));
        let names: Vec<_> = events.iter().map(Event::name).collect();
        assert_eq!(names, ["message:delta", "message:delta", "message:updated"]);
    }

    #[test]
    fn a_notice_is_a_part_and_a_compaction_is_patched_where_it_began() {
        let mut c = conv();
        apply(
            &mut c,
            vec![
                json!({"sessionUpdate": "notice", "severity": "warning", "title": "Rate limited",
                    "description": "Retrying in 5 s"}),
                json!({"sessionUpdate": "compaction_summary_chunk", "compactionId": "k1",
                    "content": {"type": "text", "text": "We fixed "}}),
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Go on"}}),
                json!({"sessionUpdate": "compaction_summary_chunk", "compactionId": "k1",
                    "content": {"type": "text", "text": "the parser."}}),
                json!({"sessionUpdate": "compaction_update", "compactionId": "k1", "status": "completed"}),
            ],
        );
        let parts = &c.messages[1].parts;
        assert!(matches!(&parts[0], Part::Notice(n) if n.severity == "warning"
            && n.description.as_deref() == Some("Retrying in 5 s")));
        assert!(matches!(&parts[1], Part::Compaction(k) if k.status == "completed"
            && k.summary == "We fixed the parser."));
        assert!(matches!(&parts[2], Part::Text { text } if text == "Go on"));
        assert_eq!(parts.len(), 3);
    }
}
