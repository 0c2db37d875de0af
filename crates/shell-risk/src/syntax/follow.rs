//! Following what a command runs (see [`wrappers`]): the command behind a wrapper, the
//! script of a shell, `eval` or `trap`, the guesses behind a wrapper whose options are not
//! understood; and noting what the judge cannot see, which leaves the line's subjects
//! incomplete: [`Runs::unseen`], a word the judge cannot read where it decides what runs, a
//! program given by a path outside the system's own folders.

use super::super::what_runs;
use super::super::words::WordInfo;
use super::super::wrappers::{Arg, Decides, Inner, Runs};
use super::{shorten, Cmd, Walker, MAX_SCRIPT_DEPTH};
use core_models::RiskLevel;

/// The system's own program folders: a program given by its path there (`/bin/rm`) is
/// judged like its name alone; any other path may be a script the judge cannot see.
const SYSTEM_FOLDERS: &[&str] = &[
    "/bin",
    "/sbin",
    "/usr/bin",
    "/usr/sbin",
    "/usr/local/bin",
    "/usr/local/sbin",
];

/// Something to follow once the command that runs it is recorded.
enum Follow {
    Command(Cmd),
    Script(String),
}

impl Walker {
    /// The line runs commands the judge cannot see, `why`: its subjects are incomplete.
    pub(super) fn unseen(&mut self, why: impl Into<String>) {
        self.find(RiskLevel::Medium, why);
        self.out.complete = false;
    }

    /// `cmd` runs what the judge cannot see through its own program, `why`: it is opaque
    /// (the line's subjects are incomplete, see [`Cmd::opaque`]).
    fn opaque(&mut self, cmd: &mut Cmd, why: impl Into<String>) {
        self.find(RiskLevel::Medium, why);
        cmd.opaque = true;
    }

    /// Record a command and follow what it runs (`env X`, `sh -c S`, `find -exec X ;`).
    pub(super) fn push(&mut self, mut cmd: Cmd, wrap_depth: usize) {
        let follow = {
            let texts: Vec<String> = cmd.words.iter().map(|w| w.text().to_string()).collect();
            let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
            let runs = what_runs::runs(&texts);
            self.check_program(&mut cmd);
            if let Some(why) = &runs.unseen {
                self.opaque(&mut cmd, why.clone());
            } else {
                self.check_deciding_words(&cmd, &runs);
            }
            self.what_to_follow(&cmd, runs)
        };
        self.out.commands.push(cmd);
        for f in follow {
            if wrap_depth >= MAX_SCRIPT_DEPTH {
                self.too_deep();
                return;
            }
            match f {
                Follow::Command(inner) => self.push(inner, wrap_depth + 1),
                Follow::Script(text) => self.script(&text),
            }
        }
    }

    /// A program given by a path outside the system's folders (`./build.sh`, `/tmp/x`)
    /// runs what the judge cannot see.
    fn check_program(&mut self, cmd: &mut Cmd) {
        let Some(path) = cmd.words.first().and_then(|w| w.literal.clone()) else {
            return;
        };
        if path.contains('/') && !is_system_program(&path) {
            let why = format!(
                "runs the program '{}' by its path: the judge cannot see what it runs",
                shorten(&path)
            );
            self.opaque(cmd, why);
        }
    }

    /// Every word that decides what the command runs (outside the commands it runs) must
    /// be literal: `timeout $X 5 rm v` could be `timeout -s 5 …`.
    fn check_deciding_words(&mut self, cmd: &Cmd, runs: &Runs) {
        let n = cmd.words.len();
        let limit = match runs.decides {
            Decides::Nothing => return,
            Decides::Words => n,
            Decides::Before(k) => k.min(n),
        };
        let mut covered = vec![false; limit];
        let mut cover = |i: usize| {
            if let Some(c) = covered.get_mut(i) {
                *c = true;
            }
        };
        for inner in &runs.inner {
            match inner {
                Inner::Command(args) | Inner::Guess(args) => {
                    for a in args {
                        if let Arg::Word(i) = a {
                            cover(*i);
                        }
                    }
                }
                Inner::JoinedScript(range) => range.clone().for_each(&mut cover),
                Inner::Script { .. } => {}
            }
        }
        let unread = (1..limit).find(|&i| !covered[i] && cmd.words[i].literal.is_none());
        if let Some(i) = unread {
            let program = cmd.words.first().map(WordInfo::text).unwrap_or_default();
            self.unseen(format!(
                "'{}' decides what '{}' runs, and the judge cannot read it",
                shorten(&cmd.words[i].display),
                shorten(program)
            ));
        }
    }

    /// The commands and scripts `runs` names, taken from `cmd`'s words.
    fn what_to_follow(&mut self, cmd: &Cmd, runs: Runs) -> Vec<Follow> {
        let mut out = Vec::new();
        for inner in runs.inner {
            match inner {
                Inner::Command(args) => out.extend(self.wrapped(cmd, args, cmd.guess)),
                Inner::Guess(args) => {
                    if self.guesses_left == 0 {
                        self.unseen("guesses at too many wrapped commands to follow them all");
                        continue;
                    }
                    self.guesses_left -= 1;
                    out.extend(self.wrapped(cmd, args, true));
                }
                Inner::Script { word, text } => match cmd.words.get(word) {
                    Some(w) if w.literal.is_some() => out.push(Follow::Script(text)),
                    _ => {
                        self.find(
                            RiskLevel::High,
                            "runs a shell script that is not a plain word",
                        );
                        self.out.complete = false;
                    }
                },
                Inner::JoinedScript(range) => {
                    let Some(slice) = cmd.words.get(range) else {
                        continue;
                    };
                    if slice.iter().all(|w| w.literal.is_some()) {
                        let joined: Vec<&str> = slice.iter().map(WordInfo::text).collect();
                        out.push(Follow::Script(joined.join(" ")));
                    } else {
                        self.find(
                            RiskLevel::High,
                            "runs a shell script that is not plain words",
                        );
                        self.out.complete = false;
                    }
                }
            }
        }
        out
    }

    /// The command of `args` among `cmd`'s words.
    fn wrapped(&mut self, cmd: &Cmd, args: Vec<Arg>, guess: bool) -> Option<Follow> {
        let mut words = Vec::with_capacity(args.len());
        for a in args {
            match a {
                Arg::Word(i) => words.extend(cmd.words.get(i).cloned()),
                Arg::Part { word, text } => {
                    if cmd.words.get(word).is_some_and(|w| w.literal.is_some()) {
                        words.push(WordInfo::literal(&text));
                    } else {
                        self.unseen("runs a command split out of a word the judge cannot read");
                        words.push(WordInfo::unparsed(&text));
                    }
                }
                Arg::Added => words.push(WordInfo::literal("{}")),
            }
        }
        let first = words.first()?;
        if first.literal.is_none() {
            self.find(
                RiskLevel::Medium,
                "runs a program whose name is not a plain word",
            );
            self.out.complete = false;
        }
        let mut inner = Cmd::of(words, cmd.piped_into);
        inner.guess = guess;
        Some(Follow::Command(inner))
    }
}

/// `/usr/bin/NAME` and the like.
fn is_system_program(path: &str) -> bool {
    match path.rsplit_once('/') {
        Some((folder, name)) => {
            SYSTEM_FOLDERS.contains(&folder) && !name.is_empty() && name != "." && name != ".."
        }
        None => false,
    }
}
