//! What the agent changed in its conversation's turns, from Parley's own
//! checkpoints (`core::checkpoints`): the snapshot before a turn starts as
//! the prompt goes out, the one after when it ends; Changes, Revert, Undo
//! turn, Keep and Undo of a revert for the open conversation.

use std::path::PathBuf;

use super::state::*;
use crate::core::checkpoints::{Changes, CheckpointError, How, Reverted, TurnStart};

impl ChatService {
    /// The key the open conversation's checkpoints go under: its id in the
    /// history, or one for the agent while it is not stored.
    pub fn checkpoint_key(&self, agent: &str) -> String {
        lock(&self.inner.convs)
            .get(agent)
            .and_then(|c| c.conversation.clone())
            .unwrap_or_else(|| format!("unsaved-{agent}"))
    }

    /// The directories a turn of the agent may change: its working
    /// directory and its additional directories that exist. None for an
    /// agent on another host: its files are not on this machine.
    pub(super) fn checkpoint_roots(&self, agent: &str) -> Vec<PathBuf> {
        let Some(def) = self.inner.supervisor.definition(agent).filter(|d| !d.is_remote()) else {
            return Vec::new();
        };
        let mut roots: Vec<PathBuf> = def.checked_working_dir().into_iter().collect();
        for d in def.additional_dirs() {
            if d.is_dir() && !roots.contains(&d) {
                roots.push(d);
            }
        }
        roots
    }

    /// Starts the turn's first snapshot (it runs while the agent thinks).
    pub(super) fn begin_checkpoint(&self, agent: &str, turn: &str) -> Option<TurnStart> {
        let roots = self.checkpoint_roots(agent);
        if roots.is_empty() {
            return None;
        }
        let key = self.checkpoint_key(agent);
        self.inner.checkpoints.begin(agent, &key, turn, roots)
    }

    fn known(&self, agent: &str) -> Result<(), ChatError> {
        match self.inner.supervisor.definition(agent) {
            Some(_) => Ok(()),
            None => Err(ChatError::UnknownAgent(agent.to_owned())),
        }
    }

    /// `Changes(agent, conversation?, turn?)`.
    pub async fn changes(
        &self,
        agent: &str,
        conversation: Option<&str>,
        turn: Option<&str>,
    ) -> Result<Changes, ChatError> {
        self.known(agent)?;
        let key = conversation.map_or_else(|| self.checkpoint_key(agent), str::to_owned);
        Ok(self.inner.checkpoints.changes(&key, turn).await?)
    }

    /// `Revert(agent, turn, path?, hunk?, merge?)`.
    pub async fn revert(
        &self,
        agent: &str,
        turn: &str,
        path: Option<&str>,
        hunk: Option<usize>,
        merge: bool,
    ) -> Result<Reverted, ChatError> {
        self.known(agent)?;
        let key = self.checkpoint_key(agent);
        Ok(self
            .inner
            .checkpoints
            .revert(agent, &key, turn, path, hunk, How { merge, all: false })
            .await?)
    }

    /// `UndoTurn(agent, turn?, merge?, all?)`: the last turn with
    /// checkpoints when none is named. Files that nothing ties to the turn
    /// are left alone unless `how.all`.
    pub async fn undo_turn(&self, agent: &str, turn: Option<&str>, how: How) -> Result<Reverted, ChatError> {
        self.known(agent)?;
        let key = self.checkpoint_key(agent);
        let turn = match turn {
            Some(t) => t.to_owned(),
            None => {
                let changes = self.inner.checkpoints.changes(&key, None).await?;
                changes
                    .turns
                    .iter()
                    .rev()
                    .find(|t| !t.pending)
                    .map(|t| t.turn.clone())
                    .ok_or(ChatError::Checkpoint(CheckpointError::NoTurn(String::new())))?
            }
        };
        Ok(self
            .inner
            .checkpoints
            .revert(agent, &key, &turn, None, None, how)
            .await?)
    }

    /// `UndoRevert(agent, id)`.
    pub async fn undo_revert(&self, agent: &str, id: &str) -> Result<Reverted, ChatError> {
        self.known(agent)?;
        Ok(self.inner.checkpoints.undo_revert(id).await?)
    }

    /// `Keep(agent, turn, path, hunk?)`.
    pub async fn keep(
        &self,
        agent: &str,
        turn: &str,
        path: &str,
        hunk: Option<usize>,
    ) -> Result<(), ChatError> {
        self.known(agent)?;
        let key = self.checkpoint_key(agent);
        Ok(self.inner.checkpoints.keep(agent, &key, turn, path, hunk).await?)
    }
}

impl From<CheckpointError> for ChatError {
    fn from(e: CheckpointError) -> Self {
        ChatError::Checkpoint(e)
    }
}
