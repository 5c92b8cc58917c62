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
