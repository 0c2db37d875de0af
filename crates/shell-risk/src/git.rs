//! `git`: the read-only subcommands a safe command may run, and the risk of the others.
//!
//! Safe: `status`, `diff`, `log`, `show`, `blame`, `rev-parse`, `ls-files`, `grep`,
//! `describe`, `shortlog`, `branch`/`tag` only when listing, `remote` only when listing or
//! printing a URL, `stash list`/`stash show`; the global options `--no-pager` (`-P`),
//! `--no-optional-locks`, `--literal-pathspecs`, `--no-replace-objects`, and `-C`,
//! `--git-dir`, `--work-tree` inside the workspace. Never `-c`, `--exec-path`, `--output`,
//! `--ext-diff`, `--textconv`, `--show-signature` or `-O`/`--open-files-in-pager`, and no
//! pretty format that shows signatures (`%G…` placeholders and `%(signature)` atoms run
//! gpg) or names a format git's configuration could define.
//! Operands (revisions and paths alike) are checked as paths, conservatively.
//!
//! A repository's own configuration can make git run programs or read files it names (an
//! fsmonitor hook, a textconv or filter driver, an external diff, a gpg program with
//! `log.showSignature`, a `blame.ignoreRevsFile`…): when the workspace is known, git is
//! safe only in a repository whose configuration sets none of those (see
//! `git_config::configuration_concern`), and every command runs with them overridden
//! anyway (`git_config::Hardening`). The judge's job is the command line — and, when the
//! workspace is known, which repository git would read and what its configuration says.
//!
//! Git reads the repository it finds from the folder it runs in upward, wherever that is:
//! a home folder kept in git above the workspace, or the git directory a `.git` file
//! names. Its history may hold files now deleted, ignored or never in the workspace
//! (`git show REV:path`, `git log -p`, `git grep PATTERN REV`, a staged diff print them).
//! So when the workspace is known, any git command is safe only when the repository git
//! would use — found from the call's folder and `-C` folders as git finds it, or named by
//! `--git-dir` — is the workspace's own: its `.git` a real folder (not a file or link) in
//! the workspace (at its root, or in a folder of it for a repository nested there), and
//! its git directory, common directory, object stores (alternates included) and every link
//! in them inside the workspace, its configuration naming no other work tree, including
//! no other file and naming no program or file a read-only command would use. Otherwise — the workspace a folder of a larger repository, a `.git` file
//! or link, no repository in the workspace at all (git would look above it), a bare
//! repository — every git command is at least medium, with the reason. Without the
//! workspace the judgement stays lexical.

use super::git_options::{GLOBAL_FLAGS, SUBCOMMANDS};
use super::paths::Place;
use super::spec::{scan, Operands};
use super::Finding;
use crate::git_config::{configuration_concern, confined_git_dir, discover, Kind};
use core_models::RiskLevel;
use std::path::Path;

/// Why `git ARGS` is not safe; empty when it is.
pub(super) fn check(args: &[String], place: &Place) -> Vec<String> {
    let mut dirs: Vec<&str> = Vec::new();
    let mut git_dir: Option<&str> = None;
    let mut folders_inside = true;
    let mut reasons = Vec::new();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let a = a.as_str();
        if !a.starts_with('-') {
            break;
        }
        i += 1;
        if GLOBAL_FLAGS.contains(&a) {
            continue;
        }
        let (option, value) = match a.split_once('=') {
            Some((o, v)) if o.starts_with("--") => (o, Some(v)),
            _ => (a, None),
        };
        match option {
            "-C" | "--git-dir" | "--work-tree" => {
                let value = match value {
                    Some(v) => Some(v),
                    None => {
                        i += 1;
                        args.get(i - 1).map(String::as_str)
                    }
                };
                let Some(dir) = value else {
                    return vec![format!("'git {option}' needs a value")];
                };
                if let Err(why) = place.check_below(&dirs, dir) {
                    reasons.push(format!("'git {option} {dir}': the folder {why}"));
                    folders_inside = false;
                }
                match option {
                    "-C" => dirs.push(dir),
                    "--git-dir" => git_dir = Some(dir),
                    _ => {}
                }
            }
            "-c" | "--config-env" => {
                return vec![format!(
                    "'git {option}' sets configuration, which can run programs"
                )]
            }
            "--exec-path" => {
                return vec!["'git --exec-path' runs git programs from elsewhere".to_string()]
            }
            "-p" | "--paginate" => return vec!["'git --paginate' runs a pager program".to_string()],
            _ => return vec![format!("git option '{option}' is not on the judge's list")],
        }
    }
    let Some(sub) = args.get(i) else {
        return vec!["'git' without a subcommand".to_string()];
    };
    let rest = &args[i + 1..];
    reasons.extend(subcommand(sub, rest, place, &dirs));
    if folders_inside {
        reasons.extend(repository(place, &dirs, git_dir));
    }
    reasons
}

/// Git would look above the workspace.
const NO_REPOSITORY: &str =
    "git would read a repository outside the workspace: there is none in it, so git looks above it";
/// The repository's work tree holds the workspace.
const LARGER: &str = "git would read a repository outside the workspace: the workspace is a folder of a larger repository";
/// A `.git` file or link.
const LINKED: &str = "git would read a repository outside the workspace: a .git there is a file or a link, naming a git directory the judge does not follow";
/// The folder is a git directory.
const BARE: &str =
    "git would read a git directory as a bare repository, which the judge does not check";

/// Why the repository git would use from the call's folder with `dirs` below it (or the
/// one `--git-dir` names) is not plainly the workspace's own (see the module
/// documentation); `None` when it is, or when the workspace is not known.
fn repository(place: &Place, dirs: &[&str], git_dir: Option<&str>) -> Option<String> {
    let root = place.root()?;
    let Ok(start) = std::fs::canonicalize(place.folder(dirs)?) else {
        return Some("the folder git would run in cannot be found".to_string());
    };
    let entry = match git_dir {
        Some(named) => start.join(named),
        None => {
            let found = match discover(&start) {
                None => return Some(NO_REPOSITORY.to_string()),
                Some(found) => found,
            };
            if !found.top.starts_with(root) {
                return Some(LARGER.to_string());
            }
            match found.kind {
                Kind::Folder => found.entry(),
                Kind::FileOrLink => return Some(LINKED.to_string()),
                Kind::Bare => return Some(BARE.to_string()),
            }
        }
    };
    if let Some(verdict) = place.verdicts.borrow().get(&entry) {
        return verdict.clone();
    }
    let verdict = own_git_dir(&entry, root);
    place.verdicts.borrow_mut().insert(entry, verdict.clone());
    verdict
}

/// Why the git directory `entry` is not the workspace's own: not a real folder, or it or
/// what git reads of it is outside `root`, or its configuration names a work tree or
/// includes other files.
fn own_git_dir(entry: &Path, root: &Path) -> Option<String> {
    match std::fs::symlink_metadata(entry) {
        Ok(m) if m.is_dir() => {}
        _ => return Some(LINKED.to_string()),
    }
    match confined_git_dir(entry, root) {
        Err(why) => Some(format!(
            "git would read a repository outside the workspace: {why}"
        )),
        Ok(dirs) => configuration_concern(&dirs, entry.parent().unwrap_or(root)),
    }
}

fn subcommand(sub: &str, rest: &[String], place: &Place, dirs: &[&str]) -> Vec<String> {
    let (spec_name, rest) = match sub {
        "remote" => return remote(rest),
        "stash" => match rest.first().map(String::as_str) {
            Some("list") => ("git log", &rest[1..]),
            Some("show") => ("git diff", &rest[1..]),
            _ => return vec![not_read_only("stash", rest)],
        },
        other => (other, rest),
    };
    let full = if spec_name.starts_with("git ") {
        spec_name.to_string()
    } else {
        format!("git {spec_name}")
    };
    let Some(spec) = SUBCOMMANDS.iter().find(|s| s.name == full) else {
        return vec![not_read_only(sub, rest)];
    };
    let scanned = match scan(spec, rest) {
        Ok(s) => s,
        Err(why) => return vec![why],
    };
    let mut reasons = Vec::new();
    for (option, value) in &scanned.seen {
        if let Some(why) = enters_submodules(option, value.as_deref()) {
            reasons.push(format!("'git {sub} {option}' {why}"));
        }
        let Some(value) = value else { continue };
        let refs = matches!(spec_name, "branch" | "tag");
        let shows_signatures = match option.as_str() {
            "--format" if refs => value.contains("%(signature"),
            "--format" | "--pretty" => runs_gpg(value),
            _ => false,
        };
        if shows_signatures {
            reasons.push(format!(
                "'git {sub} {option}={value}' may show signatures, which runs gpg"
            ));
        }
    }
    let mut paths: Vec<&str> = scanned.paths.clone();
    match spec.operands {
        Operands::PatternThenPaths { given_by, .. } => {
            let given = scanned
                .seen
                .iter()
                .any(|(o, _)| given_by.contains(&o.as_str()));
            paths.extend(scanned.operands.iter().skip(usize::from(!given)));
        }
        Operands::Text => {
            // branch and tag: operands only in list mode (else they create or delete).
            let listing = scanned.seen.iter().any(|(o, _)| {
                matches!(
                    o.as_str(),
                    "-l" | "--list"
                        | "--merged"
                        | "--no-merged"
                        | "--contains"
                        | "--no-contains"
                        | "--points-at"
                        | "-n"
                )
            });
            if !scanned.operands.is_empty() && !listing {
                reasons.push(format!("'git {sub}' with a name creates a {sub}"));
            }
        }
        _ => paths.extend(&scanned.operands),
    }
    for p in paths.into_iter().filter(|p| *p != "-") {
        if let Err(why) = place.check_below(dirs, p) {
            reasons.push(format!("path '{p}' {why}"));
        }
    }
    reasons
}

/// Why an option makes git enter submodules (whose own configuration the judge does not
/// read: a safe command runs with submodules ignored, which these options undo).
fn enters_submodules(option: &str, value: Option<&str>) -> Option<&'static str> {
    match (option, value) {
        ("--recurse-submodules", _) => Some("runs git in each submodule"),
        ("--ignore-submodules", Some("all")) => None,
        ("--ignore-submodules", _) => Some("looks into submodules, which runs git in them"),
        ("--submodule", Some("diff")) => Some("runs git diff in each submodule"),
        _ => None,
    }
}

/// `git remote`, `git remote -v`, `git remote get-url [--push] [--all] NAME`.
fn remote(rest: &[String]) -> Vec<String> {
    let words: Vec<&str> = rest.iter().map(String::as_str).collect();
    let ok = match words.as_slice() {
        [] | ["-v"] | ["--verbose"] => true,
        ["get-url", more @ ..] => {
            let (options, names): (Vec<&str>, Vec<&str>) =
                more.iter().partition(|w| w.starts_with('-'));
            options.iter().all(|o| matches!(*o, "--push" | "--all")) && names.len() == 1
        }
        _ => false,
    };
    if ok {
        Vec::new()
    } else {
        vec![not_read_only("remote", rest)]
    }
}

fn not_read_only(sub: &str, rest: &[String]) -> String {
    match level(sub, &rest.iter().map(String::as_str).collect::<Vec<_>>()) {
        Some(f) => f.reason,
        None => format!("'git {sub}' is not a read-only git command"),
    }
}

/// How risky a git command that is not plainly safe is.
pub(super) fn severity(args: &[&str]) -> Option<Finding> {
    let mut i = 0;
    let mut finding: Option<Finding> = None;
    while let Some(a) = args.get(i) {
        if !a.starts_with('-') {
            break;
        }
        i += 1;
        let option = a.split('=').next().unwrap_or(a);
        match option {
            "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace" | "--config-env" => {
                if *a == "-c" {
                    if let Some(kv) = args.get(i) {
                        if runs_program(kv) {
                            finding = Some(Finding::new(
                                RiskLevel::High,
                                format!("'git -c {kv}' sets a program for git to run"),
                            ));
                        }
                    }
                }
                if !a.contains('=') {
                    i += 1;
                }
            }
            _ => {}
        }
    }
    let sub = args.get(i)?;
    let own = level(sub, args.get(i + 1..).unwrap_or_default());
    match (finding, own) {
        (Some(f), _) => Some(f),
        (None, own) => own,
    }
}

/// The risk of a subcommand that is not read-only; `None` for the read-only ones.
fn level(sub: &str, rest: &[&str]) -> Option<Finding> {
    let high = |why: &str| Some(Finding::new(RiskLevel::High, format!("'git {sub}' {why}")));
    let medium = |why: &str| {
        Some(Finding::new(
            RiskLevel::Medium,
            format!("'git {sub}' {why}"),
        ))
    };
    match sub {
        "status" | "diff" | "log" | "show" | "blame" | "rev-parse" | "ls-files" | "grep"
        | "describe" | "shortlog" => None,
        "push" => high("publishes to a remote"),
        "reset" | "clean" | "filter-branch" | "filter-repo" | "gc" | "prune" | "update-ref"
        | "reflog" => high("can discard work or history"),
        "rebase" => high("rewrites history"),
        "stash" => match rest.first() {
            Some(&"list" | &"show") => None,
            Some(&"drop" | &"clear") => high("discards stashed work"),
            _ => medium("changes the repository"),
        },
        // Listing is read-only; `check` says when they are not listing.
        "branch" | "tag" | "remote" => None,
        "add" | "commit" | "switch" | "checkout" | "merge" | "restore" | "rm" | "mv"
        | "cherry-pick" | "revert" | "apply" | "am" | "pull" | "fetch" | "clone" | "init"
        | "config" | "submodule" | "worktree" | "notes" | "bisect" | "sparse-checkout" => {
            medium("changes the repository or the files")
        }
        _ => medium("is not a read-only git command"),
    }
}

/// git's own pretty formats.
const PRETTY_NAMES: &[&str] = &[
    "oneline",
    "short",
    "medium",
    "full",
    "fuller",
    "reference",
    "email",
    "mboxrd",
    "raw",
];

/// Whether a `--format`/`--pretty` value may make git run gpg: a `%G…` placeholder (`%GG`,
/// `%G?`, `%GS`…: signature checks), or a name that is not one of git's own formats (it
/// may be a `pretty.NAME` the configuration defines).
pub(super) fn runs_gpg(format: &str) -> bool {
    let body = ["format:", "tformat:"]
        .iter()
        .find_map(|p| format.strip_prefix(p));
    let body = match body {
        Some(body) => body,
        None if format.contains('%') => format,
        None => return !PRETTY_NAMES.contains(&format),
    };
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c == '%' {
            match chars.next() {
                Some('G') => return true,
                _ => continue,
            }
        }
    }
    false
}

/// A `-c key=value` whose key names a program git runs.
pub(super) fn runs_program(kv: &str) -> bool {
    let key = kv.split('=').next().unwrap_or(kv).to_ascii_lowercase();
    key.starts_with("alias.")
        || [
            "pager",
            "sshcommand",
            "editor",
            "fsmonitor",
            "hookspath",
            "textconv",
            "external",
            "helper",
            "command",
            "program",
            "askpass",
            "uploadpack",
            "receivepack",
            "proxy",
            "process",
            "clean",
            "smudge",
            "tool",
            "cmd",
        ]
        .iter()
        .any(|end| key.ends_with(end))
}

#[cfg(test)]
mod tests {
    use super::super::judge;
    use super::runs_gpg;
    use core_models::RiskLevel;
    use std::path::Path;

    /// A minimal git directory at `dir`.
    fn git_dir(dir: &Path) {
        for sub in ["objects/info", "refs/heads"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::write(dir.join("HEAD"), "ref: refs/heads/main\n")
            .unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn git_is_safe_only_on_a_repository_of_the_workspace() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(ws.join("sub/src")).unwrap_or_else(|e| panic!("{e}"));
        let risk = |command: &str, cwd: Option<&str>| judge(command, cwd, Some(&ws)).risk;
        // No repository anywhere: git would look above the workspace.
        assert_eq!(risk("git log -p", None), RiskLevel::Medium);
        // One nested in the workspace, its `.git` a real folder: all inside.
        git_dir(&ws.join("sub/.git"));
        assert_eq!(risk("git -C sub log -p", None), RiskLevel::Safe);
        assert_eq!(risk("git log -p", Some("sub/src")), RiskLevel::Safe);
        assert_eq!(risk("git log -p", None), RiskLevel::Medium);
        // Above the workspace: the workspace is a folder of it.
        git_dir(&tmp.path().join(".git"));
        let j = judge("git status", None, Some(&ws));
        assert_eq!(j.risk, RiskLevel::Medium);
        assert!(
            j.reasons.iter().any(|r| r.contains("larger repository")),
            "{:?}",
            j.reasons
        );
        // The workspace's own.
        git_dir(&ws.join(".git"));
        assert_eq!(risk("git show HEAD:x", None), RiskLevel::Safe);
        // Inside its git directory git would take that for a bare repository.
        assert_eq!(risk("git log", Some(".git/refs")), RiskLevel::Medium);
        // Judged once per line, whatever the number of git commands in it.
        let many = "git status; ".repeat(2000);
        assert_eq!(judge(&many, None, Some(&ws)).risk, RiskLevel::Safe);
    }

    #[test]
    fn formats_that_show_signatures_run_gpg() {
        for f in [
            "%GG",
            "%h %G?",
            "format:%GS",
            "tformat:%GK",
            "%%%GG",
            "myalias",
        ] {
            assert!(runs_gpg(f), "{f}");
        }
        for f in ["%h %s", "%%G", "oneline", "fuller", "format:%an", "%x47"] {
            assert!(!runs_gpg(f), "{f}");
        }
    }
}
