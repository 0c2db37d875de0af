//! How risky a shell command line is: an allow-list judge over a real shell parse, for
//! AIntern's `run_command` tool and for anyone who must decide whether a command a model
//! wrote may run without asking. Two functions: [`judge`] (the risk, the reasons in words,
//! the permission subjects and the git repositories the line would use) and
//! [`command_risk`] (the risk from the text alone). [`git_config`] reads a repository's
//! configuration as git does, which the judge needs for git commands.
//!
//! Nothing here runs a program or writes a file: the judge reads the workspace (symlinks,
//! git configuration) only to follow where an operand leads.
//!
//!
//! The line is parsed with brush-parser's POSIX `sh` grammar (commands run as `sh -c`).
//! It is **safe** only when all of this holds:
//!
//! * it parses, and is simple commands joined by `|`, `&&`, `||`, `;` and newlines — no
//!   background `&`, subshell, `{ }` group, `if`/`for`/`while`/`until`/`case`, function,
//!   coprocess or arithmetic command;
//! * no redirection of any kind, no variable assignment, and every word is literal: no
//!   `$…` (parameters, `$(…)`, `$((…))`, `$'…'`), no backquote, no unquoted glob or brace
//!   character, no `~` a shell would expand (see `words.rs`);
//! * each program is a bare word on the read-only list (`table.rs`, plus `echo`, `true`,
//!   `false`, `test`, `find`, `xxd`, `sed` and `git` judged by their own code), used only
//!   with options known to be safe, read as the program reads them (unknown and abbreviated
//!   long options, obsolete forms, and value-taking letters in clusters a program reads its
//!   own way are refused; see `programs.rs`);
//! * every operand a program may open is inside the workspace: not absolute, its `..`
//!   never above the workspace root from the call's folder, and — when the workspace is
//!   known — where it leads on disk is inside too (a symlink `docs -> /etc` is outside).
//!   Operands that are never opened are not checked: `echo`'s words, the pattern of
//!   `grep`/`rg`/`git grep`, `sed`'s script, `tr`'s sets, `basename`/`dirname`/`which`/`id`
//!   operands, `date`'s `+FORMAT`, `find`'s expression values except file references
//!   (`-newer F`, `-samefile F`). Option values that are paths are checked like operands.
//!   Git revisions are checked as paths, conservatively; git formats that show signatures
//!   (and so run gpg) are refused.
//! * an independent lexical scan finds none of `$`, backquote, `<`, `>`, a lone `&`,
//!   parentheses, braces, glob characters, a leading `~` or `#`, control characters.
//!
//! Anything else is at least **medium**, and the deny-list (`severity.rs`) applied to every
//! simple command found anywhere — in pipelines and lists, compound commands, function
//! bodies, command and process substitutions, here-documents, the script of `sh -c` (and
//! `su -c`, `eval`, `watch`…), and the command behind a wrapper (`env`, `sudo`, `xargs`,
//! `timeout`, `find -exec`…) — raises it: privilege and disk tools, recursive `rm` of an
//! absolute path or the home folder, and fork bombs are **critical**; deleting, moving,
//! permissions, processes, the network, installing packages, pushing or rewriting git
//! history, and piping into a shell or an interpreter are **high**. Text that does not parse
//! is judged lexically and never safe.
//!
//! The line's permission subjects ([`Judgement::subjects`]) are every simple command found
//! that way — also the command behind a wrapper whose options are understood, the script
//! of `sh -c 'literal'`, `eval 'literal'`, `trap 'literal' SIG`, an alias's value, the
//! command of sed's `e`, a git alias `!CMD` given with `-c`, the command of
//! `find -exec` and `xargs` (what xargs adds shown as `{}`), and for a program given by
//! its path (`/bin/rm x`) also its name (`rm x`). They are *complete* only when the judge
//! can see every command that will run. They are not when: the line does not parse; a
//! program name is not literal, or is a path outside the system's program folders (a
//! script the judge cannot see); a shell reads its script from a file, its input or a
//! here-document, or is not a POSIX shell; an interpreter or `make` runs code; a package
//! manager runs a command line the project or a package defines (`npm run`, `npm test`,
//! `poetry run`, `go generate`; the code `cargo build` or `cargo test` compiles and runs is
//! taken as the project's own, its command line being the subject); a wrapper's options are
//! not understood (only exact spellings from its
//! table, see `optscan.rs`: then the words that could start its command are followed as
//! guesses, for the deny-list and deny patterns); a word that decides what a wrapper runs is
//! not literal; `alias`, `source`/`.`, `exec` without a command, `hash -p`, `enable`, `fc`;
//! `eval` or a script of non-literal text; a variable that can change what runs is set
//! (`PATH=…`, `export LD_PRELOAD=…`, `read IFS`: only names without capitals, `LC_*` and a
//! few more are inert); git with `-c`, `--config-env`, `--exec-path`, an alias or a program
//! named by `git config`; sed with `-f`, `e` without a command or `s///e`; options of tar,
//! rsync, sort, rg… that run commands (see `launchers.rs`); `xargs -I` putting what it reads
//! into the program's name, `find -exec {}`.

pub mod git_config;

mod builtins;
mod fallback;
mod git;
mod git_options;
mod git_runs;
mod launchers;
mod optscan;
mod paths;
mod programs;
mod runners;
mod sed;
mod severity;
mod shells;
mod spec;
mod syntax;
mod table;
mod table_text;
mod what_runs;
mod words;
mod wrappers;

#[cfg(test)]
mod option_tests;
#[cfg(test)]
mod props;
#[cfg(test)]
mod subject_tests;
#[cfg(test)]
mod tests;

use core_models::{collapse_whitespace, PermissionSubjects, RiskLevel};
use paths::Place;
use std::path::Path;
use syntax::Cmd;
use words::WordInfo;

/// Most reasons kept for the approval prompt.
const MAX_REASONS: usize = 16;

/// One reason a command line is not safe, with the least risk it implies.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Finding {
    risk: RiskLevel,
    reason: String,
}

impl Finding {
    fn new(risk: RiskLevel, reason: impl Into<String>) -> Self {
        Finding {
            risk,
            reason: reason.into(),
        }
    }
}

/// The judgement of one command line.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Judgement {
    /// How risky the line is: [`RiskLevel::Safe`] only when every part of it is a plainly
    /// read-only command inside the workspace (see the module documentation).
    pub risk: RiskLevel,
    /// Why it is not safe, in words for the approval prompt; empty when it is safe.
    pub reasons: Vec<String>,
    /// What permission patterns are matched against: each simple command found anywhere
    /// (assignments, words after quote removal and redirections, joined by single spaces;
    /// a wrapped command or script also on its own; a program given by its path also by
    /// its name), the whole line (whitespace collapsed) for deny patterns only, and
    /// `complete` = false when the judge cannot see every command that will run (see the
    /// module documentation).
    pub subjects: PermissionSubjects,
    /// The git directories the line's git commands would use that the judge found to be
    /// the workspace's own (their configuration read, see `git`): the command's git
    /// hardening covers them.
    pub repositories: Vec<std::path::PathBuf>,
    /// Every simple command found anywhere in the line, in order, as command rules match
    /// them (see [`SeenCommand`]).
    pub commands: Vec<SeenCommand>,
    /// Some part of the line runs commands that are not among [`Judgement::commands`] at
    /// all (the line does not parse, a variable that changes what runs is set, a script is
    /// not plain text…). When this is `false` and the subjects are still incomplete, the
    /// opaque commands are the reason ([`SeenCommand::opaque`]).
    pub hidden: bool,
}

/// One simple command of a line, as command rules match it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SeenCommand {
    /// Its words after quote removal, the program first; `None` for a word the judge
    /// cannot read (it expands something).
    pub words: Vec<Option<String>>,
    /// A guess at the command behind a wrapper whose options are not understood.
    pub guess: bool,
    /// It runs what the judge cannot see through its own program: an interpreter, `make`,
    /// a package script, a shell reading a file, a program given by its path.
    pub opaque: bool,
}

impl SeenCommand {
    /// Each word as displayed: readable ones as they are, others as written.
    pub fn display(&self) -> String {
        self.words
            .iter()
            .map(|w| w.as_deref().unwrap_or("…"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The risk of a shell command line, judged from the text alone (no folder, no
/// workspace on disk): `Safe` only for plainly read-only command lines.
pub fn command_risk(command: &str) -> RiskLevel {
    judge(command, None, None).risk
}

/// Judge `command`, run in `cwd` (relative to the workspace; `None` = its root), with the
/// canonical `workspace` root when known (then symlinks are followed on disk).
pub fn judge(command: &str, cwd: Option<&str>, workspace: Option<&Path>) -> Judgement {
    let deny_only = vec![collapse_whitespace(command)];
    if command.trim().is_empty() {
        return Judgement {
            risk: RiskLevel::Medium,
            reasons: vec!["the command is empty".to_string()],
            subjects: PermissionSubjects::default()
                .with_subjects(Vec::new())
                .with_deny_only(deny_only)
                .with_complete(false),
            repositories: Vec::new(),
            commands: Vec::new(),
            hidden: true,
        };
    }
    let mut findings = Vec::new();
    let place = match Place::new(cwd, workspace) {
        Ok(place) => place,
        Err(why) => {
            findings.push(Finding::new(RiskLevel::Medium, why));
            Place::at_root(workspace)
        }
    };
    let (commands, complete, hidden) = match syntax::analyse(command) {
        Ok(analysis) => {
            findings.extend(analysis.findings);
            (analysis.commands, analysis.complete, analysis.hidden)
        }
        Err(why) => {
            findings.push(Finding::new(RiskLevel::Medium, why));
            findings.extend(fallback::text_findings(command));
            let commands = fallback::split(command)
                .iter()
                .map(|words| Cmd::unparsed(words))
                .collect();
            (commands, false, true)
        }
    };
    if commands.is_empty() {
        findings.push(Finding::new(RiskLevel::Medium, "runs no command"));
    }
    for cmd in &commands {
        findings.extend(judge_command(cmd, &place));
    }
    if findings.is_empty() {
        if let Some(why) = fallback::gate(command) {
            findings.push(Finding::new(
                RiskLevel::Medium,
                format!("uses shell syntax the judge does not accept ({why})"),
            ));
        }
    }
    let risk = findings
        .iter()
        .map(|f| f.risk)
        .max()
        .map_or(RiskLevel::Safe, |r| r.max(RiskLevel::Medium));
    let mut subjects = PermissionSubjects::of(commands.iter().flat_map(Cmd::subjects));
    subjects.deny_only = deny_only;
    subjects.complete = complete;
    let repositories = place
        .verdicts
        .borrow()
        .iter()
        .filter(|(_, verdict)| verdict.is_none())
        .map(|(dir, _)| dir.clone())
        .collect();
    let seen = commands
        .iter()
        .filter(|c| !c.words.is_empty())
        .map(|c| SeenCommand {
            words: c.words.iter().map(|w| w.literal.clone()).collect(),
            guess: c.guess,
            opaque: c.opaque,
        })
        .collect();
    Judgement {
        risk,
        reasons: reasons(findings),
        subjects,
        repositories,
        commands: seen,
        hidden,
    }
}

/// The findings for one simple command: the deny-list, then the allow-list.
fn judge_command(cmd: &Cmd, place: &Place) -> Vec<Finding> {
    let Some(first) = cmd.words.first() else {
        // A bare assignment or redirection: its findings are already there.
        return Vec::new();
    };
    let texts: Vec<&str> = cmd.words.iter().map(WordInfo::text).collect();
    let mut out = Vec::new();
    let deny = severity::assess(&texts, cmd.piped_into);
    if cmd.guess {
        // A guess at a wrapped command: the wrapper is not safe anyway.
        return deny.into_iter().collect();
    }
    let name = first.text();
    let listed = first.literal.is_some() && !name.contains('/') && programs::is_listed(name);
    if listed {
        let literals: Option<Vec<String>> = cmd.words.iter().map(|w| w.literal.clone()).collect();
        match literals {
            Some(literals) => out.extend(
                programs::check(&literals, place)
                    .into_iter()
                    .map(|why| Finding::new(RiskLevel::Medium, why)),
            ),
            // Each such word has its own finding; this one stands in case none does.
            None if cmd.words.iter().all(|w| w.expansions.is_empty()) => out.push(Finding::new(
                RiskLevel::Medium,
                "a word the judge cannot read",
            )),
            None => {}
        }
    } else if deny.is_none() && first.literal.is_some() {
        let why = if name.contains('/') {
            format!("runs a program by its path ('{}')", syntax::shorten(name))
        } else {
            format!("unknown program '{}'", syntax::shorten(name))
        };
        out.push(Finding::new(RiskLevel::Medium, why));
    }
    out.extend(deny);
    out
}

/// The reasons, each once, in order, at most [`MAX_REASONS`].
fn reasons(findings: Vec<Finding>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut more = 0;
    for f in findings {
        if !seen.insert(f.reason.clone()) {
            continue;
        }
        if out.len() < MAX_REASONS {
            out.push(f.reason);
        } else {
            more += 1;
        }
    }
    if more > 0 {
        out.push(format!("… and {more} more"));
    }
    out
}
