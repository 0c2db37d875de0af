//! What a command runs besides itself, so that the judge can follow it and the permission
//! subjects can show it — the one place that asks each table in turn. the command behind a wrapper (`env`, `sudo`, `timeout`, `xargs`…),
//! the script of a shell (`sh -c SCRIPT`), of `eval` or `trap`, the command of
//! `find -exec`, `sed`'s `e`, git's `-c alias.x=!CMD`…
//!
//! And whether it may run commands the judge cannot see ([`Runs::unseen`]; then the
//! subjects are incomplete): a shell or an interpreter reading its program from a file or
//! its input, a wrapper whose options are not understood (exact spellings only, see
//! [`optscan`](super::optscan)), an alias, `source`, `exec` without a command, a package
//! manager running project code, options that make a program run commands (`tar
//! --to-command`, `rsync -e`, `git -c`…). Where the judge can see the command, it is
//! followed as well: `sh -c 'literal'`, `trap 'literal' EXIT`, `eval 'literal'`,
//! `sed '1e literal'`. When a wrapper's options are not understood, the words that could
//! start its command are followed as guesses ([`Inner::Guess`]), for the deny-list and the
//! deny patterns only.
//!
//! The tables are data: [`runners`](super::runners) (wrappers), [`shells`](super::shells),
//! [`builtins`](super::builtins) (shell builtins that run or change what runs),
//! [`launchers`](super::launchers) (options of other programs that run commands).

use super::wrappers::{
    guesses, program_name, Runs, INTERPRETERS, PACKAGE_MANAGERS, SHELLS, WRAPPERS,
};
#[cfg(test)]
use super::wrappers::{Arg, Inner};
use super::{builtins, git_runs, launchers, runners, sed, shells};

/// Programs that run commands of their own (remote or scheduled ones too), listed with
/// the deny-list's high-risk programs: any use leaves the subjects incomplete.
const RUN_ELSEWHERE: &[&str] = &[
    "ssh",
    "scp",
    "sftp",
    "docker",
    "podman",
    "kubectl",
    "systemctl",
    "service",
    "at",
    "crontab",
    "npx",
    "pnpx",
    "bunx",
    "nc",
    "ncat",
    "netcat",
    "socat",
];

/// What `words` (a command, program first, as displayed) runs besides itself.
pub(super) fn runs(words: &[&str]) -> Runs {
    let Some(first) = words.first() else {
        return Runs::nothing();
    };
    let name = program_name(first);
    if SHELLS.contains(&name) && name != "busybox" {
        return shells::shell(name, words);
    }
    if let Some(runs) = runners::special(name, words) {
        return runs;
    }
    if let Some(runs) = builtins::runs(name, words) {
        return runs;
    }
    if let Some(runs) = launchers::runs(name, words) {
        return runs;
    }
    match name {
        "git" => return git_runs::runs(words),
        "sed" => return sed::runs(words),
        _ => {}
    }
    if INTERPRETERS.contains(&name) {
        return Runs::unseen(format!("'{name}' runs code the judge cannot see"));
    }
    if PACKAGE_MANAGERS.contains(&name) {
        return package_manager(name, words);
    }
    if let Some(runs) = runners::runner(name, words) {
        return runs;
    }
    if WRAPPERS.contains(&name) || RUN_ELSEWHERE.contains(&name) {
        return Runs::unseen(format!("'{name}' runs commands the judge does not follow"))
            .with(guesses(words, 1));
    }
    Runs::nothing()
}

/// Subcommands of the JavaScript package managers that run no script of the project's
/// (any other runs one: `npm test`, `npm install`'s lifecycle scripts, `yarn build`).
const JS_INERT: &[&str] = &[
    "ls", "list", "ll", "la", "view", "info", "show", "outdated", "search", "help", "whoami",
    "ping", "audit", "explain", "why", "doctor", "root", "prefix", "bin",
];

/// Subcommands of other package managers that run a command line the project or a
/// package names.
const RUNS_NAMED: &[(&str, &[&str])] = &[
    ("composer", &["run-script", "run", "exec"]),
    ("poetry", &["run"]),
    ("uv", &["run", "tool"]),
    ("pdm", &["run"]),
    ("pipx", &["run"]),
    ("conda", &["run"]),
    ("mamba", &["run"]),
    ("bundle", &["exec"]),
    ("go", &["generate"]),
];

/// A package manager: its command line is the subject (the code it builds and runs is the
/// project's own), except where it runs a command line that the project defines (a
/// package script, `go generate`) or that a package names (`poetry run`), which the judge
/// cannot see.
fn package_manager(name: &str, words: &[&str]) -> Runs {
    let Some(sub) = words.iter().skip(1).find(|w| !w.starts_with('-')) else {
        return Runs::nothing();
    };
    let js = matches!(name, "npm" | "pnpm" | "yarn" | "bun");
    let runs_script = if js {
        !JS_INERT.contains(sub)
    } else {
        RUNS_NAMED
            .iter()
            .any(|(pm, subs)| *pm == name && subs.contains(sub))
    };
    if runs_script {
        Runs::unseen(format!(
            "'{name} {sub}' runs a command line the project or a package defines, which the judge cannot see"
        ))
    } else {
        Runs::nothing()
    }
}

/// Each inner command or script of `line` (words split at spaces), shown; `?` marks a
/// guess, and a last `!` that it runs what the judge cannot see.
#[cfg(test)]
pub(super) fn shown(line: &str) -> Vec<String> {
    let words: Vec<&str> = line.split(' ').collect();
    let r = runs(&words);
    let arg = |a: &Arg| match a {
        Arg::Word(i) => words[*i].to_string(),
        Arg::Part { text, .. } => text.clone(),
        Arg::Added => "{}".to_string(),
    };
    let mut out: Vec<String> = r
        .inner
        .iter()
        .map(|i| match i {
            Inner::Command(args) => args.iter().map(arg).collect::<Vec<_>>().join(" "),
            Inner::Guess(args) => {
                format!("?{}", args.iter().map(arg).collect::<Vec<_>>().join(" "))
            }
            Inner::Script { text, .. } => format!("script:{text}"),
            Inner::JoinedScript(r) => format!("script:{}", words[r.clone()].join(" ")),
        })
        .collect();
    if r.unseen.is_some() {
        out.push("!".to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpreters_and_package_scripts_run_what_the_judge_cannot_see() {
        assert_eq!(shown("python3 -c x"), ["!"]);
        assert_eq!(shown("make"), ["!"]);
        assert_eq!(shown("npm run x"), ["!"]);
        assert_eq!(shown("npm test"), ["!"]);
        assert_eq!(shown("yarn build"), ["!"]);
        assert_eq!(shown("poetry run x"), ["!"]);
        assert_eq!(shown("go generate ./..."), ["!"]);
        assert_eq!(shown("cargo test"), Vec::<String>::new());
        assert_eq!(shown("npm ls"), Vec::<String>::new());
        assert_eq!(shown("ls -la"), Vec::<String>::new());
    }

    #[test]
    fn unmodelled_wrappers_are_guessed_at() {
        assert_eq!(
            shown("setarch x86_64 rm v"),
            ["?x86_64 rm v", "?rm v", "?v", "!"]
        );
        assert_eq!(
            shown("ssh -o x h rm v"),
            ["?x h rm v", "?h rm v", "?rm v", "?v", "!"]
        );
    }
}
