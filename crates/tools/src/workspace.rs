//! The workspace every tool is confined to.

use crate::error::Error;
use std::path::{Component, Path, PathBuf};

/// A folder the tools work in. Every path a tool is given is relative to it, and is
/// refused when it leads outside: absolute paths, `..` that climbs out, and symlinks
/// pointing out are all errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// The workspace at `root` (which must be an existing folder).
    ///
    /// # Errors
    /// [`Error::Workspace`] when it does not exist or is not a folder.
    pub fn new(root: impl AsRef<Path>) -> Result<Self, Error> {
        let root = root.as_ref();
        let canonical = root.canonicalize().map_err(|e| Error::Workspace {
            path: root.to_path_buf(),
            message: format!("cannot be opened: {e}"),
        })?;
        if !canonical.is_dir() {
            return Err(Error::Workspace {
                path: root.to_path_buf(),
                message: "is not a folder".into(),
            });
        }
        Ok(Workspace { root: canonical })
    }

    /// The workspace folder (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Check the form of `path` before touching the filesystem.
    fn lexical(&self, path: &str) -> Result<PathBuf, Error> {
        let trimmed = path.trim();
        if trimmed.is_empty() {
            return Err(Error::Path {
                path: path.into(),
                message: "is empty".into(),
            });
        }
        let p = Path::new(trimmed);
        if p.is_absolute()
            || p.components()
                .any(|c| matches!(c, Component::Prefix(_) | Component::RootDir))
        {
            return Err(Error::Path {
                path: path.into(),
                message: "is absolute; use a path relative to the workspace".into(),
            });
        }
        let mut depth: i32 = 0;
        for c in p.components() {
            match c {
                Component::ParentDir => depth -= 1,
                Component::Normal(_) => depth += 1,
                _ => {}
            }
            if depth < 0 {
                return Err(Error::Path {
                    path: path.into(),
                    message: "leads outside the workspace (too many '..')".into(),
                });
            }
        }
        Ok(self.root.join(p))
    }

    /// The absolute path of an existing file or folder inside the workspace.
    ///
    /// # Errors
    /// [`Error::Path`] when `path` is absolute, climbs out, does not exist, or resolves
    /// (through a symlink) outside the workspace.
    pub fn resolve_existing(&self, path: &str) -> Result<PathBuf, Error> {
        let joined = self.lexical(path)?;
        let canonical = joined.canonicalize().map_err(|e| Error::Path {
            path: path.into(),
            message: if e.kind() == std::io::ErrorKind::NotFound {
                "does not exist".into()
            } else {
                format!("cannot be opened: {e}")
            },
        })?;
        self.inside(path, canonical)
    }

    /// The absolute path for a file that may not exist yet: its folder must exist and be
    /// inside the workspace, and if the file exists it must be inside too.
    ///
    /// # Errors
    /// As for [`Workspace::resolve_existing`].
    pub fn resolve_new(&self, path: &str) -> Result<PathBuf, Error> {
        let joined = self.lexical(path)?;
        if joined.symlink_metadata().is_ok() {
            return self.resolve_existing(path);
        }
        let (Some(parent), Some(name)) = (joined.parent(), joined.file_name()) else {
            return Err(Error::Path {
                path: path.into(),
                message: "does not name a file".into(),
            });
        };
        let parent = parent.canonicalize().map_err(|_| Error::Path {
            path: path.into(),
            message: "is in a folder that does not exist".into(),
        })?;
        self.inside(path, parent.join(name))
    }

    /// Like [`Workspace::resolve_new`], but first creates the missing folders of `path`
    /// (only ever inside the workspace).
    ///
    /// # Errors
    /// As for [`Workspace::resolve_existing`]; or the folders cannot be created.
    pub fn resolve_new_creating(&self, path: &str) -> Result<PathBuf, Error> {
        let joined = self.lexical(path)?;
        if let Some(parent) = joined.parent() {
            let mut existing = parent;
            while existing.symlink_metadata().is_err() {
                existing = existing.parent().unwrap_or(&self.root);
            }
            let existing = existing.canonicalize().map_err(|e| Error::Path {
                path: path.into(),
                message: format!("cannot be opened: {e}"),
            })?;
            self.inside(path, existing)?;
            std::fs::create_dir_all(parent).map_err(|e| Error::Path {
                path: path.into(),
                message: format!("needs folders that cannot be created: {e}"),
            })?;
        }
        self.resolve_new(path)
    }

    fn inside(&self, path: &str, canonical: PathBuf) -> Result<PathBuf, Error> {
        if canonical.starts_with(&self.root) {
            Ok(canonical)
        } else {
            Err(Error::Path {
                path: path.into(),
                message: "leads outside the workspace (through a symbolic link)".into(),
            })
        }
    }

    /// `absolute` relative to the workspace, with `/` separators.
    pub fn relative(&self, absolute: &Path) -> String {
        let rel = absolute.strip_prefix(&self.root).unwrap_or(absolute);
        let text = rel.to_string_lossy().replace('\\', "/");
        if text.is_empty() {
            ".".into()
        } else {
            text
        }
    }
}
