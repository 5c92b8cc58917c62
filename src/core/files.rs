//! The files under an agent's working directory, for `@`-mentions: walked
//! once (with `.gitignore`, `.ignore` and hidden files left out, as `git`
//! and ripgrep do) and matched fuzzily as the user types.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// An index is walked again when older than this.
const FRESH_FOR: Duration = Duration::from_secs(30);

/// The indexes of the directories asked for, kept for a while.
#[derive(Default)]
pub struct FileIndexes {
    kept: Mutex<HashMap<PathBuf, (Instant, Arc<FileIndex>)>>,
    /// One walk at a time: every keystroke after `@` asks, and the others
    /// wait for the walk under way and take its index.
    walking: Mutex<()>,
}

impl FileIndexes {
    /// The index of `root`, walked again if stale (blocking).
    pub fn get(&self, root: &Path) -> Arc<FileIndex> {
        let lock = || self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let fresh = || {
            lock()
                .get(root)
                .filter(|(at, _)| at.elapsed() < FRESH_FOR)
                .map(|(_, index)| index.clone())
        };
        if let Some(index) = fresh() {
            return index;
        }
        let _walking = self.walking.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(index) = fresh() {
            return index;
        }
        let index = Arc::new(FileIndex::build(root));
        let mut kept = lock();
        // Only a few directories are ever asked for; forget the stale.
        kept.retain(|_, (at, _)| at.elapsed() < FRESH_FOR);
        kept.insert(root.to_path_buf(), (Instant::now(), index.clone()));
        index
    }
}

/// At most this many files are listed (a home directory can hold millions).
pub const MAX_FILES: usize = 200_000;

/// The relative paths of the files under a directory.
pub struct FileIndex {
    pub root: PathBuf,
    pub paths: Vec<String>,
    /// Lower-case copies, matched against (computed once).
    lower: Vec<String>,
    /// More files were there than `MAX_FILES`.
    pub truncated: bool,
}

impl FileIndex {
    /// Walks `root` (blocking: run it off the main thread).
    pub fn build(root: &Path) -> FileIndex {
        let mut paths = Vec::new();
        let mut truncated = false;
        let walker = ignore::WalkBuilder::new(root)
            .hidden(true)
            .git_ignore(true)
            // A .gitignore counts even outside a git repository.
            .require_git(false)
            .follow_links(false)
            .build();
        for entry in walker.flatten() {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            if paths.len() >= MAX_FILES {
                truncated = true;
                break;
            }
            if let Ok(rel) = entry.path().strip_prefix(root) {
                let rel = rel.to_string_lossy();
                // Shown in a list and written into the message: a name
                // with control or invisible reordering characters is not
                // offered.
                if crate::core::types::options::shown_text(&rel, usize::MAX) == rel {
                    paths.push(rel.into_owned());
                }
            }
        }
        paths.sort_unstable();
        let lower = paths.iter().map(|p| p.to_lowercase()).collect();
        FileIndex {
            root: root.to_path_buf(),
            paths,
            lower,
            truncated,
        }
    }

    /// The best `limit` matches of `query`, best first.
    pub fn search(&self, query: &str, limit: usize) -> Vec<String> {
        let q: Vec<char> = query
            .to_lowercase()
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        if q.is_empty() {
            return self.paths.iter().take(limit).cloned().collect();
        }
        let mut best: Vec<(i64, usize)> = Vec::with_capacity(limit + 1);
        for (i, path) in self.lower.iter().enumerate() {
            let Some(score) = score(path, &q) else { continue };
            // Keep the best `limit`, sorted (a short insertion: limit is small).
            if best.len() == limit && best.last().is_some_and(|&(s, _)| s >= score) {
                continue;
            }
            let at = best.partition_point(|&(s, _)| s >= score);
            best.insert(at, (score, i));
            best.truncate(limit);
        }
        best.into_iter().map(|(_, i)| self.paths[i].clone()).collect()
    }
}

/// A fuzzy match: every query character in order. Matches in the file name,
/// at word starts and in runs score higher; long paths score lower.
fn score(path: &str, q: &[char]) -> Option<i64> {
    let name_start = path.rfind('/').map(|i| i + 1).unwrap_or(0);
    let mut qi = 0;
    let mut score: i64 = 0;
    let mut prev: Option<usize> = None;
    let mut prev_char = '/';
    for (i, c) in path.char_indices() {
        if qi < q.len() && c == q[qi] {
            score += 1;
            if prev.is_some_and(|p| p + prev_char.len_utf8() == i) {
                score += 5; // a run
            }
            if matches!(prev_char, '/' | '_' | '-' | '.' | ' ') {
                score += 8; // a word start
            }
            if i >= name_start {
                score += 3; // in the file name
            }
            prev = Some(i);
            qi += 1;
        }
        prev_char = c;
    }
    if qi < q.len() {
        return None;
    }
    // The file's own name, whole: `composer` finds composer.rs first.
    let stem = path[name_start..].split('.').next().unwrap_or_default();
    if stem.chars().eq(q.iter().copied()) {
        score += 50;
    }
    Some(score * 16 - path.len() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gitignore_and_fuzzy_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        for f in [
            "src/ui/widgets/composer.rs",
            "src/core/chat/controls.rs",
            "docs/composer-notes.md",
            "target/debug/composer.rs",
            ".hidden/composer.rs",
        ] {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(&p, "x").expect("write");
        }
        std::fs::write(root.join(".gitignore"), "target/\n").expect("write");
        let index = FileIndex::build(root);
        assert!(
            !index.paths.iter().any(|p| p.starts_with("target/")),
            "{:?}",
            index.paths
        );
        assert!(!index.paths.iter().any(|p| p.starts_with(".hidden/")));
        let hits = index.search("composer", 10);
        assert_eq!(
            hits.first().map(String::as_str),
            Some("src/ui/widgets/composer.rs")
        );
        assert!(hits.contains(&"docs/composer-notes.md".to_owned()));
        assert_eq!(index.search("ctrls", 10), ["src/core/chat/controls.rs"]);
        assert!(index.search("zzz", 10).is_empty());
        assert_eq!(index.search("", 2).len(), 2);
    }
}
