//! Where an agent works: its configured `cwd`, or the directory its
//! current conversation works in (a worktree of its own, issue 62). The
//! definition the agent runs with (`definition`, a start) has that
//! directory as its `cwd`; `configured` keeps the configuration's.

use std::path::PathBuf;

use super::{lock, AgentDef, AgentService};

impl AgentService {
    /// The agent's definition as configured (its own `cwd`, whatever
    /// directory its current conversation works in).
    pub fn configured(&self, name: &str) -> Option<AgentDef> {
        lock(&self.shared.table)
            .find(name)
            .filter(|e| !e.removed)
            .map(|e| e.def.clone())
    }

    /// Sets the directory the agent's current conversation works in
    /// (`None`: its configured `cwd`). Answers whether it changed: a
    /// running agent then needs a new process there.
    pub fn set_workdir(&self, name: &str, dir: Option<PathBuf>) -> bool {
        let mut t = lock(&self.shared.table);
        let Some(e) = t.find(name) else { return false };
        if e.workdir == dir {
            return false;
        }
        e.workdir = dir;
        true
    }
}
