//! Git on a repository that is not trusted.
//!
//! A repository's own configuration (`.git/config` and every file it includes) can name
//! programs git runs: `core.fsmonitor`, hooks (`core.hooksPath`), pagers (`core.pager`,
//! `pager.*`), external diffs (`diff.external`, `diff.<driver>.command`), textconv
//! (`diff.<driver>.textconv`), filter drivers (`filter.<driver>.clean`/`smudge`/`process`,
//! which `git status` and `git diff` run on worktree files), `gpg.program` with
//! `log.showSignature`, credential helpers, … It can also name files git opens (an
//! excludes file, an attributes file, a diff order file: a FIFO there blocks git) and
//! another work tree (`core.worktree`, to show files outside the workspace).
//!
//! Every git command this crate runs therefore gets:
//! * no system or global configuration, no inherited `GIT_*` variable (`GIT_DIR`,
//!   `GIT_WORK_TREE`, `GIT_EXTERNAL_DIFF`, `GIT_CONFIG_PARAMETERS`, …), `GIT_PAGER` and
//!   `PAGER` set to `cat`, no terminal prompt, no optional locks (no index write, so no
//!   `post-index-change` hook), no lazy fetch and no transport protocol (no ssh command,
//!   no credential helper), literal pathspecs and `--no-pager`;
//! * the repository named explicitly (`GIT_DIR`, `GIT_WORK_TREE`, and
//!   `GIT_CEILING_DIRECTORIES` above the work tree, so that nothing is discovered and
//!   `core.worktree` is ignored), and only one that keeps to the workspace — see
//!   [`Repository::of_workspace`];
//! * overrides in the command scope (`GIT_CONFIG_COUNT`, which wins over every
//!   configuration file and keeps `=` and spaces in names intact) for every key below, and
//!   for each filter driver the configuration defines — listed first with
//!   `git config --get-regexp`, which runs nothing — an empty `clean`, `smudge` and
//!   `process` (git then applies no filter) and `required = false` (else git refuses
//!   the file).
//!
//! Diffs are asked for with `--no-ext-diff --no-textconv`, and submodules are not entered
//! (`--ignore-submodules=all`): a submodule's own configuration is not read.
//!
//! # Which repository
//!
//! Git would take the nearest repository at or above the workspace, even far above it (a
//! home folder kept in git), or the one a `.git` file names anywhere. The git of this
//! crate uses a repository only when nothing it shows comes from outside the workspace:
//!
//! * the workspace is the root of the work tree, its `.git` a folder (or a file or link
//!   leading to a git directory inside the workspace): git runs on it as it is;
//! * the workspace is a folder of a larger repository whose `.git` is in an ancestor:
//!   git runs with every output limited to the workspace (the callers give `-- .` or the
//!   path asked for, and `--relative`; `git status` shows paths relative to the
//!   workspace), and nothing prints objects by revision;
//! * anything else — a `.git` file or link leading outside the workspace, a git directory,
//!   common directory, object store (alternates included) or link in them outside the
//!   work tree root, the workspace inside a git directory, a repository belonging to
//!   another user — counts as "the workspace is not a git repository (its repository is
//!   outside it)", and git is not run at all.
//!
//! So a linked work tree (`git worktree add`: its `.git` file names
//! `<main>/.git/worktrees/NAME`) and a submodule (its `.git` file names
//! `<superproject>/.git/modules/NAME`) opened as the workspace are refused: their git
//! directory, and the history in it, is outside. Open the main work tree or the
//! superproject instead. Submodules inside the workspace are never entered.

mod harden;

pub(crate) use harden::Hardening;
use shell_risk::git_config::{confined, discover, Kind};

use crate::error::Error;
use crate::program::{run, Limits, Overflow};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use tokio::process::Command;

/// Configuration every git command gets, whatever the repository says.
const OVERRIDES: &[(&str, &str)] = &[
    ("core.fsmonitor", "false"),
    ("core.useBuiltinFSMonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.attributesFile", "/dev/null"),
    ("core.excludesFile", "/dev/null"),
    ("diff.orderFile", "/dev/null"),
    ("diff.ignoreSubmodules", "all"),
    ("diff.noprefix", "false"),
    ("diff.mnemonicPrefix", "false"),
    ("diff.relative", "false"),
    ("color.ui", "never"),
    ("log.showSignature", "false"),
    ("log.mailmap", "false"),
    ("status.submoduleSummary", "false"),
    ("status.relativePaths", "true"),
    ("submodule.recurse", "false"),
    ("credential.helper", ""),
    ("protocol.allow", "never"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("safe.bareRepository", "explicit"),
];

/// Most of the filter-driver listing read; a longer one is refused.
const FILTER_LIST_CAP: usize = 256 * 1024;

/// The repository the git of this crate uses for a workspace (see the module
/// documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Repository {
    /// The git directory (canonical).
    git_dir: PathBuf,
    /// The root of the work tree (canonical): the workspace or a folder above it.
    work_tree: PathBuf,
    /// The workspace (canonical), where git runs.
    dir: PathBuf,
}

/// The message when the workspace has no repository of its own.
pub(crate) const NOT_A_REPOSITORY: &str = "the workspace is not a git repository";

impl Repository {
    /// The repository for the workspace `dir`, or why git is not run for it: the words
    /// [`NOT_A_REPOSITORY`], followed by the reason when there is a repository git would
    /// use but it is outside the workspace. Reads the disk (blocking).
    pub(crate) fn of_workspace(dir: &Path) -> Result<Repository, String> {
        let outside = || format!("{NOT_A_REPOSITORY} (its repository is outside it)");
        let dir = std::fs::canonicalize(dir).map_err(|_| NOT_A_REPOSITORY.to_string())?;
        let Some(found) = discover(&dir) else {
            return Err(NOT_A_REPOSITORY.to_string());
        };
        if found.kind == Kind::Bare {
            return Err(format!("{NOT_A_REPOSITORY} (it is inside a git directory)"));
        }
        // Everything git reads must stay inside the work tree root: the workspace itself,
        // or the larger repository's root (whose output is then limited to the workspace).
        let dirs = confined(&found, &found.top).map_err(|_| outside())?;
        let owned = [&found.top, &found.entry(), &dirs.git_dir]
            .into_iter()
            .all(|p| owned_by_us(p));
        if !owned {
            return Err(format!(
                "{NOT_A_REPOSITORY} (its repository belongs to another user)"
            ));
        }
        Ok(Repository {
            git_dir: dirs.git_dir,
            work_tree: found.top,
            dir,
        })
    }

    /// Whether the workspace is a folder below the root of the work tree: then every git
    /// output must be limited to it.
    pub(crate) fn is_subfolder(&self) -> bool {
        self.work_tree != self.dir
    }

    /// The workspace, where git runs.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }
}

/// Whether `path` belongs to the user we run as (git refuses a repository that does
/// not: `safe.directory` cannot be set with no global configuration).
fn owned_by_us(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false;
    };
    let us = nix::unistd::geteuid().as_raw();
    if meta.uid() == us {
        return true;
    }
    // As git does: root running through sudo may use the invoking user's repository.
    us == 0
        && std::env::var("SUDO_UID")
            .ok()
            .and_then(|id| id.parse::<u32>().ok())
            .is_some_and(|id| id == meta.uid())
}

/// A git command on `repo` with `args`, hardened as the module says.
///
/// # Errors
/// The filter drivers of the repository cannot be listed.
pub(crate) async fn hardened(
    repo: &Repository,
    args: &[&str],
    sandbox: &sandbox::Sandbox,
) -> Result<Command, Error> {
    let drivers = filter_drivers(repo, sandbox).await?;
    let mut overrides: Vec<(String, String)> = OVERRIDES
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect();
    for driver in &drivers {
        for key in ["clean", "smudge", "process"] {
            overrides.push((format!("filter.{driver}.{key}"), String::new()));
        }
        overrides.push((format!("filter.{driver}.required"), "false".into()));
    }
    Ok(command(repo, &overrides, args))
}

/// The names of the filter drivers the repository's configuration defines.
async fn filter_drivers(
    repo: &Repository,
    sandbox: &sandbox::Sandbox,
) -> Result<BTreeSet<String>, Error> {
    let overrides: Vec<(String, String)> = OVERRIDES
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect();
    let listing = command(
        repo,
        &overrides,
        &[
            "config",
            "-z",
            "--name-only",
            "--get-regexp",
            r"^filter\..+\.(clean|smudge|process)$",
        ],
    );
    let limits = Limits {
        stdout: FILTER_LIST_CAP,
        overflow: Overflow::Stop,
    };
    let out = run(listing, "git", limits, sandbox).await?;
    if out.stdout_cut {
        return Err(Error::Command {
            program: "git".into(),
            message: "the repository's configuration defines too many filter drivers".into(),
        });
    }
    match out.status.code() {
        // 1: none defined.
        Some(0 | 1) => {}
        _ => {
            return Err(Error::Command {
                program: "git".into(),
                message: format!(
                    "the repository's configuration cannot be read: {}",
                    out.stderr_text()
                ),
            })
        }
    }
    Ok(driver_names(&out.stdout))
}

/// The driver names in `git config -z --name-only` output (`filter.NAME.KEY\0…`; NAME
/// may hold dots, spaces, `=` or newlines).
fn driver_names(listing: &[u8]) -> BTreeSet<String> {
    listing
        .split(|b| *b == 0)
        .filter_map(|key| {
            let key = std::str::from_utf8(key).ok()?;
            let rest = key.strip_prefix("filter.")?;
            let (name, _) = rest.rsplit_once('.')?;
            Some(name.to_string())
        })
        .collect()
}

/// `git --no-pager ARGS` on `repo`, in the workspace, with a clean environment naming
/// the repository and `overrides` in the command scope.
fn command(repo: &Repository, overrides: &[(String, String)], args: &[&str]) -> Command {
    let mut command = Command::new("git");
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("GIT_") {
            command.env_remove(&key);
        }
    }
    command
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_PAGER", "cat")
        .env("PAGER", "cat")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_LITERAL_PATHSPECS", "1")
        // A partial clone would fetch missing objects (running ssh or a credential
        // helper); with no protocol allowed it could not anyway.
        .env("GIT_NO_LAZY_FETCH", "1")
        // The repository is named: git discovers none (and could not wander above the
        // work tree if it did).
        .env("GIT_DIR", &repo.git_dir)
        .env("GIT_WORK_TREE", &repo.work_tree)
        .env("GIT_CONFIG_COUNT", overrides.len().to_string());
    if let Some(above) = repo.work_tree.parent() {
        // The list is `:`-separated: a folder with one in its name cannot be listed.
        if !above.as_os_str().as_encoded_bytes().contains(&b':') {
            command.env("GIT_CEILING_DIRECTORIES", above);
        }
    }
    for (i, (key, value)) in overrides.iter().enumerate() {
        command
            .env(format!("GIT_CONFIG_KEY_{i}"), key)
            .env(format!("GIT_CONFIG_VALUE_{i}"), value);
    }
    command
        .arg("--no-pager")
        .arg("--no-optional-locks")
        .args(args)
        .current_dir(&repo.dir);
    command
}

#[cfg(test)]
mod tests {
    use super::driver_names;

    #[test]
    fn driver_names_keep_dots_spaces_and_equals() {
        let listing =
            b"filter.lfs.clean\0filter.lfs.smudge\0filter.a.b c=d.process\0filter.x\ny.clean\0";
        let names: Vec<String> = driver_names(listing).into_iter().collect();
        assert_eq!(names, ["a.b c=d", "lfs", "x\ny"]);
    }
}
