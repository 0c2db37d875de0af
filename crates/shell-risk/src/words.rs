//! Shell words: the value of a literal word after quote removal, and, for any other word,
//! what it expands and which command substitutions it holds.
//!
//! A word is *literal* when its value is exactly its text after quote removal, the same in
//! every POSIX shell: no `$` of any kind, no backquote, no unquoted glob character
//! (`*`, `?`, `[`), no unquoted brace (`{`, `}`: brace expansion in bash), no unquoted `~`
//! where a shell could expand it (word start, after `=` or `:`), and no control
//! character other than a quoted tab or newline. The strict scan here is our own; the
//! parts of a non-literal word (for display and for the scripts of its substitutions)
//! come from `brush_parser::word`.

use brush_parser::word::{self, WordPiece, WordPieceWithSource};
use brush_parser::ParserOptions;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// How deep substitutions inside substitutions inside one word are followed.
const MAX_WORD_DEPTH: usize = 8;

/// Why a word is not a plain literal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Expansion {
    /// `$NAME`, `${…}`, `$1`, `$?`…
    Parameter,
    /// `$(…)` or a backquoted command.
    CommandSubstitution,
    /// `$((…))` or `$[…]`.
    Arithmetic,
    /// `$'…'`.
    AnsiC,
    /// `$"…"`.
    Locale,
    /// `~` that a shell expands to a home folder.
    Tilde,
    /// An unquoted `*`, `?` or `[` (pathname expansion).
    Glob,
    /// An unquoted `{` or `}` (brace expansion in bash).
    Brace,
    /// A control character, a dangling quote or backslash, or text the judge cannot read.
    Unreadable,
}

impl Expansion {
    /// Words for the approval prompt.
    pub(super) fn describe(self) -> &'static str {
        match self {
            Expansion::Parameter => "expands a variable",
            Expansion::CommandSubstitution => "substitutes the output of a command",
            Expansion::Arithmetic => "expands arithmetic",
            Expansion::AnsiC => "uses $'…' quoting",
            Expansion::Locale => "uses $\"…\" quoting",
            Expansion::Tilde => "expands ~ to a home folder",
            Expansion::Glob => "expands a file-name pattern",
            Expansion::Brace => "uses braces (brace expansion in bash)",
            Expansion::Unreadable => "holds text the judge cannot read",
        }
    }
}

/// One analysed word.
#[derive(Debug, Clone)]
pub(super) struct WordInfo {
    /// The word as written.
    pub raw: String,
    /// Its value, when it is literal.
    pub literal: Option<String>,
    /// Its value after quote removal with expansions kept as written (for subjects).
    pub display: String,
    /// What it expands (empty exactly when literal).
    pub expansions: Vec<Expansion>,
    /// The scripts of the command substitutions it holds, at any depth.
    pub scripts: Vec<String>,
    /// It holds substitution syntax the judge could not take apart: commands may hide in
    /// it.
    pub opaque: bool,
}

impl WordInfo {
    /// A word from text the judge could only split lexically.
    pub(super) fn unparsed(text: &str) -> Self {
        WordInfo {
            raw: text.to_string(),
            literal: None,
            display: text.to_string(),
            expansions: vec![Expansion::Unreadable],
            scripts: Vec::new(),
            opaque: true,
        }
    }

    /// A literal word of this text (a part of a literal word).
    pub(super) fn literal(text: &str) -> Self {
        WordInfo {
            raw: text.to_string(),
            literal: Some(text.to_string()),
            display: text.to_string(),
            expansions: Vec::new(),
            scripts: Vec::new(),
            opaque: false,
        }
    }

    /// The literal value, or the display form.
    pub(super) fn text(&self) -> &str {
        self.literal.as_deref().unwrap_or(&self.display)
    }
}

/// Analyse one word of a parsed command.
pub(super) fn analyse(raw: &str, options: &ParserOptions) -> WordInfo {
    analyse_at(raw, options, 0)
}

fn analyse_at(raw: &str, options: &ParserOptions, depth: usize) -> WordInfo {
    let scan = scan(raw);
    if scan.problems.is_empty() {
        return WordInfo {
            raw: raw.to_string(),
            literal: Some(scan.value.clone()),
            display: scan.value,
            expansions: Vec::new(),
            scripts: Vec::new(),
            opaque: false,
        };
    }
    let mut info = WordInfo {
        raw: raw.to_string(),
        literal: None,
        display: scan.value,
        expansions: scan.problems,
        scripts: Vec::new(),
        opaque: false,
    };
    if !scan.substitution_syntax {
        return info;
    }
    // `$` or a backquote: take the word apart to find the commands it runs.
    match pieces(raw, options) {
        Some(pieces) if depth < MAX_WORD_DEPTH => {
            let mut parts = Parts {
                raw,
                options,
                depth,
                display: String::new(),
                expansions: Vec::new(),
                scripts: Vec::new(),
                opaque: false,
            };
            parts.walk(&pieces, false);
            // brush's `sh` grammar reads some of bash's expansions (`${!x}`, `${a[i]}`) as
            // text: look at the word as written.
            if parameter_expansions(raw).any(evaluates_a_value) {
                parts.opaque = true;
            }
            info.display = parts.display;
            // The pieces say what the word expands; the strict scan cannot see where a
            // substitution ends, so only its control characters are kept.
            if !parts.expansions.is_empty() {
                info.expansions = parts.expansions;
            }
            if raw.chars().any(forbidden_control) {
                push_unique(&mut info.expansions, Expansion::Unreadable);
            }
            info.scripts = parts.scripts;
            info.opaque = parts.opaque;
        }
        _ => {
            info.display = raw.to_string();
            info.opaque = true;
            push_unique(&mut info.expansions, Expansion::Unreadable);
        }
    }
    info
}

/// The result of the strict scan.
struct Scan {
    /// The value after quote removal (expansions kept as written).
    value: String,
    /// Everything that keeps the word from being literal.
    problems: Vec<Expansion>,
    /// It holds `$` or a backquote outside single quotes.
    substitution_syntax: bool,
}

/// The strict quote-removal scan (POSIX `sh` rules).
fn scan(raw: &str) -> Scan {
    let mut value = String::with_capacity(raw.len());
    let mut problems = Vec::new();
    let mut substitution_syntax = false;
    let mut chars = raw.chars().peekable();
    // A `~` here could be expanded: at the start, and after an unquoted `=` or `:`.
    let mut tilde_position = true;
    while let Some(c) = chars.next() {
        let tilde_here = tilde_position;
        tilde_position = false;
        match c {
            '\\' => match chars.next() {
                None => push_unique(&mut problems, Expansion::Unreadable),
                Some('\n') => {}
                Some(next) => {
                    if forbidden_control(next) || next == '\n' {
                        push_unique(&mut problems, Expansion::Unreadable);
                    }
                    value.push(next);
                }
            },
            '\'' => {
                let mut closed = false;
                for q in chars.by_ref() {
                    if q == '\'' {
                        closed = true;
                        break;
                    }
                    if forbidden_control(q) {
                        push_unique(&mut problems, Expansion::Unreadable);
                    }
                    value.push(q);
                }
                if !closed {
                    push_unique(&mut problems, Expansion::Unreadable);
                }
            }
            '"' => {
                let mut closed = false;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => {
                            closed = true;
                            break;
                        }
                        '\\' => match chars.next() {
                            Some(e @ ('$' | '`' | '"' | '\\')) => value.push(e),
                            Some('\n') => {}
                            Some(other) => {
                                if forbidden_control(other) {
                                    push_unique(&mut problems, Expansion::Unreadable);
                                }
                                value.push('\\');
                                value.push(other);
                            }
                            None => push_unique(&mut problems, Expansion::Unreadable),
                        },
                        '$' => {
                            substitution_syntax = true;
                            push_unique(&mut problems, dollar_kind(chars.peek().copied()));
                            value.push('$');
                        }
                        '`' => {
                            substitution_syntax = true;
                            push_unique(&mut problems, Expansion::CommandSubstitution);
                            value.push('`');
                        }
                        other => {
                            if forbidden_control(other) {
                                push_unique(&mut problems, Expansion::Unreadable);
                            }
                            value.push(other);
                        }
                    }
                }
                if !closed {
                    push_unique(&mut problems, Expansion::Unreadable);
                }
            }
            '$' => {
                substitution_syntax = true;
                let kind = match chars.peek() {
                    Some('\'') => Expansion::AnsiC,
                    Some('"') => Expansion::Locale,
                    next => dollar_kind(next.copied()),
                };
                push_unique(&mut problems, kind);
                value.push('$');
            }
            '`' => {
                substitution_syntax = true;
                push_unique(&mut problems, Expansion::CommandSubstitution);
                value.push('`');
            }
            '*' | '?' | '[' => {
                push_unique(&mut problems, Expansion::Glob);
                value.push(c);
            }
            '{' | '}' => {
                push_unique(&mut problems, Expansion::Brace);
                value.push(c);
            }
            '~' if tilde_here => {
                push_unique(&mut problems, Expansion::Tilde);
                value.push(c);
            }
            '=' | ':' => {
                tilde_position = true;
                value.push(c);
            }
            c if c.is_control() || c.is_whitespace() && c.is_ascii() || "<>|&;()".contains(c) => {
                // Cannot be part of an unquoted word in `sh`; never guess.
                push_unique(&mut problems, Expansion::Unreadable);
                value.push(c);
            }
            c => value.push(c),
        }
    }
    Scan {
        value,
        problems,
        substitution_syntax,
    }
}

/// A control character other than tab and newline (those are fine inside quotes).
fn forbidden_control(c: char) -> bool {
    c.is_control() && c != '\t' && c != '\n'
}

/// What a `$` followed by `next` starts.
fn dollar_kind(next: Option<char>) -> Expansion {
    match next {
        Some('(') => Expansion::CommandSubstitution,
        Some('[') => Expansion::Arithmetic,
        _ => Expansion::Parameter,
    }
}

fn push_unique(list: &mut Vec<Expansion>, e: Expansion) {
    if !list.contains(&e) {
        list.push(e);
    }
}

/// The parts of a word according to brush, or `None` when it cannot tell (or would fail).
fn pieces(raw: &str, options: &ParserOptions) -> Option<Vec<WordPieceWithSource>> {
    if has_huge_tilde_number(raw) {
        return None;
    }
    catch_unwind(AssertUnwindSafe(|| word::parse(raw, options)))
        .ok()?
        .ok()
}

/// The parts of a here-document body with expansions.
pub(super) fn heredoc_scripts(body: &str, options: &ParserOptions) -> Result<Vec<String>, ()> {
    if !body.contains('$') && !body.contains('`') {
        return Ok(Vec::new());
    }
    let pieces = catch_unwind(AssertUnwindSafe(|| word::parse_heredoc(body, options)))
        .map_err(|_| ())?
        .map_err(|_| ())?;
    let mut parts = Parts {
        raw: body,
        options,
        depth: 0,
        display: String::new(),
        expansions: Vec::new(),
        scripts: Vec::new(),
        opaque: false,
    };
    parts.walk(&pieces, true);
    if parts.opaque {
        return Err(());
    }
    Ok(parts.scripts)
}

/// `~` followed by a number too large for the word parser (it would panic on it).
fn has_huge_tilde_number(raw: &str) -> bool {
    raw.split('~').skip(1).any(|rest| {
        let rest = rest.trim_start_matches(['+', '-']);
        rest.chars().take_while(char::is_ascii_digit).count() > 15
    })
}

/// Whether an arithmetic expression reads a variable. bash evaluates a variable's value
/// as an expression in turn, and an array subscript there runs the command substitutions
/// it holds (`x='a[$(cmd)]'; echo $((x))`): what runs is then not in the line's text.
pub(super) fn arithmetic_reads_variables(expr: &str) -> bool {
    expr.chars()
        .any(|c| c.is_ascii_alphabetic() || matches!(c, '_' | '$' | '`'))
}

/// Each `${…}` in `raw`, as written (up to its matching brace).
fn parameter_expansions(raw: &str) -> impl Iterator<Item = &str> {
    raw.match_indices("${").filter_map(move |(start, _)| {
        let mut depth = 0usize;
        for (i, c) in raw[start + 1..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        return raw.get(start..start + 1 + i + 1);
                    }
                }
                _ => {}
            }
        }
        None
    })
}

/// Whether a parameter expansion (`${…}`, as written) makes bash evaluate a value: an
/// array subscript or a substring offset (arithmetic, see [`arithmetic_reads_variables`]),
/// an indirect reference (`${!x}`: the name in x may have a subscript), or a prompt
/// expansion (`${x@P}` runs the command substitutions in x's value).
fn evaluates_a_value(source: &str) -> bool {
    let Some(inner) = source.strip_prefix("${").and_then(|s| s.strip_suffix('}')) else {
        return false;
    };
    if inner.starts_with('!') || inner.contains('[') || inner.contains("@P") {
        return true;
    }
    let inner = inner
        .strip_prefix('#')
        .filter(|r| !r.is_empty())
        .unwrap_or(inner);
    let name_end = inner
        .char_indices()
        .find(|(i, c)| {
            !(c.is_ascii_alphanumeric() || *c == '_' || *i == 0 && "@*#?-$!".contains(*c))
        })
        .map_or(inner.len(), |(i, _)| i);
    let mut after = inner[name_end..].chars();
    after.next() == Some(':') && !matches!(after.next(), Some('-' | '=' | '?' | '+'))
}

/// Walks brush's word pieces: display text, expansions and substitution scripts.
struct Parts<'a> {
    raw: &'a str,
    options: &'a ParserOptions,
    depth: usize,
    display: String,
    expansions: Vec<Expansion>,
    scripts: Vec<String>,
    opaque: bool,
}

impl Parts<'_> {
    fn walk(&mut self, pieces: &[WordPieceWithSource], quoted: bool) {
        for p in pieces {
            let source = self.raw.get(p.start_index..p.end_index).unwrap_or_default();
            match &p.piece {
                WordPiece::Text(text) => {
                    if !quoted {
                        if text.contains(['*', '?', '[']) {
                            push_unique(&mut self.expansions, Expansion::Glob);
                        }
                        if text.contains(['{', '}']) {
                            push_unique(&mut self.expansions, Expansion::Brace);
                        }
                    }
                    self.display.push_str(text);
                }
                WordPiece::SingleQuotedText(text) => self.display.push_str(text),
                WordPiece::EscapeSequence(text) => {
                    self.display
                        .push_str(text.strip_prefix('\\').unwrap_or(text));
                }
                WordPiece::AnsiCQuotedText(_) => {
                    push_unique(&mut self.expansions, Expansion::AnsiC);
                    self.display.push_str(source);
                }
                WordPiece::DoubleQuotedSequence(inner) => self.walk(inner, true),
                WordPiece::GettextDoubleQuotedSequence(inner) => {
                    push_unique(&mut self.expansions, Expansion::Locale);
                    self.walk(inner, true);
                }
                WordPiece::TildeExpansion(_) => {
                    push_unique(&mut self.expansions, Expansion::Tilde);
                    self.display.push_str(source);
                }
                WordPiece::ParameterExpansion(_) => {
                    push_unique(&mut self.expansions, Expansion::Parameter);
                    self.display.push_str(source);
                    // `${x:-$(cmd)}`: the inner words may run commands.
                    if source.contains("$(") || source.contains('`') {
                        let inner = source
                            .strip_prefix("${")
                            .and_then(|s| s.strip_suffix('}'))
                            .unwrap_or(source);
                        self.nested(inner);
                    }
                }
                WordPiece::CommandSubstitution(script)
                | WordPiece::BackquotedCommandSubstitution(script) => {
                    push_unique(&mut self.expansions, Expansion::CommandSubstitution);
                    self.display.push_str(source);
                    self.scripts.push(script.clone());
                }
                WordPiece::ArithmeticExpression(expr) => {
                    push_unique(&mut self.expansions, Expansion::Arithmetic);
                    self.display.push_str(source);
                    if arithmetic_reads_variables(&expr.value) {
                        self.opaque = true;
                    }
                    if expr.value.contains('$') || expr.value.contains('`') {
                        let value = expr.value.clone();
                        self.nested(&value);
                    }
                }
            }
        }
    }

    /// Substitutions inside the text of an expansion.
    fn nested(&mut self, text: &str) {
        let inner = analyse_at(text, self.options, self.depth + 1);
        self.scripts.extend(inner.scripts);
        self.opaque |= inner.opaque;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> ParserOptions {
        super::super::syntax::options()
    }

    fn literal(raw: &str) -> Option<String> {
        analyse(raw, &options()).literal
    }

    #[test]
    fn quote_removal_follows_sh() {
        assert_eq!(literal("abc").as_deref(), Some("abc"));
        assert_eq!(literal("'a b'").as_deref(), Some("a b"));
        assert_eq!(literal("\"a b\"").as_deref(), Some("a b"));
        assert_eq!(literal("a\\ b").as_deref(), Some("a b"));
        assert_eq!(literal("\"a\\\"b\"").as_deref(), Some("a\"b"));
        assert_eq!(literal("\"a\\nb\"").as_deref(), Some("a\\nb"));
        assert_eq!(literal("'a\nb'").as_deref(), Some("a\nb"));
        assert_eq!(literal("'*'").as_deref(), Some("*"));
        assert_eq!(literal("\\*").as_deref(), Some("*"));
        assert_eq!(literal("HEAD~1").as_deref(), Some("HEAD~1"));
        assert_eq!(literal("'~'/x").as_deref(), Some("~/x"));
        assert_eq!(literal("héllo").as_deref(), Some("héllo"));
        assert_eq!(literal("'it''s'").as_deref(), Some("its"));
    }

    #[test]
    fn expansions_are_not_literal() {
        for raw in [
            "$HOME", "${x}", "\"$x\"", "$(ls)", "`ls`", "$((1+2))", "$'a'", "$\"a\"", "~", "~/x",
            "a=~/x", "a:~/x", "*.rs", "a?", "[ab]", "{a,b}", "a}", "'open", "\"open", "trail\\",
            "a\u{1b}b", "'a\rb'", "a$",
        ] {
            assert_eq!(literal(raw), None, "{raw:?}");
        }
    }

    #[test]
    fn substitution_scripts_are_found() {
        let w = analyse(
            "\"a $(rm -rf x) `touch y` ${z:-$(id)} $((1 + $(w)))\"",
            &options(),
        );
        assert_eq!(w.literal, None);
        assert!(
            w.scripts.contains(&"rm -rf x".to_string()),
            "{:?}",
            w.scripts
        );
        assert!(
            w.scripts.contains(&"touch y".to_string()),
            "{:?}",
            w.scripts
        );
        assert!(w.scripts.contains(&"id".to_string()), "{:?}", w.scripts);
        assert!(w.scripts.contains(&"w".to_string()), "{:?}", w.scripts);
        assert!(w.expansions.contains(&Expansion::CommandSubstitution));
        assert!(w.expansions.contains(&Expansion::Parameter));
        assert!(w.expansions.contains(&Expansion::Arithmetic));
    }

    #[test]
    fn display_removes_quotes_and_keeps_expansions() {
        let w = analyse("\"$HOME\"/'x y'", &options());
        assert_eq!(w.display, "$HOME/x y");
        let w = analyse("'*'.rs*", &options());
        assert_eq!(w.display, "*.rs*");
        assert_eq!(w.expansions, [Expansion::Glob]);
    }

    #[test]
    fn a_word_is_literal_exactly_when_it_expands_nothing() {
        for raw in [
            "a$", "$", "\"$\"", "a b", "x$(", "'x'$y", "~", "plain", "'q'",
        ] {
            let w = analyse(raw, &options());
            assert_eq!(
                w.literal.is_some(),
                w.expansions.is_empty(),
                "{raw:?}: {w:?}"
            );
        }
    }

    #[test]
    fn values_bash_evaluates_are_opaque() {
        for raw in [
            "$((x))",
            "$((1 + $y))",
            "${a[i]}",
            "${!x}",
            "${x@P}",
            "${x:i}",
            "${x:1:n}",
            "\"$((x+1))\"",
            "\"${!x}\"",
            "a${b[$(id)]}c",
        ] {
            assert!(analyse(raw, &options()).opaque, "{raw:?}");
        }
        for raw in [
            "$((1+2))", "${x}", "${x:-y}", "${x:=y}", "${#x}", "${x%.rs}", "$x",
        ] {
            assert!(!analyse(raw, &options()).opaque, "{raw:?}");
        }
    }

    #[test]
    fn huge_numbers_do_not_panic() {
        let w = analyse("~99999999999999999999999999/$x", &options());
        assert_eq!(w.literal, None);
        assert!(w.opaque);
    }
}
