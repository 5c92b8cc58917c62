//! The `fs/read_text_file` and `fs/write_text_file` client capability,
//! confined to the agent's working directory.

use std::path::{Component, Path, PathBuf};

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FsError {
    #[error("{0}: the path must be absolute")]
    NotAbsolute(String),
    #[error("{path}: outside the agent's working directory {root}")]
    Outside { path: String, root: String },
    #[error("{path}: {message}")]
    Io { path: String, message: String },
}

/// The directory an agent may read and write below.
#[derive(Debug, Clone)]
pub struct FsScope {
    root: PathBuf,
}

impl FsScope {
    /// `root` is canonicalised once; a root that cannot be resolved confines
    /// to nothing at all.
    pub fn new(root: &Path) -> Self {
        let root = root
            .canonicalize()
            .unwrap_or_else(|_| PathBuf::from("/nonexistent/parley-no-root"));
        FsScope { root }
    }

    fn io(path: &Path, e: std::io::Error) -> FsError {
        FsError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        }
    }

    fn outside(&self, path: &Path) -> FsError {
        FsError::Outside {
            path: path.display().to_string(),
            root: self.root.display().to_string(),
        }
    }

    /// Resolves `path` through every symlink and `..`, and checks it is below
    /// the root. A file that does not exist yet is resolved by its parent.
    fn resolve(&self, path: &Path) -> Result<PathBuf, FsError> {
        if !path.is_absolute() {
            return Err(FsError::NotAbsolute(path.display().to_string()));
        }
        let resolved = match path.canonicalize() {
            Ok(p) => p,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
                    return Err(self.outside(path));
                };
                if matches!(Path::new(name).components().next(), Some(Component::ParentDir)) {
                    return Err(self.outside(path));
                }
                parent.canonicalize().map_err(|e| Self::io(path, e))?.join(name)
            }
            Err(e) => return Err(Self::io(path, e)),
        };
        if resolved.starts_with(&self.root) {
            Ok(resolved)
        } else {
            Err(self.outside(path))
        }
    }

    /// Reads a text file; `line` is 1-based, `limit` counts lines.
    pub fn read(&self, path: &Path, line: Option<u32>, limit: Option<u32>) -> Result<String, FsError> {
        let resolved = self.resolve(path)?;
        let text = std::fs::read_to_string(&resolved).map_err(|e| Self::io(path, e))?;
        if line.is_none() && limit.is_none() {
            return Ok(text);
        }
        let skip = line.map_or(0, |l| l.saturating_sub(1) as usize);
        let take = limit.map_or(usize::MAX, |l| l as usize);
        Ok(text.split_inclusive('\n').skip(skip).take(take).collect())
    }

    /// Writes a text file atomically (temp file in the same directory, fsync,
    /// rename), keeping the permissions of a file it replaces.
    pub fn write(&self, path: &Path, content: &str) -> Result<(), FsError> {
        let resolved = self.resolve(path)?;
        crate::core::atomic::write(&resolved, content.as_bytes()).map_err(|e| Self::io(path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_writes_inside_and_refuses_outside() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("work");
        std::fs::create_dir(&root).expect("mkdir");
        std::fs::write(dir.path().join("secret"), "s").expect("write");
        std::os::unix::fs::symlink(dir.path().join("secret"), root.join("link")).expect("symlink");
        let scope = FsScope::new(&root);

        scope
            .write(&root.join("a.txt"), "one\ntwo\nthree\n")
            .expect("write inside");
        assert_eq!(
            scope.read(&root.join("a.txt"), None, None).expect("read"),
            "one\ntwo\nthree\n"
        );
        assert_eq!(
            scope.read(&root.join("a.txt"), Some(2), Some(1)).expect("read"),
            "two\n"
        );

        for bad in [
            dir.path().join("secret"),
            root.join("../secret"),
            root.join("link"),
            root.join("../new-file"),
        ] {
            assert!(
                matches!(
                    scope.read(&bad, None, None),
                    Err(FsError::Outside { .. }) | Err(FsError::Io { .. })
                ),
                "{bad:?}"
            );
            assert!(
                matches!(scope.write(&bad, "x"), Err(FsError::Outside { .. })),
                "{bad:?}"
            );
        }
        assert_eq!(
            std::fs::read_to_string(dir.path().join("secret")).expect("read"),
            "s"
        );
        assert!(!dir.path().join("new-file").exists());
        assert!(matches!(
            scope.read(Path::new("rel.txt"), None, None),
            Err(FsError::NotAbsolute(_))
        ));
    }
}
