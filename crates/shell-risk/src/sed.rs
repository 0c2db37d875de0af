//! `sed`: its options, and a small conservative parser of its script (GNU syntax) that
//! accepts only commands that read and print: `p d D n N P g G h H x z F = l q Q`, labels
//! and branches (`: b t T`), blocks (`{ }`, `!`), `s` with the flags `g p i I m M` and a
//! number, and `y`. Never `w W r R e v a i c`, the `e` or `w` flag of `s`, `-i` (edits in
//! place) or `-f` (a script from a file). Anything the parser does not understand is not
//! safe.
//!
//! For the permission subjects, [`runs`] reads any GNU sed script (`w`, `r`, `a`… too) and
//! finds the commands its `e` commands run; a script it cannot read, `e` without a
//! command or `s///e` (which run text from the input), or a script from a file (`-f`)
//! leave the subjects incomplete.
//!
//! GNU sed reads a bracket expression (`[…]`) of a regex as a whole, so a delimiter inside
//! one does not end the regex (`s/[/]/x/`); the parser refuses any bracket expression that
//! holds the delimiter, a backslash or a newline, so that both readings agree.

use super::optscan::{self, Options, NO_OPTIONS};
use super::paths::Place;
use super::spec::{check_paths, scan, Operands, Spec, NONE};
use super::wrappers::{Inner, Runs};

const SED: Spec = Spec {
    name: "sed",
    flags: "nErsuzb",
    values: "el",
    long_flags: &[
        "quiet",
        "silent",
        "debug",
        "posix",
        "regexp-extended",
        "separate",
        "unbuffered",
        "null-data",
        "zero-terminated",
        "sandbox",
        "binary",
        "help",
        "version",
    ],
    long_values: &["expression", "line-length"],
    forbidden: &[
        ("-i", "edits files in place"),
        ("--in-place", "edits files in place"),
        ("-f", "reads its script from a file"),
        ("--file", "reads its script from a file"),
    ],
    operands: Operands::Paths,
    ..NONE
};

/// Why `sed ARGS` is not safe; empty when it is.
pub(super) fn check(args: &[String], place: &Place) -> Vec<String> {
    let scanned = match scan(&SED, args) {
        Ok(s) => s,
        Err(why) => return vec![why],
    };
    let mut scripts: Vec<&str> = scanned
        .seen
        .iter()
        .filter(|(o, _)| o == "-e" || o == "--expression")
        .filter_map(|(_, v)| *v)
        .collect();
    let mut files = scanned.operands.clone();
    if scripts.is_empty() {
        if files.is_empty() {
            return vec!["'sed' without a script".to_string()];
        }
        scripts.push(files.remove(0));
    }
    let mut reasons = Vec::new();
    if let Err(why) = script(&scripts.join("\n")) {
        reasons.push(format!("the sed script {why}"));
    }
    reasons.extend(check_paths(place, &files));
    reasons
}

/// Whether a sed script only reads and prints; `Err` says why not.
pub(super) fn script(text: &str) -> Result<(), String> {
    let mut p = Script {
        chars: text.chars().collect(),
        i: 0,
        lenient: false,
        runs: Vec::new(),
    };
    p.commands()
}

/// The commands a sed script's `e` commands run; `Err` when it runs text it reads (`e`
/// alone, `s///e`) or cannot be read.
pub(super) fn commands_run(text: &str) -> Result<Vec<String>, String> {
    let mut p = Script {
        chars: text.chars().collect(),
        i: 0,
        lenient: true,
        runs: Vec::new(),
    };
    p.commands()?;
    Ok(p.runs)
}

/// sed's options, all of them, for [`runs`].
const SED_OPTIONS: Options = Options {
    flags: "nErsuzb",
    values: "efl",
    optional: "i",
    long_flags: &[
        "quiet",
        "silent",
        "debug",
        "posix",
        "regexp-extended",
        "separate",
        "unbuffered",
        "null-data",
        "zero-terminated",
        "sandbox",
        "binary",
        "follow-symlinks",
        "help",
        "version",
    ],
    long_values: &["expression", "file", "line-length"],
    long_optional: &["in-place"],
    ..NO_OPTIONS
};

/// What `sed ARGS` (`words`, `sed` first) runs: the commands of its `e` commands.
pub(super) fn runs(words: &[&str]) -> Runs {
    let read = match optscan::read(words, 1, &SED_OPTIONS, true) {
        Ok(read) => read,
        Err(why) => return Runs::unseen(format!("'sed' {why}, so what it runs is not known")),
    };
    if read.has(&["-f", "--file"]) {
        return Runs::unseen("'sed -f' reads its script from a file the judge cannot see");
    }
    if read.has(&["--sandbox"]) {
        return Runs::of(Vec::new());
    }
    let mut scripts: Vec<(usize, &str)> = read
        .options
        .iter()
        .filter(|o| o.is(&["-e", "--expression"]))
        .map(|o| (o.value_word, o.value.unwrap_or_default()))
        .collect();
    if scripts.is_empty() {
        match read.operands.first() {
            Some(&k) => scripts.push((k, words[k])),
            None => return Runs::of(Vec::new()),
        }
    }
    let word = scripts[0].0;
    let text: Vec<&str> = scripts.iter().map(|(_, t)| *t).collect();
    match commands_run(&text.join("\n")) {
        Ok(commands) => Runs::of(
            commands
                .into_iter()
                .map(|text| Inner::Script { word, text })
                .collect(),
        ),
        Err(why) => Runs::unseen(format!("the sed script {why}")),
    }
}

struct Script {
    chars: Vec<char>,
    i: usize,
    /// Read every GNU command (for [`commands_run`]) instead of refusing those that do
    /// more than read and print.
    lenient: bool,
    /// The commands of `e COMMAND`, when lenient.
    runs: Vec<String>,
}

impl Script {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.i).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek();
        self.i += 1;
        c
    }

    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.i += 1;
        }
    }

    fn digits(&mut self) -> bool {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        self.i > start
    }

    fn commands(&mut self) -> Result<(), String> {
        let mut depth = 0usize;
        loop {
            while matches!(self.peek(), Some(' ' | '\t' | '\n' | ';')) {
                self.i += 1;
            }
            let Some(c) = self.peek() else {
                break;
            };
            if c == '#' {
                self.comment();
                continue;
            }
            let addressed = self.addresses()?;
            self.skip_blanks();
            while self.peek() == Some('!') {
                self.i += 1;
                self.skip_blanks();
            }
            let Some(command) = self.bump() else {
                return Err("ends after an address".to_string());
            };
            match command {
                '{' => {
                    depth += 1;
                    continue;
                }
                '}' => {
                    if addressed || depth == 0 {
                        return Err("has an unbalanced '}'".to_string());
                    }
                    depth -= 1;
                }
                'p' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'x' | 'n' | 'N' | 'P' | 'z' | 'F'
                | '=' => {}
                'q' | 'Q' | 'l' => {
                    self.skip_blanks();
                    self.digits();
                }
                ':' => {
                    if addressed {
                        return Err("puts an address on a label".to_string());
                    }
                    self.skip_blanks();
                    if !self.label() {
                        return Err("has an empty label".to_string());
                    }
                }
                'b' | 't' | 'T' => {
                    self.skip_blanks();
                    self.label();
                }
                's' => self.substitute()?,
                'y' => {
                    let delim = self.delimiter()?;
                    self.plain(delim)?;
                    self.plain(delim)?;
                }
                'e' if self.lenient => {
                    self.skip_blanks();
                    let command = self.rest_of_line();
                    if command.trim().is_empty() {
                        return Err("runs the text it reads as a command ('e')".to_string());
                    }
                    self.runs.push(command);
                    continue;
                }
                'w' | 'W' | 'r' | 'R' if self.lenient => {
                    self.rest_of_line();
                    continue;
                }
                'a' | 'i' | 'c' if self.lenient => {
                    self.text_lines();
                    continue;
                }
                'v' if self.lenient => {
                    self.skip_blanks();
                    self.label();
                }
                'e' => return Err("runs a command ('e')".to_string()),
                'w' | 'W' => return Err(format!("writes to a file ('{command}')")),
                'r' | 'R' => return Err(format!("reads another file ('{command}')")),
                other => {
                    return Err(format!(
                        "uses the command '{other}', not on the judge's list"
                    ))
                }
            }
            self.end_of_command()?;
        }
        if depth != 0 {
            return Err("has an unclosed '{'".to_string());
        }
        Ok(())
    }

    /// The rest of the line (consumed, up to its newline), for a file name or a command.
    fn rest_of_line(&mut self) -> String {
        let mut text = String::new();
        while let Some(c) = self.peek() {
            if c == '\n' {
                break;
            }
            text.push(c);
            self.i += 1;
        }
        text
    }

    /// The text of `a`, `i` or `c`: to the end of the line, and on while a line ends with
    /// a backslash.
    fn text_lines(&mut self) {
        loop {
            let line = self.rest_of_line();
            let trailing = line.chars().rev().take_while(|c| *c == '\\').count();
            if trailing % 2 == 0 || self.bump().is_none() {
                return;
            }
        }
    }

    fn comment(&mut self) {
        while let Some(c) = self.bump() {
            if c == '\n' {
                break;
            }
        }
    }

    /// After a command: blanks, then the end, `;`, a newline, `}` or a comment.
    fn end_of_command(&mut self) -> Result<(), String> {
        self.skip_blanks();
        match self.peek() {
            None | Some(';' | '\n' | '}') => Ok(()),
            Some('#') => {
                self.comment();
                Ok(())
            }
            Some(c) => Err(format!("has unexpected text ('{c}') after a command")),
        }
    }

    fn label(&mut self) -> bool {
        let start = self.i;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        {
            self.i += 1;
        }
        self.i > start
    }

    /// Zero, one or two addresses; whether there was one.
    fn addresses(&mut self) -> Result<bool, String> {
        if !self.address(true)? {
            return Ok(false);
        }
        self.skip_blanks();
        if self.peek() == Some(',') {
            self.i += 1;
            self.skip_blanks();
            if !self.address(false)? {
                return Err("has a range without an end".to_string());
            }
        }
        Ok(true)
    }

    fn address(&mut self, first: bool) -> Result<bool, String> {
        match self.peek() {
            Some(c) if c.is_ascii_digit() => {
                self.digits();
                if first && self.peek() == Some('~') {
                    self.i += 1;
                    self.digits();
                }
            }
            Some('$') => self.i += 1,
            Some('+' | '~') if !first => {
                self.i += 1;
                if !self.digits() {
                    return Err("has a range step without a number".to_string());
                }
            }
            Some('/') => {
                self.i += 1;
                self.regex('/')?;
                self.regex_flags();
            }
            Some('\\') => {
                self.i += 1;
                let delim = self.delimiter_char()?;
                self.regex(delim)?;
                self.regex_flags();
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn regex_flags(&mut self) {
        while matches!(self.peek(), Some('I' | 'M')) {
            self.i += 1;
        }
    }

    fn delimiter(&mut self) -> Result<char, String> {
        self.delimiter_char()
    }

    fn delimiter_char(&mut self) -> Result<char, String> {
        match self.bump() {
            Some(c) if !matches!(c, '\\' | '\n' | '[' | ']') && !c.is_control() => Ok(c),
            _ => Err("has a delimiter the judge does not accept".to_string()),
        }
    }

    /// A regex up to its closing delimiter (consumed), bracket expressions read whole.
    fn regex(&mut self, delim: char) -> Result<(), String> {
        loop {
            match self.bump() {
                None | Some('\n') => return Err("has an unterminated regex".to_string()),
                Some(c) if c == delim => return Ok(()),
                Some('\\') => match self.bump() {
                    None | Some('\n') => return Err("has a dangling backslash".to_string()),
                    Some(_) => {}
                },
                Some('[') => self.bracket(delim)?,
                Some(_) => {}
            }
        }
    }

    /// The rest of a bracket expression after its `[`.
    fn bracket(&mut self, delim: char) -> Result<(), String> {
        let ambiguous = || Err("has a bracket expression the judge cannot read".to_string());
        if self.peek() == Some('^') {
            self.i += 1;
        }
        if self.peek() == Some(']') {
            self.i += 1;
        }
        loop {
            match self.bump() {
                None => return ambiguous(),
                Some(']') => return Ok(()),
                Some(c) if c == delim || c == '\\' || c == '\n' => return ambiguous(),
                Some('[') if matches!(self.peek(), Some(':' | '=' | '.')) => {
                    let Some(kind) = self.bump() else {
                        return ambiguous();
                    };
                    loop {
                        match self.bump() {
                            None => return ambiguous(),
                            Some(c) if c == delim || c == '\\' || c == '\n' => return ambiguous(),
                            Some(c) if c == kind && self.peek() == Some(']') => {
                                self.i += 1;
                                break;
                            }
                            Some(_) => {}
                        }
                    }
                }
                Some(_) => {}
            }
        }
    }

    /// A replacement or `y` string up to its closing delimiter (consumed).
    fn plain(&mut self, delim: char) -> Result<(), String> {
        loop {
            match self.bump() {
                None | Some('\n') => return Err("has an unterminated command".to_string()),
                Some(c) if c == delim => return Ok(()),
                Some('\\') => {
                    if self.bump().is_none() {
                        return Err("has a dangling backslash".to_string());
                    }
                }
                Some(_) => {}
            }
        }
    }

    fn substitute(&mut self) -> Result<(), String> {
        let delim = self.delimiter()?;
        self.regex(delim)?;
        self.plain(delim)?;
        loop {
            match self.peek() {
                Some('g' | 'p' | 'i' | 'I' | 'm' | 'M') => self.i += 1,
                Some(c) if c.is_ascii_digit() => self.i += 1,
                Some('e') => return Err("runs the result as a command ('s///e')".to_string()),
                Some('w') if self.lenient => {
                    self.rest_of_line();
                    return Ok(());
                }
                Some('w') => return Err("writes to a file ('s///w')".to_string()),
                _ => return Ok(()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::script;

    #[test]
    fn reading_scripts_are_accepted() {
        for ok in [
            "p",
            "1,5p",
            "$p",
            "/foo/p",
            "/foo/Ip",
            "\\,foo,p",
            "s/a/b/",
            "s/a/b/g",
            "s/a/b/2gp",
            "s|a|b|I",
            "s/[a-z]x/y/",
            "s/[]a]/y/",
            "s/[[:alpha:]]*/X/",
            "s/a\\/b/c/",
            "y/abc/xyz/",
            "1!G;h;$!d",
            ":a;s/x/y/;ta",
            ":a\nN\n$!ba\ns/\\n/ /g",
            "/start/,/end/{p}",
            "/a/,+2d",
            "0~3d",
            "0,/re/d",
            "2q",
            "l 40",
            "=",
            "p # print\np",
            "#n\np",
            "{ p; p }",
            "",
            "s/a/b\\\nc/",
        ] {
            assert_eq!(script(ok), Ok(()), "{ok:?}");
        }
    }

    #[test]
    fn the_commands_of_e_are_found() {
        use super::commands_run;
        assert_eq!(commands_run("1e rm v15"), Ok(vec!["rm v15".to_string()]));
        assert_eq!(
            commands_run("/x/{e rm a; ls\n}\nw out\na\\\ntext\\\nmore\n$e id"),
            Ok(vec!["rm a; ls".to_string(), "id".to_string()])
        );
        assert_eq!(commands_run("s/a/b/w f\np"), Ok(Vec::new()));
        for unseen in ["e", "1e", "s/a/b/e", "s/a/b/ge", "k", "s/a"] {
            assert!(commands_run(unseen).is_err(), "{unseen:?}");
        }
    }

    #[test]
    fn sed_runs_the_commands_of_its_scripts() {
        use super::super::what_runs::shown;
        assert_eq!(shown("sed -n 1p f"), Vec::<String>::new());
        assert_eq!(shown("sed -e 1d -e $d f"), Vec::<String>::new());
        for unseen in ["sed -f s x", "sed --expr=1d x", "sed -e s/a/b/e x"] {
            assert_eq!(
                shown(unseen).last().map(String::as_str),
                Some("!"),
                "{unseen}"
            );
        }
        let words = ["sed", "-n", "1e rm v15", "v16"];
        let runs = super::runs(&words);
        assert_eq!(
            runs.inner,
            [super::Inner::Script {
                word: 2,
                text: "rm v15".to_string()
            }]
        );
        assert_eq!(runs.unseen, None);
    }

    #[test]
    fn anything_else_is_refused() {
        for bad in [
            "w out",
            "1w out",
            "W out",
            "r /etc/passwd",
            "R x",
            "e id",
            "1e id",
            "s/a/b/e",
            "s/a/b/w out",
            "s/a/b/gw out",
            "a text",
            "i text",
            "c text",
            "v",
            "s/[/]/g;/w x/p",
            "s/[\\]]/x/",
            "s/a/b",
            "s/a",
            "p x",
            "{p",
            "p}",
            "1}",
            "y/a/",
            "/a",
            "z;e",
            "s\na\nb\n",
            "s[a[b[",
            "s/a/b/ w x",
        ] {
            assert!(script(bad).is_err(), "{bad:?}");
        }
    }
}
