//! The walk `list_dir` and `search_files` share: the `ignore` crate's walker in name
//! order, not following symbolic links, with `.gitignore`, `.ignore` and
//! `.git/info/exclude` honoured — but those files read by us, not by the walker.
//!
//! The walker would open them with a plain `open`: a `.gitignore` that is a FIFO would
//! block it forever, and one that is a link to an endless device would fill the memory.
//! Here each is opened beneath the workspace without blocking and without following a
//! final symbolic link (as git does), only when it is a regular file, and read up to a
//! cap.
//!
//! Secret locations ([`Workspace::protected`]) are left out of every walk, and counted.

use crate::special::{kind_of, FileKind};
use crate::workspace::Workspace;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The most of one ignore file that is read.
const IGNORE_FILE_CAP: u64 = 1024 * 1024;

/// A walk of `dir` (inside `workspace`, canonical) in name order that honours the ignore
/// files of the workspace (also outside a git repository), shows hidden files, skips
/// `.git`, does not follow symbolic links, and leaves out the secret locations, counting
/// them in `secrets`. (Not following links, every entry's path is where it is on disk.)
pub(crate) fn walker(
    workspace: &Workspace,
    dir: &Path,
    secrets: &Arc<AtomicUsize>,
) -> ignore::WalkBuilder {
    let rules = Arc::new(Rules::new(workspace.clone()));
    let secrets = Arc::clone(secrets);
    let mut builder = ignore::WalkBuilder::new(dir);
    builder
        .standard_filters(false)
        .hidden(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |e| {
            if e.depth() == 0 {
                return true;
            }
            if e.file_name() == ".git" {
                return false;
            }
            let is_dir = e.file_type().is_some_and(|t| t.is_dir());
            if rules.ignored(e.path(), is_dir) {
                return false;
            }
            if rules.workspace.is_protected(e.path()) {
                secrets.fetch_add(1, Ordering::Relaxed);
                return false;
            }
            true
        });
    builder
}

/// The note that ends a listing or a search that left out `count` secret locations
/// (empty when none).
pub(crate) fn secrets_note(count: usize) -> String {
    match count {
        0 => String::new(),
        1 => "\n(1 secret location was left out: tools do not read or write it)".into(),
        n => format!("\n({n} secret locations were left out: tools do not read or write them)"),
    }
}

/// The ignore rules of one folder.
#[derive(Debug)]
struct FolderRules {
    /// `.ignore` (wins over `.gitignore`, as with ripgrep).
    ignore: Gitignore,
    /// `.gitignore`.
    gitignore: Gitignore,
    /// `.git/info/exclude`, when the folder holds a repository.
    exclude: Gitignore,
}

/// The ignore rules of the workspace's folders, each read once.
#[derive(Debug)]
struct Rules {
    workspace: Workspace,
    folders: Mutex<HashMap<PathBuf, Arc<FolderRules>>>,
    global: Gitignore,
}

impl Rules {
    fn new(workspace: Workspace) -> Self {
        // The user's own global excludes file (their git configuration, not the
        // workspace's).
        let (global, _) = Gitignore::global();
        Rules {
            workspace,
            folders: Mutex::new(HashMap::new()),
            global,
        }
    }

    /// Whether `path` (absolute, inside the workspace) is ignored. As with ripgrep, a
    /// deeper folder's rule wins over a shallower one, and `.ignore` over `.gitignore`
    /// over `.git/info/exclude` over the global excludes (also inside a nested
    /// repository).
    fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        let root = self.workspace.root();
        let folders: Vec<Arc<FolderRules>> = path
            .ancestors()
            .skip(1)
            .take_while(|a| a.starts_with(root))
            .map(|a| self.folder(a))
            .collect();
        let mut verdict = [
            ignore::Match::None,
            ignore::Match::None,
            ignore::Match::None,
        ];
        for rules in &folders {
            let matchers = [&rules.ignore, &rules.gitignore, &rules.exclude];
            for (found, matcher) in verdict.iter_mut().zip(matchers) {
                if found.is_none() {
                    *found = matcher.matched(path, is_dir).map(|_| ());
                }
            }
        }
        let relative = path.strip_prefix(root).unwrap_or(path);
        let global = self.global.matched(relative, is_dir).map(|_| ());
        verdict
            .into_iter()
            .chain([global])
            .find(|m| !m.is_none())
            .is_some_and(|m| m.is_ignore())
    }

    /// The rules of `folder`, read the first time they are asked for.
    fn folder(&self, folder: &Path) -> Arc<FolderRules> {
        if let Some(found) = self.lock().get(folder) {
            return found.clone();
        }
        let read = Arc::new(self.read_folder(folder));
        self.lock().insert(folder.to_path_buf(), read.clone());
        read
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Arc<FolderRules>>> {
        self.folders
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn read_folder(&self, folder: &Path) -> FolderRules {
        let relative = folder
            .strip_prefix(self.workspace.root())
            .unwrap_or(Path::new(""));
        let has_git = self
            .workspace
            .dir()
            .symlink_metadata(relative.join(".git"))
            .is_ok_and(|m| m.is_dir());
        let exclude = if has_git {
            self.rules(folder, &relative.join(".git/info/exclude"))
        } else {
            Gitignore::empty()
        };
        FolderRules {
            ignore: self.rules(folder, &relative.join(".ignore")),
            gitignore: self.rules(folder, &relative.join(".gitignore")),
            exclude,
        }
    }

    /// The rules in the ignore file `relative`, for paths under `folder`; none when the
    /// file is missing, unreadable or not a regular file.
    fn rules(&self, folder: &Path, relative: &Path) -> Gitignore {
        let dir = self.workspace.dir();
        // Checked before opening so a device is never opened; checked again on the handle.
        match dir.symlink_metadata(relative) {
            Ok(m) if kind_of(&m.file_type()) == FileKind::File => {}
            _ => return Gitignore::empty(),
        }
        let shown = relative.to_string_lossy();
        let Ok(file) = self.workspace.open_file_beneath(&shown, relative) else {
            return Gitignore::empty();
        };
        let mut text = Vec::new();
        if file.take(IGNORE_FILE_CAP).read_to_end(&mut text).is_err() {
            return Gitignore::empty();
        }
        let mut builder = GitignoreBuilder::new(folder);
        let text = String::from_utf8_lossy(&text);
        for line in text.trim_start_matches('\u{feff}').lines() {
            // A bad pattern is skipped, as git skips it.
            let _ = builder.add_line(None, line);
        }
        builder.build().unwrap_or_else(|_| Gitignore::empty())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::walker;
    use crate::workspace::Workspace;
    use std::path::Path;

    fn paths(walk: ignore::Walk, root: &Path) -> Vec<String> {
        walk.filter_map(Result::ok)
            .map(|e| e.path().strip_prefix(root).unwrap().display().to_string())
            .collect()
    }

    /// Reading the ignore files ourselves keeps the `ignore` crate's own meaning of them.
    #[test]
    fn the_walk_ignores_what_the_ignore_crate_ignores() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let files = [
            (
                ".gitignore",
                "*.log\n!keep.log\n/top-only/\nbuild\n*.tmp\n!sub/**/x.tmp\n",
            ),
            (".git/HEAD", "ref: refs/heads/main\n"),
            (".git/info/exclude", "excluded.txt\nsub/deep/\n"),
            ("a.log", ""),
            ("keep.log", ""),
            ("excluded.txt", ""),
            ("top-only/a.txt", ""),
            ("build/out", ""),
            ("sub/top-only/a.txt", ""),
            ("sub/build", ""),
            ("sub/.gitignore", "!b.log\nc.*\n"),
            ("sub/.ignore", "b.log\n!c.keep\n"),
            ("sub/b.log", ""),
            ("sub/c.txt", ""),
            ("sub/c.keep", ""),
            ("sub/x.tmp", ""),
            ("sub/y.tmp", ""),
            ("sub/deep/z.rs", ""),
            ("nested/.git/HEAD", "ref: refs/heads/main\n"),
            ("nested/.gitignore", "!d.log\n"),
            ("nested/d.log", ""),
            ("nested/e.log", ""),
            (".hidden/f.rs", ""),
        ];
        for (path, text) in files {
            std::fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
            std::fs::write(root.join(path), text).unwrap();
        }
        let workspace = Workspace::new(&root).unwrap();
        let secrets = std::sync::Arc::default();
        for start in [root.clone(), root.join("sub")] {
            let ours = paths(walker(&workspace, &start, &secrets).build(), &root);
            let theirs = paths(
                ignore::WalkBuilder::new(&start)
                    .hidden(false)
                    .git_ignore(true)
                    .git_exclude(true)
                    .require_git(false)
                    .follow_links(false)
                    .sort_by_file_name(|a, b| a.cmp(b))
                    .filter_entry(|e| e.file_name() != ".git")
                    .build(),
                &root,
            );
            assert_eq!(ours, theirs, "from {}", start.display());
            assert!(ours.iter().any(|p| p == "sub/c.keep"), "{ours:?}");
            assert!(
                !ours.iter().any(|p| p == "sub/c.txt" || p == "sub/b.log"),
                "{ours:?}"
            );
        }
    }
}
