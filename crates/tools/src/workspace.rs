//! The workspace every tool is confined to.
//!
//! Paths are checked twice. First by their form and by what they resolve to now (absolute
//! paths, `..` that climbs out and symbolic links that lead out are refused with a clear
//! error). Then every file is opened, created or renamed through a handle on the workspace
//! folder that only resolves paths beneath it (`openat2` with `RESOLVE_BENEATH` on Linux,
//! through `cap-std`): a path swapped for a symbolic link between the check and the use
//! cannot reach outside.

use crate::error::Error;
use crate::special::{kind_of, FileKind};
use cap_std::fs::{Dir, OpenOptions, OpenOptionsExt};
use nix::fcntl::OFlag;
use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// A folder the tools work in. Every path a tool is given is relative to it, and is
/// refused when it leads outside: absolute paths, `..` that climbs out, and symlinks
/// pointing out are all errors.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    dir: Arc<Dir>,
}

impl PartialEq for Workspace {
    fn eq(&self, other: &Self) -> bool {
        self.root == other.root
    }
}

impl Eq for Workspace {}

/// What an existing path of the workspace turned out to be, opened.
#[derive(Debug)]
pub(crate) enum Opened {
    /// A regular file, opened for reading (the type was checked on the open handle).
    File(std::fs::File),
    /// A folder (not opened).
    Folder,
}

/// Where a file is written: a handle on its folder (opened beneath the workspace) and its
/// name in that folder. Every change goes through the handle, so the folder cannot be
/// swapped for one outside the workspace halfway through.
#[derive(Debug)]
pub(crate) struct Target {
    /// The folder.
    pub(crate) dir: Dir,
    /// The file's name in it (one component).
    pub(crate) name: OsString,
}

/// The flags every read of a workspace file is opened with: no blocking on a FIFO or a
/// device, never a controlling terminal, and no symbolic link as the last component.
fn read_flags() -> i32 {
    (OFlag::O_NONBLOCK | OFlag::O_NOCTTY | OFlag::O_NOFOLLOW).bits()
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
        let dir = Dir::open_ambient_dir(&canonical, cap_std::ambient_authority()).map_err(|e| {
            Error::Workspace {
                path: root.to_path_buf(),
                message: format!("cannot be opened: {e}"),
            }
        })?;
        Ok(Workspace {
            root: canonical,
            dir: Arc::new(dir),
        })
    }

    /// The workspace folder (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The handle on the workspace folder that resolves paths only beneath it.
    pub(crate) fn dir(&self) -> &Dir {
        &self.dir
    }

    /// Check the form of `path` before touching the filesystem; the path relative to the
    /// workspace.
    fn lexical<'p>(&self, path: &'p str) -> Result<&'p Path, Error> {
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
                return Err(climbs_out(path));
            }
        }
        Ok(p)
    }

    /// The absolute path of an existing file or folder inside the workspace.
    ///
    /// # Errors
    /// [`Error::Path`] when `path` is absolute, climbs out, does not exist, or resolves
    /// (through a symlink) outside the workspace.
    pub fn resolve_existing(&self, path: &str) -> Result<PathBuf, Error> {
        let joined = self.root.join(self.lexical(path)?);
        let canonical = joined.canonicalize().map_err(|e| Error::Path {
            path: path.into(),
            message: if e.kind() == io::ErrorKind::NotFound {
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
        let (dir, name) = self.place(path, false)?;
        Ok(self.root.join(dir).join(name))
    }

    /// Like [`Workspace::resolve_new`], but first creates the missing folders of `path`,
    /// only ever beneath the workspace: a path through a symbolic link that leads out is
    /// refused before any folder is created.
    ///
    /// # Errors
    /// As for [`Workspace::resolve_existing`]; or the folders cannot be created.
    pub fn resolve_new_creating(&self, path: &str) -> Result<PathBuf, Error> {
        let (dir, name) = self.place(path, true)?;
        Ok(self.root.join(dir).join(name))
    }

    /// Open an existing file for reading, or tell that it is a folder. The file is opened
    /// beneath the workspace without blocking, and its type is checked on the handle:
    /// FIFOs, sockets and devices are refused.
    ///
    /// # Errors
    /// [`Error::Path`] as for [`Workspace::resolve_existing`], for special files, and when
    /// the path changed while it was opened.
    pub(crate) fn open_existing(&self, path: &str) -> Result<Opened, Error> {
        let canonical = self.resolve_existing(path)?;
        let relative = dot_if_empty(self.beneath(&canonical));
        let meta = self
            .dir
            .symlink_metadata(relative)
            .map_err(|e| self.io_error(path, &e))?;
        match kind_of(&meta.file_type()) {
            FileKind::Folder => return Ok(Opened::Folder),
            FileKind::File | FileKind::Symlink => {}
            special => return Err(special_error(path, special)),
        }
        self.open_file_beneath(path, relative).map(Opened::File)
    }

    /// Open `relative` (a path beneath the workspace, as found by a walk) for reading: a
    /// regular file, or an error for anything else.
    pub(crate) fn open_file_beneath(
        &self,
        shown: &str,
        relative: &Path,
    ) -> Result<std::fs::File, Error> {
        let file = self
            .dir
            .open_with(
                relative,
                OpenOptions::new().read(true).custom_flags(read_flags()),
            )
            .map_err(|e| self.io_error(shown, &e))?
            .into_std();
        check_regular(shown, &file)?;
        Ok(file)
    }

    /// The folder handle and name an existing file is replaced through.
    ///
    /// # Errors
    /// As for [`Workspace::resolve_existing`]; a folder is an error.
    pub(crate) fn existing_target(&self, path: &str) -> Result<Target, Error> {
        let canonical = self.resolve_existing(path)?;
        let relative = self.beneath(&canonical);
        let (Some(parent), Some(name)) = (relative.parent(), relative.file_name()) else {
            return Err(Error::Path {
                path: path.into(),
                message: "is a folder".into(),
            });
        };
        Ok(Target {
            dir: self.open_dir(path, parent)?,
            name: name.to_os_string(),
        })
    }

    /// The folder handle and name a file that may not exist yet is written through,
    /// creating its missing folders beneath the workspace when `create`.
    ///
    /// # Errors
    /// As for [`Workspace::resolve_new`] and [`Workspace::resolve_new_creating`].
    pub(crate) fn new_target(&self, path: &str, create: bool) -> Result<Target, Error> {
        let (dir, name) = self.place(path, create)?;
        Ok(Target {
            dir: self.open_dir(path, &dir)?,
            name,
        })
    }

    /// Open the folder `relative` (beneath the workspace).
    fn open_dir(&self, shown: &str, relative: &Path) -> Result<Dir, Error> {
        self.dir
            .open_dir(dot_if_empty(relative))
            .map_err(|e| self.io_error(shown, &e))
    }

    /// Where the file `path` goes: its folder relative to the workspace (with every
    /// symbolic link on the way resolved and checked) and its name. With `create`, the
    /// missing folders are made, one at a time beneath the workspace, once the whole
    /// path has been checked.
    fn place(&self, path: &str, create: bool) -> Result<(PathBuf, OsString), Error> {
        let relative = self.lexical(path)?;
        let Some(Component::Normal(name)) = relative.components().next_back() else {
            return Err(Error::Path {
                path: path.into(),
                message: "does not name a file".into(),
            });
        };
        let parent = relative.parent().unwrap_or(Path::new(""));
        // `folder` is the folder reached so far, relative and canonical; its first
        // `existing` components exist, the rest are still to be made.
        let mut folder = PathBuf::new();
        let mut existing = 0usize;
        for component in parent.components() {
            match component {
                Component::CurDir => {}
                Component::ParentDir => {
                    if !folder.pop() {
                        return Err(climbs_out(path));
                    }
                    existing = existing.min(folder.components().count());
                }
                Component::Normal(part) => {
                    let depth = folder.components().count();
                    if existing < depth {
                        folder.push(part);
                        continue;
                    }
                    let candidate = folder.join(part);
                    match self.dir.symlink_metadata(&candidate) {
                        Ok(meta) if meta.file_type().is_symlink() => {
                            folder = self.follow(path, &candidate)?;
                            if !self.root.join(&folder).is_dir() {
                                return Err(not_a_folder(path, &candidate));
                            }
                            existing = folder.components().count();
                        }
                        Ok(meta) if meta.is_dir() => {
                            folder = candidate;
                            existing = depth + 1;
                        }
                        Ok(_) => return Err(not_a_folder(path, &candidate)),
                        // Made later, once the whole path is known to stay inside.
                        Err(e) if e.kind() == io::ErrorKind::NotFound => folder = candidate,
                        Err(e) => return Err(self.io_error(path, &e)),
                    }
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(climbs_out(path));
                }
            }
        }
        let missing = folder.components().count() > existing;
        if missing && !create {
            return Err(Error::Path {
                path: path.into(),
                message: "is in a folder that does not exist".into(),
            });
        }
        if missing {
            self.make_folders(path, &folder, existing)?;
        }
        let file = folder.join(name);
        match self.dir.symlink_metadata(&file) {
            // An existing symbolic link is written through, when it stays inside.
            Ok(meta) if meta.file_type().is_symlink() => {
                let resolved = self.follow(path, &file)?;
                match (resolved.parent(), resolved.file_name()) {
                    (Some(dir), Some(name)) => Ok((dir.to_path_buf(), name.to_os_string())),
                    _ => Err(Error::Path {
                        path: path.into(),
                        message: "is a folder".into(),
                    }),
                }
            }
            _ => Ok((folder, name.to_os_string())),
        }
    }

    /// Make the folders of `folder` past its first `existing` components, each beneath
    /// the workspace.
    fn make_folders(&self, path: &str, folder: &Path, existing: usize) -> Result<(), Error> {
        let mut made = PathBuf::new();
        for (i, part) in folder.components().enumerate() {
            made.push(part);
            if i < existing {
                continue;
            }
            match self.dir.create_dir(&made) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && self.is_folder(&made) => {}
                Err(e) => {
                    return Err(Error::Path {
                        path: path.into(),
                        message: format!(
                            "needs folders that cannot be created: {}",
                            self.io_error(path, &e)
                        ),
                    })
                }
            }
        }
        Ok(())
    }

    /// Whether `relative` is a folder (not a symbolic link to one).
    fn is_folder(&self, relative: &Path) -> bool {
        self.dir
            .symlink_metadata(relative)
            .is_ok_and(|m| m.is_dir())
    }

    /// Resolve the symbolic link `relative`: its canonical target relative to the
    /// workspace, or an error when it leads outside or nowhere.
    fn follow(&self, path: &str, relative: &Path) -> Result<PathBuf, Error> {
        let canonical = self
            .root
            .join(relative)
            .canonicalize()
            .map_err(|_| Error::Path {
                path: path.into(),
                message: "goes through a symbolic link that leads nowhere".into(),
            })?;
        let inside = self.inside(path, canonical)?;
        Ok(self.beneath(&inside).to_path_buf())
    }

    /// `canonical` (inside the workspace) relative to the workspace; empty for the root.
    fn beneath<'a>(&self, canonical: &'a Path) -> &'a Path {
        canonical.strip_prefix(&self.root).unwrap_or(Path::new(""))
    }

    fn inside(&self, path: &str, canonical: PathBuf) -> Result<PathBuf, Error> {
        if canonical.starts_with(&self.root) {
            Ok(canonical)
        } else {
            Err(through_link(path))
        }
    }

    /// An I/O error on `path` in words; an escape caught by the beneath-only handle
    /// (a path changed into a link leading out) is reported as such.
    pub(crate) fn io_error(&self, path: &str, e: &io::Error) -> Error {
        if is_escape(e) {
            return through_link(path);
        }
        Error::Path {
            path: path.into(),
            message: match e.kind() {
                io::ErrorKind::NotFound => "does not exist".into(),
                _ if e.raw_os_error() == Some(nix::libc::ELOOP) => {
                    "changed into a symbolic link while it was opened".into()
                }
                _ => format!("cannot be opened: {e}"),
            },
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

/// `relative`, or `.` for the workspace itself.
fn dot_if_empty(relative: &Path) -> &Path {
    if relative.as_os_str().is_empty() {
        Path::new(".")
    } else {
        relative
    }
}

/// Whether `e` is the beneath-only handle refusing a path that leads out (cap-std reports
/// it as a permission error without an OS error code).
fn is_escape(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::PermissionDenied && e.raw_os_error().is_none()
}

fn climbs_out(path: &str) -> Error {
    Error::Path {
        path: path.into(),
        message: "leads outside the workspace (too many '..')".into(),
    }
}

fn through_link(path: &str) -> Error {
    Error::Path {
        path: path.into(),
        message: "leads outside the workspace (through a symbolic link)".into(),
    }
}

fn not_a_folder(path: &str, relative: &Path) -> Error {
    Error::Path {
        path: path.into(),
        message: format!(
            "goes through '{}', which is not a folder",
            relative.display()
        ),
    }
}

/// The refusal of a special file.
pub(crate) fn special_error(path: &str, kind: FileKind) -> Error {
    Error::Path {
        path: path.into(),
        message: format!(
            "is {}, not a regular file; it was not opened",
            kind.described()
        ),
    }
}

/// Refuse anything but a regular file, judged on the open handle.
pub(crate) fn check_regular(path: &str, file: &std::fs::File) -> Result<(), Error> {
    let meta = file.metadata().map_err(|e| Error::Path {
        path: path.into(),
        message: format!("cannot be opened: {e}"),
    })?;
    match kind_of(&meta.file_type()) {
        FileKind::File => Ok(()),
        FileKind::Folder => Err(Error::Path {
            path: path.into(),
            message: "is a folder".into(),
        }),
        other => Err(special_error(path, other)),
    }
}
