//! Everything a command's git could read of the repositories in a workspace, found
//! before the command runs: every repository inside it (not only the one the command
//! starts in — `git -C inner diff` or `cd inner && git diff` open a nested one), and of
//! each every variable its configuration sets, under any condition.
//!
//! Conditions are not weighed: an `[includeIf "onbranch:…"]` or `[includeIf
//! "hasconfig:remote.*.url:…"]` that does not hold now may hold a moment later, after a
//! `git checkout` or a `git remote add` in the same command. So every file an
//! `[include]` or `[includeIf …]` names is read, as git would read it were its condition
//! true, and so on through what those include.
//!
//! Bounded: at most [`WALK_ENTRIES`] folder entries looked at, [`WALK_DEPTH`] folders
//! deep, [`REPOSITORIES_CAP`] repositories and [`INCLUDED_CAP`] configuration files per
//! repository, each read up to [`CONFIG_CAP`] bytes. [`Reach::complete`] says whether
//! the walk saw the whole workspace. Links are not followed (a link to a folder inside
//! the workspace is walked where it really is; outside it, the repository is not the
//! workspace's). Nothing here runs a program or writes.

use super::parse::{variables, Variable};
use super::repository::{common_dir, is_git_dir, linked, read_capped};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Most folder entries the walk looks at.
pub(crate) const WALK_ENTRIES: usize = 200_000;
/// Deepest folder the walk enters, counted from the workspace.
pub(crate) const WALK_DEPTH: usize = 24;
/// Most repositories found.
pub(crate) const REPOSITORIES_CAP: usize = 256;
/// Most configuration files read for one repository (its own and what they include;
/// git itself stops at an include depth of 10).
pub(crate) const INCLUDED_CAP: usize = 64;
/// Longest configuration file read.
pub(crate) const CONFIG_CAP: u64 = 1024 * 1024;

/// The repositories found inside a folder.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reach {
    /// Their git directories (as found: a `.git` folder, where a `.git` file leads, or
    /// a bare repository), each once.
    pub git_dirs: Vec<PathBuf>,
    /// Whether the whole folder was looked at (no bound was reached).
    pub complete: bool,
}

/// Every repository inside `root` (its own included), as the module says.
pub fn repositories_under(root: &Path) -> Reach {
    let mut found: BTreeSet<PathBuf> = BTreeSet::new();
    let mut complete = true;
    let mut entries = 0usize;
    let mut stack: Vec<(PathBuf, usize)> = vec![(root.to_path_buf(), 0)];
    while let Some((dir, depth)) = stack.pop() {
        if found.len() >= REPOSITORIES_CAP {
            complete = false;
            break;
        }
        if is_git_dir(&dir) {
            // A bare repository (or a git directory kept under another name).
            found.insert(dir.clone());
            continue;
        }
        let Ok(listing) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in listing.flatten() {
            entries += 1;
            if entries > WALK_ENTRIES {
                complete = false;
                stack.clear();
                break;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if entry.file_name() == ".git" {
                if let Some(git_dir) = dot_git_target(&path, &dir, kind) {
                    found.insert(git_dir);
                }
                continue;
            }
            if kind.is_dir() {
                if depth + 1 > WALK_DEPTH {
                    complete = false;
                } else {
                    stack.push((path, depth + 1));
                }
            }
        }
    }
    Reach {
        git_dirs: found.into_iter().collect(),
        complete,
    }
}

/// The git directory a `.git` entry in `top` leads to: itself (a folder), or where a
/// link or a `gitdir: PATH` file leads (see `repository::linked`).
fn dot_git_target(dot_git: &Path, top: &Path, kind: std::fs::FileType) -> Option<PathBuf> {
    if kind.is_dir() {
        return Some(dot_git.to_path_buf());
    }
    linked(dot_git, top).ok()
}

/// Every variable the repository `git_dir` sets — in `config` of its common directory,
/// in `config.worktree`, and in every file those include under any condition — in the
/// order git would read them. A file that cannot be read or does not parse adds
/// nothing (git refuses a file it cannot parse, and then runs no command at all).
pub fn every_variable(git_dir: &Path) -> Vec<Variable> {
    let common = common_dir(git_dir)
        .ok()
        .flatten()
        .unwrap_or_else(|| git_dir.to_path_buf());
    let mut out = Vec::new();
    let mut read: BTreeSet<PathBuf> = BTreeSet::new();
    let mut budget = INCLUDED_CAP;
    for file in [common.join("config"), git_dir.join("config.worktree")] {
        gather(&file, &mut read, &mut budget, &mut out);
    }
    out
}

/// The variables of `file` and, in place, of the files it includes.
fn gather(file: &Path, read: &mut BTreeSet<PathBuf>, budget: &mut usize, out: &mut Vec<Variable>) {
    if *budget == 0 || !read.insert(file.to_path_buf()) {
        return;
    }
    *budget -= 1;
    let Some(text) = read_capped(file, CONFIG_CAP) else {
        return;
    };
    let Ok(found) = variables(&text) else {
        return;
    };
    for variable in found {
        let included = is_include(&variable)
            .then(|| {
                variable
                    .value
                    .as_deref()
                    .and_then(|p| include_path(p, file))
            })
            .flatten();
        out.push(variable);
        if let Some(included) = included {
            gather(&included, read, budget, out);
        }
    }
}

/// Whether `variable` is `include.path` or `includeIf.<condition>.path`.
fn is_include(variable: &Variable) -> bool {
    variable.name == "path"
        && (variable.section == "include"
            || (variable.section == "includeif" && variable.subsection.is_some()))
}

/// The file an include's `path` names, as git resolves it: `~/` from the home folder,
/// a relative path from the including file's folder. `%(prefix)/` (git's installation)
/// is not the repository's and is left out.
fn include_path(path: &str, including: &Path) -> Option<PathBuf> {
    if path.is_empty() || path.starts_with("%(prefix)/") {
        return None;
    }
    if let Some(rest) = path.strip_prefix("~/") {
        return std::env::var_os("HOME").map(|home| PathBuf::from(home).join(rest));
    }
    let path = Path::new(path);
    if path.is_absolute() {
        return Some(path.to_path_buf());
    }
    Some(including.parent()?.join(path))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn git_dir(dir: &Path) {
        std::fs::create_dir_all(dir.join("objects")).unwrap();
        std::fs::create_dir_all(dir.join("refs")).unwrap();
        std::fs::write(dir.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    }

    fn keys(vars: &[Variable]) -> Vec<String> {
        vars.iter().map(Variable::key).collect()
    }

    #[test]
    fn nested_repositories_of_every_kind_are_found() {
        let ws = tempfile::tempdir().unwrap();
        let root = ws.path();
        git_dir(&root.join(".git"));
        git_dir(&root.join("inner/.git"));
        git_dir(&root.join("deep/er/still/.git"));
        git_dir(&root.join("bare.git"));
        // A `.git` file naming a git directory kept elsewhere in the workspace.
        git_dir(&root.join("kept/linked"));
        std::fs::create_dir_all(root.join("worktree")).unwrap();
        std::fs::write(root.join("worktree/.git"), "gitdir: ../kept/linked\n").unwrap();
        let reach = repositories_under(root);
        assert!(reach.complete);
        let found: BTreeSet<PathBuf> = reach.git_dirs.into_iter().collect();
        for expected in [
            root.join(".git"),
            root.join("inner/.git"),
            root.join("deep/er/still/.git"),
            root.join("bare.git"),
            root.join("worktree/../kept/linked"),
        ] {
            assert!(found.contains(&expected), "{expected:?} not in {found:?}");
        }
    }

    #[test]
    fn the_walk_is_bounded_and_says_so() {
        let ws = tempfile::tempdir().unwrap();
        let mut dir = ws.path().to_path_buf();
        for i in 0..=WALK_DEPTH + 1 {
            dir = dir.join(format!("d{i}"));
        }
        std::fs::create_dir_all(&dir).unwrap();
        git_dir(&dir.join(".git"));
        let reach = repositories_under(ws.path());
        assert!(!reach.complete);
        assert!(reach.git_dirs.is_empty());
    }

    #[test]
    fn every_include_is_read_whatever_its_condition() {
        let ws = tempfile::tempdir().unwrap();
        let git = ws.path().join(".git");
        git_dir(&git);
        std::fs::write(
            git.join("config"),
            "[core]\n\tbare = false\n[includeIf \"onbranch:evil\"]\n\tpath = branch.inc\n\
             [includeIf \"hasconfig:remote.*.url:https://x/**\"]\n\tpath = ../remote.inc\n",
        )
        .unwrap();
        std::fs::write(
            git.join("branch.inc"),
            "[diff \"x\"]\n\ttextconv = evil\n[include]\n\tpath = branch.inc\n\tpath = nested.inc\n",
        )
        .unwrap();
        std::fs::write(git.join("nested.inc"), "[tar \"tgz\"]\n\tcommand = evil\n").unwrap();
        std::fs::write(ws.path().join("remote.inc"), "[imap]\n\ttunnel = evil\n").unwrap();
        std::fs::write(
            git.join("config.worktree"),
            "[interactive]\n\tdiffFilter = evil\n",
        )
        .unwrap();
        let found = keys(&every_variable(&git));
        for key in [
            "core.bare",
            "diff.x.textconv",
            "tar.tgz.command",
            "imap.tunnel",
            "interactive.difffilter",
        ] {
            assert!(found.iter().any(|k| k == key), "{key} not in {found:?}");
        }
        // The include of itself is read once.
        assert_eq!(found.iter().filter(|k| *k == "diff.x.textconv").count(), 1);
    }
}
