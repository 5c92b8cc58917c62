//! What ties a file changed during a turn to that turn. A turn's two
//! snapshots see every change made in between, whoever made it: a second
//! agent in the same folder, the user typing in an editor, another Parley.
//! Undo of the turn must take back only the turn's own, so each changed
//! file is attributed to the turn when
//!
//! - the agent wrote it through Parley's `fs/*`;
//! - one of the turn's tool calls that edit, delete or move named it (its
//!   locations, or a folder holding it), or any tool call showed its diff
//!   (agents that write by themselves say so this way);
//! - it changed while a command of the turn ran (an ACP terminal, or a tool
//!   call of kind `execute`): its modification time (a deleted file's
//!   folder's) falls within the command's run.
//!
//! Anything else is "changed during the turn, perhaps not by the agent":
//! listed apart in Changes and left alone by Undo unless the user picks it.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Slack around a command's run for file times (clocks of other
/// filesystems, and the time a command takes to be seen as ended).
const SLACK_MS: u64 = 1_000;

/// What the turn said and did, gathered while it runs.
#[derive(Debug, Default, Clone)]
pub struct Attribution {
    /// Paths the turn wrote or named, as given (absolute, or relative to a
    /// root).
    named: HashSet<PathBuf>,
    /// Commands of the turn: when each started and (once known) ended, in
    /// milliseconds since the epoch.
    commands: HashMap<String, (u64, Option<u64>)>,
}

impl Attribution {
    /// A path the turn wrote (through `fs/*`) or named as changed.
    pub fn name(&mut self, path: &Path) {
        // Bounded: a hostile agent could name a million paths.
        if self.named.len() < 100_000 {
            self.named.insert(path.to_owned());
        }
    }

    /// A command of the turn started (`key`: its tool call or terminal).
    pub fn command_started(&mut self, key: &str, at_ms: u64) {
        if self.commands.len() < 10_000 {
            self.commands.entry(key.to_owned()).or_insert((at_ms, None));
        }
    }

    pub fn command_ended(&mut self, key: &str, at_ms: u64) {
        let entry = self.commands.entry(key.to_owned()).or_insert((at_ms, None));
        if entry.1.is_none() {
            entry.1 = Some(at_ms);
        }
    }

    /// The changed paths (below the work tree `work`, as git names them)
    /// that nothing ties to the turn. `roots`: the turn's directories,
    /// against which relative names are read; `end_ms`: when the turn
    /// ended (commands still running then ran until it).
    pub fn unattributed(
        &self,
        work: &Path,
        roots: &[PathBuf],
        changed: &[Vec<u8>],
        end_ms: u64,
    ) -> Vec<Vec<u8>> {
        let mut named: HashSet<PathBuf> = HashSet::new();
        for p in &self.named {
            if p.is_absolute() {
                named.insert(normal(p));
            } else {
                for r in roots {
                    named.insert(normal(&r.join(p)));
                }
            }
        }
        let windows: Vec<(u64, u64)> = self
            .commands
            .values()
            .map(|(start, end)| {
                (
                    start.saturating_sub(SLACK_MS),
                    end.unwrap_or(end_ms).saturating_add(SLACK_MS),
                )
            })
            .collect();
        changed
            .iter()
            .filter(|raw| {
                use std::os::unix::ffi::OsStrExt;
                let full = work.join(std::ffi::OsStr::from_bytes(raw));
                if named.contains(&full) || named.contains(&normal(&full)) {
                    return false;
                }
                // A folder the turn named (deleted, moved) holds it; a
                // root named as a whole says nothing of one file.
                if full
                    .ancestors()
                    .skip(1)
                    .take_while(|a| a.starts_with(work) && *a != work && !roots.iter().any(|r| r == a))
                    .any(|a| named.contains(a))
                {
                    return false;
                }
                if windows.is_empty() {
                    return true;
                }
                // When it changed: the file's time, or (gone) its folder's.
                let time = std::fs::symlink_metadata(&full)
                    .or_else(|_| std::fs::symlink_metadata(full.parent().unwrap_or(work)))
                    .ok()
                    .and_then(|m| m.modified().ok())
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map(|d| d.as_millis() as u64);
                !time.is_some_and(|t| windows.iter().any(|(a, b)| *a <= t && t <= *b))
            })
            .cloned()
            .collect()
    }
}

/// `path` with its folder resolved (the file itself may be gone), so that
/// `/tmp/x/../y` and a path through a linked folder meet the work tree's.
fn normal(path: &Path) -> PathBuf {
    if let Ok(p) = std::fs::canonicalize(path) {
        return p;
    }
    if let (Some(dir), Some(name)) = (path.parent(), path.file_name()) {
        if let Ok(d) = std::fs::canonicalize(dir) {
            return d.join(name);
        }
    }
    // Folders that are gone too: `..` taken back by the words alone.
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_and_written_files_are_the_turns_and_others_are_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let work = std::fs::canonicalize(dir.path()).expect("canonical");
        std::fs::write(work.join("a.txt"), "a").expect("write");
        std::fs::write(work.join("mine.txt"), "m").expect("write");
        let mut at = Attribution::default();
        // Named through a path that is not canonical, and one relative.
        at.name(&work.join("sub/../a.txt"));
        at.name(Path::new("gone.txt"));
        let changed = vec![b"a.txt".to_vec(), b"mine.txt".to_vec(), b"gone.txt".to_vec()];
        let left = at.unattributed(&work, std::slice::from_ref(&work), &changed, 0);
        assert_eq!(left, vec![b"mine.txt".to_vec()]);
    }

    #[test]
    fn a_file_changed_while_a_command_ran_is_the_turns() {
        let dir = tempfile::tempdir().expect("tempdir");
        let work = std::fs::canonicalize(dir.path()).expect("canonical");
        std::fs::write(work.join("built.txt"), "b").expect("write");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        let mut at = Attribution::default();
        // A command long over before the file changed does not count.
        at.command_started("old", now - 60_000);
        at.command_ended("old", now - 50_000);
        let changed = vec![b"built.txt".to_vec()];
        assert_eq!(at.unattributed(&work, &[], &changed, now), changed);
        // One that was running does.
        at.command_started("make", now - 100);
        assert!(at.unattributed(&work, &[], &changed, now + 10).is_empty());
    }
}
