//! Unpacks an agent's archive (`.tar.gz`, `.tgz`, `.tar`, `.zip`) into a
//! directory, refusing anything that could land outside it:
//!
//! - paths that are absolute or climb out with `..`;
//! - symbolic links whose target is absolute or leaves the directory
//!   (`..` only as leading components, no deeper than the link sits);
//! - writing through a symbolic link the archive made (every parent of an
//!   entry must be a real directory), so a link cannot redirect a later file;
//! - hard links, device files and FIFOs;
//! - more than `max_bytes` unpacked in all or `max_entries` entries (a
//!   bomb is stopped by the bytes actually written, not by what the
//!   archive claims).
//!
//! On any refusal the caller removes the directory: nothing half-unpacked stays.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use crate::i18n::{gettext, gettext_f};

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_bytes: u64,
    pub max_entries: u64,
}

impl Limits {
    /// 2 GiB and 100,000 entries; `PARLEY_REGISTRY_MAX_UNPACKED` (bytes)
    /// lowers the first for tests.
    pub fn from_env() -> Self {
        Limits {
            max_bytes: std::env::var("PARLEY_REGISTRY_MAX_UNPACKED")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(2 << 30),
            max_entries: 100_000,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    TarGz,
    Tar,
    Zip,
}

impl Kind {
    /// By the address's ending; `None` for a format Parley does not unpack.
    pub fn of(url: &str) -> Option<Kind> {
        let path = url.split(['?', '#']).next().unwrap_or(url).to_ascii_lowercase();
        if path.ends_with(".tar.gz") || path.ends_with(".tgz") {
            Some(Kind::TarGz)
        } else if path.ends_with(".tar") {
            Some(Kind::Tar)
        } else if path.ends_with(".zip") {
            Some(Kind::Zip)
        } else {
            None
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UnpackError(pub String);

fn refuse(what: &str, name: &str) -> UnpackError {
    UnpackError(gettext_f(
        "the archive was refused: {name}: {what}",
        &[("name", name), ("what", what)],
    ))
}

fn io_error(e: io::Error) -> UnpackError {
    UnpackError(e.to_string())
}

/// The entry's path below the target, made of normal components only.
fn safe_relative(raw: &Path) -> Result<PathBuf, UnpackError> {
    let name = raw.display().to_string();
    let mut out = PathBuf::new();
    for c in raw.components() {
        match c {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            Component::ParentDir => return Err(refuse(&gettext("the path climbs out with .."), &name)),
            Component::RootDir | Component::Prefix(_) => {
                return Err(refuse(&gettext("the path is absolute"), &name))
            }
        }
    }
    Ok(out)
}

/// A link at `rel` (below the target) pointing to `target` stays inside.
fn check_link(rel: &Path, target: &Path) -> Result<(), UnpackError> {
    let name = rel.display().to_string();
    let outside = || refuse(&gettext("the link points outside the archive"), &name);
    let depth = rel.components().count().saturating_sub(1);
    let mut climbs = 0;
    let mut descended = false;
    for c in target.components() {
        match c {
            Component::ParentDir if !descended => climbs += 1,
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return Err(outside()),
            Component::CurDir => {}
            Component::Normal(_) => descended = true,
        }
    }
    if climbs > depth {
        return Err(outside());
    }
    Ok(())
}

struct Writer<'a> {
    dest: &'a Path,
    limits: Limits,
    written: u64,
    entries: u64,
    cancelled: &'a dyn Fn() -> bool,
}

impl Writer<'_> {
    fn count(&mut self, name: &str) -> Result<(), UnpackError> {
        if (self.cancelled)() {
            return Err(UnpackError(gettext("cancelled")));
        }
        self.entries += 1;
        if self.entries > self.limits.max_entries {
            return Err(refuse(&gettext("too many entries"), name));
        }
        Ok(())
    }

    /// Makes every parent of `rel` a real directory (never a link).
    fn parents(&self, rel: &Path) -> Result<(), UnpackError> {
        let mut at = self.dest.to_path_buf();
        let Some(parent) = rel.parent() else { return Ok(()) };
        for c in parent.components() {
            at.push(c);
            match fs::symlink_metadata(&at) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => {
                    return Err(refuse(
                        &gettext("a file or link stands where a directory must be"),
                        &rel.display().to_string(),
                    ))
                }
                Err(_) => fs::create_dir(&at).map_err(io_error)?,
            }
        }
        Ok(())
    }

    /// Whatever stands at `path` that is not a directory goes (an archive
    /// may hold a name twice; the last one wins, as with tar).
    fn clear(path: &Path) -> Result<(), UnpackError> {
        match fs::symlink_metadata(path) {
            Ok(m) if m.is_dir() => Err(UnpackError(gettext_f(
                "the archive was refused: {name}: a directory stands there",
                &[("name", &path.display().to_string())],
            ))),
            Ok(_) => fs::remove_file(path).map_err(io_error),
            Err(_) => Ok(()),
        }
    }

    fn dir(&mut self, rel: &Path) -> Result<(), UnpackError> {
        self.parents(rel)?;
        let path = self.dest.join(rel);
        match fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => Ok(()),
            Ok(_) => Err(refuse(
                &gettext("a file or link stands where a directory must be"),
                &rel.display().to_string(),
            )),
            Err(_) => fs::create_dir(&path).map_err(io_error),
        }
    }

    fn file(&mut self, rel: &Path, mode: u32, data: &mut dyn Read) -> Result<(), UnpackError> {
        self.parents(rel)?;
        let path = self.dest.join(rel);
        Self::clear(&path)?;
        let mut out = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(io_error)?;
        let room = self.limits.max_bytes.saturating_sub(self.written);
        let mut buf = vec![0u8; 64 * 1024];
        let mut copied = 0u64;
        loop {
            let n = data.read(&mut buf).map_err(io_error)?;
            if n == 0 {
                break;
            }
            copied += n as u64;
            if copied > room {
                return Err(refuse(
                    &gettext_f(
                        "it unpacks to more than {limit}",
                        &[("limit", glib::format_size(self.limits.max_bytes).as_ref())],
                    ),
                    &rel.display().to_string(),
                ));
            }
            out.write_all(&buf[..n]).map_err(io_error)?;
            if (self.cancelled)() {
                return Err(UnpackError(gettext("cancelled")));
            }
        }
        self.written += copied;
        // Executable bits as the archive says; never set-id or world-writable.
        let mode = if mode & 0o111 != 0 { 0o755 } else { 0o644 };
        out.set_permissions(fs::Permissions::from_mode(mode))
            .map_err(io_error)?;
        Ok(())
    }

    fn link(&mut self, rel: &Path, target: &Path) -> Result<(), UnpackError> {
        check_link(rel, target)?;
        self.parents(rel)?;
        let path = self.dest.join(rel);
        Self::clear(&path)?;
        std::os::unix::fs::symlink(target, &path).map_err(io_error)
    }
}

/// Unpacks `archive` into `dest` (which exists and is empty).
pub fn unpack(
    archive: &Path,
    kind: Kind,
    dest: &Path,
    limits: Limits,
    cancelled: &dyn Fn() -> bool,
) -> Result<(), UnpackError> {
    let mut w = Writer {
        dest,
        limits,
        written: 0,
        entries: 0,
        cancelled,
    };
    let file = File::open(archive).map_err(io_error)?;
    match kind {
        Kind::TarGz => tar_entries(tar::Archive::new(flate2::read::GzDecoder::new(file)), &mut w),
        Kind::Tar => tar_entries(tar::Archive::new(file), &mut w),
        Kind::Zip => zip_entries(file, &mut w),
    }
}

fn tar_entries<R: Read>(mut archive: tar::Archive<R>, w: &mut Writer<'_>) -> Result<(), UnpackError> {
    use tar::EntryType as T;
    let bad = |e: io::Error| {
        UnpackError(gettext_f(
            "the archive is damaged: {error}",
            &[("error", &e.to_string())],
        ))
    };
    for entry in archive.entries().map_err(bad)? {
        let mut entry = entry.map_err(bad)?;
        let raw = entry.path().map_err(bad)?.into_owned();
        let name = raw.display().to_string();
        w.count(&name)?;
        let kind = entry.header().entry_type();
        // Metadata entries (pax headers, GNU long names) are read by the tar crate itself.
        if matches!(
            kind,
            T::XGlobalHeader | T::XHeader | T::GNULongName | T::GNULongLink
        ) {
            continue;
        }
        let rel = safe_relative(&raw)?;
        if rel.as_os_str().is_empty() {
            continue; // "./"
        }
        match kind {
            T::Directory => w.dir(&rel)?,
            T::Regular | T::Continuous => {
                let mode = entry.header().mode().unwrap_or(0o644);
                w.file(&rel, mode, &mut entry)?
            }
            T::Symlink => {
                let target = entry
                    .link_name()
                    .map_err(bad)?
                    .ok_or_else(|| refuse(&gettext("a link with no target"), &name))?
                    .into_owned();
                w.link(&rel, &target)?
            }
            T::Link => return Err(refuse(&gettext("hard links are not unpacked"), &name)),
            T::Char | T::Block | T::Fifo => {
                return Err(refuse(&gettext("device files and FIFOs are not unpacked"), &name))
            }
            _ => return Err(refuse(&gettext("an entry of an unknown kind"), &name)),
        }
    }
    Ok(())
}

fn zip_entries(file: File, w: &mut Writer<'_>) -> Result<(), UnpackError> {
    let bad = |e: zip::result::ZipError| {
        UnpackError(gettext_f(
            "the archive is damaged: {error}",
            &[("error", &e.to_string())],
        ))
    };
    let mut archive = zip::ZipArchive::new(file).map_err(bad)?;
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(bad)?;
        let name = entry.name().map_err(bad)?.into_owned();
        w.count(&name)?;
        let rel = safe_relative(Path::new(&name))?;
        if rel.as_os_str().is_empty() {
            continue;
        }
        let mode = entry.unix_mode().unwrap_or(0o644);
        let kind = mode & 0o170000;
        if entry.is_dir() {
            w.dir(&rel)?;
        } else if kind == 0o120000 {
            let mut target = String::new();
            entry
                .by_ref()
                .take(4096)
                .read_to_string(&mut target)
                .map_err(io_error)?;
            w.link(&rel, Path::new(&target))?;
        } else if kind == 0 || kind == 0o100000 {
            w.file(&rel, mode, &mut entry)?;
        } else {
            return Err(refuse(&gettext("device files and FIFOs are not unpacked"), &name));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_that_stay_inside() {
        assert!(check_link(Path::new("bin/tool"), Path::new("../lib/tool")).is_ok());
        assert!(check_link(Path::new("a"), Path::new("b/c")).is_ok());
        assert!(check_link(Path::new("tool"), Path::new("../tool")).is_err());
        assert!(check_link(Path::new("bin/tool"), Path::new("../../etc/passwd")).is_err());
        assert!(check_link(Path::new("bin/tool"), Path::new("/etc/passwd")).is_err());
        // `x/..` climbs through whatever `x` is: refused.
        assert!(check_link(Path::new("bin/tool"), Path::new("x/../../y")).is_err());
    }

    #[test]
    fn kinds_by_address() {
        assert_eq!(Kind::of("https://x/a-1.tar.gz"), Some(Kind::TarGz));
        assert_eq!(Kind::of("https://x/a.TGZ?dl=1"), Some(Kind::TarGz));
        assert_eq!(Kind::of("https://x/a.zip"), Some(Kind::Zip));
        assert_eq!(Kind::of("https://x/a.tar.bz2"), None);
    }
}
