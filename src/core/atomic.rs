//! Atomic file replacement: a temp file in the same directory, fsync, rename.
//! A reader (or a crash at any point) sees the old file or the new one, never
//! a part of either.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let tmp = dir.join(format!(".{name}.parley-{}.tmp", std::process::id()));
    remove_stale_temp_files(dir, &name);
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        if let Ok(meta) = std::fs::metadata(path) {
            file.set_permissions(std::fs::Permissions::from_mode(meta.permissions().mode()))?;
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
        let Some(pid) = file
            .to_str()
            .and_then(|f| f.strip_prefix(&prefix))
            .and_then(|rest| rest.strip_suffix(".tmp"))
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
    #[test]
    fn a_write_removes_temp_files_of_dead_writers_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dead = dir.path().join(".c.json.parley-999999999.tmp");
        let alive = dir.path().join(format!(".c.json.parley-{}.tmp", 1));
        std::fs::write(&dead, "partial").expect("write");
        std::fs::write(&alive, "someone else's").expect("write");
        super::write(&dir.path().join("c.json"), b"{}").expect("atomic write");
        assert!(!dead.exists(), "a dead writer's temp file is removed");
        assert!(alive.exists(), "pid 1 is alive: its file stays");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("c.json")).expect("read"),
            "{}"
        );
    }
}
