//! The configuration variables through which a repository chooses a program git runs or a
//! file git reads, as data: what each lets the repository choose, whether a read-only
//! git command (the judge's safe subcommands) acts on it, and the value that takes that
//! choice away when set in the command scope.
//!
//! Two users: the judge rates a git command safe only when the repository sets none of
//! the variables a read-only command acts on ([`read_only_danger`]); and every command
//! `run_command` starts gets an override for each variable the repository sets
//! ([`neutral`]; see `harden.rs`).

use super::parse::Variable;

/// What a variable lets the repository choose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Choice {
    /// A program git runs.
    Program,
    /// A file git reads.
    File,
    /// Makes git run a program (a signature check) or read another repository (a lazy
    /// fetch from a promisor remote).
    Trigger,
}

impl Choice {
    /// In words, for a reason.
    pub fn words(self) -> &'static str {
        match self {
            Choice::Program => "a program git runs",
            Choice::File => "a file git reads",
            Choice::Trigger => "makes git run a program or read another repository",
        }
    }
}

/// Which subsections a rule covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sub {
    /// `section.name` only.
    No,
    /// `section.SUB.name` only.
    Yes,
    /// Either.
    Any,
    /// `section.SUB.name` with this subsection (lowercased) only.
    Named(&'static str),
}

/// One kind of variable.
#[derive(Debug, Clone, Copy)]
struct Rule {
    section: &'static str,
    sub: Sub,
    /// The name, lowercased; `*` for any.
    name: &'static str,
    choice: Choice,
    /// A read-only git command (status, diff, log, show, blame, grep, ls-files, …) acts
    /// on it.
    read_only: bool,
    /// The value that takes the choice away, as a command-scope override; `None` when
    /// no value can (git keeps what the repository said).
    neutral: Option<&'static str>,
}

/// What a diff, merge or tool program overridden here prints, then fails.
pub const REFUSED_PROGRAM: &str =
    "echo 'aintern: a program named by the repository configuration was not run' >&2; false";
/// The same as a shell alias.
const REFUSED_ALIAS: &str =
    "!echo 'aintern: an alias defined by the repository configuration was not run' >&2; false";

const fn rule(
    section: &'static str,
    sub: Sub,
    name: &'static str,
    choice: Choice,
    read_only: bool,
    neutral: Option<&'static str>,
) -> Rule {
    Rule {
        section,
        sub,
        name,
        choice,
        read_only,
        neutral,
    }
}

use Choice::{File, Program, Trigger};
use Sub::{Any, Named, No, Yes};

/// The variables, as data. A name git would take through one of its prefixes (`core.*`
/// spelled as a subsection) is still matched on its section and name.
const RULES: &[Rule] = &[
    // Run by status, diff and whatever refreshes the index.
    rule("core", No, "fsmonitor", Program, true, Some("false")),
    // Hooks: no read-only command runs one (the read-only sandbox stops the index write
    // after which `post-index-change` would run), so the judge leaves them; commands
    // run with none (see harden.rs).
    rule("core", No, "hookspath", Program, false, Some("/dev/null")),
    // With no terminal (commands' output is captured) git starts no pager.
    rule("core", No, "pager", Program, false, Some("cat")),
    rule("pager", No, "*", Program, false, None),
    rule("core", No, "editor", Program, false, Some("false")),
    rule("sequence", No, "editor", Program, false, Some("false")),
    rule("core", No, "sshcommand", Program, false, Some("ssh")),
    rule("core", No, "gitproxy", Program, false, Some("none")),
    rule("core", No, "askpass", Program, false, Some("")),
    rule("core", No, "alternaterefscommand", Program, false, Some("")),
    rule("core", No, "attributesfile", File, true, Some("/dev/null")),
    rule("core", No, "excludesfile", File, true, Some("/dev/null")),
    rule("diff", No, "external", Program, true, Some(REFUSED_PROGRAM)),
    rule("diff", Yes, "command", Program, true, Some(REFUSED_PROGRAM)),
    // `cat` gives the file as it is: the same diff as no textconv.
    rule("diff", Yes, "textconv", Program, true, Some("cat")),
    rule("diff", No, "orderfile", File, true, Some("/dev/null")),
    rule(
        "merge",
        Yes,
        "driver",
        Program,
        false,
        Some(REFUSED_PROGRAM),
    ),
    // An empty filter is no filter (and `required` is set false beside it).
    rule("filter", Yes, "clean", Program, true, Some("")),
    rule("filter", Yes, "smudge", Program, true, Some("")),
    rule("filter", Yes, "process", Program, true, Some("")),
    rule(
        "difftool",
        Yes,
        "cmd",
        Program,
        false,
        Some(REFUSED_PROGRAM),
    ),
    rule(
        "difftool",
        Yes,
        "path",
        Program,
        false,
        Some(REFUSED_PROGRAM),
    ),
    rule(
        "mergetool",
        Yes,
        "cmd",
        Program,
        false,
        Some(REFUSED_PROGRAM),
    ),
    rule(
        "mergetool",
        Yes,
        "path",
        Program,
        false,
        Some(REFUSED_PROGRAM),
    ),
    rule("browser", Yes, "cmd", Program, false, Some(REFUSED_PROGRAM)),
    rule(
        "browser",
        Yes,
        "path",
        Program,
        false,
        Some(REFUSED_PROGRAM),
    ),
    rule("man", Yes, "cmd", Program, false, Some(REFUSED_PROGRAM)),
    rule("man", Yes, "path", Program, false, Some(REFUSED_PROGRAM)),
    rule(
        "instaweb",
        No,
        "httpd",
        Program,
        false,
        Some(REFUSED_PROGRAM),
    ),
    // Signatures: `log.showSignature` makes log and show run the gpg program.
    rule("log", No, "showsignature", Trigger, true, Some("false")),
    rule("gpg", No, "program", Program, true, Some("gpg")),
    rule(
        "gpg",
        Named("openpgp"),
        "program",
        Program,
        true,
        Some("gpg"),
    ),
    rule(
        "gpg",
        Named("x509"),
        "program",
        Program,
        true,
        Some("gpgsm"),
    ),
    rule(
        "gpg",
        Named("ssh"),
        "program",
        Program,
        true,
        Some("ssh-keygen"),
    ),
    rule("gpg", Yes, "program", Program, true, None),
    rule("gpg", Yes, "defaultkeycommand", Program, true, Some("")),
    rule(
        "gpg",
        Yes,
        "allowedsignersfile",
        File,
        true,
        Some("/dev/null"),
    ),
    rule("gpg", Yes, "revocationfile", File, true, Some("/dev/null")),
    // A sorted list: an empty value cannot clear it.
    rule("blame", No, "ignorerevsfile", File, true, None),
    rule("mailmap", No, "file", File, true, Some("/dev/null")),
    rule("commit", No, "template", File, false, Some("")),
    rule("credential", Any, "helper", Program, false, Some("")),
    rule(
        "remote",
        Yes,
        "uploadpack",
        Program,
        false,
        Some("git-upload-pack"),
    ),
    rule(
        "remote",
        Yes,
        "receivepack",
        Program,
        false,
        Some("git-receive-pack"),
    ),
    rule("remote", Yes, "vcs", Program, false, None),
    // A partial clone fetches missing objects on demand, from wherever the remote is.
    rule("remote", Yes, "promisor", Trigger, true, Some("false")),
    rule("extensions", No, "partialclone", Trigger, true, None),
    rule("protocol", Any, "allow", Trigger, false, Some("user")),
    rule("submodule", Yes, "update", Program, false, Some("checkout")),
    rule("alias", No, "*", Program, false, Some(REFUSED_ALIAS)),
    rule("sendemail", Any, "smtpserver", Program, false, Some("")),
    rule("sendemail", Any, "tocmd", Program, false, Some("")),
    rule("sendemail", Any, "cccmd", Program, false, Some("")),
    rule("sendemail", Any, "headercmd", Program, false, Some("")),
    rule("sendemail", Any, "sendmailcmd", Program, false, Some("")),
    rule(
        "sendemail",
        Any,
        "aliasesfile",
        File,
        false,
        Some("/dev/null"),
    ),
    rule("http", Any, "cookiefile", File, false, Some("")),
    rule("http", Any, "sslcert", File, false, Some("")),
    rule("http", Any, "sslkey", File, false, Some("")),
    rule("http", Any, "proxysslcert", File, false, Some("")),
    rule("http", Any, "proxysslkey", File, false, Some("")),
    rule("hook", Yes, "command", Program, false, None),
    // `git archive --format=<format>` pipes the archive through it.
    rule("tar", Yes, "command", Program, false, Some(REFUSED_PROGRAM)),
    // `git add -p` shows each diff through it (`cat` shows it as it is).
    rule("interactive", No, "difffilter", Program, false, Some("cat")),
    // `git imap-send` talks to the server through it.
    rule("imap", No, "tunnel", Program, false, Some("")),
    // `git interpret-trailers` and `git commit --trailer` run them for a trailer's value.
    rule("trailer", Yes, "command", Program, false, Some("true")),
    rule("trailer", Yes, "cmd", Program, false, Some("true")),
    // `git gui` and `git citool` menus.
    rule("guitool", Yes, "cmd", Program, false, Some(REFUSED_PROGRAM)),
    // `git init` and `git clone` copy hooks from it.
    rule("init", No, "templatedir", File, false, Some("")),
];

fn matching(variable: &Variable) -> Option<&'static Rule> {
    RULES.iter().find(|r| {
        r.section == variable.section
            && (r.name == "*" || r.name == variable.name)
            && match r.sub {
                No => variable.subsection.is_none(),
                Yes => variable.subsection.is_some(),
                Any => true,
                Named(sub) => variable
                    .subsection
                    .as_deref()
                    .is_some_and(|s| s.eq_ignore_ascii_case(sub)),
            }
    })
}

/// What `variable`, set by the repository, would let it choose in a read-only git
/// command; `None` when nothing.
pub fn read_only_danger(variable: &Variable) -> Option<Choice> {
    matching(variable).filter(|r| r.read_only).map(|r| r.choice)
}

/// The command-scope value that takes away the choice `variable` makes, when it makes
/// one and a value can; `Some(None)` when it makes one no value can take away.
pub fn neutral(variable: &Variable) -> Option<Option<&'static str>> {
    matching(variable).map(|r| r.neutral)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git_config::parse::variables;

    fn first(text: &str) -> Variable {
        variables(text)
            .unwrap_or_else(|e| panic!("line {}", e.line))
            .remove(0)
    }

    #[test]
    fn the_variables_a_read_only_command_acts_on_are_dangerous() {
        for text in [
            "[core]\nfsmonitor = x",
            "[diff]\nexternal = x",
            "[diff \"d\"]\ncommand = x",
            "[diff \"d\"]\ntextconv = x",
            "[filter \"f\"]\nclean = x",
            "[filter \"f\"]\nsmudge = x",
            "[filter \"f\"]\nprocess = x",
            "[log]\nshowSignature = true",
            "[gpg]\nprogram = x",
            "[gpg \"ssh\"]\nprogram = x",
            "[blame]\nignoreRevsFile = x",
            "[core]\nattributesFile = x",
            "[core]\nexcludesFile = x",
            "[diff]\norderFile = x",
            "[mailmap]\nfile = x",
            "[remote \"origin\"]\npromisor = true",
            "[extensions]\npartialClone = origin",
        ] {
            assert!(read_only_danger(&first(text)).is_some(), "{text}");
        }
        for text in [
            "[core]\nhooksPath = .husky",
            "[core]\neditor = vim",
            "[pager]\nbranch = false",
            "[alias]\nst = status",
            "[remote \"origin\"]\nurl = x",
            "[user]\nname = x",
            "[diff]\ntool = x",
            "[filter \"f\"]\nrequired = true",
            "[core]\nbare = false",
        ] {
            assert!(read_only_danger(&first(text)).is_none(), "{text}");
        }
    }

    #[test]
    fn neutral_values() {
        assert_eq!(
            neutral(&first("[core]\nfsmonitor = x")),
            Some(Some("false"))
        );
        assert_eq!(
            neutral(&first("[diff \"d\"]\ntextconv = x")),
            Some(Some("cat"))
        );
        assert_eq!(neutral(&first("[blame]\nignoreRevsFile = x")), Some(None));
        assert_eq!(neutral(&first("[user]\nname = x")), None);
        // `diff.textconv` (no driver) is no variable git reads.
        assert_eq!(neutral(&first("[diff]\ntextconv = x")), None);
    }
}
