//! The shell parse: brush-parser's POSIX `sh` grammar, run within limits, and a walk of its
//! syntax tree that finds every simple command (in pipelines, lists, compound commands,
//! function bodies, command and process substitutions, here-documents, the scripts of
//! `sh -c` and the commands behind wrappers such as `env` or `sudo`) and every construct
//! that keeps a command line from being plainly safe.

mod follow;

use super::fallback;
use super::words::{self, WordInfo};
use super::wrappers;
use super::Finding;
use brush_parser::ast::{
    AndOrList, Command, CommandPrefixOrSuffixItem, CompoundCommand, CompoundList,
    IoFileRedirectKind, IoFileRedirectTarget, IoRedirect, Pipeline, Program, SeparatorOperator,
    SimpleCommand,
};
use brush_parser::{Parser, ParserOptions};
use core_models::RiskLevel;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Most bytes handed to the parser; longer text is judged lexically.
const MAX_PARSE_BYTES: usize = 256 * 1024;
/// Most tokens that can open a nesting level (`(`, `{`, a backquote, `if`, `while`…) in
/// one text handed to the parser. The parser recurses once per level, so this bounds its
/// stack use; text with more is judged lexically (never safe).
const MAX_OPENERS: usize = 64;
/// How deep scripts inside scripts (`sh -c`, substitutions, wrapped commands) are followed.
const MAX_SCRIPT_DEPTH: usize = 8;
/// Most guesses at wrapped commands followed for one command line (a guess may hold a
/// script with guesses of its own: this bounds the work).
const MAX_GUESSES: usize = 64;

/// The parser options: POSIX `sh` (commands run under `sh -c`), no extended globs.
pub(super) fn options() -> ParserOptions {
    ParserOptions {
        enable_extended_globbing: false,
        posix_mode: true,
        sh_mode: true,
        tilde_expansion_at_word_start: true,
        tilde_expansion_after_colon: false,
        parser_impl: Default::default(),
    }
}

/// One simple command found anywhere in the line.
#[derive(Debug, Clone)]
pub(super) struct Cmd {
    /// Its words, the program first (empty for a bare assignment or redirection).
    pub words: Vec<WordInfo>,
    /// Its variable assignments (`A=b`), as displayed.
    pub assignments: Vec<String>,
    /// Its redirections (`> out.txt`, `2>&1`), as displayed.
    pub redirects: Vec<String>,
    /// Its standard input comes from an earlier command of a pipeline.
    pub piped_into: bool,
    /// A guess at the command behind a wrapper whose options are not understood: judged by
    /// the deny-list only.
    pub guess: bool,
    /// It runs what the judge cannot see through its own program (an interpreter, `make`,
    /// a package script, a shell reading a file, a program given by its path): the line's
    /// subjects are incomplete because of this command, which is itself in view.
    pub opaque: bool,
}

impl Cmd {
    /// A command of these words, without assignments or redirections.
    pub(super) fn of(words: Vec<WordInfo>, piped_into: bool) -> Self {
        Cmd {
            words,
            assignments: Vec::new(),
            redirects: Vec::new(),
            piped_into,
            guess: false,
            opaque: false,
        }
    }

    /// A command from text the judge could only split lexically.
    pub(super) fn unparsed(words: &[String]) -> Self {
        Cmd::of(words.iter().map(|w| WordInfo::unparsed(w)).collect(), false)
    }

    /// The form permission patterns see: assignments, words after quote removal and
    /// redirections, joined by single spaces.
    pub(super) fn subject(&self) -> String {
        self.subject_named(None)
    }

    /// The forms permission patterns see: [`Cmd::subject`], and for a program given by
    /// its path (`/bin/rm x`) also the form with its name alone (`rm x`).
    pub(super) fn subjects(&self) -> Vec<String> {
        let mut out = vec![self.subject()];
        if let Some(path) = self.words.first().and_then(|w| w.literal.as_deref()) {
            let name = wrappers::program_name(path);
            if name != path && !name.is_empty() {
                out.push(self.subject_named(Some(name)));
            }
        }
        out
    }

    fn subject_named(&self, program: Option<&str>) -> String {
        let words = self.words.iter().enumerate().map(|(i, w)| match program {
            Some(name) if i == 0 => name,
            _ => w.text(),
        });
        let parts = self
            .assignments
            .iter()
            .map(String::as_str)
            .chain(words)
            .chain(self.redirects.iter().map(String::as_str));
        core_models::collapse_whitespace(&parts.collect::<Vec<_>>().join(" "))
    }
}

/// Everything the parse found.
#[derive(Debug, Default)]
pub(super) struct Analysis {
    /// Every simple command, in order of appearance.
    pub commands: Vec<Cmd>,
    /// Every construct that keeps the line from being safe.
    pub findings: Vec<Finding>,
    /// Every command was found (no part was left unparsed or opaque).
    pub complete: bool,
    /// Some part of the line runs commands that are not among [`Analysis::commands`] at
    /// all (unlike an opaque command, which is in view itself).
    pub hidden: bool,
}

/// Parse `command` and walk it; `Err` (why) when it does not parse as a whole.
pub(super) fn analyse(command: &str) -> Result<Analysis, String> {
    let program = parse(command)?;
    let mut walker = Walker {
        options: options(),
        out: Analysis {
            complete: true,
            ..Analysis::default()
        },
        depth: 0,
        functions: Vec::new(),
        deferred: None,
        guesses_left: MAX_GUESSES,
    };
    walker.program(&program);
    let mut out = walker.out;
    out.hidden = !out.complete;
    if out.commands.iter().any(|c| c.opaque) {
        out.complete = false;
    }
    Ok(out)
}

/// Parse one script within the limits; `Err` says why not.
fn parse(text: &str) -> Result<Program, String> {
    if text.len() > MAX_PARSE_BYTES {
        return Err("the command line is too long to parse".to_string());
    }
    if openers(text) > MAX_OPENERS {
        return Err("the command line nests too deeply to parse".to_string());
    }
    if has_huge_fd_number(text) {
        return Err("the command line uses a file descriptor number too large".to_string());
    }
    let options = options();
    let result = catch_unwind(AssertUnwindSafe(|| {
        Parser::new(std::io::BufReader::new(text.as_bytes()), &options).parse_program()
    }));
    match result {
        Ok(Ok(program)) => Ok(program),
        Ok(Err(e)) => Err(format!("the command line does not parse ({e})")),
        Err(_) => Err("the command line does not parse".to_string()),
    }
}

/// An upper bound of the nesting depth of `text`: every token that could open a level.
fn openers(text: &str) -> usize {
    let chars = text
        .chars()
        .filter(|c| matches!(c, '(' | '{' | '`'))
        .count();
    let keywords = text
        .split(|c: char| c.is_whitespace() || matches!(c, ';' | '&' | '|' | '(' | ')'))
        .filter(|w| {
            matches!(
                *w,
                "if" | "while" | "until" | "for" | "case" | "select" | "function" | "coproc" | "[["
            )
        })
        .count();
    chars + keywords
}

/// A run of ten or more digits right before `<` or `>`: the parser would overflow on it.
fn has_huge_fd_number(text: &str) -> bool {
    let mut digits = 0;
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits += 1;
        } else {
            if digits >= 10 && matches!(c, '<' | '>') {
                return true;
            }
            digits = 0;
        }
    }
    false
}

struct Walker {
    options: ParserOptions,
    out: Analysis,
    /// How many scripts deep this walk is.
    depth: usize,
    /// The functions being defined around the current command.
    functions: Vec<String>,
    /// Scripts to follow once the current simple command is recorded.
    deferred: Option<Vec<String>>,
    /// Guesses at wrapped commands that may still be followed (each may re-read a script).
    guesses_left: usize,
}

impl Walker {
    fn find(&mut self, risk: RiskLevel, reason: impl Into<String>) {
        self.out.findings.push(Finding::new(risk, reason));
    }

    fn program(&mut self, program: &Program) {
        for list in &program.complete_commands {
            self.list(list);
        }
    }

    fn list(&mut self, list: &CompoundList) {
        for item in &list.0 {
            if matches!(item.1, SeparatorOperator::Async) {
                self.find(
                    RiskLevel::Medium,
                    "runs a command in the background (&), beyond the call's end",
                );
            }
            self.and_or(&item.0);
        }
    }

    fn and_or(&mut self, list: &AndOrList) {
        for (_, pipeline) in list.iter() {
            self.pipeline(pipeline);
        }
    }

    fn pipeline(&mut self, pipeline: &Pipeline) {
        if pipeline.timed.is_some() {
            self.find(RiskLevel::Medium, "times a pipeline ('time')");
        }
        for (i, command) in pipeline.seq.iter().enumerate() {
            self.command(command, i > 0);
        }
    }

    fn command(&mut self, command: &Command, piped_into: bool) {
        match command {
            Command::Simple(simple) => self.simple(simple, piped_into),
            Command::Compound(compound, redirects) => {
                self.compound(compound);
                if let Some(list) = redirects {
                    for r in &list.0 {
                        self.redirect(r);
                    }
                }
            }
            Command::Function(function) => {
                self.find(RiskLevel::Medium, "defines a shell function");
                let name = words::analyse(&function.fname.value, &self.options);
                self.functions.push(name.text().to_string());
                self.compound(&function.body.0);
                if let Some(list) = &function.body.1 {
                    for r in &list.0 {
                        self.redirect(r);
                    }
                }
                self.functions.pop();
            }
            Command::ExtendedTest(..) => {
                self.find(RiskLevel::Medium, "uses a [[ ]] test");
                self.out.complete = false;
            }
        }
    }

    fn compound(&mut self, compound: &CompoundCommand) {
        match compound {
            CompoundCommand::Arithmetic(a) => {
                self.find(RiskLevel::Medium, "evaluates arithmetic (( ))");
                self.text_scripts(&a.expr.value);
            }
            CompoundCommand::ArithmeticForClause(f) => {
                self.find(RiskLevel::Medium, "runs a for (( )) loop");
                for e in [&f.initializer, &f.condition, &f.updater]
                    .into_iter()
                    .flatten()
                {
                    self.text_scripts(&e.value);
                }
                self.list(&f.body.list);
            }
            CompoundCommand::BraceGroup(b) => {
                self.find(RiskLevel::Medium, "groups commands in { }");
                self.list(&b.list);
            }
            CompoundCommand::Subshell(s) => {
                self.find(RiskLevel::Medium, "runs a subshell ( )");
                if is_nested_subshell(&s.list) {
                    // `((x))`: two subshells in `sh`, arithmetic in bash (see `words`).
                    self.out.complete = false;
                }
                self.list(&s.list);
            }
            CompoundCommand::ForClause(f) => {
                self.find(RiskLevel::Medium, "runs a for loop");
                for w in f.values.iter().flatten() {
                    self.word(&w.value);
                }
                self.list(&f.body.list);
            }
            CompoundCommand::CaseClause(c) => {
                self.find(RiskLevel::Medium, "runs a case statement");
                self.word(&c.value.value);
                for item in &c.cases {
                    for p in &item.patterns {
                        self.word(&p.value);
                    }
                    if let Some(cmd) = &item.cmd {
                        self.list(cmd);
                    }
                }
            }
            CompoundCommand::IfClause(i) => {
                self.find(RiskLevel::Medium, "runs an if statement");
                self.list(&i.condition);
                self.list(&i.then);
                for e in i.elses.iter().flatten() {
                    if let Some(c) = &e.condition {
                        self.list(c);
                    }
                    self.list(&e.body);
                }
            }
            CompoundCommand::WhileClause(w) | CompoundCommand::UntilClause(w) => {
                self.find(RiskLevel::Medium, "runs a while/until loop");
                self.list(&w.0);
                self.list(&w.1.list);
            }
            CompoundCommand::Coprocess(c) => {
                self.find(RiskLevel::Medium, "starts a coprocess");
                self.command(&c.body, false);
            }
        }
    }

    /// Analyse a word and follow its substitutions.
    fn word(&mut self, raw: &str) -> WordInfo {
        let info = words::analyse(raw, &self.options);
        for e in &info.expansions {
            let shown = shorten(&info.raw);
            self.find(RiskLevel::Medium, format!("'{shown}' {}", e.describe()));
        }
        if info.opaque {
            self.out.complete = false;
        }
        for script in &info.scripts {
            self.follow(script);
        }
        info
    }

    /// Follow an inner script: now, or once the current simple command is recorded.
    fn follow(&mut self, script: &str) {
        match &mut self.deferred {
            Some(later) => later.push(script.to_string()),
            None => self.script(script),
        }
    }

    /// Substitutions inside raw text (arithmetic).
    fn text_scripts(&mut self, text: &str) {
        if words::arithmetic_reads_variables(text) {
            // A variable's value is evaluated in turn (see `words`).
            self.out.complete = false;
        }
        if text.contains('$') || text.contains('`') {
            let info = words::analyse(&format!("\"{}\"", text.replace('"', "\\\"")), &self.options);
            if info.opaque {
                self.out.complete = false;
            }
            for script in &info.scripts {
                self.script(script);
            }
        }
    }

    fn simple(&mut self, simple: &SimpleCommand, piped_into: bool) {
        let outer = self.deferred.replace(Vec::new());
        let mut cmd = Cmd::of(Vec::new(), piped_into);
        for item in simple.prefix.iter().flat_map(|p| p.0.iter()) {
            self.item(item, true, &mut cmd);
        }
        if let Some(name) = &simple.word_or_name {
            let info = self.word(&name.value);
            cmd.words.push(info);
        }
        for item in simple.suffix.iter().flat_map(|s| s.0.iter()) {
            self.item(item, false, &mut cmd);
        }
        if let Some(name) = cmd.words.first() {
            match &name.literal {
                None => {
                    self.find(RiskLevel::Medium, "the program name is not a plain word");
                    self.out.complete = false;
                }
                Some(name) if self.functions.contains(name) => self.find(
                    RiskLevel::Critical,
                    format!("function '{name}' calls itself (a fork bomb)"),
                ),
                Some(_) => {}
            }
        }
        let later = std::mem::replace(&mut self.deferred, outer).unwrap_or_default();
        self.push(cmd, 0);
        for script in &later {
            self.follow(script);
        }
    }

    /// One prefix or suffix item of a simple command.
    fn item(&mut self, item: &CommandPrefixOrSuffixItem, in_prefix: bool, cmd: &mut Cmd) {
        match item {
            CommandPrefixOrSuffixItem::IoRedirect(r) => {
                let shown = self.redirect(r);
                cmd.redirects.push(shown);
            }
            CommandPrefixOrSuffixItem::AssignmentWord(_, w) if in_prefix => {
                let info = self.word(&w.value);
                self.find(
                    RiskLevel::Medium,
                    format!("sets a variable ('{}')", shorten(&info.display)),
                );
                let name = info
                    .display
                    .split(['=', '+', '['])
                    .next()
                    .unwrap_or_default();
                if !wrappers::is_inert_variable(name) {
                    self.unseen(format!(
                        "sets the variable '{}', which can change what runs",
                        shorten(name)
                    ));
                }
                cmd.assignments.push(info.display);
            }
            // After the program name, `a=b` is an ordinary argument in `sh`.
            CommandPrefixOrSuffixItem::AssignmentWord(_, w)
            | CommandPrefixOrSuffixItem::Word(w) => {
                let info = self.word(&w.value);
                cmd.words.push(info);
            }
            CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub) => {
                self.find(RiskLevel::Medium, "uses a process substitution <( )");
                self.list(&sub.list);
                cmd.words.push(WordInfo::unparsed("<(…)"));
            }
        }
    }

    fn too_deep(&mut self) {
        self.find(RiskLevel::High, "nests commands too deeply to judge");
        self.out.complete = false;
    }

    /// Parse and walk an inner script (a substitution or the script of `sh -c`).
    fn script(&mut self, text: &str) {
        if self.depth >= MAX_SCRIPT_DEPTH {
            self.too_deep();
            return;
        }
        match parse(text) {
            Ok(program) => {
                self.depth += 1;
                self.program(&program);
                self.depth -= 1;
            }
            Err(why) => {
                self.find(RiskLevel::Medium, format!("an inner script: {why}"));
                self.out.complete = false;
                self.out.findings.extend(fallback::text_findings(text));
                for words in fallback::split(text) {
                    self.out.commands.push(Cmd::unparsed(&words));
                }
            }
        }
    }

    /// Findings for one redirection; returns how it is displayed.
    fn redirect(&mut self, redirect: &IoRedirect) -> String {
        let fd = |n: &Option<i32>| n.map(|n| n.to_string()).unwrap_or_default();
        let shown = match redirect {
            IoRedirect::File(n, kind, target) => {
                let target = match target {
                    IoFileRedirectTarget::Filename(w) | IoFileRedirectTarget::Duplicate(w) => {
                        let info = self.word(&w.value);
                        if let Some(device) = info.literal.as_deref().filter(|t| is_disk(t)) {
                            self.find(
                                RiskLevel::Critical,
                                format!("writes to the disk device '{device}'"),
                            );
                        }
                        info.display
                    }
                    IoFileRedirectTarget::Fd(n) => n.to_string(),
                    IoFileRedirectTarget::ProcessSubstitution(_, sub) => {
                        self.find(RiskLevel::Medium, "uses a process substitution");
                        self.list(&sub.list);
                        "(…)".to_string()
                    }
                };
                let op = match kind {
                    IoFileRedirectKind::Read => "<",
                    IoFileRedirectKind::Write => ">",
                    IoFileRedirectKind::Append => ">>",
                    IoFileRedirectKind::ReadAndWrite => "<>",
                    IoFileRedirectKind::Clobber => ">|",
                    IoFileRedirectKind::DuplicateInput => "<&",
                    IoFileRedirectKind::DuplicateOutput => ">&",
                };
                let writes = matches!(
                    kind,
                    IoFileRedirectKind::Write
                        | IoFileRedirectKind::Append
                        | IoFileRedirectKind::ReadAndWrite
                        | IoFileRedirectKind::Clobber
                );
                let reason = if writes {
                    format!("writes to a file (redirection '{op} {}')", shorten(&target))
                } else {
                    format!("redirects input or output ('{op}{}')", shorten(&target))
                };
                self.find(RiskLevel::Medium, reason);
                let gap = if op.ends_with('&') { "" } else { " " };
                format!("{}{op}{gap}{target}", fd(n))
            }
            IoRedirect::HereDocument(n, doc) => {
                self.find(RiskLevel::Medium, "feeds a here-document (<<)");
                if doc.requires_expansion {
                    match words::heredoc_scripts(&doc.doc.value, &self.options) {
                        Ok(scripts) => {
                            for s in scripts {
                                self.follow(&s);
                            }
                        }
                        Err(()) => self.out.complete = false,
                    }
                }
                format!("{}<< {}", fd(n), doc.here_end.value)
            }
            IoRedirect::HereString(n, w) => {
                self.find(RiskLevel::Medium, "feeds a here-string (<<<)");
                let info = self.word(&w.value);
                format!("{}<<< {}", fd(n), info.display)
            }
            IoRedirect::OutputAndError(w, append) => {
                let info = self.word(&w.value);
                self.find(
                    RiskLevel::Medium,
                    format!(
                        "writes to a file (redirection '&> {}')",
                        shorten(&info.display)
                    ),
                );
                format!("&>{} {}", if *append { ">" } else { "" }, info.display)
            }
        };
        shown
    }
}

/// Whether a subshell holds nothing but another subshell (`((…))`).
fn is_nested_subshell(list: &CompoundList) -> bool {
    match list.0.as_slice() {
        [item] => {
            item.0.additional.is_empty()
                && matches!(
                    item.0.first.seq.as_slice(),
                    [Command::Compound(CompoundCommand::Subshell(_), _)]
                )
        }
        _ => false,
    }
}

/// A block device holding disks or partitions.
fn is_disk(target: &str) -> bool {
    [
        "/dev/sd",
        "/dev/hd",
        "/dev/vd",
        "/dev/xvd",
        "/dev/nvme",
        "/dev/mmcblk",
        "/dev/disk",
        "/dev/mapper",
        "/dev/dm-",
        "/dev/md",
        "/dev/loop",
    ]
    .iter()
    .any(|p| target.starts_with(p))
}

/// At most 60 characters of `text`, for reasons.
pub(super) fn shorten(text: &str) -> String {
    const MAX: usize = 60;
    if text.chars().count() <= MAX {
        text.to_string()
    } else {
        let head: String = text.chars().take(MAX).collect();
        format!("{head}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subjects(command: &str) -> Vec<String> {
        let analysis = analyse(command).unwrap_or_default();
        analysis.commands.iter().map(Cmd::subject).collect()
    }

    #[test]
    fn every_simple_command_is_found() {
        assert_eq!(subjects("'rm'   -rf  x"), ["rm -rf x"]);
        assert_eq!(
            subjects("a | b && c; d\ne || f"),
            ["a", "b", "c", "d", "e", "f"]
        );
        assert_eq!(
            subjects("echo $(rm -rf x) `touch y`"),
            ["echo $(rm -rf x) `touch y`", "rm -rf x", "touch y"]
        );
        assert_eq!(subjects("(cd x && make) &"), ["cd x", "make"]);
        assert_eq!(
            subjects("if true; then for i in $(ls); do rm \"$i\"; done; fi"),
            ["true", "ls", "rm $i"]
        );
        assert_eq!(subjects("A=1 ls > out 2>&1"), ["A=1 ls > out 2>&1"]);
        assert_eq!(
            subjects("sh -c 'rm -rf x; ls'"),
            ["sh -c rm -rf x; ls", "rm -rf x", "ls"]
        );
        assert_eq!(
            subjects("env A=1 nice rm x"),
            ["env A=1 nice rm x", "nice rm x", "rm x"]
        );
        assert_eq!(
            subjects("cat <<EOF\n$(rm x)\nEOF\n"),
            ["cat << EOF", "rm x"]
        );
        assert_eq!(subjects("f() { rm x; }; f"), ["rm x", "f"]);
    }

    #[test]
    fn limits_refuse_to_parse() {
        let deep = format!("{}ls{}", "(".repeat(100), ")".repeat(100));
        assert!(analyse(&deep).is_err());
        assert!(analyse("echo 99999999999>x").is_err());
        assert!(analyse("echo 'open").is_err());
    }

    #[test]
    fn openers_bound_the_depth() {
        assert_eq!(openers("ls -la"), 0);
        assert_eq!(openers("(a) $(b) ${c} `d`"), 5);
        assert_eq!(openers("if x; then while y; do :; done; fi"), 2);
    }
}
