//! Shells, and the wrappers that start one (`su`, `script`): the script of `-c` is followed;
//! a script file, the shell's input (a pipe, a here-document), start-up files, and the
//! syntax of a shell that is not POSIX `sh` are not seen. Options are read from tables, as
//! for the other wrappers (see [`runners`](super::runners)).

use super::optscan::{self, Options, NO_OPTIONS};
use super::wrappers::not_understood;
use super::wrappers::{Arg, Inner, Runs};

const SU: Options = Options {
    flags: "flmpP",
    values: "cCgGsw",
    long_flags: &[
        "fast",
        "login",
        "preserve-environment",
        "pty",
        "help",
        "version",
    ],
    long_values: &[
        "command",
        "session-command",
        "group",
        "supp-group",
        "shell",
        "whitelist-environment",
    ],
    ..NO_OPTIONS
};

const RUNUSER: Options = Options {
    values: "cCgGswu",
    long_values: &[
        "command",
        "session-command",
        "group",
        "supp-group",
        "shell",
        "whitelist-environment",
        "user",
    ],
    ..SU
};

/// `su [OPTION]… [-] [USER [ARG]…]` and `runuser`: the `-c` script, or `runuser -u USER
/// COMMAND`; a shell of its own choice or reading its input is not seen.
pub(super) fn su(name: &str, words: &[&str]) -> Runs {
    let table = if name == "runuser" { &RUNUSER } else { &SU };
    let read = match optscan::read(words, 1, table, true) {
        Ok(read) => read,
        Err(why) => return not_understood(name, &why, words),
    };
    let mut runs = Runs::of(Vec::new());
    if read.has(&["-s", "--shell"]) {
        runs.also_unseen(format!("'{name} -s' runs the shell program it is given"));
    }
    let operands: Vec<usize> = read
        .operands
        .iter()
        .copied()
        .skip_while(|&i| words[i] == "-")
        .collect();
    if read.has(&["-u", "--user"]) {
        runs.inner = vec![Inner::Command(
            operands.into_iter().map(Arg::Word).collect(),
        )];
        return runs;
    }
    match read.last(&["-c", "--command", "-C", "--session-command"]) {
        Some(script) => runs.inner.push(Inner::Script {
            word: script.value_word,
            text: script.value.unwrap_or_default().to_string(),
        }),
        None => runs.also_unseen(format!("'{name}' starts a shell that reads its input")),
    }
    if operands.len() > 1 {
        runs.also_unseen(format!("'{name}' passes arguments to the user's shell"));
    }
    runs
}

const SCRIPT: Options = Options {
    flags: "aefqhV",
    values: "cEIOBTmo",
    optional: "t",
    long_flags: &[
        "append", "return", "flush", "force", "quiet", "help", "version",
    ],
    long_values: &[
        "command",
        "echo",
        "log-in",
        "log-out",
        "log-io",
        "log-timing",
        "logging-format",
        "output-limit",
    ],
    long_optional: &["timing"],
    ..NO_OPTIONS
};

/// `script [OPTION]… [FILE]`: the `-c` script, else a shell that reads its input.
pub(super) fn script(words: &[&str]) -> Runs {
    let read = match optscan::read(words, 1, &SCRIPT, true) {
        Ok(read) => read,
        Err(why) => return not_understood("script", &why, words),
    };
    match read.last(&["-c", "--command"]) {
        Some(c) => Runs::of(vec![Inner::Script {
            word: c.value_word,
            text: c.value.unwrap_or_default().to_string(),
        }]),
        None => Runs::unseen("'script' starts a shell that reads its input"),
    }
}

/// Shells that read POSIX `sh` syntax, as the judge does.
const POSIX_SHELLS: &[&str] = &["sh", "bash", "dash", "ash", "rbash", "yash"];

const SH: Options = Options {
    flags: "abcefhikmnprstuvxBCDEHPTl",
    values: "oO",
    long_flags: &[
        "noediting",
        "noprofile",
        "norc",
        "posix",
        "restricted",
        "verbose",
        "version",
        "help",
        "dump-strings",
        "dump-po-strings",
        "pretty-print",
        "debugger",
        "login",
    ],
    long_values: &["rcfile", "init-file", "command"],
    plus: true,
    ..NO_OPTIONS
};

/// Shell options that make it read commands the judge cannot see.
const SH_UNSEEN: &[(&str, &str)] = &[
    ("-i", "runs interactively, reading its start-up files"),
    ("-l", "runs as a login shell, reading its profile"),
    ("--login", "runs as a login shell, reading its profile"),
    ("-s", "reads commands from its input"),
    ("--rcfile", "reads a start-up file"),
    ("--init-file", "reads a start-up file"),
    ("--debugger", "reads the debugger's start-up file"),
];

/// A shell: the script of `-c` (or `--command`); a script file or its input is not seen,
/// and neither is the syntax of a shell that is not POSIX `sh`.
pub(super) fn shell(name: &str, words: &[&str]) -> Runs {
    if !POSIX_SHELLS.contains(&name) {
        return Runs::unseen(format!(
            "'{name}' does not read the POSIX shell syntax the judge reads"
        ))
        .with(loose_script(words));
    }
    let read = match optscan::read(words, 1, &SH, false) {
        Ok(read) => read,
        Err(why) => {
            return Runs::unseen(format!("'{name}' {why}, so what it runs is not known"))
                .with(loose_script(words))
        }
    };
    let mut runs = Runs::of(Vec::new());
    for (option, why) in SH_UNSEEN {
        if read.has(&[option]) {
            runs.also_unseen(format!("'{name} {option}' {why}"));
        }
    }
    if let Some(c) = read.last(&["--command"]) {
        runs.inner.push(Inner::Script {
            word: c.value_word,
            text: c.value.unwrap_or_default().to_string(),
        });
    } else if read.has(&["-c"]) {
        if let Some(text) = words.get(read.next) {
            runs.inner.push(Inner::Script {
                word: read.next,
                text: (*text).to_string(),
            });
        }
    } else if read.next < words.len() {
        runs.also_unseen(format!(
            "'{name}' runs the script file '{}', which the judge cannot see",
            words[read.next]
        ));
    } else {
        runs.also_unseen(format!(
            "'{name}' runs the commands it reads from its input"
        ));
    }
    runs
}

/// Where a shell's `-c` script probably is, when its options are not understood.
fn loose_script(words: &[&str]) -> Vec<Inner> {
    for (i, w) in words.iter().enumerate().skip(1) {
        if let Some(text) = w.strip_prefix("--command=") {
            return vec![Inner::Script {
                word: i,
                text: text.to_string(),
            }];
        }
        let short_c = w.starts_with('-') && !w.starts_with("--") && w.contains('c');
        if short_c || *w == "--command" {
            if let Some(k) = (i + 1..words.len()).find(|&k| !words[k].starts_with(['-', '+'])) {
                return vec![Inner::Script {
                    word: k,
                    text: words[k].to_string(),
                }];
            }
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::super::what_runs::shown;

    #[test]
    fn shells_run_their_c_script_only() {
        assert_eq!(shown("sh -c x"), ["script:x"]);
        assert_eq!(shown("bash -xc x"), ["script:x"]);
        assert_eq!(shown("bash -o pipefail -c x"), ["script:x"]);
        assert_eq!(shown("bash --norc -c x a b"), ["script:x"]);
        assert_eq!(shown("bash --command=x"), ["script:x"]);
        for unseen in [
            "bash script.sh",
            "sh",
            "sh -s",
            "bash -",
            "bash -i -c x",
            "bash --rcfile r -c x",
            "bash -l -c x",
            "sh --foo -c x",
        ] {
            assert_eq!(
                shown(unseen).last().map(String::as_str),
                Some("!"),
                "{unseen}"
            );
        }
        assert_eq!(shown("zsh -c x"), ["script:x", "!"]);
        assert_eq!(shown("fish -c x"), ["script:x", "!"]);
    }

    #[test]
    fn su_and_script_run_their_c_script() {
        assert_eq!(shown("su -c x root"), ["script:x"]);
        assert_eq!(shown("su root -c x"), ["script:x"]);
        assert_eq!(shown("su --command=x"), ["script:x"]);
        assert_eq!(shown("runuser -u me rm x"), ["rm x"]);
        assert_eq!(shown("script -q -c x out"), ["script:x"]);
        assert_eq!(shown("su root"), ["!"]);
        assert_eq!(shown("su -s /bin/sh -c x root"), ["script:x", "!"]);
        assert_eq!(shown("script out"), ["!"]);
    }
}
