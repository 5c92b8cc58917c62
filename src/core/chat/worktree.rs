//! A conversation in a worktree of its own (issue 62): `NewInWorktree`
//! makes one from the repository the agent's directory is in and starts a
//! new conversation there; the agent's process, its file boundary, its
//! terminals, its session and the checkpoints all work in the worktree
//! (the supervisor's `set_workdir`). `Worktree`, `Apply`, `Merge` and
//! `Discard` act on the open conversation's.

use super::state::*;
use crate::core::worktrees::{Applied, Status, Worktree, WorktreeError};

impl From<WorktreeError> for ChatError {
    fn from(e: WorktreeError) -> Self {
        ChatError::Worktree(e)
    }
}

impl ChatService {
    /// Points the agent at the directory its current conversation works
    /// in; a running agent whose directory changed is stopped (the next
    /// message starts it there).
    pub(super) fn work_where_the_conversation_is(&self, agent: &str) {
        let dir = lock(&self.inner.convs)
            .get(agent)
            .and_then(|c| c.worktree.as_ref().map(|w| std::path::PathBuf::from(&w.cwd)));
        let sup = self.inner.supervisor.clone();
        if sup.set_workdir(agent, dir) && sup.connection(agent).is_some() {
            let agent = agent.to_owned();
            tokio::spawn(async move {
                let _ = sup.stop(&agent).await;
            });
        }
    }

    /// `NewInWorktree(agent, base?)`: a worktree of the repository the
    /// agent's directory is in, from `base` (its `HEAD` by default), and a
    /// new conversation in it.
    pub async fn new_in_worktree(&self, agent: &str, base: Option<&str>) -> Result<Worktree, ChatError> {
        let def = self
            .inner
            .supervisor
            .configured(agent)
            .ok_or_else(|| ChatError::UnknownAgent(agent.to_owned()))?;
        if def.is_remote() {
            return Err(ChatError::Unavailable(gettext(
                "worktrees are for agents on this machine; this one runs on another host or in a container",
            )));
        }
        if lock(&self.inner.convs).get(agent).is_some_and(|c| c.busy) {
            return Err(ChatError::Busy);
        }
        let cwd = def.checked_working_dir().map_err(ChatError::Unavailable)?;
        let name = format!(
            "{}-{}",
            agent,
            humantime::format_rfc3339_seconds(std::time::SystemTime::now())
                .to_string()
                .replace([':', 'T', 'Z'], "")
        );
        let wt = self.inner.worktrees.create(agent, &cwd, base, &name).await?;
        let next = Conv {
            worktree: Some(wt.clone()),
            ..Conv::default()
        };
        self.leave_current(agent, next)?;
        self.emit_switched(agent);
        self.conversations_changed(agent);
        Ok(wt)
    }

    /// The open conversation's worktree, if it works in one (the window's
    /// header shows its branch).
    pub fn worktree_info(&self, agent: &str) -> Option<Worktree> {
        lock(&self.inner.convs)
            .get(agent)
            .and_then(|c| c.worktree.clone())
    }

    fn worktree_of(&self, agent: &str) -> Result<Worktree, ChatError> {
        if self.inner.supervisor.definition(agent).is_none() {
            return Err(ChatError::UnknownAgent(agent.to_owned()));
        }
        lock(&self.inner.convs)
            .get(agent)
            .and_then(|c| c.worktree.clone())
            .ok_or_else(|| ChatError::Worktree(WorktreeError::NoWorktree(agent.to_owned())))
    }

    /// `Worktree(agent)`: where the open conversation's worktree stands.
    pub async fn worktree(&self, agent: &str) -> Result<Status, ChatError> {
        let wt = self.worktree_of(agent)?;
        Ok(self.inner.worktrees.status(&wt).await?)
    }

    /// `Apply(agent)`: the worktree's changes, as uncommitted changes of
    /// the main checkout.
    pub async fn apply_worktree(&self, agent: &str) -> Result<Applied, ChatError> {
        let wt = self.worktree_of(agent)?;
        Ok(self.inner.worktrees.apply(&wt).await?)
    }

    /// `UndoApply(agent, id)`.
    pub async fn undo_apply(&self, agent: &str, id: &str) -> Result<Applied, ChatError> {
        self.worktree_of(agent)?;
        Ok(self.inner.worktrees.undo_apply(id).await?)
    }

    /// `Merge(agent, message?)`: commits what is uncommitted in the
    /// worktree (the conversation's title as the message by default) and
    /// merges its branch; answers the main checkout's new commit.
    pub async fn merge_worktree(&self, agent: &str, message: Option<&str>) -> Result<String, ChatError> {
        let wt = self.worktree_of(agent)?;
        if lock(&self.inner.convs).get(agent).is_some_and(|c| c.busy) {
            return Err(ChatError::Busy);
        }
        let title = lock(&self.inner.convs)
            .get(agent)
            .and_then(|c| c.title.clone())
            .unwrap_or_else(|| gettext_f("Work of {agent} in Parley", &[("agent", agent)]));
        Ok(self.inner.worktrees.merge(&wt, message.unwrap_or(&title)).await?)
    }

    /// `Discard(agent)`: removes the worktree and its branch; the
    /// conversation goes on in the agent's own directory.
    pub async fn discard_worktree(&self, agent: &str) -> Result<(), ChatError> {
        let wt = self.worktree_of(agent)?;
        if lock(&self.inner.convs).get(agent).is_some_and(|c| c.busy) {
            return Err(ChatError::Busy);
        }
        // Its process leaves the folder first.
        if let Some(c) = lock(&self.inner.convs).get_mut(agent) {
            c.worktree = None;
        }
        let sup = self.inner.supervisor.clone();
        if sup.set_workdir(agent, None) && sup.connection(agent).is_some() {
            let _ = sup.stop(agent).await;
        }
        self.inner.worktrees.discard(&wt).await?;
        self.emit_switched(agent);
        Ok(())
    }
}
