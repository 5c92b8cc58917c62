//! What changed between two snapshots, read from `git diff-tree --raw -p`:
//! the files (added, modified, deleted, renamed) and their hunks.

use serde::{Deserialize, Serialize};

use super::git::{Git, GitError};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum FileStatus {
    Added,
    Modified,
    Deleted,
    Renamed,
}

/// Where a hunk or a file stands in the review.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub enum Review {
    #[default]
    Pending,
    Kept,
    Reverted,
}

/// One hunk of a file's unified diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hunk {
    pub index: usize,
    /// `@@ -1,3 +1,4 @@ …`
    pub header: String,
    pub old_start: u32,
    pub old_lines: u32,
    pub new_start: u32,
    pub new_lines: u32,
    /// Each line with its mark (` `, `+`, `-`); `\` lines are folded into
    /// `no_newline_*`.
    pub lines: Vec<String>,
    /// The old side's last line has no newline at the end of the file.
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub old_no_newline: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub new_no_newline: bool,
    #[serde(default)]
    pub review: Review,
}

/// One file a turn changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileChange {
    /// Relative to its root.
    pub path: String,
    /// The root the path is below.
    pub root: String,
    pub status: FileStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    pub binary: bool,
    pub additions: u32,
    pub deletions: u32,
    pub hunks: Vec<Hunk>,
    #[serde(default)]
    pub review: Review,
    /// Changed during the turn, but nothing ties it to the turn: not
    /// written through `fs/*`, not named by the turn's tool calls, not
    /// changed while a command of the turn ran. Perhaps another agent or
    /// the user: Undo of the turn leaves it alone unless asked.
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub unattributed: bool,
    /// Only the executable bit changed (no line did).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub mode_change: Option<ModeChange>,
    /// Below the work tree (what git names it): for reverting.
    #[serde(skip)]
    pub git_path: String,
    #[serde(skip)]
    pub git_old_path: Option<String>,
    /// `git_path` as git gave it: a name need not be UTF-8.
    #[serde(skip)]
    pub git_raw: Vec<u8>,
    #[serde(skip)]
    pub git_old_raw: Option<Vec<u8>>,
}

/// A file's mode before and after the turn, where it changed (`100644`,
/// `100755`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModeChange {
    pub old_mode: String,
    pub new_mode: String,
}

impl FileChange {
    /// The file on disk, below the work tree `work`.
    pub fn full(&self, work: &std::path::Path) -> std::path::PathBuf {
        use std::os::unix::ffi::OsStrExt;
        work.join(std::ffi::OsStr::from_bytes(&self.git_raw))
    }
}

/// The changes from `before` to `after`, below `prefix` (paths shown
/// relative to it).
pub fn changes(
    git: &Git,
    root: &str,
    prefix: &str,
    before: &str,
    after: &str,
) -> Result<Vec<FileChange>, GitError> {
    if before == after {
        return Ok(Vec::new());
    }
    let mut args = vec![
        "diff-tree",
        "-r",
        "-z",
        "-M",
        "--raw",
        "-p",
        "--no-ext-diff",
        before,
        after,
    ];
    let spec;
    if !prefix.is_empty() {
        spec = prefix.to_owned();
        args.extend(["--", spec.as_str()]);
    }
    let out = git.run(&args, None)?;
    Ok(parse(&out, root, prefix))
}

/// Parses `diff-tree -r -z -M --raw -p`: NUL-separated raw records, an
/// empty field, then the patches in the records' order.
pub fn parse(out: &[u8], root: &str, prefix: &str) -> Vec<FileChange> {
    let mut fields = out.split(|&b| b == 0);
    let mut files = Vec::new();
    // How many patch sections each record has: a type change (a file
    // become a link) is shown as a deletion and an addition.
    let mut sections_of = Vec::new();
    let mut rest: &[u8] = &[];
    let mut consumed = 0usize;
    while let Some(field) = fields.next() {
        consumed += field.len() + 1;
        if field.is_empty() {
            rest = out.get(consumed..).unwrap_or(&[]);
            break;
        }
        let meta = String::from_utf8_lossy(field);
        let Some(meta) = meta.strip_prefix(':') else {
            // The patch text began (no raw records before it).
            rest = out.get(consumed - field.len() - 1..).unwrap_or(&[]);
            break;
        };
        let letter = meta
            .rsplit(' ')
            .next()
            .and_then(|s| s.chars().next())
            .unwrap_or('M');
        // `OLDMODE NEWMODE OLDID NEWID STATUS`
        let modes: Vec<&str> = meta.split(' ').take(2).collect();
        let mode_change = match modes.as_slice() {
            [old, new] if old != new && *old != "000000" && *new != "000000" => Some(ModeChange {
                old_mode: (*old).to_owned(),
                new_mode: (*new).to_owned(),
            }),
            _ => None,
        };
        let Some(path) = fields.next() else { break };
        consumed += path.len() + 1;
        let mut raw = path.to_vec();
        let mut path = String::from_utf8_lossy(path).into_owned();
        let mut old = None;
        let mut old_raw = None;
        let status = match letter {
            'A' => FileStatus::Added,
            'D' => FileStatus::Deleted,
            'R' => {
                let Some(new) = fields.next() else { break };
                consumed += new.len() + 1;
                old = Some(std::mem::replace(
                    &mut path,
                    String::from_utf8_lossy(new).into_owned(),
                ));
                old_raw = Some(std::mem::replace(&mut raw, new.to_vec()));
                FileStatus::Renamed
            }
            _ => FileStatus::Modified,
        };
        let shown = |p: &str| p.strip_prefix(prefix).unwrap_or(p).to_owned();
        sections_of.push(if letter == 'T' { 2 } else { 1 });
        files.push(FileChange {
            path: shown(&path),
            root: root.to_owned(),
            status,
            old_path: old.as_deref().map(shown),
            binary: false,
            additions: 0,
            deletions: 0,
            hunks: Vec::new(),
            review: Review::Pending,
            unattributed: false,
            mode_change: mode_change.filter(|_| letter == 'M'),
            git_path: path,
            git_old_path: old,
            git_raw: raw,
            git_old_raw: old_raw,
        });
    }
    // The patches: one `diff --git` section per record, in order.
    let text = String::from_utf8_lossy(rest);
    let mut sections: Vec<Vec<&str>> = Vec::new();
    for line in text.split('\n') {
        if line.starts_with("diff --git ") {
            sections.push(Vec::new());
        }
        if let Some(s) = sections.last_mut() {
            s.push(line);
        }
    }
    let mut sections = sections.into_iter();
    for (file, count) in files.iter_mut().zip(sections_of) {
        let parts: Vec<Vec<&str>> = sections.by_ref().take(count).collect();
        if count == 1 {
            if let Some(section) = parts.first() {
                read_section(file, section);
            }
        } else {
            // Not a text change that hunks can take back: the whole file.
            file.binary = true;
        }
    }
    files
}

fn read_section(file: &mut FileChange, lines: &[&str]) {
    let mut hunk: Option<Hunk> = None;
    let mut last_side = ' ';
    for line in lines {
        if line.starts_with("Binary files ") || line.starts_with("GIT binary patch") {
            file.binary = true;
            continue;
        }
        if let Some(h) = parse_header(line, file.hunks.len() + usize::from(hunk.is_some())) {
            if let Some(done) = hunk.take() {
                file.hunks.push(done);
            }
            hunk = Some(h);
            continue;
        }
        let Some(h) = hunk.as_mut() else { continue };
        match line.chars().next() {
            Some('+') => {
                file.additions += 1;
                last_side = '+';
                h.lines.push((*line).to_owned());
            }
            Some('-') => {
                file.deletions += 1;
                last_side = '-';
                h.lines.push((*line).to_owned());
            }
            Some(' ') => {
                last_side = ' ';
                h.lines.push((*line).to_owned());
            }
            Some('\\') => match last_side {
                '+' => h.new_no_newline = true,
                '-' => h.old_no_newline = true,
                _ => {
                    h.old_no_newline = true;
                    h.new_no_newline = true;
                }
            },
            _ => {}
        }
    }
    if let Some(done) = hunk {
        file.hunks.push(done);
    }
}

/// `@@ -a,b +c,d @@ context`
fn parse_header(line: &str, index: usize) -> Option<Hunk> {
    let rest = line.strip_prefix("@@ -")?;
    let (ranges, _) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let range = |r: &str| -> Option<(u32, u32)> {
        match r.split_once(',') {
            Some((s, n)) => Some((s.parse().ok()?, n.parse().ok()?)),
            None => Some((r.parse().ok()?, 1)),
        }
    };
    let (old_start, old_lines) = range(old)?;
    let (new_start, new_lines) = range(new)?;
    Some(Hunk {
        index,
        header: line.to_owned(),
        old_start,
        old_lines,
        new_start,
        new_lines,
        lines: Vec::new(),
        old_no_newline: false,
        new_no_newline: false,
        review: Review::Pending,
    })
}

/// `after` with `hunk` taken back: its new lines replaced by its old ones.
/// `None` when the hunk does not fit `after` (it is not the turn's text).
pub fn unapply(after: &[u8], hunk: &Hunk) -> Option<Vec<u8>> {
    let lines: Vec<&[u8]> = after.split_inclusive(|&b| b == b'\n').collect();
    // A hunk of an empty side starts one line earlier (`-0,0` / `+0,0`).
    let start = if hunk.new_lines == 0 {
        hunk.new_start as usize
    } else {
        (hunk.new_start as usize).checked_sub(1)?
    };
    let end = start.checked_add(hunk.new_lines as usize)?;
    if end > lines.len() {
        return None;
    }
    let mut new_side = Vec::new();
    let mut old_side = Vec::new();
    for l in &hunk.lines {
        let (mark, body) = l.split_at(1);
        if mark != "-" {
            new_side.push(body);
        }
        if mark != "+" {
            old_side.push(body);
        }
    }
    // The lines in `after` must be the hunk's new side.
    let join = |side: &[&str], no_newline: bool| -> Vec<u8> {
        let mut out = Vec::new();
        for (i, l) in side.iter().enumerate() {
            out.extend_from_slice(l.as_bytes());
            if !(no_newline && i + 1 == side.len()) {
                out.push(b'\n');
            }
        }
        out
    };
    let now: Vec<u8> = lines[start..end].concat();
    if now != join(&new_side, hunk.new_no_newline) {
        return None;
    }
    let mut out = lines[..start].concat();
    out.extend(join(&old_side, hunk.old_no_newline));
    out.extend(lines[end..].concat());
    Some(out)
}
