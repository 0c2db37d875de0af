//! Rule files: TOML with `[[rule]]` tables, read from a folder, every example checked.
//!
//! ```toml
//! [[rule]]
//! command = ["git", "push"]          # a prefix; an inner list is alternatives
//! decision = "forbid"                 # allow | ask | forbid
//! justification = "CI pushes, not the agent"
//! match = ["git push origin main"]    # must be decided by this rule
//! not_match = ["git pull"]            # must not
//!
//! [[rule]]
//! tool = "write_file"                 # a tool id (a glob)
//! arguments = { path = "secrets/**" } # argument globs, all of which must match
//! decision = "forbid"
//! match = [{ path = "secrets/key" }]
//! ```
//!
//! Anything else is an error naming the file and the line: an unknown key, a missing or
//! unknown decision, both or neither of `command` and `tool`, an empty prefix, an invalid
//! glob, an example this rule does not decide as it says. A workspace's rule files must be
//! plain files inside it (never symlinks), and every file is bounded in size.

use crate::error::Error;
use crate::rule::{Origin, Pattern, Rule, Token};
use crate::set::RuleSet;
use core_models::{PolicyDecision, ToolCallRequest};
use globset::{Glob, GlobMatcher};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// Largest rule file read.
const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// Most rule files read from one folder.
const MAX_FILES: usize = 256;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    rule: Vec<Spanned<RawRule>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    name: Option<String>,
    command: Option<Spanned<Vec<RawToken>>>,
    tool: Option<Spanned<String>>,
    #[serde(default)]
    arguments: BTreeMap<String, Spanned<String>>,
    decision: Spanned<String>,
    justification: Option<String>,
    #[serde(default, rename = "match")]
    matches: Vec<Spanned<toml::Value>>,
    #[serde(default)]
    not_match: Vec<Spanned<toml::Value>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawToken {
    One(String),
    Any(Vec<String>),
}

/// The line (1-based) of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

fn glob(pattern: &str) -> Result<GlobMatcher, String> {
    Glob::new(pattern)
        .map(|g| g.compile_matcher())
        .map_err(|e| format!("'{pattern}' is not a valid glob: {e}"))
}

/// Parse one rule file's `text` (named `path`), written by `origin`; every example is
/// checked.
///
/// # Errors
/// [`Error::Invalid`] naming the line of what is wrong.
pub fn parse_rules(text: &str, path: &Path, origin: Origin) -> Result<RuleSet, Error> {
    let invalid = |line: usize, message: String| Error::Invalid {
        path: path.to_path_buf(),
        line,
        message,
    };
    let file: RawFile = toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(1, |s| line_of(text, s.start));
        invalid(line, e.message().trim().to_string())
    })?;
    let mut set = RuleSet::new();
    for raw in file.rule {
        let line = line_of(text, raw.span().start);
        let raw = raw.into_inner();
        let rule = build(raw.name.clone(), &raw, path, line, origin, text)?;
        check_examples(&rule, &raw, text).map_err(|(at, m)| invalid(at, m))?;
        set.add(rule);
    }
    Ok(set)
}

fn build(
    name: Option<String>,
    raw: &RawRule,
    path: &Path,
    line: usize,
    origin: Origin,
    text: &str,
) -> Result<Rule, Error> {
    let at = |span: std::ops::Range<usize>| line_of(text, span.start);
    let invalid = |line: usize, message: String| Error::Invalid {
        path: path.to_path_buf(),
        line,
        message,
    };
    let decision = match raw.decision.get_ref().as_str() {
        "allow" => PolicyDecision::Allow,
        "ask" => PolicyDecision::Ask,
        "forbid" => PolicyDecision::Forbid,
        other => {
            return Err(invalid(
                at(raw.decision.span()),
                format!("decision '{other}' is not one of allow, ask, forbid"),
            ))
        }
    };
    let pattern = match (&raw.command, &raw.tool) {
        (Some(command), None) => {
            if !raw.arguments.is_empty() {
                return Err(invalid(
                    line,
                    "`arguments` goes with `tool`, not `command`".into(),
                ));
            }
            let mut prefix = Vec::new();
            for token in command.get_ref() {
                let words = match token {
                    RawToken::One(w) => vec![w.clone()],
                    RawToken::Any(ws) => ws.clone(),
                };
                if words.is_empty() || words.iter().any(|w| w.is_empty()) {
                    return Err(invalid(
                        at(command.span()),
                        "every position of `command` needs a word (an empty word or list matches nothing)".into(),
                    ));
                }
                prefix.push(Token(words));
            }
            if prefix.is_empty() {
                return Err(invalid(at(command.span()), "`command` is empty".into()));
            }
            Pattern::Command(prefix)
        }
        (None, Some(tool)) => {
            let matcher = glob(tool.get_ref()).map_err(|m| invalid(at(tool.span()), m))?;
            let mut arguments = BTreeMap::new();
            for (key, value) in &raw.arguments {
                let m = glob(value.get_ref()).map_err(|m| invalid(at(value.span()), m))?;
                arguments.insert(key.clone(), (value.get_ref().clone(), m));
            }
            Pattern::Tool {
                tool: tool.get_ref().clone(),
                matcher,
                arguments,
            }
        }
        (Some(_), Some(_)) => {
            return Err(invalid(
                line,
                "a rule has either `command` or `tool`, not both".into(),
            ))
        }
        (None, None) => {
            return Err(invalid(
                line,
                "a rule needs `command` (a prefix) or `tool`".into(),
            ))
        }
    };
    Ok(Rule {
        pattern,
        decision,
        justification: raw.justification.clone(),
        name,
        file: Some(path.to_path_buf()),
        line,
        origin,
    })
}

/// Whether `rule` alone decides `example` (a command line, or a tool call's arguments).
fn decides(rule: &Rule, example: &toml::Value) -> Result<bool, String> {
    let mut alone = RuleSet::new();
    alone.add(Rule {
        origin: Origin::User,
        ..rule.clone()
    });
    match (&rule.pattern, example) {
        (Pattern::Command(_), toml::Value::String(line)) => {
            Ok(alone.decide_command(line, None, None).is_some())
        }
        (Pattern::Command(_), _) => Err("an example of a command rule is a command line (a string)".into()),
        (Pattern::Tool { tool, .. }, toml::Value::Table(table)) => {
            let mut arguments = serde_json::Map::new();
            let mut tool_id = tool.clone();
            for (k, v) in table {
                let v = serde_json::to_value(v).map_err(|e| e.to_string())?;
                if k == "tool" {
                    if let Some(t) = v.as_str() {
                        tool_id = t.to_string();
                        continue;
                    }
                }
                arguments.insert(k.clone(), v);
            }
            let call = ToolCallRequest::new(&tool_id, serde_json::Value::Object(arguments));
            Ok(core_models::CallRules::decide(&alone, &call, None).is_some())
        }
        (Pattern::Tool { .. }, _) => Err(
            "an example of a tool rule is a table of arguments ({ path = \"…\" }; `tool` names the tool when the rule's is a glob)".into(),
        ),
    }
}

fn check_examples(rule: &Rule, raw: &RawRule, text: &str) -> Result<(), (usize, String)> {
    let who = match &rule.name {
        Some(n) => format!("rule '{n}' (line {})", rule.line),
        None => format!("the rule at line {}", rule.line),
    };
    for (list, expected) in [(&raw.matches, true), (&raw.not_match, false)] {
        for example in list {
            let line = line_of(text, example.span().start);
            let got =
                decides(rule, example.get_ref()).map_err(|m| (line, format!("{who}: {m}")))?;
            if got != expected {
                let shown = match example.get_ref() {
                    toml::Value::String(s) => format!("\"{s}\""),
                    other => other.to_string(),
                };
                let m = if expected {
                    format!("{who}: the example {shown} under `match` is not decided by this rule")
                } else {
                    format!("{who}: the example {shown} under `not_match` is decided by this rule")
                };
                return Err((line, m));
            }
        }
    }
    Ok(())
}

/// Read and check one rule file.
///
/// # Errors
/// [`Error::Read`] when it cannot be read (or is too large, or — from a workspace — is not
/// a plain file), [`Error::Invalid`] when it is not valid.
pub fn load_file(path: &Path, origin: Origin) -> Result<RuleSet, Error> {
    let read_err = |source: std::io::Error| Error::Read {
        path: path.to_path_buf(),
        source,
    };
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    // Opened without waiting (a FIFO planted as a rule file must not hang the start) and,
    // for a workspace's file, without following a final symlink; then checked as opened.
    let mut flags = libc::O_NONBLOCK;
    if origin == Origin::Workspace {
        flags |= libc::O_NOFOLLOW;
    }
    let handle = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => read_err(std::io::Error::other(
                "a workspace's rule file must be a plain file, not a symlink",
            )),
            _ => read_err(e),
        })?;
    let meta = handle.metadata().map_err(read_err)?;
    if !meta.is_file() {
        return Err(read_err(std::io::Error::other("not a regular file")));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(read_err(std::io::Error::other(format!(
            "larger than {} KiB",
            MAX_FILE_BYTES / 1024
        ))));
    }
    let mut text = String::new();
    handle
        .take(MAX_FILE_BYTES)
        .read_to_string(&mut text)
        .map_err(read_err)?;
    parse_rules(&text, path, origin)
}

/// Read every `*.toml` file of `dir` (in name order); a folder that does not exist holds
/// no rules.
///
/// # Errors
/// The first file that cannot be read or is not valid.
pub fn load_dir(dir: &Path, origin: Origin) -> Result<RuleSet, Error> {
    let read_err = |source: std::io::Error| Error::Read {
        path: dir.to_path_buf(),
        source,
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(RuleSet::new()),
        Err(e) => return Err(read_err(e)),
    };
    let mut files: Vec<PathBuf> = Vec::new();
    for entry in entries {
        let path = entry.map_err(read_err)?.path();
        if path.extension().is_some_and(|e| e == "toml") {
            files.push(path);
            if files.len() > MAX_FILES {
                return Err(read_err(std::io::Error::other(format!(
                    "more than {MAX_FILES} rule files"
                ))));
            }
        }
    }
    files.sort();
    let mut set = RuleSet::new();
    for file in files {
        set.extend(load_file(&file, origin)?);
    }
    Ok(set)
}

/// The rules in force in `workspace`: the user's (`user_dir`) and the workspace's own
/// `.aintern/rules` (which may only make things stricter).
///
/// # Errors
/// The first rule file that cannot be read or is not valid.
pub fn load(user_dir: Option<&Path>, workspace: Option<&Path>) -> Result<RuleSet, Error> {
    let mut set = RuleSet::new();
    if let Some(dir) = user_dir {
        set.extend(load_dir(dir, Origin::User)?);
    }
    if let Some(ws) = workspace {
        let dir = ws.join(".aintern").join("rules");
        // The folder itself must be the workspace's own, not a link elsewhere.
        if std::fs::symlink_metadata(ws.join(".aintern")).is_ok_and(|m| m.file_type().is_symlink())
            || std::fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink())
        {
            return Err(Error::Read {
                path: dir,
                source: std::io::Error::other(
                    "a workspace's rule folder must be a plain folder, not a symlink",
                ),
            });
        }
        set.extend(load_dir(&dir, Origin::Workspace)?);
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<RuleSet, Error> {
        parse_rules(text, Path::new("rules/x.toml"), Origin::User)
    }

    #[test]
    fn a_failing_example_names_the_file_the_line_and_the_rule() {
        let text = "[[rule]]\nname = \"no-push\"\ncommand = [\"git\", \"push\"]\ndecision = \"forbid\"\nmatch = [\"git push\"]\nnot_match = [\"git pull\", \"git push -f\"]\n";
        let e = parse(text).unwrap_err().to_string();
        assert!(e.starts_with("rules/x.toml:6:"), "{e}");
        assert!(e.contains("no-push") && e.contains("git push -f"), "{e}");
    }

    #[test]
    fn mistakes_are_errors_with_their_line() {
        for (text, line, says) in [
            (
                "[[rule]]\ncommand = [\"x\"]\ndecision = \"maybe\"\n",
                3,
                "not one of",
            ),
            (
                "[[rule]]\ncommand = [\"x\"]\ndecision = \"ask\"\nmatchs = []\n",
                4,
                "unknown field",
            ),
            ("[[rule]]\ndecision = \"ask\"\n", 1, "needs `command`"),
            ("[[rule]]\ncommand = []\ndecision = \"ask\"\n", 2, "empty"),
            (
                "\n[[rule]]\ntool = \"[x\"\ndecision = \"ask\"\n",
                3,
                "not a valid glob",
            ),
            (
                "[[rule]]\ncommand = [\"rm\"]\ndecision = \"ask\"\nmatch = [{ path = \"x\" }]\n",
                4,
                "a string",
            ),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("rules/x.toml:{line}:")),
                "{text}: {e}"
            );
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn tool_rules_check_their_examples() {
        let text = "[[rule]]\ntool = \"write_file\"\narguments = { path = \"secrets/**\" }\ndecision = \"forbid\"\nmatch = [{ path = \"./secrets/a/key\" }]\nnot_match = [{ path = \"src/main.rs\" }]\n";
        let set = parse(text).unwrap();
        assert_eq!(set.rules().len(), 1);
        let bad = text.replace("src/main.rs", "secrets/b");
        assert!(parse(&bad).unwrap_err().to_string().contains("not_match"));
    }
}
