//! Agents side by side in one folder: when a turn starts while another
//! agent whose directories overlap this one's is busy, both conversations
//! say so once (a `shared-folder` system message), with what it means:
//! each turn's Changes list the other's files apart, and Undo of a turn
//! leaves them (`core::checkpoints::attribution`).

use std::path::{Path, PathBuf};

use super::state::*;

/// Whether two sets of directories share a folder: one holds the other.
fn overlap(a: &[PathBuf], b: &[PathBuf]) -> bool {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
    a.iter().map(|p| canon(p)).any(|x| {
        b.iter()
            .map(|p| canon(p))
            .any(|y| x.starts_with(&y) || y.starts_with(&x))
    })
}

impl ChatService {
    /// Tells `agent`'s conversation (and each busy agent it now shares a
    /// folder with) when that set of agents is new.
    pub(super) fn tell_shared_folders(&self, agent: &str) {
        let mine = self.checkpoint_roots(agent);
        if mine.is_empty() {
            return;
        }
        let busy: Vec<String> = lock(&self.inner.convs)
            .iter()
            .filter(|(name, c)| name.as_str() != agent && c.busy)
            .map(|(name, _)| name.clone())
            .collect();
        let mut sharing: Vec<String> = busy
            .into_iter()
            .filter(|other| overlap(&mine, &self.checkpoint_roots(other)))
            .collect();
        sharing.sort();
        self.tell_shared(agent, &sharing);
        for other in &sharing {
            let mut theirs: Vec<String> = lock(&self.inner.convs)
                .get(other)
                .map(|c| c.shared_with.clone())
                .unwrap_or_default();
            if !theirs.iter().any(|a| a == agent) {
                theirs.push(agent.to_owned());
                theirs.sort();
                self.tell_shared(other, &theirs);
            }
        }
    }

    fn tell_shared(&self, agent: &str, sharing: &[String]) {
        {
            let mut convs = lock(&self.inner.convs);
            let Some(c) = convs.get_mut(agent) else { return };
            if c.shared_with == sharing {
                return;
            }
            c.shared_with = sharing.to_vec();
        }
        if sharing.is_empty() {
            return;
        }
        let names: Vec<String> = sharing
            .iter()
            .map(|a| {
                self.inner
                    .supervisor
                    .definition(a)
                    .map_or_else(|| a.clone(), |d| d.title_or_name().to_owned())
            })
            .collect();
        let text = gettext_f(
            "{agents} also works in this folder right now. Each turn's Changes list what the other agent changes apart (“perhaps not by the agent”), and Undo of a turn leaves it alone. To keep them apart, give each agent its own folder.",
            &[("agents", &names.join(", "))],
        );
        let mut m = Message::new(self.next_id("m"), agent, Role::System);
        m.code = Some(MessageCode::SharedFolder);
        m.parts.push(Part::Text { text });
        if let Some(c) = lock(&self.inner.convs).get_mut(agent) {
            c.messages.push(m.clone());
        }
        self.emit_message(&m);
    }
}
