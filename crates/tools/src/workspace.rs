//! The workspace every tool is confined to.
//!
//! Paths are checked twice. First by their form and by what they resolve to now (absolute
//! paths, `..` that climbs out and symbolic links that lead out are refused with a clear
//! error). Then every file is opened, created or renamed through a handle on the workspace
//! folder that only resolves paths beneath it (`openat2` with `RESOLVE_BENEATH` on Linux,
//! through `cap-std`): a path swapped for a symbolic link between the check and the use
//! cannot reach outside.
//!
//! The secret locations the sandbox keeps from commands (`~/.ssh`, `~/.aws`, tokens,
//! configured `deny_read` paths: [`sandbox::Launcher::protected_paths`]) are kept from the
//! tools too, here where every path is resolved: a path that is, or is beneath, one of
//! them — by its form or by where it leads through symbolic links — is refused, for
//! reading, writing, listing and searching alike, also when it does not exist yet. Every
//! file or folder opened is checked once more on its handle, so a path swapped for a link
//! into a secret location between the check and the use is refused as well.

use crate::error::Error;
use crate::special::{kind_of, FileKind};
use cap_std::fs::{Dir, OpenOptions, OpenOptionsExt};
use core_models::PermissionSubjects;
use nix::fcntl::OFlag;
use sandbox::Launcher;
use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// A folder the tools work in. Every path a tool is given is relative to it, and is
/// refused when it leads outside: absolute paths, `..` that climbs out, and symlinks
/// pointing out are all errors. So is a path that is, or leads to, a secret location
/// (see [`Workspace::with_launcher`]).
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    dir: Arc<Dir>,
    /// The secret locations at or beneath the root, or holding it (canonical).
    protected: Arc<[PathBuf]>,
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
    /// The workspace at `root` (which must be an existing folder), with the secret
    /// locations of the default sandbox settings ([`Launcher::default`]) kept from the
    /// tools.
    ///
    /// # Errors
    /// [`Error::Workspace`] when it does not exist or is not a folder.
    pub fn new(root: impl AsRef<Path>) -> Result<Self, Error> {
        Self::with_launcher(root, &Launcher::default())
    }

    /// The workspace at `root` (which must be an existing folder), with the secret
    /// locations of `launcher`'s settings ([`Launcher::protected_paths`]: the default
    /// ones under the home folder, the system ones and `deny_read`) kept from the tools,
    /// as the sandbox keeps them from commands.
    ///
    /// # Errors
    /// [`Error::Workspace`] when it does not exist or is not a folder.
    pub fn with_launcher(root: impl AsRef<Path>, launcher: &Launcher) -> Result<Self, Error> {
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
        // Only the secret locations at or beneath the workspace, or holding it, can ever
        // be reached: any other path is refused as leading outside.
        let protected: Vec<PathBuf> = launcher
            .protected_paths(&canonical)
            .into_iter()
            .filter(|p| p.starts_with(&canonical) || canonical.starts_with(p))
            .collect();
        Ok(Workspace {
            root: canonical,
            dir: Arc::new(dir),
            protected: protected.into(),
        })
    }

    /// The workspace folder (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The secret locations no tool reads or writes that matter here: those at or
    /// beneath the workspace folder, or holding it; canonical as far as they exist.
    pub fn protected(&self) -> &[PathBuf] {
        &self.protected
    }

    /// Whether the absolute path `path` is a secret location or beneath one (compared as
    /// given: callers pass canonical paths, or the workspace joined with a lexically
    /// normalized relative path).
    pub(crate) fn is_protected(&self, path: &Path) -> bool {
        self.protected.iter().any(|p| path.starts_with(p))
    }

    /// Refuse `absolute` (where `path` leads, by its form when `by_link` is false, or on
    /// disk) when it is a secret location or beneath one.
    fn refuse_protected(&self, path: &str, absolute: &Path, by_link: bool) -> Result<(), Error> {
        if self.is_protected(absolute) {
            Err(secret(path, by_link))
        } else {
            Ok(())
        }
    }

    /// Refuse a handle (of `path`, or of the folder holding `name`) that turned out to be
    /// in a secret location: what was actually opened, whatever happened to the path.
    fn check_held(
        &self,
        path: &str,
        handle: BorrowedFd<'_>,
        name: Option<&Path>,
    ) -> Result<(), Error> {
        match (held_at(handle), name) {
            (Some(at), Some(name)) => self.refuse_protected(path, &at.join(name), true),
            (Some(at), None) => self.refuse_protected(path, &at, true),
            (None, _) => Ok(()),
        }
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
        // The path by its form, `..` resolved: refused when it names a secret location.
        let mut normalized = PathBuf::new();
        for c in p.components() {
            match c {
                // `..` goes up a folder; with none left to go up, it climbs out.
                Component::ParentDir if !normalized.pop() => return Err(climbs_out(path)),
                Component::Normal(part) => normalized.push(part),
                _ => {}
            }
        }
        self.refuse_protected(path, &self.root.join(normalized), false)?;
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
        let canonical = self.inside(path, canonical)?;
        self.refuse_protected(path, &canonical, true)?;
        Ok(canonical)
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
    /// regular file, or an error for anything else (and for a secret location).
    pub(crate) fn open_file_beneath(
        &self,
        shown: &str,
        relative: &Path,
    ) -> Result<std::fs::File, Error> {
        self.refuse_protected(shown, &self.root.join(relative), false)?;
        let file = self
            .dir
            .open_with(
                relative,
                OpenOptions::new().read(true).custom_flags(read_flags()),
            )
            .map_err(|e| self.io_error(shown, &e))?
            .into_std();
        self.check_held(shown, file.as_fd(), None)?;
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
        self.target(path, parent, name.to_os_string())
    }

    /// The folder handle and name a file that may not exist yet is written through,
    /// creating its missing folders beneath the workspace when `create`.
    ///
    /// # Errors
    /// As for [`Workspace::resolve_new`] and [`Workspace::resolve_new_creating`].
    pub(crate) fn new_target(&self, path: &str, create: bool) -> Result<Target, Error> {
        let (dir, name) = self.place(path, create)?;
        self.target(path, &dir, name)
    }

    /// The target `name` in the folder `relative`, the folder opened beneath the
    /// workspace and checked, on its handle, not to be in a secret location.
    fn target(&self, path: &str, relative: &Path, name: OsString) -> Result<Target, Error> {
        let dir = self.open_dir(path, relative)?;
        self.check_held(path, dir.as_fd(), Some(Path::new(&name)))?;
        Ok(Target { dir, name })
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
        let (folder, name) = self.place_entry(path, create)?;
        let file = folder.join(&name);
        match self.dir.symlink_metadata(&file) {
            // An existing symbolic link is written through, when it stays inside.
            Ok(meta) if meta.file_type().is_symlink() => {
                let resolved = self.follow(path, &file)?;
                self.refuse_protected(path, &self.root.join(&resolved), true)?;
                match (resolved.parent(), resolved.file_name()) {
                    (Some(dir), Some(name)) => Ok((dir.to_path_buf(), name.to_os_string())),
                    _ => Err(Error::Path {
                        path: path.into(),
                        message: "is a folder".into(),
                    }),
                }
            }
            _ => Ok((folder, name)),
        }
    }

    /// The folder handle and name of the entry `path` itself — a symbolic link there is
    /// the link, not what it points to — its folders resolved and checked as for
    /// [`Workspace::new_target`] (and made, with `create`).
    pub(crate) fn entry_target(&self, path: &str, create: bool) -> Result<Target, Error> {
        let (dir, name) = self.place_entry(path, create)?;
        self.target(path, &dir, name)
    }

    /// Where the entry `path` is: its folder relative to the workspace (every symbolic
    /// link on the way resolved and checked) and its name, the final component as it is.
    fn place_entry(&self, path: &str, create: bool) -> Result<(PathBuf, OsString), Error> {
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
        // Where the file goes, the existing part canonical: a secret location (even one
        // that does not exist yet) is refused before any folder is made.
        self.refuse_protected(path, &self.root.join(&folder).join(name), true)?;
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
        Ok((folder, name.to_os_string()))
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

/// The permission subjects of the path argument `raw` of a call over `workspace`: its
/// lexical form ([`PermissionSubjects::path`]) and, when it differs, where it leads on
/// disk ([`leads_to`]). A deny pattern then refuses a path that reaches a denied file
/// through a symbolic link, and an allow pattern must allow both. A path that leads
/// outside or cannot be resolved keeps the lexical subject only.
pub(crate) fn path_subjects(raw: &str, workspace: Option<&Path>) -> PermissionSubjects {
    let lexical = core_models::normalize_path(raw, workspace);
    let led = workspace.and_then(|root| leads_to(raw, root));
    PermissionSubjects::of([lexical].into_iter().chain(led))
}

/// Where the path `raw` leads in `workspace`, following symbolic links: canonical as far
/// as it exists (a file to be created is its folder's canonical path and its name),
/// relative to the workspace, `/`-separated (`.` for the workspace itself). `None` when it
/// leads outside or cannot be resolved.
pub(crate) fn leads_to(raw: &str, workspace: &Path) -> Option<String> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return None;
    }
    let root = workspace.canonicalize().ok()?;
    let joined = workspace.join(trimmed);
    let mut existing = joined.as_path();
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    let mut full = loop {
        if let Ok(canonical) = existing.canonicalize() {
            break canonical;
        }
        // A missing part named `..` cannot be resolved without it: lexical only.
        rest.push(existing.file_name()?);
        existing = existing.parent()?;
    };
    for name in rest.iter().rev() {
        full.push(name);
    }
    let inside = full.strip_prefix(&root).ok()?;
    Some(core_models::normalize_path(&inside.to_string_lossy(), None))
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

/// The refusal of a secret location, named by its form or reached through a link.
fn secret(path: &str, by_link: bool) -> Error {
    Error::Path {
        path: path.into(),
        message: if by_link {
            "leads to a secret location (through a symbolic link); tools do not read or write it"
        } else {
            "is a secret location; tools do not read or write it"
        }
        .into(),
    }
}

/// Where an open handle is, as the kernel tells (`/proc/self/fd`); `None` where it cannot
/// be told (the path was checked before it was opened).
fn held_at(handle: BorrowedFd<'_>) -> Option<PathBuf> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        std::fs::read_link(format!("/proc/self/fd/{}", handle.as_raw_fd())).ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = handle;
        None
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use sandbox::SandboxSettings;
    use std::os::unix::fs::symlink;

    /// A fake home folder with `.ssh/id_rsa`, as a workspace whose launcher takes it for
    /// the home folder.
    fn home() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".ssh")).unwrap();
        std::fs::write(dir.path().join(".ssh/id_rsa"), "key").unwrap();
        let launcher = Launcher::new(SandboxSettings {
            home: Some(dir.path().to_path_buf()),
            ..SandboxSettings::default()
        });
        let workspace = Workspace::with_launcher(dir.path(), &launcher).unwrap();
        (dir, workspace)
    }

    /// What was actually opened is checked, whatever the path looked like when it was
    /// checked: a folder that became a link into `.ssh` (a link that stays beneath the
    /// workspace, which opening beneath it allows) is refused on the handle.
    #[test]
    fn handles_opened_in_a_secret_location_are_refused() {
        let (dir, workspace) = home();
        symlink(".ssh", dir.path().join("d")).unwrap();
        let read = workspace.open_file_beneath("d/id_rsa", Path::new("d/id_rsa"));
        assert!(
            read.unwrap_err().to_string().contains("secret location"),
            "read through the link"
        );
        let write = workspace.target("d/new", Path::new("d"), "new".into());
        assert!(write.unwrap_err().to_string().contains("secret location"));
        // The same shapes without the link work.
        std::fs::remove_file(dir.path().join("d")).unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        std::fs::write(dir.path().join("d/id_rsa"), "not a key").unwrap();
        assert!(workspace
            .open_file_beneath("d/id_rsa", Path::new("d/id_rsa"))
            .is_ok());
        assert!(workspace
            .target("d/new", Path::new("d"), "new".into())
            .is_ok());
    }

    #[test]
    fn only_secret_locations_that_can_be_reached_are_kept() {
        let (dir, workspace) = home();
        let root = dir.path().canonicalize().unwrap();
        assert!(workspace.protected().contains(&root.join(".ssh")));
        // `.netrc` does not exist: it is kept by its name in the existing folder.
        assert!(workspace.protected().contains(&root.join(".netrc")));
        assert!(workspace
            .protected()
            .iter()
            .all(|p| p.starts_with(&root) || root.starts_with(p)));
    }

    #[test]
    fn where_a_path_leads() {
        let (dir, _) = home();
        let root = dir.path();
        symlink(".ssh", root.join("lnk")).unwrap();
        symlink("/", root.join("out")).unwrap();
        let led = |raw: &str| leads_to(raw, root);
        assert_eq!(led("lnk/id_rsa").as_deref(), Some(".ssh/id_rsa"));
        assert_eq!(led("lnk/not-yet").as_deref(), Some(".ssh/not-yet"));
        assert_eq!(led("./lnk/..").as_deref(), Some("."));
        assert_eq!(led("out/etc"), None);
        assert_eq!(led("../x"), None);
        assert_eq!(led("missing/../x"), None);
        assert_eq!(led("  "), None);
    }
}
