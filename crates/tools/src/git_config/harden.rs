//! Git under `run_command`: every command the agent starts, safe-rated or approved, runs
//! with the repository's choices of programs and files taken away, so that whatever git
//! it runs (directly, in a pipeline, from a script) cannot be made by the repository's
//! own configuration to run a program or read a file it names.
//!
//! Before a command starts, the configuration git would read is listed for each
//! repository it may use (`git config --show-scope --list`, which runs nothing), and the
//! files of every repository inside the workspace are read too — nested ones that are
//! not submodules (`git -C inner`, `cd inner`, a script), and every file their
//! configurations include whatever the include's condition (an `onbranch:` or
//! `hasconfig:` condition the command itself may make true). The command gets, in the
//! command scope (`GIT_CONFIG_COUNT`, which wins over every configuration file, applies
//! in every repository the command's git opens, and which git passes on to the git it
//! starts itself, in submodules too):
//!
//! * for every variable any of those repositories sets (its `config`, `config.worktree`
//!   and what they include) that names a program or a file ([`super::keys`]): the user's own value
//!   from their system or global configuration when they set one (a global `git lfs`
//!   filter keeps working), else a neutral value (no filter, `cat` for a textconv, a
//!   program that says it was not run for an external diff or a merge driver, …);
//! * whatever the repository says: no fsmonitor and no hooks (`core.hooksPath`) unless
//!   the user's own configuration sets them, and no `ext::` transport;
//! * for a command judged safe (it runs read-only): submodules not entered
//!   (`diff.ignoreSubmodules=all`, and `submodule.NAME.ignore=all` for each submodule
//!   `.gitmodules` names, which would otherwise win), no lazy fetch and no optional
//!   locks;
//! * `GIT_PAGER=cat` and no terminal prompt.
//!
//! What cannot be taken away this way: `blame.ignoreRevsFile` (a sorted list an empty
//! value cannot clear) and `extensions.partialClone`; the judge never rates a git
//! command safe in a repository that sets them (nor any other variable a read-only
//! command acts on), so they only take effect in a command a person approved. Nor what
//! is out of sight before the command starts: a repository the command itself creates,
//! clones or configures (what it sets there, the person approved), one outside the
//! workspace that the judge did not name, one past the walk's bounds (see
//! `shell_risk::git_config::reach`: the log says when a workspace was too large), an
//! include naming a file that does not exist yet, and a program-valued variable missing
//! from the table.

use crate::program::{run, Limits, Overflow};
use sandbox::Sandbox;
use shell_risk::git_config::keys;
use shell_risk::git_config::{gitmodules, Variable};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use tokio::process::Command;

/// Most of a configuration listing read (past it, only the fixed overrides apply).
const LISTING_CAP: usize = 4 * 1024 * 1024;
/// Most submodule names given an override.
const SUBMODULES_CAP: usize = 1000;

/// The configuration and environment git gets in one command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Hardening {
    /// Command-scope configuration, in order (a later entry wins).
    overrides: Vec<(String, String)>,
    /// Whether the command runs read-only (judged safe).
    read_only: bool,
}

/// Where a variable was set, as `git config --show-scope` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// The user's (system, global, or the command scope of our own environment).
    User,
    /// The repository's (`local`, `worktree`, and what they include).
    Repository,
}

/// One variable of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Listed {
    scope: Scope,
    variable: Variable,
    key: String,
}

impl Hardening {
    /// The hardening for a command that may use the repositories whose git directories
    /// are `git_dirs` (and the one git finds from `dir`, where the command starts),
    /// reading their configuration in `sandbox`. `read_only`: the command was judged
    /// safe, its inherited `GIT_*` variables are removed. Never fails: what cannot be
    /// listed gets the fixed overrides only (the failure is logged).
    pub(crate) async fn prepare(
        dir: &Path,
        workspace: &Path,
        git_dirs: &[PathBuf],
        read_only: bool,
        sandbox: &Sandbox,
    ) -> Hardening {
        let mut listed = everywhere(dir, workspace, git_dirs).await;
        let mut tops: BTreeSet<PathBuf> = BTreeSet::new();
        let mut places: Vec<Option<&Path>> = git_dirs.iter().map(|d| Some(d.as_path())).collect();
        if !read_only {
            // The repository git finds from where the command starts.
            places.push(None);
            if let Some(found) = shell_risk::git_config::discover(dir) {
                tops.insert(found.top);
            }
        }
        for git_dir in places {
            if let Some(top) = git_dir.and_then(Path::parent) {
                tops.insert(top.to_path_buf());
            }
            match listing(dir, git_dir, read_only, sandbox).await {
                Ok(found) => listed.extend(found),
                Err(why) => tracing::debug!(%why, "git configuration not listed"),
            }
        }
        let submodules = if read_only {
            submodule_names(&tops, &listed)
        } else {
            BTreeSet::new()
        };
        Hardening {
            overrides: overrides(&listed, &submodules, read_only),
            read_only,
        }
    }

    /// Give `command` this hardening: its variables appended after any command-scope
    /// configuration it inherits.
    pub(crate) fn apply(&self, command: &mut Command) {
        let base = if self.read_only {
            0
        } else {
            std::env::var("GIT_CONFIG_COUNT")
                .ok()
                .and_then(|n| n.trim().parse::<usize>().ok())
                .unwrap_or(0)
        };
        for (i, (key, value)) in self.overrides.iter().enumerate() {
            command
                .env(format!("GIT_CONFIG_KEY_{}", base + i), key)
                .env(format!("GIT_CONFIG_VALUE_{}", base + i), value);
        }
        command
            .env(
                "GIT_CONFIG_COUNT",
                (base + self.overrides.len()).to_string(),
            )
            .env("GIT_PAGER", "cat")
            .env("GIT_TERMINAL_PROMPT", "0");
        if self.read_only {
            command
                .env("GIT_NO_LAZY_FETCH", "1")
                .env("GIT_OPTIONAL_LOCKS", "0");
        }
    }
}

/// What every repository the command could open sets, read from its files: each one
/// inside `workspace` (a command may open a nested one: `git -C inner`, `cd inner`), the
/// ones `git_dirs` names and the one found from `dir`, with every file their
/// configurations include under any condition (the command may switch one on before
/// its git reads it: a checkout, a remote added). See `shell_risk::git_config::reach`.
async fn everywhere(dir: &Path, workspace: &Path, git_dirs: &[PathBuf]) -> Vec<Listed> {
    let (dir, workspace, named) = (
        dir.to_path_buf(),
        workspace.to_path_buf(),
        git_dirs.to_vec(),
    );
    let read = tokio::task::spawn_blocking(move || {
        let reach = shell_risk::git_config::repositories_under(&workspace);
        if !reach.complete {
            tracing::warn!(
                workspace = %workspace.display(),
                "the workspace is too large to look for every repository in it: git commands get the overrides of those found"
            );
        }
        let mut places: BTreeSet<PathBuf> = reach.git_dirs.into_iter().collect();
        places.extend(named);
        if let Some(found) = shell_risk::git_config::discover(&dir) {
            if found.kind != shell_risk::git_config::Kind::FileOrLink {
                places.insert(found.entry());
            }
        }
        places
            .iter()
            .flat_map(|git_dir| shell_risk::git_config::every_variable(git_dir))
            .map(|variable| Listed {
                scope: Scope::Repository,
                key: variable.key(),
                variable,
            })
            .collect::<Vec<_>>()
    });
    read.await.unwrap_or_else(|e| {
        tracing::error!(%e, "looking for the workspace's repositories failed");
        Vec::new()
    })
}

/// The configuration git reads for the repository `git_dir` (or, with `None`, the one
/// it finds from `dir`), with each variable's scope.
async fn listing(
    dir: &Path,
    git_dir: Option<&Path>,
    read_only: bool,
    sandbox: &Sandbox,
) -> Result<Vec<Listed>, String> {
    let mut command = Command::new("git");
    if read_only {
        for (name, _) in std::env::vars_os() {
            if name.to_str().is_some_and(|n| n.starts_with("GIT_")) {
                command.env_remove(name);
            }
        }
    }
    if let Some(git_dir) = git_dir {
        command.env("GIT_DIR", git_dir);
    }
    command
        .args(["config", "--show-scope", "-z", "--list"])
        .current_dir(dir);
    let limits = Limits {
        stdout: LISTING_CAP,
        overflow: Overflow::Stop,
    };
    let out = run(command, "git", limits, sandbox)
        .await
        .map_err(|e| e.to_string())?;
    if out.stdout_cut {
        return Err("the configuration is too long".into());
    }
    if !out.status.success() {
        return Err(out.stderr_text());
    }
    Ok(parse_listing(&out.stdout))
}

/// `scope NUL key LF value NUL …` (no LF and no value for a variable without one).
fn parse_listing(out: &[u8]) -> Vec<Listed> {
    let mut fields = out.split(|b| *b == 0);
    let mut listed = Vec::new();
    while let (Some(scope), Some(entry)) = (fields.next(), fields.next()) {
        let scope = match scope {
            b"local" | b"worktree" => Scope::Repository,
            b"system" | b"global" | b"command" => Scope::User,
            _ => continue,
        };
        let entry = String::from_utf8_lossy(entry);
        let (key, value) = match entry.split_once('\n') {
            Some((key, value)) => (key, Some(value.to_string())),
            None => (entry.as_ref(), None),
        };
        if let Some(variable) = Variable::from_key(key, value) {
            listed.push(Listed {
                scope,
                variable,
                key: key.to_string(),
            });
        }
    }
    listed
}

/// The names of the submodules `.gitmodules` (in the work trees `tops`) and the
/// configuration name.
fn submodule_names(tops: &BTreeSet<PathBuf>, listed: &[Listed]) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = listed
        .iter()
        .filter(|l| l.variable.section == "submodule")
        .filter_map(|l| l.variable.subsection.clone())
        .collect();
    for top in tops {
        if let Some(found) = gitmodules(top) {
            names.extend(found);
        }
    }
    names.into_iter().take(SUBMODULES_CAP).collect()
}

/// The overrides for what `listed` holds (see the module documentation).
fn overrides(
    listed: &[Listed],
    submodules: &BTreeSet<String>,
    read_only: bool,
) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut done: BTreeSet<(String, Option<String>, String)> = BTreeSet::new();
    let users = |key: &str| -> Vec<String> {
        let Some(wanted) = Variable::from_key(key, None) else {
            return Vec::new();
        };
        listed
            .iter()
            .filter(|l| l.scope == Scope::User && l.variable.same_key(&wanted))
            .map(|l| l.variable.value.clone().unwrap_or_else(|| "true".into()))
            .collect()
    };
    let mut set = |key: &str, neutral: &str, out: &mut Vec<(String, String)>| {
        let Some(variable) = Variable::from_key(key, None) else {
            return;
        };
        if !done.insert((variable.section, variable.subsection, variable.name)) {
            return;
        }
        let mine = users(key);
        if key.eq_ignore_ascii_case("credential.helper") {
            // A list: the empty value clears it, then the user's helpers again.
            out.push((key.to_string(), String::new()));
            out.extend(mine.into_iter().map(|v| (key.to_string(), v)));
            return;
        }
        let value = mine.last().cloned().unwrap_or_else(|| neutral.to_string());
        out.push((key.to_string(), value));
    };
    for (key, neutral) in [
        ("core.fsmonitor", "false"),
        ("core.hooksPath", "/dev/null"),
        ("protocol.ext.allow", "never"),
    ] {
        set(key, neutral, &mut out);
    }
    for l in listed.iter().filter(|l| l.scope == Scope::Repository) {
        if let Some(Some(neutral)) = keys::neutral(&l.variable) {
            set(&l.key, neutral, &mut out);
            if l.variable.section == "filter" {
                if let Some(driver) = &l.variable.subsection {
                    set(&format!("filter.{driver}.required"), "false", &mut out);
                }
            }
        }
    }
    if read_only {
        out.push(("diff.ignoreSubmodules".into(), "all".into()));
        out.push(("submodule.recurse".into(), "false".into()));
        out.push(("status.submoduleSummary".into(), "false".into()));
        for name in submodules {
            out.push((format!("submodule.{name}.ignore"), "all".into()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(entries: &[(&str, &str)]) -> Vec<Listed> {
        let mut raw = Vec::new();
        for (scope, entry) in entries {
            raw.extend_from_slice(scope.as_bytes());
            raw.push(0);
            raw.extend_from_slice(entry.as_bytes());
            raw.push(0);
        }
        parse_listing(&raw)
    }

    fn value<'a>(out: &'a [(String, String)], key: &str) -> Vec<&'a str> {
        out.iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    #[test]
    fn the_repository_s_choices_are_taken_away_and_the_user_s_kept() {
        let listed = listing(&[
            ("global", "filter.lfs.clean\ngit-lfs clean -- %f"),
            ("global", "credential.helper\nstore"),
            ("local", "filter.lfs.clean\ncat /secret"),
            ("local", "filter.evil.smudge\ncat /secret"),
            ("local", "diff.Evil Driver.textconv\ncat /secret"),
            ("local", "core.fsmonitor\ncat /secret"),
            ("local", "credential.helper\n!cat /secret"),
            ("local", "user.name\nx"),
            ("local", "blame.ignorerevsfile\n/secret"),
            ("worktree", "diff.external\ncat /secret"),
            ("local", "alias.st\n!cat /secret"),
        ]);
        let out = overrides(&listed, &BTreeSet::new(), false);
        assert_eq!(value(&out, "filter.lfs.clean"), ["git-lfs clean -- %f"]);
        assert_eq!(value(&out, "filter.evil.smudge"), [""]);
        assert_eq!(value(&out, "filter.evil.required"), ["false"]);
        assert_eq!(value(&out, "diff.Evil Driver.textconv"), ["cat"]);
        assert_eq!(value(&out, "core.fsmonitor"), ["false"]);
        assert_eq!(value(&out, "core.hooksPath"), ["/dev/null"]);
        assert_eq!(value(&out, "credential.helper"), ["", "store"]);
        assert_eq!(value(&out, "diff.external"), [keys::REFUSED_PROGRAM]);
        assert!(value(&out, "alias.st")[0].starts_with('!'));
        assert!(value(&out, "user.name").is_empty());
        assert!(value(&out, "diff.ignoreSubmodules").is_empty());
    }

    #[test]
    fn read_only_commands_enter_no_submodule() {
        let listed = listing(&[("local", "submodule.lib.url\n../lib")]);
        let names: BTreeSet<String> = ["a b".to_string()].into();
        let names = submodule_names(&BTreeSet::new(), &listed)
            .into_iter()
            .chain(names)
            .collect();
        let out = overrides(&listed, &names, true);
        assert_eq!(value(&out, "diff.ignoreSubmodules"), ["all"]);
        assert_eq!(value(&out, "submodule.lib.ignore"), ["all"]);
        assert_eq!(value(&out, "submodule.a b.ignore"), ["all"]);
    }

    #[test]
    fn a_user_s_fsmonitor_and_hooks_are_theirs() {
        let listed = listing(&[
            ("global", "core.fsmonitor\ntrue"),
            ("global", "core.hookspath\n/home/me/hooks"),
        ]);
        let out = overrides(&listed, &BTreeSet::new(), false);
        assert_eq!(value(&out, "core.fsmonitor"), ["true"]);
        assert_eq!(value(&out, "core.hooksPath"), ["/home/me/hooks"]);
    }
}
