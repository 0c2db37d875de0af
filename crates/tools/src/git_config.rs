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
//! * the work tree set to the folder holding the `.git` found above the workspace, so
//!   `core.worktree` is ignored;
//! * overrides in the command scope (`GIT_CONFIG_COUNT`, which wins over every
//!   configuration file and keeps `=` and spaces in names intact) for every key below, and
//!   for each filter driver the configuration defines — listed first with
//!   `git config --get-regexp`, which runs nothing — an empty `clean`, `smudge` and
//!   `process` (git then applies no filter) and `required = false` (else git refuses
//!   the file).
//!
//! Diffs are asked for with `--no-ext-diff --no-textconv`, and submodules are not entered
//! (`--ignore-submodules=all`): a submodule's own configuration is not read.

use crate::error::Error;
use crate::git::{run, Limits, Overflow};
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
    ("submodule.recurse", "false"),
    ("credential.helper", ""),
    ("protocol.allow", "never"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("safe.bareRepository", "explicit"),
];

/// Most of the filter-driver listing read; a longer one is refused.
const FILTER_LIST_CAP: usize = 256 * 1024;

/// A git command for `dir` with `args`, hardened as the module says.
///
/// # Errors
/// The filter drivers of the repository cannot be listed.
pub(crate) async fn hardened(
    dir: &Path,
    args: &[&str],
    sandbox: &sandbox::Sandbox,
) -> Result<Command, Error> {
    let drivers = filter_drivers(dir, sandbox).await?;
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
    Ok(command(dir, &overrides, args))
}

/// The names of the filter drivers the repository's configuration defines.
async fn filter_drivers(dir: &Path, sandbox: &sandbox::Sandbox) -> Result<BTreeSet<String>, Error> {
    let overrides: Vec<(String, String)> = OVERRIDES
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect();
    let listing = command(
        dir,
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
        // 1: none defined (also outside a repository).
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

/// `git --no-pager ARGS` in `dir` with a clean environment and `overrides` in the
/// command scope.
fn command(dir: &Path, overrides: &[(String, String)], args: &[&str]) -> Command {
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
        .env("GIT_CONFIG_COUNT", overrides.len().to_string());
    for (i, (key, value)) in overrides.iter().enumerate() {
        command
            .env(format!("GIT_CONFIG_KEY_{i}"), key)
            .env(format!("GIT_CONFIG_VALUE_{i}"), value);
    }
    if let Some(top) = work_tree(dir) {
        command.env("GIT_WORK_TREE", top);
    }
    command
        .arg("--no-pager")
        .arg("--no-optional-locks")
        .args(args)
        .current_dir(dir);
    command
}

/// The work tree git would find for `dir` were `core.worktree` not set: the nearest
/// folder at or above it holding a `.git` folder (with a `HEAD`) or a `.git` file.
fn work_tree(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|folder| {
            let dot_git = folder.join(".git");
            match dot_git.symlink_metadata() {
                Ok(m) if m.is_dir() => dot_git.join("HEAD").symlink_metadata().is_ok(),
                Ok(m) => m.is_file(),
                Err(_) => false,
            }
        })
        .map(Path::to_path_buf)
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
