//! Programs that run other commands: wrappers (`env`, `sudo`, `timeout`, `xargs`…),
//! shells (`sh -c SCRIPT`), `eval`, and `find -exec`. For each, where the command or
//! script it runs sits among its words, so that the judge can follow it.

use std::ops::Range;

/// What a command runs besides itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Inner {
    /// These words are a command (`nice -n 5 make` → `make`).
    Command(Range<usize>),
    /// This word is a shell script (`sh -c SCRIPT`).
    Script(usize),
    /// The text after the first `=` of this word is a shell script (`--command=SCRIPT`).
    ScriptValue(usize),
    /// These words, joined by spaces, are a shell script (`eval a b`, `watch a b`).
    JoinedScript(Range<usize>),
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
];

/// Wrappers: run the command given in their arguments.
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
];

/// The program name without its folder.
pub(super) fn program_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// How a wrapper's options are read.
struct OptionSyntax {
    /// Short options that take a value (attached or the next word).
    short_values: &'static str,
    /// Short options whose value, if any, must be attached.
    short_optional: &'static str,
    /// Long options that take the next word as their value (without `=`).
    long_values: &'static [&'static str],
    /// Options end at the first word that does not start with `-` (or `+` for shells).
    plus_options: bool,
}

const PLAIN: OptionSyntax = OptionSyntax {
    short_values: "",
    short_optional: "",
    long_values: &[],
    plus_options: false,
};

/// The index of the first word at or after `start` that is not an option, and whether a
/// short option in `watch_for` was seen.
fn skip_options(
    words: &[&str],
    start: usize,
    syntax: &OptionSyntax,
    watch_for: char,
) -> (usize, bool) {
    let mut i = start;
    let mut seen = false;
    while let Some(word) = words.get(i) {
        if *word == "--" {
            return (i + 1, seen);
        }
        let is_option = word.len() > 1
            && (word.starts_with('-') || syntax.plus_options && word.starts_with('+'));
        if !is_option {
            break;
        }
        i += 1;
        if let Some(long) = word.strip_prefix("--") {
            if !long.contains('=') && syntax.long_values.contains(&long) {
                i += 1;
            }
            continue;
        }
        let mut chars = word.chars().skip(1);
        while let Some(c) = chars.next() {
            if c == watch_for {
                seen = true;
            }
            if syntax.short_optional.contains(c) {
                break;
            }
            if syntax.short_values.contains(c) {
                if chars.next().is_none() {
                    i += 1;
                }
                break;
            }
        }
    }
    (i, seen)
}

/// A wrapper that runs the command after its options (and a fixed number of operands).
struct Runner {
    /// The wrapper's names.
    names: &'static [&'static str],
    /// How its options are read.
    syntax: OptionSyntax,
    /// Operands between its options and the command (`timeout DURATION`, `chroot DIR`).
    operands: usize,
    /// `NAME=VALUE` words may come before the command (`sudo A=1 cmd`).
    assignments: bool,
}

const RUNNERS: &[Runner] = &[
    Runner {
        names: &["sudo"],
        syntax: OptionSyntax {
            short_values: "ugpCDhrtTUR",
            long_values: &[
                "user",
                "group",
                "prompt",
                "close-from",
                "chdir",
                "host",
                "role",
                "type",
                "other-user",
                "command-timeout",
                "chroot",
            ],
            ..PLAIN
        },
        operands: 0,
        assignments: true,
    },
    Runner {
        names: &["doas"],
        syntax: OptionSyntax {
            short_values: "uC",
            ..PLAIN
        },
        operands: 0,
        assignments: false,
    },
    Runner {
        names: &["xargs"],
        syntax: OptionSyntax {
            short_values: "adEILnPs",
            short_optional: "eil",
            long_values: &[
                "arg-file",
                "delimiter",
                "max-args",
                "max-procs",
                "max-chars",
                "process-slot-var",
            ],
            ..PLAIN
        },
        operands: 0,
        assignments: false,
    },
    Runner {
        names: &["timeout"],
        syntax: OptionSyntax {
            short_values: "sk",
            long_values: &["signal", "kill-after"],
            ..PLAIN
        },
        operands: 1,
        assignments: false,
    },
    Runner {
        names: &["nice"],
        syntax: OptionSyntax {
            short_values: "n",
            long_values: &["adjustment"],
            ..PLAIN
        },
        operands: 0,
        assignments: false,
    },
    Runner {
        names: &["ionice"],
        syntax: OptionSyntax {
            short_values: "cnpPu",
            long_values: &["class", "classdata", "pid", "pgid", "uid"],
            ..PLAIN
        },
        operands: 0,
        assignments: false,
    },
    Runner {
        names: &["stdbuf"],
        syntax: OptionSyntax {
            short_values: "ioe",
            long_values: &["input", "output", "error"],
            ..PLAIN
        },
        operands: 0,
        assignments: false,
    },
    Runner {
        names: &["time"],
        syntax: OptionSyntax {
            short_values: "fo",
            long_values: &["format", "output"],
            ..PLAIN
        },
        operands: 0,
        assignments: false,
    },
    Runner {
        names: &["exec"],
        syntax: OptionSyntax {
            short_values: "a",
            ..PLAIN
        },
        operands: 0,
        assignments: false,
    },
    Runner {
        names: &["strace", "ltrace"],
        syntax: OptionSyntax {
            short_values: "abeEIoOpPsSuUX",
            long_values: &["output", "signal", "trace", "attach", "user", "env"],
            ..PLAIN
        },
        operands: 0,
        assignments: false,
    },
    Runner {
        names: &["taskset", "chrt", "chroot"],
        syntax: OptionSyntax {
            short_values: "TPD",
            long_values: &[
                "userspec",
                "groups",
                "sched-runtime",
                "sched-period",
                "sched-deadline",
            ],
            ..PLAIN
        },
        operands: 1,
        assignments: false,
    },
    Runner {
        names: &[
            "nohup",
            "setsid",
            "builtin",
            "unshare",
            "nsenter",
            "systemd-run",
            "fakeroot",
            "firejail",
            "pkexec",
            "setpriv",
            "prlimit",
            "cpulimit",
            "caffeinate",
            "unbuffer",
            "catchsegv",
        ],
        syntax: OptionSyntax {
            short_values: "uSGtw",
            long_values: &[
                "user", "setuid", "setgid", "target", "unit", "property", "limit",
            ],
            ..PLAIN
        },
        operands: 0,
        assignments: false,
    },
];

/// What `words` (a command, program first) runs besides itself.
pub(super) fn inner(words: &[&str]) -> Vec<Inner> {
    let Some(first) = words.first() else {
        return Vec::new();
    };
    let n = words.len();
    let name = program_name(first);
    match name {
        "busybox" => busybox(words),
        _ if SHELLS.contains(&name) => shell_script(words),
        "eval" if n > 1 => vec![Inner::JoinedScript(1..n)],
        "env" => env(words),
        "su" | "runuser" => script_option(
            words,
            &OptionSyntax {
                short_values: "cgGsw",
                long_values: &[
                    "command",
                    "group",
                    "supp-group",
                    "shell",
                    "whitelist-environment",
                ],
                ..PLAIN
            },
            'c',
            "--command",
        ),
        "command" => {
            // `command -v NAME` only looks the name up.
            let (i, looks_up) = skip_options(words, 1, &PLAIN, 'v');
            let (_, describes) = skip_options(words, 1, &PLAIN, 'V');
            if looks_up || describes {
                Vec::new()
            } else {
                command_from(words, i)
            }
        }
        "flock" => {
            let syntax = OptionSyntax {
                short_values: "wEc",
                long_values: &["timeout", "conflict-exit-code", "command"],
                ..PLAIN
            };
            let found = script_option(words, &syntax, 'c', "--command");
            if found.is_empty() {
                command_from(words, skip_options(words, 1, &syntax, '\0').0 + 1)
            } else {
                found
            }
        }
        "script" => script_option(
            words,
            &OptionSyntax {
                short_values: "cEIOBTm",
                long_values: &[
                    "command",
                    "echo",
                    "log-in",
                    "log-out",
                    "log-io",
                    "log-timing",
                ],
                ..PLAIN
            },
            'c',
            "--command",
        ),
        "watch" => watch(words),
        "parallel" => parallel(words),
        "gdb" | "lldb" | "valgrind" => {
            match words.iter().position(|w| *w == "--args" || *w == "--") {
                Some(i) => command_from(words, i + 1),
                None if name == "valgrind" => {
                    command_from(words, skip_options(words, 1, &PLAIN, '\0').0)
                }
                None => Vec::new(),
            }
        }
        "find" => find_exec(words),
        _ => match RUNNERS.iter().find(|r| r.names.contains(&name)) {
            Some(runner) => {
                let mut i = skip_options(words, 1, &runner.syntax, '\0').0 + runner.operands;
                while runner.assignments && words.get(i).is_some_and(|w| is_assignment(w)) {
                    i += 1;
                }
                command_from(words, i)
            }
            None => Vec::new(),
        },
    }
}

/// The words from `i` on, as a command, when there are any.
fn command_from(words: &[&str], i: usize) -> Vec<Inner> {
    if i < words.len() {
        vec![Inner::Command(i..words.len())]
    } else {
        Vec::new()
    }
}

/// `busybox APPLET ARGS`: the applet is the command (or a shell with its script).
fn busybox(words: &[&str]) -> Vec<Inner> {
    match words.get(1) {
        Some(w) if !w.starts_with('-') => {
            if SHELLS.contains(&program_name(w)) {
                shell_script(&words[1..])
                    .into_iter()
                    .map(|inner| match inner {
                        Inner::Script(i) => Inner::Script(i + 1),
                        Inner::ScriptValue(i) => Inner::ScriptValue(i + 1),
                        Inner::Command(r) => Inner::Command(r.start + 1..r.end + 1),
                        Inner::JoinedScript(r) => Inner::JoinedScript(r.start + 1..r.end + 1),
                    })
                    .collect()
            } else {
                command_from(words, 1)
            }
        }
        _ => Vec::new(),
    }
}

/// `watch [OPTION]… COMMAND…`: the words joined are a script (`-x`: a command).
fn watch(words: &[&str]) -> Vec<Inner> {
    let syntax = OptionSyntax {
        short_values: "nq",
        short_optional: "d",
        long_values: &["interval"],
        ..PLAIN
    };
    let (i, exec) = skip_options(words, 1, &syntax, 'x');
    if i >= words.len() {
        Vec::new()
    } else if exec {
        vec![Inner::Command(i..words.len())]
    } else {
        vec![Inner::JoinedScript(i..words.len())]
    }
}

/// `parallel [OPTION]… COMMAND… ::: ARGS`: the command words joined are a script.
fn parallel(words: &[&str]) -> Vec<Inner> {
    let syntax = OptionSyntax {
        short_values: "jSaIdE",
        long_values: &["jobs", "sshlogin", "arg-file", "delimiter"],
        ..PLAIN
    };
    let i = skip_options(words, 1, &syntax, '\0').0;
    let end = words
        .iter()
        .position(|w| w.starts_with(":::"))
        .unwrap_or(words.len())
        .max(i);
    if i < end {
        vec![Inner::JoinedScript(i..end)]
    } else {
        Vec::new()
    }
}

/// `env [OPTION]… [NAME=VALUE]… [COMMAND [ARG]…]`, and `env -S STRING`.
fn env(words: &[&str]) -> Vec<Inner> {
    let syntax = OptionSyntax {
        short_values: "uCS",
        long_values: &["unset", "chdir", "split-string"],
        ..PLAIN
    };
    // `-S STRING` splits STRING into a command: judge it as a script.
    for (i, w) in words.iter().enumerate().skip(1) {
        if *w == "--" || !w.starts_with('-') {
            break;
        }
        if w.starts_with("--split-string=") {
            return vec![Inner::ScriptValue(i)];
        }
        if *w == "-S" || *w == "--split-string" {
            return vec![Inner::Script(i + 1)];
        }
    }
    let mut i = skip_options(words, 1, &syntax, '\0').0;
    while words.get(i).is_some_and(|w| is_assignment(w)) {
        i += 1;
    }
    if i < words.len() {
        vec![Inner::Command(i..words.len())]
    } else {
        Vec::new()
    }
}

/// `NAME=VALUE`.
fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// A shell's script: the first operand after options that include `-c`.
fn shell_script(words: &[&str]) -> Vec<Inner> {
    let syntax = OptionSyntax {
        short_values: "oO",
        long_values: &["rcfile", "init-file", "command"],
        plus_options: true,
        ..PLAIN
    };
    for (i, w) in words.iter().enumerate().skip(1) {
        if w.starts_with("--command=") {
            return vec![Inner::ScriptValue(i)];
        }
        if *w == "--command" {
            return vec![Inner::Script(i + 1)];
        }
    }
    let (i, has_c) = skip_options(words, 1, &syntax, 'c');
    if has_c && i < words.len() {
        vec![Inner::Script(i)]
    } else {
        Vec::new()
    }
}

/// A `-c CMD` (or `--command CMD`) script option.
fn script_option(words: &[&str], syntax: &OptionSyntax, short: char, long: &str) -> Vec<Inner> {
    let mut i = 1;
    while let Some(w) = words.get(i) {
        if *w == "--" || !w.starts_with('-') || w.len() < 2 {
            // `su USER -c CMD`: options may follow the user.
            i += 1;
            continue;
        }
        if *w == long {
            return vec![Inner::Script(i + 1)];
        }
        if w.starts_with(&format!("{long}=")) {
            return vec![Inner::ScriptValue(i)];
        }
        if !w.starts_with("--") {
            let rest: Vec<char> = w.chars().skip(1).collect();
            for (k, c) in rest.iter().enumerate() {
                if *c == short {
                    return if k + 1 < rest.len() {
                        vec![Inner::Script(i)]
                    } else {
                        vec![Inner::Script(i + 1)]
                    };
                }
                if syntax.short_values.contains(*c) {
                    if k + 1 == rest.len() {
                        i += 1;
                    }
                    break;
                }
            }
        }
        i += 1;
    }
    Vec::new()
}

/// The commands of `find … -exec CMD … ;` (also `-execdir`, `-ok`, `-okdir`).
fn find_exec(words: &[&str]) -> Vec<Inner> {
    let mut found = Vec::new();
    let mut i = 1;
    while i < words.len() {
        if matches!(words[i], "-exec" | "-execdir" | "-ok" | "-okdir") {
            let start = i + 1;
            let end = (start..words.len())
                .find(|&k| words[k] == ";" || words[k] == "+")
                .unwrap_or(words.len());
            if start < end {
                found.push(Inner::Command(start..end));
            }
            i = end;
        }
        i += 1;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inner_of(line: &str) -> Vec<String> {
        let words: Vec<&str> = line.split(' ').collect();
        inner(&words)
            .into_iter()
            .map(|i| match i {
                Inner::Command(r) | Inner::JoinedScript(r) => words[r].join(" "),
                Inner::Script(k) => format!("script:{}", words.get(k).unwrap_or(&"?")),
                Inner::ScriptValue(k) => format!("value:{}", words.get(k).unwrap_or(&"?")),
            })
            .collect()
    }

    #[test]
    fn wrapped_commands_are_found() {
        assert_eq!(inner_of("env -i A=1 rm x"), ["rm x"]);
        assert_eq!(inner_of("env -u HOME rm x"), ["rm x"]);
        assert_eq!(inner_of("env -S x"), ["script:x"]);
        assert_eq!(inner_of("env"), Vec::<String>::new());
        assert_eq!(inner_of("sudo -u root rm x"), ["rm x"]);
        assert_eq!(inner_of("sudo A=1 rm x"), ["rm x"]);
        assert_eq!(inner_of("timeout -s KILL 5 rm x"), ["rm x"]);
        assert_eq!(inner_of("nice -n 5 rm x"), ["rm x"]);
        assert_eq!(inner_of("nice -5 rm x"), ["rm x"]);
        assert_eq!(inner_of("xargs -0 -n 1 rm"), ["rm"]);
        assert_eq!(inner_of("xargs -i rm {}"), ["rm {}"]);
        assert_eq!(inner_of("xargs -I {} rm {}"), ["rm {}"]);
        assert_eq!(inner_of("/usr/bin/nohup rm x"), ["rm x"]);
        assert_eq!(inner_of("command -v rm"), Vec::<String>::new());
        assert_eq!(inner_of("command rm x"), ["rm x"]);
        assert_eq!(inner_of("sh -c x"), ["script:x"]);
        assert_eq!(inner_of("bash -xc x"), ["script:x"]);
        assert_eq!(inner_of("bash -o pipefail -c x"), ["script:x"]);
        assert_eq!(inner_of("bash script.sh"), Vec::<String>::new());
        assert_eq!(inner_of("su -c x root"), ["script:x"]);
        assert_eq!(inner_of("su root -c x"), ["script:x"]);
        assert_eq!(inner_of("su --command=x"), ["value:--command=x"]);
        assert_eq!(inner_of("bash --command=x"), ["value:--command=x"]);
        assert_eq!(inner_of("eval rm x"), ["rm x"]);
        assert_eq!(inner_of("watch -n 1 rm x"), ["rm x"]);
        assert_eq!(inner_of("busybox rm x"), ["rm x"]);
        assert_eq!(inner_of("busybox sh -c x"), ["script:x"]);
        assert_eq!(
            inner_of("find . -exec rm {} ; -execdir cat {} +"),
            ["rm {}", "cat {}"]
        );
        assert_eq!(inner_of("flock f rm x"), ["rm x"]);
        assert_eq!(inner_of("flock f -c x"), ["script:x"]);
        assert_eq!(inner_of("chroot / rm x"), ["rm x"]);
    }
}
