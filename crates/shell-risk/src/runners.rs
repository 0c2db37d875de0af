//! Wrappers and shells, as data: for each wrapper its options (which take a value), the
//! operands before the command it runs, the options that make it run something the judge
//! cannot see, and what it does without a command; then the wrappers whose syntax is their
//! own (`env -S`, `xargs`, `flock`, `watch`, `command`, `busybox`, `find -exec`). Shells,
//! and the wrappers that start one (`su`, `script`), are in [`shells`].
//!
//! Options are read exactly as listed (see [`optscan`](super::optscan)): an option that
//! is not listed — an abbreviation included — is not understood, and then the command it
//! runs is not known: the words that could start it are followed as guesses.

use super::optscan::{self, Options, NO_OPTIONS};
use super::shells;
use super::wrappers::{
    command_from, is_assignment, is_inert_variable, not_understood, Arg, Inner, Runs,
};

/// A wrapper that runs the command after its options and a fixed number of operands.
struct Runner {
    /// Its names.
    names: &'static [&'static str],
    /// Its options.
    options: Options,
    /// Operands between its options and the command (`timeout DURATION`, `chroot DIR`).
    operands: usize,
    /// `NAME=VALUE` words may come before the command (`sudo A=1 cmd`).
    assignments: bool,
    /// Options that make it run what the judge cannot see, and what.
    unseen: &'static [(&'static str, &'static str)],
    /// Without a command it starts a shell that reads its input.
    shell_without_command: bool,
}

const PLAIN_RUNNER: Runner = Runner {
    names: &[],
    options: NO_OPTIONS,
    operands: 0,
    assignments: false,
    unseen: &[],
    shell_without_command: false,
};

const RUNNERS: &[Runner] = &[
    Runner {
        names: &["sudo"],
        options: Options {
            flags: "AbBEeHiKklNnPSsVv",
            values: "aCcDgpRrTtUu",
            optional: "h",
            long_flags: &[
                "askpass",
                "background",
                "bell",
                "edit",
                "help",
                "login",
                "remove-timestamp",
                "reset-timestamp",
                "list",
                "non-interactive",
                "preserve-groups",
                "stdin",
                "shell",
                "version",
                "validate",
            ],
            long_values: &[
                "auth-type",
                "chdir",
                "chroot",
                "close-from",
                "group",
                "host",
                "login-class",
                "prompt",
                "role",
                "type",
                "command-timeout",
                "other-user",
                "user",
            ],
            long_optional: &["preserve-env"],
            ..NO_OPTIONS
        },
        assignments: true,
        unseen: &[
            ("-e", "edits files with an editor program"),
            ("--edit", "edits files with an editor program"),
        ],
        shell_without_command: true,
        ..PLAIN_RUNNER
    },
    Runner {
        names: &["doas"],
        options: Options {
            flags: "Lns",
            values: "auC",
            ..NO_OPTIONS
        },
        shell_without_command: true,
        ..PLAIN_RUNNER
    },
    Runner {
        names: &["timeout"],
        options: Options {
            flags: "fpv",
            values: "ks",
            long_flags: &[
                "foreground",
                "preserve-status",
                "verbose",
                "help",
                "version",
            ],
            long_values: &["kill-after", "signal"],
            ..NO_OPTIONS
        },
        operands: 1,
        ..PLAIN_RUNNER
    },
    Runner {
        names: &["nice"],
        options: Options {
            values: "n",
            long_values: &["adjustment"],
            numbers: true,
            ..NO_OPTIONS
        },
        ..PLAIN_RUNNER
    },
    Runner {
        names: &["stdbuf"],
        options: Options {
            values: "ioe",
            long_values: &["input", "output", "error"],
            ..NO_OPTIONS
        },
        ..PLAIN_RUNNER
    },
    Runner {
        names: &["nohup", "builtin"],
        ..PLAIN_RUNNER
    },
    Runner {
        names: &["setsid"],
        options: Options {
            flags: "cfwhV",
            long_flags: &["ctty", "fork", "wait", "help", "version"],
            ..NO_OPTIONS
        },
        ..PLAIN_RUNNER
    },
    Runner {
        names: &["chroot"],
        options: Options {
            long_flags: &["skip-chdir", "help", "version"],
            long_values: &["userspec", "groups"],
            ..NO_OPTIONS
        },
        operands: 1,
        shell_without_command: true,
        ..PLAIN_RUNNER
    },
    Runner {
        names: &["taskset"],
        options: Options {
            flags: "acphV",
            long_flags: &["all-tasks", "cpu-list", "pid", "help", "version"],
            ..NO_OPTIONS
        },
        operands: 1,
        ..PLAIN_RUNNER
    },
    Runner {
        names: &["chrt"],
        options: Options {
            flags: "abdfhimoprRvV",
            values: "TPD",
            long_flags: &[
                "all-tasks",
                "batch",
                "deadline",
                "fifo",
                "idle",
                "other",
                "rr",
                "reset-on-fork",
                "max",
                "pid",
                "verbose",
                "help",
                "version",
            ],
            long_values: &["sched-runtime", "sched-period", "sched-deadline"],
            ..NO_OPTIONS
        },
        operands: 1,
        ..PLAIN_RUNNER
    },
    Runner {
        names: &["ionice"],
        options: Options {
            flags: "thV",
            values: "cnpPu",
            long_flags: &["ignore", "help", "version"],
            long_values: &["class", "classdata", "pid", "pgid", "uid"],
            ..NO_OPTIONS
        },
        ..PLAIN_RUNNER
    },
    Runner {
        names: &["time"],
        options: Options {
            flags: "apqvV",
            values: "fo",
            long_flags: &[
                "append",
                "portability",
                "quiet",
                "verbose",
                "help",
                "version",
            ],
            long_values: &["format", "output"],
            ..NO_OPTIONS
        },
        ..PLAIN_RUNNER
    },
];

/// What a wrapper of the table runs; `None` when `name` is not one.
pub(super) fn runner(name: &str, words: &[&str]) -> Option<Runs> {
    let runner = RUNNERS.iter().find(|r| r.names.contains(&name))?;
    let read = match optscan::read(words, 1, &runner.options, false) {
        Ok(read) => read,
        Err(why) => return Some(not_understood(name, &why, words)),
    };
    let mut runs = Runs::of(Vec::new());
    for (option, why) in runner.unseen {
        if read.has(&[option]) {
            runs.also_unseen(format!("'{name} {option}' {why}"));
        }
    }
    let mut i = read.next + runner.operands;
    while runner.assignments && words.get(i).is_some_and(|w| is_assignment(w)) {
        check_assignment(name, words[i], &mut runs);
        i += 1;
    }
    if i < words.len() {
        runs.inner = command_from(words, i);
    } else if runner.shell_without_command {
        runs.also_unseen(format!(
            "'{name}' without a command starts a shell that reads its input"
        ));
    }
    Some(runs)
}

/// `NAME=VALUE` given to a wrapper: a variable that can change what runs is not seen.
fn check_assignment(name: &str, word: &str, runs: &mut Runs) {
    let variable = word.split_once('=').map_or(word, |(n, _)| n);
    if !is_inert_variable(variable) {
        runs.also_unseen(format!(
            "'{name}' sets the variable '{variable}', which can change what runs"
        ));
    }
}

/// The wrappers whose syntax is their own; `None` when `name` is not one.
pub(super) fn special(name: &str, words: &[&str]) -> Option<Runs> {
    Some(match name {
        "env" => {
            let items = words
                .iter()
                .enumerate()
                .map(|(i, w)| (Arg::Word(i), (*w).to_string()))
                .collect::<Vec<_>>();
            env(&items, 0)
        }
        "xargs" => xargs(words),
        "su" | "runuser" => shells::su(name, words),
        "script" => shells::script(words),
        "flock" => flock(words),
        "watch" => watch(words),
        "command" => command(words),
        "busybox" | "toybox" => match words.get(1) {
            Some(applet) if !applet.starts_with('-') => Runs::of(command_from(words, 1)),
            _ => Runs::nothing(),
        },
        "find" => find(words),
        _ => return None,
    })
}

const ENV: Options = Options {
    flags: "i0v",
    values: "uCSa",
    long_flags: &[
        "ignore-environment",
        "null",
        "debug",
        "list-signal-handling",
        "help",
        "version",
    ],
    long_values: &["unset", "chdir", "split-string", "argv0"],
    long_optional: &["block-signal", "default-signal", "ignore-signal"],
    ..NO_OPTIONS
};

/// How many times `env -S` inside `env -S` is followed.
const MAX_SPLITS: usize = 4;

/// `env [OPTION]… [-] [NAME=VALUE]… [COMMAND [ARG]…]`. `-S STRING` splits STRING into words
/// that take its place, and the options are read again from the start (as env does).
/// `items`: each word and where it comes from.
fn env(items: &[(Arg, String)], depth: usize) -> Runs {
    let texts: Vec<&str> = items.iter().map(|(_, t)| t.as_str()).collect();
    let read = match optscan::read(&texts, 1, &ENV, false) {
        Ok(read) => read,
        Err(why) => return from_items(not_understood("env", &why, &texts), items),
    };
    // The first `-S`: env splits it and reads everything after it again.
    if let Some(split) = read
        .options
        .iter()
        .find(|o| o.is(&["-S", "--split-string"]))
    {
        if depth >= MAX_SPLITS {
            return Runs::unseen("'env -S' splits too many times to follow");
        }
        let source = match &items[split.value_word].0 {
            Arg::Word(i) | Arg::Part { word: i, .. } => *i,
            Arg::Added => 0,
        };
        let (parts, sure) = split_string(split.value.unwrap_or_default());
        let mut again: Vec<(Arg, String)> = vec![items[0].clone()];
        again.extend(parts.into_iter().map(|text| {
            (
                Arg::Part {
                    word: source,
                    text: text.clone(),
                },
                text,
            )
        }));
        again.extend(items[split.value_word + 1..].iter().cloned());
        let mut runs = env(&again, depth + 1);
        if !sure {
            runs.also_unseen("'env -S' uses escapes or variables the judge does not expand");
        }
        return runs;
    }
    let mut runs = Runs::of(Vec::new());
    let mut i = read.next;
    if texts.get(i) == Some(&"-") {
        i += 1;
    }
    while texts.get(i).is_some_and(|w| is_assignment(w)) {
        check_assignment("env", texts[i], &mut runs);
        i += 1;
    }
    runs.inner = command_from(&texts, i);
    from_items(runs, items)
}

/// `runs`, whose word indices are into `items`, with each word's own origin.
fn from_items(mut runs: Runs, items: &[(Arg, String)]) -> Runs {
    let origin = |k: usize| items.get(k).map_or(Arg::Added, |(a, _)| a.clone());
    let word_of = |k: usize| match origin(k) {
        Arg::Word(i) | Arg::Part { word: i, .. } => i,
        Arg::Added => 0,
    };
    let map_args = |args: Vec<Arg>| {
        args.into_iter()
            .map(|a| match a {
                Arg::Word(k) => origin(k),
                other => other,
            })
            .collect()
    };
    runs.inner = runs
        .inner
        .into_iter()
        .map(|inner| match inner {
            Inner::Command(args) => Inner::Command(map_args(args)),
            Inner::Guess(args) => Inner::Guess(map_args(args)),
            Inner::Script { word, text } => Inner::Script {
                word: word_of(word),
                text,
            },
            Inner::JoinedScript(range) if !range.is_empty() => {
                Inner::JoinedScript(word_of(range.start)..word_of(range.end - 1) + 1)
            }
            Inner::JoinedScript(range) => Inner::JoinedScript(range),
        })
        .collect();
    runs
}

/// The words of `env -S STRING`: split at blanks, with `'…'` and `"…"` quoting, up to a
/// `#` that starts a word; `false` when it uses a backslash or `$` (escapes and `${NAME}`,
/// which env expands itself) or leaves a quote open.
fn split_string(text: &str) -> (Vec<String>, bool) {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut in_word = false;
    let mut sure = true;
    let mut quote: Option<char> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut current));
                    in_word = false;
                }
            }
            (None, '#') if !in_word => break,
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (Some(q), c) if c == q => quote = None,
            (_, '\\') => {
                sure = false;
                if let Some(next) = chars.next() {
                    current.push(next);
                }
                in_word = true;
            }
            (_, c) => {
                if c == '$' && quote != Some('\'') {
                    sure = false;
                }
                current.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        sure = false;
    }
    if in_word {
        words.push(current);
    }
    (words, sure)
}

const XARGS: Options = Options {
    flags: "0prtxo",
    values: "aEdILnPs",
    optional: "eil",
    long_flags: &[
        "null",
        "interactive",
        "verbose",
        "exit",
        "no-run-if-empty",
        "open-tty",
        "show-limits",
        "help",
        "version",
    ],
    long_values: &[
        "arg-file",
        "delimiter",
        "max-args",
        "max-procs",
        "max-chars",
        "process-slot-var",
    ],
    long_optional: &["eof", "replace", "max-lines"],
    ..NO_OPTIONS
};

/// `xargs [OPTION]… [COMMAND [ARG]…]`: the command gets what xargs reads as arguments
/// (shown as `{}`), or, with `-I R`, in place of `R`.
fn xargs(words: &[&str]) -> Runs {
    let read = match optscan::read(words, 1, &XARGS, false) {
        Ok(read) => read,
        Err(why) => return not_understood("xargs", &why, words),
    };
    let mut runs = Runs::of(Vec::new());
    let Some(program) = words.get(read.next) else {
        return runs;
    };
    let replace = read
        .last(&["-I", "-i", "--replace"])
        .map(|o| o.value.unwrap_or("{}"));
    let mut args: Vec<Arg> = (read.next..words.len()).map(Arg::Word).collect();
    match replace {
        Some(r) if r.is_empty() || program.contains(r) => {
            runs.also_unseen("'xargs -I' puts what it reads into the program's name".to_string())
        }
        Some(_) => {}
        None => args.push(Arg::Added),
    }
    runs.inner = vec![Inner::Command(args)];
    runs
}

const FLOCK: Options = Options {
    flags: "sxeunoFhV",
    values: "wE",
    long_flags: &[
        "shared",
        "exclusive",
        "unlock",
        "nonblock",
        "nb",
        "close",
        "no-fork",
        "verbose",
        "fcntl",
        "help",
        "version",
    ],
    long_values: &["wait", "timeout", "conflict-exit-code"],
    ..NO_OPTIONS
};

/// `flock [OPTION]… FILE COMMAND…` and `flock [OPTION]… FILE -c SCRIPT`.
fn flock(words: &[&str]) -> Runs {
    let read = match optscan::read(words, 1, &FLOCK, false) {
        Ok(read) => read,
        Err(why) => return not_understood("flock", &why, words),
    };
    let after = read.next + 1;
    match words.get(after) {
        Some(&("-c" | "--command")) => match words.get(after + 1) {
            Some(text) => Runs::of(vec![Inner::Script {
                word: after + 1,
                text: (*text).to_string(),
            }]),
            None => Runs::of(Vec::new()),
        },
        _ => Runs::of(command_from(words, after)),
    }
}

const WATCH: Options = Options {
    flags: "bcCeghprtwxv",
    values: "nq",
    optional: "d",
    long_flags: &[
        "beep", "color", "no-color", "errexit", "chgexit", "precise", "no-rerun", "no-title",
        "no-wrap", "exec", "help", "version",
    ],
    long_values: &["interval", "equexit"],
    long_optional: &["differences"],
    ..NO_OPTIONS
};

/// `watch [OPTION]… COMMAND…`: the words joined are a script (`-x`: a command).
fn watch(words: &[&str]) -> Runs {
    let read = match optscan::read(words, 1, &WATCH, false) {
        Ok(read) => read,
        Err(why) => return not_understood("watch", &why, words),
    };
    if read.next >= words.len() {
        Runs::of(Vec::new())
    } else if read.has(&["-x", "--exec"]) {
        Runs::of(command_from(words, read.next))
    } else {
        Runs::of(vec![Inner::JoinedScript(read.next..words.len())])
    }
}

/// `command [-pvV] COMMAND…`: with `-v` or `-V` it only looks the name up.
fn command(words: &[&str]) -> Runs {
    let table = Options {
        flags: "pvV",
        ..NO_OPTIONS
    };
    match optscan::read(words, 1, &table, false) {
        Ok(read) if read.has(&["-v", "-V"]) => Runs::of(Vec::new()),
        Ok(read) => Runs::of(command_from(words, read.next)),
        Err(why) => not_understood("command", &why, words),
    }
}

/// The commands of `find … -exec CMD … ;` (also `-execdir`, `-ok`, `-okdir`); a command
/// whose program is a found file (`-exec {} ;`) is not seen.
fn find(words: &[&str]) -> Runs {
    let mut runs = Runs::of(Vec::new());
    let mut i = 1;
    while i < words.len() {
        if matches!(words[i], "-exec" | "-execdir" | "-ok" | "-okdir") {
            let start = i + 1;
            let end = (start..words.len())
                .find(|&k| words[k] == ";" || words[k] == "+")
                .unwrap_or(words.len());
            if start < end {
                if words[start].contains("{}") {
                    runs.also_unseen(format!(
                        "'find {}' runs the files it finds as programs",
                        words[i]
                    ));
                }
                runs.inner
                    .push(Inner::Command((start..end).map(Arg::Word).collect()));
            }
            i = end;
        }
        i += 1;
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::super::what_runs::shown;

    fn none() -> Vec<String> {
        Vec::new()
    }

    #[test]
    fn wrapped_commands_are_found() {
        assert_eq!(shown("env -i a=1 rm x"), ["rm x"]);
        assert_eq!(shown("env -u HOME rm x"), ["rm x"]);
        assert_eq!(shown("env - rm x"), ["rm x"]);
        assert_eq!(shown("env"), none());
        assert_eq!(shown("sudo -u root rm x"), ["rm x"]);
        assert_eq!(shown("sudo a=1 rm x"), ["rm x"]);
        assert_eq!(shown("timeout -s KILL 5 rm x"), ["rm x"]);
        assert_eq!(shown("timeout --signal KILL 5 rm x"), ["rm x"]);
        assert_eq!(shown("timeout -sKILL -k1 5 rm x"), ["rm x"]);
        assert_eq!(shown("nice -n 5 rm x"), ["rm x"]);
        assert_eq!(shown("nice -5 rm x"), ["rm x"]);
        assert_eq!(shown("nice --adjustment=5 rm x"), ["rm x"]);
        assert_eq!(shown("stdbuf -o0 --error 0 rm x"), ["rm x"]);
        assert_eq!(shown("xargs -0 -n 1 rm"), ["rm {}"]);
        assert_eq!(shown("xargs --max-args 1 rm -f"), ["rm -f {}"]);
        assert_eq!(shown("xargs -i rm {}"), ["rm {}"]);
        assert_eq!(shown("xargs -I F rm F"), ["rm F"]);
        assert_eq!(shown("/usr/bin/nohup rm x"), ["rm x"]);
        assert_eq!(shown("command -v rm"), none());
        assert_eq!(shown("command rm x"), ["rm x"]);
        assert_eq!(shown("watch -n 1 rm x"), ["script:rm x"]);
        assert_eq!(shown("watch -x rm x"), ["rm x"]);
        assert_eq!(shown("busybox rm x"), ["rm x"]);
        assert_eq!(
            shown("find . -exec rm {} ; -execdir cat {} +"),
            ["rm {}", "cat {}"]
        );
        assert_eq!(shown("flock f rm x"), ["rm x"]);
        assert_eq!(shown("flock -w 1 f -c x"), ["script:x"]);
        assert_eq!(shown("chroot / rm x"), ["rm x"]);
    }

    #[test]
    fn env_split_string_takes_the_place_of_its_word() {
        assert_eq!(shown("env -Srm"), ["rm"]);
        assert_eq!(shown("env -S rm v5"), ["rm v5"]);
        assert_eq!(shown("env --split-string=rm v6"), ["rm v6"]);
        assert_eq!(shown("env -iS -u"), ["!"]);
        assert_eq!(shown("env -S rm -S x"), ["rm -S x"]);
        let words = ["env", "-S", "-i A=1 rm 'a b' # c", "d"];
        let runs = super::super::what_runs::runs(&words);
        assert_eq!(
            runs.unseen,
            Some("'env' sets the variable 'A', which can change what runs".into())
        );
        let [super::Inner::Command(args)] = runs.inner.as_slice() else {
            panic!("{runs:?}")
        };
        let texts: Vec<String> = args
            .iter()
            .map(|a| match a {
                super::Arg::Part { text, word } => format!("{text}@{word}"),
                super::Arg::Word(i) => words[*i].to_string(),
                super::Arg::Added => "{}".into(),
            })
            .collect();
        assert_eq!(texts, ["rm@2", "a b@2", "d"]);
        let (_, sure) = super::split_string("rm ${X}");
        assert!(!sure);
        let (_, sure) = super::split_string("rm \\c x");
        assert!(!sure);
    }

    #[test]
    fn options_not_understood_leave_the_command_unknown() {
        for line in [
            "xargs --max-a 1 rm",
            "timeout --sig KILL 5 rm v8",
            "nice --adj 5 rm v9",
            "stdbuf --out 0 rm v24",
            "env --split-str=x rm",
            "sudo --frob rm",
            "flock --wai 1 f rm",
            "watch --int 1 rm",
        ] {
            let shown = shown(line);
            assert_eq!(shown.last().map(String::as_str), Some("!"), "{line}");
            assert!(
                shown.iter().any(|s| s.starts_with("?rm")),
                "{line}: {shown:?}"
            );
        }
        assert_eq!(
            shown("xargs -I X X v").last().map(String::as_str),
            Some("!")
        );
        assert_eq!(
            shown("find . -exec {} ;").last().map(String::as_str),
            Some("!")
        );
        assert_eq!(shown("env PATH=. ls").last().map(String::as_str), Some("!"));
        assert_eq!(shown("env LANG=C ls"), ["ls"]);
        assert_eq!(shown("sudo -e f"), ["f", "!"]);
        assert_eq!(shown("chroot /x"), ["!"]);
    }
}
