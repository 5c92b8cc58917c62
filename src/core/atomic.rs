//! Atomic file replacement: a temp file in the same directory, fsync, rename.
//! A reader (or a crash at any point) sees the old file or the new one, never
//! a part of either.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// How many links `resolve` follows before it gives up, as the kernel does
/// (`MAXSYMLINKS` is 40 on Linux).
const MAX_LINKS: usize = 40;

/// Replaces the file at `path` itself: a symlink there is replaced by a plain
/// file. For paths already resolved by the caller (an agent's writes, checked
/// against its root: following a link here could leave that root).
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    replace(path, bytes)
}

/// Writes through a symlink (a chain of them, or a dangling one) to the file
/// it names, atomically in the target's directory: the link stays a link.
/// Dotfile managers (stow, chezmoi) keep configuration files that way.
pub fn write_through(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    replace(&resolve(path)?, bytes)
}

/// Follows the symlinks at `path` (not in its directories: the rename only
/// needs the final file's directory) to the file that is or would be written.
/// A dangling link resolves to its missing target.
pub fn resolve(path: &Path) -> std::io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = std::fs::read_link(&current)?;
                // A relative target is relative to the link's directory.
                current = match current.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            Ok(_) => return Ok(current),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(current),
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(format!(
        "{}: too many levels of symbolic links",
        path.display()
    )))
}

fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    // Two saves of one process at once (two threads) must not share a temp
    // file, so the name carries a counter besides the process id.
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let tmp = dir.join(format!(
        ".{name}.parley-{}-{}.tmp",
        std::process::id(),
        SEQUENCE.fetch_add(1, Ordering::Relaxed)
    ));
    remove_stale_temp_files(dir, &name);
    let result = (|| {
        // `create_new` never opens something already there (a link planted
        // at the temp name). Replacing a file, the temp file is owner-only
        // until it has that file's mode; a new file gets the usual 0o666
        // under the umask, as `File::create` gives.
        let old_mode = std::fs::metadata(path).ok().map(|m| m.permissions().mode());
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(if old_mode.is_some() { 0o600 } else { 0o666 })
            .open(&tmp)?;
        if let Some(mode) = old_mode {
            file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)?;
        // The rename itself is durable once the directory is synced.
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// A writer killed mid-write (SIGKILL, power loss) leaves its temp file; the
/// next write removes those whose process is gone.
fn remove_stale_temp_files(dir: &Path, name: &str) {
    let prefix = format!(".{name}.parley-");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name();
        // `PID-N.tmp`, or `PID.tmp` from versions before the counter.
        let Some(pid) = file
            .to_str()
            .and_then(|f| f.strip_prefix(&prefix))
            .and_then(|rest| rest.strip_suffix(".tmp"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{symlink, PermissionsExt};
    use std::path::Path;

    fn temp_files(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .expect("dir")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect()
    }

    #[test]
    fn a_write_removes_temp_files_of_dead_writers_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dead = dir.path().join(".c.json.parley-999999999.tmp");
        let dead_counted = dir.path().join(".c.json.parley-999999998-3.tmp");
        let alive = dir.path().join(format!(".c.json.parley-{}-0.tmp", 1));
        std::fs::write(&dead, "partial").expect("write");
        std::fs::write(&dead_counted, "partial").expect("write");
        std::fs::write(&alive, "someone else's").expect("write");
        super::write(&dir.path().join("c.json"), b"{}").expect("atomic write");
        assert!(!dead.exists(), "a dead writer's temp file is removed");
        assert!(!dead_counted.exists(), "with a counter in its name too");
        assert!(alive.exists(), "pid 1 is alive: its file stays");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("c.json")).expect("read"),
            "{}"
        );
    }

    /// A chain of links, relative and absolute, across directories: the
    /// final file is replaced in its own directory, every link stays.
    #[test]
    fn write_through_follows_a_chain_of_links_and_keeps_them() {
        let home = tempfile::tempdir().expect("tempdir");
        let dots = tempfile::tempdir().expect("tempdir");
        let real = dots.path().join("config.json");
        std::fs::write(&real, "old").expect("write");
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        let middle = dots.path().join("middle.json");
        symlink("config.json", &middle).expect("relative link");
        let link = home.path().join("config.json");
        symlink(&middle, &link).expect("absolute link");

        super::write_through(&link, b"new").expect("write");
        for l in [&link, &middle] {
            let meta = std::fs::symlink_metadata(l).expect("meta");
            assert!(meta.file_type().is_symlink(), "{} is still a link", l.display());
        }
        assert_eq!(std::fs::read_to_string(&real).expect("read"), "new");
        let mode = std::fs::metadata(&real).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o640, "the target's mode is kept");
        assert!(temp_files(home.path()).is_empty() && temp_files(dots.path()).is_empty());
    }

    #[test]
    fn write_through_creates_the_target_of_a_dangling_link() {
        let dir = tempfile::tempdir().expect("tempdir");
        let link = dir.path().join("config.json");
        symlink("real.json", &link).expect("link");
        super::write_through(&link, b"{}").expect("write");
        assert!(std::fs::symlink_metadata(&link)
            .expect("meta")
            .file_type()
            .is_symlink());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("real.json")).expect("read"),
            "{}"
        );
    }

    #[test]
    fn a_loop_of_links_is_an_error_and_writes_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        symlink(&b, &a).expect("link");
        symlink(&a, &b).expect("link");
        assert!(super::write_through(&a, b"{}").is_err());
        assert!(std::fs::symlink_metadata(&a)
            .expect("meta")
            .file_type()
            .is_symlink());
        assert!(temp_files(dir.path()).is_empty());
    }

    /// `write` is for paths the caller resolved and checked itself (an
    /// agent's writes under its root): it never follows a link out.
    #[test]
    fn write_replaces_a_link_rather_than_following_it() {
        let inside = tempfile::tempdir().expect("tempdir");
        let outside = tempfile::tempdir().expect("tempdir");
        let target = outside.path().join("secret");
        let link = inside.path().join("file");
        symlink(&target, &link).expect("link");
        super::write(&link, b"x").expect("write");
        assert!(!target.exists(), "nothing written outside");
        assert!(std::fs::symlink_metadata(&link).expect("meta").is_file());
    }
}
