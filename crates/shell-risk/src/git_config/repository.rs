//! Which repository git uses for a folder, found without running git, and whether
//! everything git reads of it stays inside a given folder.
//!
//! Git looks for its repository from the folder it runs in upward: the nearest folder
//! holding a `.git` — a folder, a file `gitdir: PATH` naming one, or a link to either —
//! or being itself a git directory (a bare repository). It passes over a `.git` folder
//! that is not a repository. [`discover`] does the same, but stops at a `.git` file or
//! link even when it leads nowhere (git would stop and fail there; stopping is the side
//! that never finds a repository git would not use).
//!
//! Of the repository git then reads the git directory, the *common* directory named in
//! its `commondir` file (a linked work tree's), the object store, every store named in
//! `objects/info/alternates` (recursively) and whatever a link among them leads to.
//! [`confined`] says whether all of that stays inside a folder: each of those folders,
//! and every link in the git and common directories, in the object stores and in their
//! subfolders (the loose objects and packs), leads inside it.

use super::keys::read_only_danger;
use super::parse::{variables, Variable};
use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Longest `.git` file read (git's own limit is larger; a longer one is refused here).
const GITFILE_CAP: u64 = 4096;
/// Longest `commondir`, `HEAD` or `alternates` file read.
const SMALL_FILE_CAP: u64 = 64 * 1024;
/// Longest configuration file read by [`configuration_concern`].
const CONFIG_CAP: u64 = 1024 * 1024;
/// Most folder entries looked at to check one repository's links; past them the
/// repository is taken as not confined.
const ENTRY_BUDGET: usize = 1_000_000;
/// Deepest chain of alternate object stores followed (git's own limit).
const ALTERNATE_DEPTH: usize = 5;

/// What stands where git finds its repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// A real `.git` folder (not a link).
    Folder,
    /// A `.git` file or link, naming a git directory elsewhere.
    FileOrLink,
    /// The folder is itself a git directory (a bare repository, or the inside of one).
    Bare,
}

/// The repository git finds for a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Discovered {
    /// The folder holding `.git` (the root of the work tree), or the bare repository.
    pub top: PathBuf,
    /// What git found there.
    pub kind: Kind,
}

impl Discovered {
    /// The `.git` entry (or, bare, the git directory itself).
    pub fn entry(&self) -> PathBuf {
        match self.kind {
            Kind::Bare => self.top.clone(),
            Kind::Folder | Kind::FileOrLink => self.top.join(".git"),
        }
    }
}

/// The folders of a repository git reads.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GitDirs {
    /// The git directory (canonical).
    pub git_dir: PathBuf,
    /// The common directory (canonical): the git directory, or the one its `commondir`
    /// names.
    pub common: PathBuf,
}

/// The repository git finds for `dir` (canonical), as the module says; `None` when there
/// is none at it or above it.
pub fn discover(dir: &Path) -> Option<Discovered> {
    for folder in dir.ancestors() {
        let dot_git = folder.join(".git");
        let found = |kind| {
            Some(Discovered {
                top: folder.to_path_buf(),
                kind,
            })
        };
        match std::fs::symlink_metadata(&dot_git) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            // Git could not look either, and goes on; here the unknown stops the walk.
            Err(_) => return found(Kind::FileOrLink),
            Ok(m) if m.is_dir() => {
                if is_git_dir(&dot_git) {
                    return found(Kind::Folder);
                }
            }
            Ok(_) => return found(Kind::FileOrLink),
        }
        if is_git_dir(folder) {
            return found(Kind::Bare);
        }
    }
    None
}

/// The git directory the `.git` entry of `found` leads to, when it and everything git
/// reads of the repository stays inside `within` (canonical); else why not.
pub fn confined(found: &Discovered, within: &Path) -> Result<GitDirs, String> {
    let entry = found.entry();
    let git_dir = match found.kind {
        Kind::Folder | Kind::Bare => entry,
        Kind::FileOrLink => linked(&entry, &found.top)?,
    };
    confined_git_dir(&git_dir, within)
}

/// Where a `.git` file or link leads: the folder it links to, or the one a `.git` file
/// (`gitdir: PATH`, PATH relative to `top`) names.
pub(crate) fn linked(dot_git: &Path, top: &Path) -> Result<PathBuf, String> {
    let target = std::fs::metadata(dot_git)
        .map_err(|_| "its .git is a link that leads nowhere".to_string())?;
    if target.is_dir() {
        return Ok(dot_git.to_path_buf());
    }
    if !target.is_file() {
        return Err("its .git is neither a folder nor a file".to_string());
    }
    let text = read_capped(dot_git, GITFILE_CAP)
        .ok_or_else(|| "its .git file cannot be read".to_string())?;
    let named = text
        .strip_prefix("gitdir: ")
        .map(|p| p.trim_end_matches(['\n', '\r']))
        .filter(|p| !p.is_empty())
        .ok_or_else(|| "its .git file does not name a git directory".to_string())?;
    Ok(top.join(named))
}

/// Whether `git_dir`, its common directory, its object stores and every link among them
/// stay inside `within` (canonical); the canonical folders when they do.
pub(crate) fn confined_git_dir(git_dir: &Path, within: &Path) -> Result<GitDirs, String> {
    let git_dir = inside(git_dir, within, "the git directory")?;
    if !is_git_dir(&git_dir) {
        return Err("its git directory is not a valid one".to_string());
    }
    let common = match common_dir(&git_dir)? {
        Some(named) => inside(&named, within, "the common git directory")?,
        None => git_dir.clone(),
    };
    let mut budget = ENTRY_BUDGET;
    links_inside(&git_dir, within, &mut budget)?;
    if common != git_dir {
        links_inside(&common, within, &mut budget)?;
    }
    object_stores(&common.join("objects"), within, &mut budget)?;
    Ok(GitDirs { git_dir, common })
}

/// Why the configuration git reads from the repository (`config` in the common
/// directory, `config.worktree` in the git directory) keeps a read-only git command on it
/// from being safe: it cannot be read as git reads it, it moves the work tree
/// (`core.worktree`), includes another file (`[include]`, `[includeIf …]`), or sets a
/// variable through which a read-only command would run a program or read a file it
/// names ([`super::keys`]); or the `.gitmodules` of the work tree `top` does not read
/// (the names of its submodules are needed to keep commands out of them). `None` when
/// nothing does.
pub(crate) fn configuration_concern(dirs: &GitDirs, top: &Path) -> Option<String> {
    let files = [
        dirs.common.join("config"),
        dirs.git_dir.join("config.worktree"),
    ];
    for file in &files {
        if std::fs::symlink_metadata(file).is_err() {
            continue;
        }
        let text = match std::fs::metadata(file) {
            Ok(m) if m.is_file() => read_capped(file, CONFIG_CAP),
            _ => None,
        };
        let Some(text) = text else {
            return Some("the repository's configuration cannot be read".to_string());
        };
        let found = match variables(&text) {
            Ok(found) => found,
            Err(at) => {
                return Some(format!(
                    "the repository's configuration does not read as git's (line {})",
                    at.line
                ))
            }
        };
        if let Some(why) = found.iter().find_map(concern) {
            return Some(why);
        }
    }
    let file = top.join(".gitmodules");
    if std::fs::symlink_metadata(&file).is_ok()
        && gitmodules(top).is_none_or(|names| names.len() > SUBMODULES_CAP)
    {
        return Some("the repository's .gitmodules cannot be read".to_string());
    }
    None
}

/// Most submodules a repository may name for a read-only command to be safe in it.
const SUBMODULES_CAP: usize = 1000;
/// Longest `.gitmodules` read.
const GITMODULES_CAP: u64 = 1024 * 1024;

/// The submodule names of `top/.gitmodules`, when it is a file that reads.
pub fn gitmodules(top: &Path) -> Option<BTreeSet<String>> {
    let text = read_capped(&top.join(".gitmodules"), GITMODULES_CAP)?;
    let found = variables(&text).ok()?;
    Some(
        found
            .into_iter()
            .filter(|v| v.section == "submodule")
            .filter_map(|v| v.subsection)
            .collect(),
    )
}

/// What a variable of the repository's configuration does that keeps a read-only git
/// command from being safe.
fn concern(v: &Variable) -> Option<String> {
    if v.section == "include" || v.section == "includeif" {
        return Some(
            "the repository's configuration includes other files: git may read outside the workspace"
                .to_string(),
        );
    }
    if v.section == "core" && v.name == "worktree" && v.subsection.is_none() {
        return Some(
            "the repository's configuration names a work tree: git may read outside the workspace"
                .to_string(),
        );
    }
    let choice = read_only_danger(v)?;
    Some(format!(
        "the repository's configuration sets {} ({}): git would run or read what the repository chose",
        v.key().escape_debug(),
        choice.words()
    ))
}

/// Whether `dir` is a git directory as git decides it: a valid `HEAD`, and `objects` and
/// `refs` folders it can enter in the common directory. (Stricter than git where they
/// differ: a folder git takes is never refused the other way round.)
pub(crate) fn is_git_dir(dir: &Path) -> bool {
    if !valid_head(&dir.join("HEAD")) {
        return false;
    }
    let common = match common_dir(dir) {
        Ok(Some(common)) => common,
        Ok(None) => dir.to_path_buf(),
        Err(_) => return false,
    };
    enterable(&common.join("objects")) && enterable(&common.join("refs"))
}

/// The common directory `dir`'s `commondir` file names (relative to `dir`), if any.
pub(crate) fn common_dir(dir: &Path) -> Result<Option<PathBuf>, String> {
    let file = dir.join("commondir");
    match std::fs::metadata(&file) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Ok(m) if m.is_file() => {}
        _ => return Err("its commondir cannot be read".to_string()),
    }
    let text = read_capped(&file, SMALL_FILE_CAP)
        .ok_or_else(|| "its commondir cannot be read".to_string())?;
    let named = text.trim_end_matches(['\n', '\r']);
    if named.is_empty() {
        return Err("its commondir names no folder".to_string());
    }
    Ok(Some(dir.join(named)))
}

/// A `HEAD` git accepts: a link into `refs/`, or a file `ref: refs/…` or starting with
/// an object name.
fn valid_head(head: &Path) -> bool {
    match std::fs::symlink_metadata(head) {
        Ok(m) if m.file_type().is_symlink() => {
            return std::fs::read_link(head)
                .is_ok_and(|target| target.to_string_lossy().starts_with("refs/"));
        }
        Ok(m) if m.is_file() => {}
        _ => return false,
    }
    let Some(text) = read_capped(head, SMALL_FILE_CAP) else {
        return false;
    };
    if let Some(name) = text.strip_prefix("ref:") {
        return name.trim_start().starts_with("refs/");
    }
    let hex = text.bytes().take_while(u8::is_ascii_hexdigit).count();
    hex >= 40
}

/// A folder git can enter (`access(X_OK)` succeeds for it).
fn enterable(dir: &Path) -> bool {
    std::fs::metadata(dir.join(".")).is_ok_and(|m| m.is_dir())
}

/// `path` canonical, when that is inside `within`; else why not (`what` names it).
fn inside(path: &Path, within: &Path, what: &str) -> Result<PathBuf, String> {
    match std::fs::canonicalize(path) {
        Ok(real) if real.starts_with(within) => Ok(real),
        Ok(_) => Err(format!("{what} is outside")),
        Err(_) => Err(format!("{what} cannot be found")),
    }
}

/// Every link among the entries of `dir` leads inside `within`.
fn links_inside(dir: &Path, within: &Path, budget: &mut usize) -> Result<(), String> {
    entries(dir, budget, |path, link, _| {
        if link {
            inside(path, within, "a link in the git directory").map(drop)
        } else {
            Ok(())
        }
    })
}

/// The object store `objects` and its alternates, recursively: each inside `within`,
/// and every link in them and in their subfolders too.
fn object_stores(objects: &Path, within: &Path, budget: &mut usize) -> Result<(), String> {
    let mut seen = BTreeSet::new();
    let mut pending = vec![(objects.to_path_buf(), 0usize)];
    while let Some((store, depth)) = pending.pop() {
        let store = inside(&store, within, "an object store")?;
        if !seen.insert(store.clone()) {
            continue;
        }
        let mut folders = Vec::new();
        entries(&store, budget, |path, link, is_dir| {
            if link {
                inside(path, within, "a link in the object store")?;
            }
            if is_dir {
                folders.push(path.to_path_buf());
            }
            Ok(())
        })?;
        for folder in folders {
            entries(&folder, budget, |path, link, _| {
                if link {
                    inside(path, within, "a link in the object store").map(drop)
                } else {
                    Ok(())
                }
            })?;
        }
        for alternate in alternates(&store)? {
            if depth + 1 > ALTERNATE_DEPTH {
                return Err("its alternate object stores nest too deep".to_string());
            }
            pending.push((alternate, depth + 1));
        }
    }
    Ok(())
}

/// The stores `store/info/alternates` names (relative ones relative to `store`).
fn alternates(store: &Path) -> Result<Vec<PathBuf>, String> {
    let file = store.join("info").join("alternates");
    match std::fs::metadata(&file) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Ok(m) if m.is_file() => {}
        _ => return Err("its alternates file cannot be read".to_string()),
    }
    let text = read_capped(&file, SMALL_FILE_CAP)
        .ok_or_else(|| "its alternates file cannot be read".to_string())?;
    let mut stores = Vec::new();
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with('"') {
            return Err("its alternates file names a quoted path".to_string());
        }
        stores.push(store.join(line));
    }
    Ok(stores)
}

/// Call `each(path, is_link, is_folder)` for every entry of `dir` (a folder reached
/// through a link counts as a folder), within `budget` entries in all.
fn entries(
    dir: &Path,
    budget: &mut usize,
    mut each: impl FnMut(&Path, bool, bool) -> Result<(), String>,
) -> Result<(), String> {
    let listing =
        std::fs::read_dir(dir).map_err(|_| "a folder of the repository cannot be listed")?;
    for entry in listing {
        let entry = entry.map_err(|_| "a folder of the repository cannot be listed")?;
        *budget = budget
            .checked_sub(1)
            .ok_or("the repository has too many files to check")?;
        let kind = entry
            .file_type()
            .map_err(|_| "a file of the repository cannot be checked")?;
        let path = entry.path();
        let is_dir = if kind.is_symlink() {
            std::fs::metadata(&path).is_ok_and(|m| m.is_dir())
        } else {
            kind.is_dir()
        };
        each(&path, kind.is_symlink(), is_dir)?;
    }
    Ok(())
}

/// The first `cap` bytes of the regular file `path` as text, or `None` when it cannot
/// be read, is longer, or is not UTF-8.
pub(crate) fn read_capped(path: &Path, cap: u64) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(cap + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 > cap {
        return None;
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::fs::symlink;

    /// A minimal git directory at `dir`.
    fn git_dir(dir: &Path) {
        std::fs::create_dir_all(dir.join("objects/pack")).unwrap();
        std::fs::create_dir_all(dir.join("objects/info")).unwrap();
        std::fs::create_dir_all(dir.join("refs/heads")).unwrap();
        std::fs::write(dir.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    }

    fn canonical(dir: &tempfile::TempDir) -> PathBuf {
        dir.path().canonicalize().unwrap()
    }

    #[test]
    fn discovery_finds_the_nearest_repository_as_git_does() {
        let tmp = tempfile::tempdir().unwrap();
        let root = canonical(&tmp);
        let sub = root.join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        assert_eq!(discover(&sub).map(|d| d.top).filter(|t| t == &root), None);
        git_dir(&root.join(".git"));
        let found = discover(&sub).unwrap();
        assert_eq!(
            (found.top.as_path(), found.kind),
            (root.as_path(), Kind::Folder)
        );
        // A `.git` folder that is not a repository is passed over.
        std::fs::create_dir(root.join("a/.git")).unwrap();
        assert_eq!(discover(&sub).unwrap().top, root);
        // A `.git` file stops the walk, whatever it says.
        std::fs::write(sub.join(".git"), "nonsense").unwrap();
        let found = discover(&sub).unwrap();
        assert_eq!(
            (found.top.as_path(), found.kind),
            (sub.as_path(), Kind::FileOrLink)
        );
        assert!(confined(&found, &root).is_err());
        // Inside a git directory: a bare repository.
        let refs = root.join(".git/refs/heads");
        let found = discover(&refs).unwrap();
        assert_eq!((found.top, found.kind), (root.join(".git"), Kind::Bare));
    }

    #[test]
    fn git_directories_outside_or_linked_out_are_not_confined() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let (root, outside) = (canonical(&tmp), canonical(&out));
        git_dir(&outside.join("repo.git"));
        git_dir(&root.join(".git"));
        let found = discover(&root).unwrap();
        let dirs = confined(&found, &root).unwrap();
        assert_eq!(dirs.git_dir, root.join(".git"));
        assert_eq!(configuration_concern(&dirs, &root), None);

        // A `.git` file naming a git directory outside, or inside.
        std::fs::remove_dir_all(root.join(".git")).unwrap();
        let gitfile = format!("gitdir: {}\n", outside.join("repo.git").display());
        std::fs::write(root.join(".git"), gitfile).unwrap();
        let found = discover(&root).unwrap();
        assert_eq!(found.kind, Kind::FileOrLink);
        assert_eq!(
            confined(&found, &root),
            Err("the git directory is outside".to_string())
        );
        git_dir(&root.join("inner.git"));
        std::fs::write(root.join(".git"), "gitdir: inner.git\n").unwrap();
        let dirs = confined(&discover(&root).unwrap(), &root).unwrap();
        assert_eq!(dirs.git_dir, root.join("inner.git"));

        // A `.git` link out.
        std::fs::remove_file(root.join(".git")).unwrap();
        symlink(outside.join("repo.git"), root.join(".git")).unwrap();
        assert!(confined(&discover(&root).unwrap(), &root).is_err());
    }

    #[test]
    fn stores_links_and_common_dirs_leading_out_are_found() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let (root, outside) = (canonical(&tmp), canonical(&out));
        git_dir(&outside.join("repo.git"));
        let dot_git = root.join(".git");
        git_dir(&dot_git);
        let check = || confined_git_dir(&dot_git, &root);
        assert!(check().is_ok());

        let alternates = dot_git.join("objects/info/alternates");
        let theirs = outside.join("repo.git/objects");
        std::fs::write(&alternates, format!("{}\n", theirs.display())).unwrap();
        assert_eq!(check(), Err("an object store is outside".to_string()));
        std::fs::write(&alternates, "# nothing\n").unwrap();
        assert!(check().is_ok());

        std::fs::create_dir(dot_git.join("objects/ab")).unwrap();
        symlink(outside.join("x"), dot_git.join("objects/ab/cdef")).unwrap();
        assert!(check().is_err(), "a loose object linked out");
        std::fs::remove_file(dot_git.join("objects/ab/cdef")).unwrap();
        symlink(outside.join("idx"), dot_git.join("objects/pack/p.idx")).unwrap();
        assert!(check().is_err(), "a pack linked out");
        std::fs::remove_file(dot_git.join("objects/pack/p.idx")).unwrap();
        symlink(outside.join("index"), dot_git.join("index")).unwrap();
        assert!(check().is_err(), "the index linked out");
        std::fs::remove_file(dot_git.join("index")).unwrap();
        assert!(check().is_ok());

        std::fs::write(
            dot_git.join("commondir"),
            outside.join("repo.git").display().to_string(),
        )
        .unwrap();
        assert_eq!(
            check(),
            Err("the common git directory is outside".to_string())
        );
    }

    #[test]
    fn configuration_that_moves_the_work_tree_includes_or_names_programs_is_seen() {
        let tmp = tempfile::tempdir().unwrap();
        let top = canonical(&tmp);
        git_dir(&top.join(".git"));
        let dirs = GitDirs {
            git_dir: top.join(".git"),
            common: top.join(".git"),
        };
        let concern_with = |text: &str| {
            std::fs::write(top.join(".git/config"), text).unwrap();
            configuration_concern(&dirs, &top)
        };
        for text in [
            "[core]\n\tworktree = /x\n",
            "[core] WorkTree=/x",
            "[include]\n\tpath = /x\n",
            "[includeIf \"gitdir:/\"]\n\tpath = /x\n",
            "[core]\n\tfsmonitor = cat /x\n",
            "[diff \"d\"]\n\ttextconv = cat /x\n",
            "[filter \"f\"]\n\tclean = cat /x\n",
            "[blame]\n\tignoreRevsFile = /x\n",
            "[core]\n\tbare = \"open\n",
        ] {
            assert!(concern_with(text).is_some(), "{text}");
        }
        for text in [
            "[core]\n\tbare = false\n",
            "[extensions]\n\tworktreeConfig = true\n",
            "[remote \"origin\"]\n\turl = ../external.git\n",
            "[core]\n\thooksPath = .husky\n",
        ] {
            assert_eq!(concern_with(text), None, "{text}");
        }
        std::fs::write(top.join(".gitmodules"), "[submodule \"x\"\n").unwrap();
        assert!(configuration_concern(&dirs, &top).is_some());
        std::fs::write(top.join(".gitmodules"), "[submodule \"x\"]\npath = x\n").unwrap();
        assert_eq!(configuration_concern(&dirs, &top), None);
    }
}
