//! The words for what a command runs besides itself, shared by the tables that say it
//! ([`what_runs`](super::what_runs) is the one that asks them): an inner command or
//! script ([`Inner`], its words as [`Arg`]s), what a command runs ([`Runs`], with
//! [`Runs::unseen`] when the judge cannot see all of it), the lists of shells,
//! interpreters, package managers and wrappers, and small helpers.

use std::ops::Range;

/// Most guesses followed for one command whose options are not understood.
const MAX_GUESSES: usize = 8;

/// One word of a command the judge follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Arg {
    /// The word at this index.
    Word(usize),
    /// Text taken out of the word at this index (a word of `env -S STRING`).
    Part {
        /// The word the text comes from.
        word: usize,
        /// The text.
        text: String,
    },
    /// The arguments it gets when it runs (what `xargs` reads), shown as `{}`.
    Added,
}

/// What a command runs besides itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Inner {
    /// A command (`nice -n 5 make` → `make`).
    Command(Vec<Arg>),
    /// A command the judge guesses at, because the words around it are not understood;
    /// followed for the deny-list and the deny patterns only.
    Guess(Vec<Arg>),
    /// A shell script, taken from the word at `word` (`sh -c SCRIPT`, `--command=SCRIPT`).
    Script {
        /// The word the script comes from (it must be literal).
        word: usize,
        /// The script.
        text: String,
    },
    /// These words, joined by spaces, are a shell script (`eval a b`, `watch a b`).
    JoinedScript(Range<usize>),
}

/// What a command runs, as far as the judge can tell.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Runs {
    /// The commands and scripts it runs that the judge follows.
    pub inner: Vec<Inner>,
    /// Why it may run commands the judge cannot see; `None` when it runs nothing else,
    /// or only [`Runs::inner`].
    pub unseen: Option<String>,
    /// Which of its words decide what it runs: one the judge cannot read leaves that
    /// unknown.
    pub decides: Decides,
}

/// Which words of a command decide what it runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) enum Decides {
    /// None: it runs nothing else whatever its words.
    #[default]
    Nothing,
    /// Every word (after the program) but those of the commands and scripts it runs,
    /// which are judged on their own: a wrapper's options, `find`'s expression, git's.
    Words,
    /// The words before this index (`printf -v NAME`).
    Before(usize),
}

impl Runs {
    /// Runs nothing else.
    pub(super) fn nothing() -> Self {
        Runs::default()
    }

    /// Decided by its words, runs `inner`.
    pub(super) fn of(inner: Vec<Inner>) -> Self {
        Runs {
            inner,
            unseen: None,
            decides: Decides::Words,
        }
    }

    /// Runs what the judge cannot see, `why`.
    pub(super) fn unseen(why: impl Into<String>) -> Self {
        Runs {
            inner: Vec::new(),
            unseen: Some(why.into()),
            decides: Decides::Words,
        }
    }

    /// The same, also following `inner`.
    pub(super) fn with(mut self, inner: Vec<Inner>) -> Self {
        self.inner.extend(inner);
        self
    }

    /// Mark unseen, keeping the first reason.
    pub(super) fn also_unseen(&mut self, why: impl Into<String>) {
        if self.decides == Decides::Nothing {
            self.decides = Decides::Words;
        }
        if self.unseen.is_none() {
            self.unseen = Some(why.into());
        }
    }
}

/// Shells: run a script given with `-c`, a script file, or their input.
pub(super) const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "tcsh", "csh", "rbash", "yash",
    "busybox",
];

/// Interpreters and tools that run code or programs the judge cannot see.
pub(super) const INTERPRETERS: &[&str] = &[
    "python",
    "python2",
    "python3",
    "pypy",
    "pypy3",
    "ipython",
    "node",
    "nodejs",
    "deno",
    "bun",
    "perl",
    "ruby",
    "irb",
    "php",
    "lua",
    "luajit",
    "tclsh",
    "wish",
    "expect",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "Rscript",
    "R",
    "julia",
    "octave",
    "gnuplot",
    "osascript",
    "pwsh",
    "powershell",
    "make",
    "gmake",
    "cmake",
    "ninja",
    "just",
    "rake",
    "vim",
    "vi",
    "nvim",
    "emacs",
    "nano",
    "less",
    "more",
    "man",
    "jshell",
    "groovy",
    "scala",
    "kotlin",
    "java",
    "swift",
    "dotnet",
    "ghci",
    "runghc",
    "erl",
    "elixir",
    "iex",
    "guile",
    "racket",
    "sbcl",
    "clisp",
    "ocaml",
    "m4",
    "dc",
    "bc",
    "ed",
    "ex",
    "jq",
    "yq",
    "sqlite3",
    "psql",
    "mysql",
];

/// Package managers.
pub(super) const PACKAGE_MANAGERS: &[&str] = &[
    "cargo", "npm", "pnpm", "yarn", "bun", "pip", "pip3", "pipx", "uv", "poetry", "gem", "bundle",
    "go", "composer", "conda", "mamba",
];

/// Wrappers: run the command given in their arguments. Those with an option table in
/// [`runners`](super::runners) are followed exactly; for the others, any use leaves the
/// subjects incomplete and the words that could start their command are guesses.
pub(super) const WRAPPERS: &[&str] = &[
    "env",
    "xargs",
    "nohup",
    "timeout",
    "nice",
    "ionice",
    "command",
    "builtin",
    "exec",
    "eval",
    "source",
    ".",
    "time",
    "stdbuf",
    "setsid",
    "chroot",
    "unshare",
    "nsenter",
    "flock",
    "watch",
    "parallel",
    "strace",
    "ltrace",
    "gdb",
    "lldb",
    "taskset",
    "chrt",
    "script",
    "systemd-run",
    "fakeroot",
    "firejail",
    "valgrind",
    "sudo",
    "su",
    "doas",
    "pkexec",
    "runuser",
    "setpriv",
    "prlimit",
    "cpulimit",
    "caffeinate",
    "unbuffer",
    "catchsegv",
    "trap",
    "alias",
    "setarch",
    "linux32",
    "linux64",
    "i386",
    "x86_64",
    "runcon",
    "sg",
    "newgrp",
    "chpst",
    "numactl",
    "eatmydata",
    "faketime",
    "chronic",
    "ifne",
    "xvfb-run",
    "dbus-run-session",
    "ssh-agent",
    "nocache",
    "ccache",
    "sccache",
    "distcc",
    "perf",
    "hyperfine",
    "entr",
    "watchexec",
    "daemonize",
    "start-stop-daemon",
    "bwrap",
    "proot",
    "tsp",
    "run-parts",
    "xdg-open",
    "gio",
    "tmux",
    "screen",
    "batch",
    "uvx",
    "pdm",
    "dotenv",
    "direnv",
    "env-cmd",
    "cross-env",
    "concurrently",
    "nodemon",
    "nix",
    "nix-shell",
    "sshpass",
];

/// The program name without its folder.
pub(super) fn program_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// The words from `from` on as a command, when there are any.
pub(super) fn command_from(words: &[&str], from: usize) -> Vec<Inner> {
    if from < words.len() {
        vec![Inner::Command((from..words.len()).map(Arg::Word).collect())]
    } else {
        Vec::new()
    }
}

/// Guesses at the command among `words[from..]`: each suffix starting at a word that is
/// not an option (at most [`MAX_GUESSES`]).
pub(super) fn guesses(words: &[&str], from: usize) -> Vec<Inner> {
    (from..words.len())
        .filter(|&k| !words[k].starts_with('-') && !is_assignment(words[k]))
        .take(MAX_GUESSES)
        .map(|k| Inner::Guess((k..words.len()).map(Arg::Word).collect()))
        .collect()
}

/// `NAME=VALUE`.
pub(super) fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => is_name(name),
        None => false,
    }
}

/// A shell variable name.
pub(super) fn is_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Environment variables known not to change which programs run or what they run.
const INERT_VARIABLES: &[&str] = &[
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
    "COLUMNS",
    "LINES",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "RUST_LOG",
    "RUST_BACKTRACE",
    "RUST_LIB_BACKTRACE",
    "CI",
    "OPTARG",
    "OPTIND",
    "REPLY",
    "MAPFILE",
];

/// Whether setting the variable `name` cannot change which programs run or what they run.
///
/// Variables that do are too many to list (`PATH`, `LD_PRELOAD`, `BASH_ENV`, `IFS`,
/// `GIT_*`, `PAGER`, `EDITOR`, `TAR_OPTIONS`, `HOME`…), so only these are inert: names
/// without a capital letter (a script's own variables: every special shell variable and
/// conventional environment variable is in capitals), `LC_*`, and a short list.
pub(super) fn is_inert_variable(name: &str) -> bool {
    !name.chars().any(|c| c.is_ascii_uppercase())
        || name.starts_with("LC_")
        || INERT_VARIABLES.contains(&name)
}

/// A wrapper whose options are not understood: its command is not known.
pub(super) fn not_understood(name: &str, why: &str, words: &[&str]) -> Runs {
    Runs::unseen(format!(
        "'{name}' {why}, so the command it runs is not known"
    ))
    .with(guesses(words, 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inert_variables() {
        for name in ["x", "my_var", "LC_ALL", "LANG", "RUST_LOG"] {
            assert!(is_inert_variable(name), "{name}");
        }
        for name in [
            "PATH",
            "LD_PRELOAD",
            "BASH_ENV",
            "IFS",
            "GIT_PAGER",
            "HOME",
            "Path",
        ] {
            assert!(!is_inert_variable(name), "{name}");
        }
    }
}
