//! Options of other programs that make them run commands, as data: `tar --to-command`,
//! `tar -I`, `tar --checkpoint-action=exec=…`, `rsync -e`, a remote `host:path` (run
//! through a remote shell), `sort --compress-program`, `rg --pre`…
//!
//! These programs have many options and accept abbreviations of the long ones, so the
//! judge does not read their options in full: any word that could be one of these options
//! — a long option that is the start of one (`--to-c`), a cluster of short options holding
//! one of these letters anywhere — counts as one. Then the subjects are incomplete; where
//! the option's value is a command line given in full, it is followed as a script too.

use super::wrappers::{Inner, Runs};

/// Options of one program that run commands.
struct Launcher {
    /// The program's names.
    names: &'static [&'static str],
    /// Short options (letters) that run a program.
    short: &'static str,
    /// Long options that run a program; any start of one counts.
    long: &'static [&'static str],
    /// Long options that start like those above but run nothing, spelled in full.
    harmless: &'static [&'static str],
    /// Long options whose value is a command line, with a prefix to drop from the value.
    scripts: &'static [(&'static str, &'static str)],
    /// Its first word may be a cluster of short options without a dash (`tar xzf`).
    bare_cluster: bool,
    /// Operands like `host:path` run a remote shell.
    remote: bool,
    /// Options that keep `host:path` local.
    local: &'static [&'static str],
}

const NONE: Launcher = Launcher {
    names: &[],
    short: "",
    long: &[],
    harmless: &[],
    scripts: &[],
    bare_cluster: false,
    remote: false,
    local: &[],
};

const LAUNCHERS: &[Launcher] = &[
    Launcher {
        names: &["tar", "gtar", "bsdtar"],
        short: "IF",
        long: &[
            "to-command",
            "use-compress-program",
            "checkpoint-action",
            "info-script",
            "new-volume-script",
            "rsh-command",
            "rmt-command",
        ],
        harmless: &["checkpoint"],
        scripts: &[
            ("to-command", ""),
            ("use-compress-program", ""),
            ("checkpoint-action", "exec="),
            ("info-script", ""),
            ("new-volume-script", ""),
            ("rsh-command", ""),
        ],
        bare_cluster: true,
        remote: true,
        local: &["--force-local"],
    },
    Launcher {
        names: &["rsync"],
        short: "e",
        long: &["rsh", "rsync-path"],
        scripts: &[("rsh", ""), ("rsync-path", "")],
        remote: true,
        ..NONE
    },
    Launcher {
        names: &["sort"],
        long: &["compress-program"],
        scripts: &[("compress-program", "")],
        ..NONE
    },
    Launcher {
        names: &["rg"],
        long: &["pre", "hostname-bin"],
        scripts: &[("pre", ""), ("hostname-bin", "")],
        ..NONE
    },
    Launcher {
        names: &["wget"],
        long: &["use-askpass"],
        scripts: &[("use-askpass", "")],
        ..NONE
    },
    Launcher {
        names: &["zip"],
        short: "T",
        long: &["unzip-command"],
        scripts: &[("unzip-command", "")],
        ..NONE
    },
    Launcher {
        names: &["sdiff", "diff3"],
        long: &["diff-program"],
        scripts: &[("diff-program", "")],
        ..NONE
    },
    Launcher {
        names: &["pandoc"],
        short: "F",
        long: &["filter", "lua-filter"],
        ..NONE
    },
    Launcher {
        names: &["groff", "nroff", "troff"],
        short: "U",
        ..NONE
    },
];

/// What `words` runs through such options; `None` when the program is not listed.
pub(super) fn runs(name: &str, words: &[&str]) -> Option<Runs> {
    let l = LAUNCHERS.iter().find(|l| l.names.contains(&name))?;
    let mut runs = Runs::of(Vec::new());
    let local = words.iter().any(|w| l.local.contains(w));
    let mut options_done = false;
    for (i, w) in words.iter().enumerate().skip(1) {
        if !options_done && *w == "--" {
            options_done = true;
            continue;
        }
        if !options_done {
            if let Some(long) = w.strip_prefix("--") {
                let (option, value) = match long.split_once('=') {
                    Some((o, v)) => (o, Some((v, i))),
                    None => (long, words.get(i + 1).map(|v| (*v, i + 1))),
                };
                if launches(l, option) {
                    runs.also_unseen(format!("'{name} --{option}' runs a command"));
                    let script = l.scripts.iter().find(|(o, _)| *o == option);
                    if let (Some((_, prefix)), Some((value, word))) = (script, value) {
                        if let Some(text) = value.strip_prefix(prefix) {
                            runs.inner.push(Inner::Script {
                                word,
                                text: text.to_string(),
                            });
                        }
                    }
                }
                continue;
            }
            let cluster = if w.len() > 1 && w.starts_with('-') {
                Some(&w[1..])
            } else if i == 1 && l.bare_cluster {
                Some(*w)
            } else {
                None
            };
            if let Some(cluster) = cluster {
                if let Some(c) = cluster.chars().find(|c| l.short.contains(*c)) {
                    runs.also_unseen(format!("'{name} -{c}' runs a command"));
                }
                if w.starts_with('-') {
                    continue;
                }
            }
        }
        if l.remote && !local && is_remote(w) {
            runs.also_unseen(format!(
                "'{name}' reaches '{w}' through a remote shell command"
            ));
        }
    }
    Some(runs)
}

/// Whether `--option` may be one of `l`'s options that run commands (or an abbreviation).
fn launches(l: &Launcher, option: &str) -> bool {
    !option.is_empty()
        && !l.harmless.contains(&option)
        && l.long.iter().any(|o| o.starts_with(option))
}

/// `host:path`, `host::module`, `user@host:path` or a URL.
fn is_remote(word: &str) -> bool {
    if word.contains("://") {
        return true;
    }
    match word.find(':') {
        Some(colon) => colon > 0 && !word[..colon].contains('/'),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::super::what_runs::shown;

    #[test]
    fn options_that_run_commands_are_found() {
        assert_eq!(
            shown("tar -cf a.tar --checkpoint=1 --checkpoint-action=exec=rm x"),
            ["script:rm", "!"]
        );
        assert_eq!(shown("tar xf a.tar --to-command cat"), ["script:cat", "!"]);
        for line in [
            "tar xIf zstd a.tar",
            "tar -xI zstd -f a.tar",
            "tar --to-c=cat -xf a.tar",
            "tar --use=x -cf a .",
            "tar -cf host:a.tar .",
            "rsync -avze ssh a b",
            "rsync --rs=x a b",
            "rsync -a a host:b",
            "sort --compress-p=x f",
            "rg --pre x y",
            "zip -TT x a.zip f",
        ] {
            assert_eq!(shown(line).last().map(String::as_str), Some("!"), "{line}");
        }
        for line in [
            "tar -czf a.tar.gz src",
            "tar --checkpoint=10 -cf a.tar .",
            "tar --force-local -cf c:a.tar .",
            "rsync -a src/ dst/",
            "sort -u f",
            "rg --pretty x",
        ] {
            assert_eq!(shown(line), Vec::<String>::new(), "{line}");
        }
    }
}
