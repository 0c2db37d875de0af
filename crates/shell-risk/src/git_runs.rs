//! What a `git` command runs besides git: the programs set with `-c` (an alias `!CMD`,
//! `core.pager`…), `git bisect run CMD`, `git rebase --exec CMD`, `git submodule foreach
//! CMD`, and what the judge cannot see: configuration given on the command line (`-c`,
//! `--config-env`), `--exec-path`, a subcommand that is not a git command (an alias or a
//! `git-NAME` program), configuration written with `git config` that names a program or
//! includes a file, tools (`difftool`, `mergetool`, `filter-branch`…), and the options
//! that run configured programs (`--ext-diff`, `--textconv`, signatures).
//!
//! A repository's own configuration and hooks can also make git run programs; the sandbox
//! contains those, and deny patterns see only the command line.

use super::git::{runs_gpg, runs_program};
use super::wrappers::{command_from, Inner, Runs};

/// Global options that take a value (`-C DIR`, `--git-dir DIR`…).
const GLOBAL_VALUES: &[&str] = &[
    "-C",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--super-prefix",
    "--list-cmds",
    "--attr-source",
];

/// Global options without a value.
const GLOBAL_FLAGS: &[&str] = &[
    "-P",
    "-p",
    "--paginate",
    "--no-pager",
    "--bare",
    "--no-replace-objects",
    "--no-lazy-fetch",
    "--no-optional-locks",
    "--no-advice",
    "--literal-pathspecs",
    "--glob-pathspecs",
    "--noglob-pathspecs",
    "--icase-pathspecs",
    "-h",
    "--help",
    "-v",
    "--version",
    "--html-path",
    "--man-path",
    "--info-path",
];

/// git's own commands (anything else is an alias or a `git-NAME` program).
const COMMANDS: &[&str] = &[
    "add",
    "am",
    "annotate",
    "apply",
    "archive",
    "bisect",
    "blame",
    "branch",
    "bugreport",
    "bundle",
    "cat-file",
    "check-attr",
    "check-ignore",
    "check-mailmap",
    "check-ref-format",
    "checkout",
    "checkout-index",
    "cherry",
    "cherry-pick",
    "clean",
    "clone",
    "column",
    "commit",
    "commit-graph",
    "commit-tree",
    "config",
    "count-objects",
    "describe",
    "diagnose",
    "diff",
    "diff-files",
    "diff-index",
    "diff-tree",
    "fast-export",
    "fast-import",
    "fetch",
    "fetch-pack",
    "fmt-merge-msg",
    "for-each-ref",
    "format-patch",
    "fsck",
    "gc",
    "get-tar-commit-id",
    "grep",
    "hash-object",
    "help",
    "index-pack",
    "init",
    "interpret-trailers",
    "log",
    "ls-files",
    "ls-remote",
    "ls-tree",
    "mailinfo",
    "mailsplit",
    "maintenance",
    "merge",
    "merge-base",
    "merge-file",
    "merge-tree",
    "mktag",
    "mktree",
    "multi-pack-index",
    "mv",
    "notes",
    "pack-objects",
    "pack-redundant",
    "pack-refs",
    "patch-id",
    "prune",
    "prune-packed",
    "pull",
    "push",
    "range-diff",
    "read-tree",
    "rebase",
    "reflog",
    "remote",
    "repack",
    "replace",
    "replay",
    "request-pull",
    "rerere",
    "reset",
    "restore",
    "rev-list",
    "rev-parse",
    "revert",
    "rm",
    "send-pack",
    "shortlog",
    "show",
    "show-branch",
    "show-index",
    "show-ref",
    "sparse-checkout",
    "stage",
    "stash",
    "status",
    "stripspace",
    "submodule",
    "switch",
    "symbolic-ref",
    "tag",
    "unpack-file",
    "unpack-objects",
    "update-index",
    "update-ref",
    "update-server-info",
    "upload-archive",
    "upload-pack",
    "var",
    "verify-commit",
    "verify-pack",
    "verify-tag",
    "version",
    "whatchanged",
    "worktree",
    "write-tree",
];

/// Commands that run programs the judge cannot see (tools, filters, hooks by design).
const RUN_TOOLS: &[(&str, &str)] = &[
    ("difftool", "runs a diff tool"),
    ("mergetool", "runs a merge tool"),
    ("filter-branch", "runs filter commands"),
    ("hook", "runs the repository's hooks"),
    ("merge-index", "runs the merge program it is given"),
    ("merge-one-file", "is a merge program"),
    ("for-each-repo", "runs git commands in other repositories"),
    ("send-email", "runs configured programs"),
    ("instaweb", "starts a web server and a browser"),
    ("web--browse", "starts a browser"),
    ("credential", "runs credential helpers"),
    ("daemon", "starts a server"),
];

/// Log and diff options that run programs named by the configuration.
const RUNS_CONFIGURED: &[&str] = &[
    "--ext-diff",
    "--textconv",
    "--show-signature",
    "--open-files-in-pager",
];

/// What `git ARGS` (`words`, `git` first) runs besides git.
pub(super) fn runs(words: &[&str]) -> Runs {
    let mut runs = Runs::of(Vec::new());
    let mut i = 1;
    while let Some(a) = words.get(i) {
        if !a.starts_with('-') {
            break;
        }
        i += 1;
        let (option, attached) = match a.split_once('=') {
            Some((o, v)) if o.starts_with("--") => (o, Some(v)),
            _ => (*a, None),
        };
        match option {
            "-c" => {
                let (kv, word) = match words.get(i) {
                    Some(kv) => (*kv, i),
                    None => break,
                };
                i += 1;
                runs.also_unseen("'git -c' sets configuration, which can run programs");
                if let Some(script) = configured_script(kv) {
                    runs.inner.push(Inner::Script { word, text: script });
                }
            }
            "--config-env" => {
                runs.also_unseen("'git --config-env' sets configuration, which can run programs");
                if attached.is_none() {
                    i += 1;
                }
            }
            "--exec-path" if attached.is_some() => {
                runs.also_unseen("'git --exec-path' runs git programs from elsewhere")
            }
            "--exec-path" => {}
            o if GLOBAL_VALUES.contains(&o) => {
                if attached.is_none() {
                    i += 1;
                }
            }
            o if GLOBAL_FLAGS.contains(&o) => {}
            o => runs.also_unseen(format!(
                "git option '{o}' is not on the judge's list, so what it runs is not known"
            )),
        }
    }
    let Some(sub) = words.get(i) else {
        return runs;
    };
    if !COMMANDS.contains(sub) && !RUN_TOOLS.iter().any(|(c, _)| c == sub) {
        runs.also_unseen(format!(
            "'git {sub}' is not a git command the judge knows: it may be an alias or another program"
        ));
    }
    if let Some((_, why)) = RUN_TOOLS.iter().find(|(c, _)| c == sub) {
        runs.also_unseen(format!("'git {sub}' {why}"));
    }
    let rest = i + 1;
    match *sub {
        "bisect" if words.get(rest) == Some(&"run") => {
            runs.inner.extend(command_from(words, rest + 1));
        }
        "rebase" => rebase(words, rest, &mut runs),
        "submodule" => {
            let after: Vec<usize> = (rest..words.len())
                .filter(|&k| !words[k].starts_with('-'))
                .collect();
            if let Some(&k) = after.first().filter(|&&k| words[k] == "foreach") {
                if k + 1 < words.len() {
                    runs.inner.push(Inner::JoinedScript(k + 1..words.len()));
                }
            }
        }
        "config" => config(words, rest, &mut runs),
        _ => {}
    }
    for w in words.iter().skip(rest) {
        let option = w.split('=').next().unwrap_or(w);
        if RUNS_CONFIGURED.contains(&option) || w.starts_with("-O") && sub == &"grep" {
            runs.also_unseen(format!("'git {sub} {option}' runs a configured program"));
        }
        let format = ["--format=", "--pretty="]
            .iter()
            .find_map(|p| w.strip_prefix(p));
        if format.is_some_and(runs_gpg) {
            runs.also_unseen(format!("'git {sub}' shows signatures, which runs gpg"));
        }
    }
    runs
}

/// The command line of an alias set with `-c alias.NAME=!CMD`. (The value of another key
/// that names a program is not followed: git adds to it; the subjects are incomplete.)
fn configured_script(kv: &str) -> Option<String> {
    let (key, value) = kv.split_once('=')?;
    if key.to_ascii_lowercase().starts_with("alias.") {
        return value.strip_prefix('!').map(str::to_string);
    }
    None
}

/// `git rebase … -x CMD / --exec CMD / --exec=CMD`.
fn rebase(words: &[&str], from: usize, runs: &mut Runs) {
    let mut k = from;
    while let Some(w) = words.get(k) {
        k += 1;
        if let Some(cmd) = w.strip_prefix("--exec=") {
            runs.inner.push(Inner::Script {
                word: k - 1,
                text: cmd.to_string(),
            });
        } else if *w == "--exec" || *w == "-x" {
            if let Some(cmd) = words.get(k) {
                runs.inner.push(Inner::Script {
                    word: k,
                    text: (*cmd).to_string(),
                });
                k += 1;
            }
        } else if w.starts_with('-') && !w.starts_with("--") && w.contains('x') {
            runs.also_unseen("'git rebase' options the judge does not read (-x)");
        } else if matches!(*w, "-i" | "--interactive") {
            runs.also_unseen("'git rebase -i' runs an editor");
        }
    }
}

/// `git config`: a key that names a program or includes another file, or an editor, is a
/// command the judge cannot see (later); an alias's `!CMD` is followed as a script.
fn config(words: &[&str], from: usize, runs: &mut Runs) {
    let mut operands = Vec::new();
    let mut k = from;
    while let Some(w) = words.get(k) {
        k += 1;
        match *w {
            "-e" | "--edit" | "edit" => runs.also_unseen("'git config --edit' runs an editor"),
            "-f" | "--file" | "--blob" | "--default" | "--type" | "--comment" => k += 1,
            w if w.starts_with('-') => {}
            _ => operands.push(k - 1),
        }
    }
    let operands: Vec<usize> = operands
        .into_iter()
        .skip_while(|&k| matches!(words[k], "set" | "get" | "unset" | "list" | "get-all"))
        .collect();
    let Some(&key_word) = operands.first() else {
        return;
    };
    let key = words[key_word].to_ascii_lowercase();
    let value = operands.get(1).map(|&k| (k, words[k]));
    if key.starts_with("include") && key.ends_with(".path") {
        runs.also_unseen("'git config' includes another configuration file");
    }
    let names_program = key.starts_with("alias.") || runs_program(&key);
    if names_program {
        runs.also_unseen(format!(
            "'git config {key}' names a program git will run later"
        ));
        let alias = value.filter(|_| key.starts_with("alias."));
        if let Some((word, text)) = alias.and_then(|(w, v)| Some((w, v.strip_prefix('!')?))) {
            runs.inner.push(Inner::Script {
                word,
                text: text.to_string(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::what_runs::shown;

    #[test]
    fn what_git_runs_is_found() {
        assert_eq!(shown("git -c alias.x=!rm x"), ["script:rm", "!"]);
        assert_eq!(shown("git -c core.pager=less log"), ["!"]);
        assert_eq!(shown("git bisect run rm x"), ["rm x"]);
        assert_eq!(shown("git rebase --exec=make main"), ["script:make"]);
        assert_eq!(shown("git rebase -x make main"), ["script:make"]);
        assert_eq!(shown("git submodule foreach rm x"), ["script:rm x"]);
        assert_eq!(shown("git config core.fsmonitor rm"), ["!"]);
        assert_eq!(shown("git config alias.x !rm"), ["script:rm", "!"]);
        assert_eq!(shown("git log --oneline"), Vec::<String>::new());
        assert_eq!(shown("git -C src --no-pager status"), Vec::<String>::new());
        assert_eq!(shown("git config user.name me"), Vec::<String>::new());
    }

    #[test]
    fn what_git_may_run_unseen() {
        for line in [
            "git --config-env=x=Y log",
            "git --exec-path=. log",
            "git x",
            "git lg --oneline",
            "git difftool",
            "git config include.path x",
            "git config -e",
            "git diff --ext-diff",
            "git log --format=%GG",
            "git log --pretty=tformat:%G?",
            "git grep -Oless x",
            "git --frob log",
        ] {
            assert_eq!(shown(line).last().map(String::as_str), Some("!"), "{line}");
        }
    }
}
