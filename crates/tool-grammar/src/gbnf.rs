//! Writing GBNF: literals, rules, "text up to a marker", sequences with optional items,
//! and JSON-schema grammars from a [`SchemaConverter`] imported under their own names.

use crate::{Error, SchemaConverter};
use serde_json::Value;
use std::collections::HashMap;
use std::fmt::Write as _;

/// A GBNF string literal for `text`.
pub(crate) fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `c` as it is written inside a character class: anything but letters and digits as a
/// hex escape (llama.cpp's parser knows only a few backslash escapes).
fn class_char(c: char) -> String {
    match c {
        c if c.is_ascii_alphanumeric() => c.to_string(),
        c if (c as u32) <= 0xff => format!("\\x{:02X}", c as u32),
        c if (c as u32) <= 0xffff => format!("\\u{:04X}", c as u32),
        c => format!("\\U{:08X}", c as u32),
    }
}

/// A JSON string literal as GBNF (`"\"read_file\""`).
pub(crate) fn json_literal(text: &str) -> String {
    literal(&Value::String(text.to_string()).to_string())
}

/// A grammar under construction: its rules, in order, by name.
pub(crate) struct Gbnf<'a> {
    rules: Vec<(String, String)>,
    /// Names of the rules matching text up to each marker.
    until: HashMap<String, String>,
    imports: usize,
    fresh: usize,
    schemas: &'a dyn SchemaConverter,
}

/// Whitespace between tokens: a space, or up to two line ends and an indentation — so
/// that a model cannot spend its tokens on blank lines.
pub(crate) const SPACE: &str = "sp";

impl<'a> Gbnf<'a> {
    /// An empty grammar whose JSON values follow schemas as `schemas` writes them.
    pub(crate) fn new(schemas: &'a dyn SchemaConverter) -> Self {
        let mut g = Gbnf {
            rules: Vec::new(),
            until: HashMap::new(),
            imports: 0,
            fresh: 0,
            schemas,
        };
        g.rule(SPACE, "| \" \" | \"\\n\"{1,2} [ \\t]{0,20}");
        g
    }

    /// Add rule `name ::= body`; returns the name.
    pub(crate) fn rule(&mut self, name: &str, body: impl Into<String>) -> String {
        self.rules.push((name.to_string(), body.into()));
        name.to_string()
    }

    /// A number not handed out before, for rule names.
    pub(crate) fn fresh(&mut self) -> usize {
        self.fresh += 1;
        self.fresh
    }

    /// The rule matching any text that does not contain `marker`, followed by `marker`:
    /// a deterministic automaton over the marker's characters (as a string search does),
    /// one rule per matched prefix length.
    pub(crate) fn until(&mut self, marker: &str) -> String {
        if let Some(name) = self.until.get(marker) {
            return name.clone();
        }
        let base = format!("until-{}", self.until.len());
        let m: Vec<char> = marker.chars().collect();
        let mut distinct: Vec<char> = m.clone();
        distinct.sort_unstable();
        distinct.dedup();
        let state = |k: usize| format!("{base}-{k}");
        for k in 0..m.len() {
            let mut alternatives = Vec::new();
            let next = if k + 1 == m.len() {
                String::new()
            } else {
                format!(" {}", state(k + 1))
            };
            alternatives.push(format!("{}{next}", literal(&m[k].to_string())));
            // Characters that keep part of the marker matched; every other one starts over.
            let mut excluded = vec![m[k]];
            for &c in distinct.iter().filter(|&&c| c != m[k]) {
                let to = fallback(&m, k, c);
                if to > 0 {
                    alternatives.push(format!("{} {}", literal(&c.to_string()), state(to)));
                    excluded.push(c);
                }
            }
            let others: String = excluded.iter().map(|&c| class_char(c)).collect();
            alternatives.push(format!("[^{others}] {}", state(0)));
            self.rule(&state(k), alternatives.join(" | "));
        }
        let name = state(0);
        self.until.insert(marker.to_string(), name.clone());
        name
    }

    /// `items` in order, separated by `separator` (a GBNF expression, possibly empty);
    /// items not marked required may be left out. Returns an expression.
    pub(crate) fn sequence(
        &mut self,
        base: &str,
        items: &[(String, bool)],
        separator: &str,
    ) -> String {
        if items.iter().all(|(_, required)| *required) {
            let glue = if separator.is_empty() {
                " ".to_string()
            } else {
                format!(" {separator} ")
            };
            return items
                .iter()
                .map(|(item, _)| item.as_str())
                .collect::<Vec<_>>()
                .join(&glue);
        }
        // `first-i`: items i.. with none written yet; `rest-i`: after one was written.
        let n = items.len();
        let first = |i: usize| format!("{base}-first-{i}");
        let rest = |i: usize| format!("{base}-rest-{i}");
        for i in (0..n).rev() {
            let (item, required) = &items[i];
            let (next_first, next_rest) = if i + 1 == n {
                (String::new(), String::new())
            } else {
                (format!(" {}", first(i + 1)), format!(" {}", rest(i + 1)))
            };
            let sep = if separator.is_empty() {
                String::new()
            } else {
                format!("{separator} ")
            };
            // An empty alternative goes first: llama.cpp reads past a line's end after `|`.
            let (mut first_body, mut rest_body) = (Vec::new(), Vec::new());
            if !required {
                first_body.push(next_first.trim().to_string());
                rest_body.push(next_rest.trim().to_string());
            }
            first_body.push(format!("{item}{next_rest}"));
            rest_body.push(format!("{sep}{item}{next_rest}"));
            first_body.sort_by_key(|a| !a.is_empty());
            rest_body.sort_by_key(|a| !a.is_empty());
            let (first_body, rest_body) = (first_body.join(" | "), rest_body.join(" | "));
            self.rule(&first(i), first_body);
            self.rule(&rest(i), rest_body);
        }
        first(0)
    }

    /// The grammar of JSON matching a tool's `schema` (see [`Gbnf::import_schema_of`]).
    pub(crate) fn import_schema(&mut self, schema: &Value) -> Result<String, Error> {
        self.import_schema_of(schema, "a tool's schema")
    }

    /// The grammar of JSON matching `schema` (the converter's), its rules renamed under a
    /// fresh prefix so that several can live in one grammar; `what` names the schema in
    /// an error. Returns its root.
    pub(crate) fn import_schema_of(&mut self, schema: &Value, what: &str) -> Result<String, Error> {
        let text = self
            .schemas
            .convert(schema)
            .map_err(|e| Error::Schema(format!("cannot build a grammar from {what}: {e}")))?;
        let prefix = format!("j{}-", self.imports);
        self.imports += 1;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let Some((name, body)) = line.split_once("::=") else {
                return Err(Error::Schema(format!(
                    "unexpected line in a schema grammar: {line}"
                )));
            };
            let name = format!("{prefix}{}", name.trim());
            let body = rename(body.trim(), &prefix);
            self.rule(&name, body);
        }
        Ok(format!("{prefix}root"))
    }

    /// The grammar text, `root` first.
    pub(crate) fn finish(self, root: &str) -> String {
        let mut out = format!("root ::= {root}\n");
        for (name, body) in self.rules {
            let _ = writeln!(out, "{name} ::= {body}");
        }
        out
    }
}

/// The state a search for `m` goes to from having matched `k` characters when the next
/// character is `c` (not `m[k]`): the longest prefix of `m` ending the text read.
fn fallback(m: &[char], k: usize, c: char) -> usize {
    let mut read: Vec<char> = m[..k].to_vec();
    read.push(c);
    (1..=k)
        .rev()
        .find(|&len| read[read.len() - len..] == m[..len])
        .unwrap_or(0)
}

/// `body` with every rule name prefixed (names outside literals, classes and counts).
fn rename(body: &str, prefix: &str) -> String {
    let mut out = String::with_capacity(body.len() * 2);
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' | '[' | '{' => {
                let end = match c {
                    '"' => '"',
                    '[' => ']',
                    _ => '}',
                };
                out.push(c);
                while let Some(d) = chars.next() {
                    out.push(d);
                    if d == '\\' {
                        if let Some(e) = chars.next() {
                            out.push(e);
                        }
                    } else if d == end {
                        break;
                    }
                }
            }
            c if c.is_ascii_alphanumeric() || c == '-' || c == '_' => {
                out.push_str(prefix);
                out.push(c);
                while let Some(&d) = chars.peek() {
                    if d.is_ascii_alphanumeric() || d == '-' || d == '_' {
                        out.push(d);
                        chars.next();
                    } else {
                        break;
                    }
                }
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_escape_what_gbnf_needs() {
        assert_eq!(literal("a\"b\\c\nd"), r#""a\"b\\c\nd""#);
        assert_eq!(literal("<｜tool▁sep｜>"), "\"<｜tool▁sep｜>\"");
        assert_eq!(json_literal("x\"y"), r#""\"x\\\"y\"""#);
    }

    #[test]
    fn renaming_leaves_literals_classes_and_counts_alone() {
        assert_eq!(
            rename(
                r#""{" space root-a ["\\\]a-z] [0-9]{1,15} ( "x" | y )*"#,
                "p-"
            ),
            r#""{" p-space p-root-a ["\\\]a-z] [0-9]{1,15} ( "x" | p-y )*"#
        );
    }

    #[test]
    fn fallback_follows_the_longest_prefix() {
        let m: Vec<char> = "abab".chars().collect();
        assert_eq!(fallback(&m, 3, 'a'), 1);
        assert_eq!(fallback(&m, 4 - 1, 'x'), 0);
        assert_eq!(fallback(&m, 1, 'a'), 1);
        assert_eq!(fallback(&m, 2, 'b'), 0);
    }
}
