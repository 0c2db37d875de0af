//! One rule and how it matches a call: a command prefix matched against each simple
//! command the judge finds in a line, or a tool id with argument patterns.
//!
//! Matching leans the safe way for each decision. A rule that narrows (ask, forbid)
//! matches when it *could* apply: the program by its name even when given by a path
//! (`/usr/bin/git`), the later words in order with other words between them
//! (`git -C dir push` is a `git push`), and a word the judge cannot read (`git $X`) as any
//! word. A rule that allows matches only an exact prefix of plain words.

use core_models::{normalize_path, PermissionSubjects, PolicyDecision};
use globset::GlobMatcher;
use shell_risk::SeenCommand;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Argument keys whose value is a path: matched in the normalized form permission patterns
/// see, and against every place the call's assessment says it leads.
const PATH_KEYS: [&str; 4] = ["path", "file_path", "file", "directory"];

/// Where a rule was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The user's own configuration (or an application's code).
    User,
    /// The workspace's `.aintern/rules`: it may only make things stricter.
    Workspace,
}

/// One position of a command prefix: the words allowed there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token(pub Vec<String>);

impl Token {
    fn accepts(&self, word: &str) -> bool {
        self.0.iter().any(|w| w == word)
    }
}

/// What a rule matches.
#[derive(Debug, Clone)]
pub enum Pattern {
    /// A prefix of a simple command (the program first).
    Command(Vec<Token>),
    /// A tool (its id as a glob) with argument patterns (argument name → glob), all of
    /// which must match.
    Tool {
        /// The tool id's glob, as written.
        tool: String,
        /// The compiled glob.
        matcher: GlobMatcher,
        /// Argument name → (glob as written, compiled).
        arguments: BTreeMap<String, (String, GlobMatcher)>,
    },
}

/// One rule.
#[derive(Debug, Clone)]
pub struct Rule {
    /// What it matches.
    pub pattern: Pattern,
    /// What it decides.
    pub decision: PolicyDecision,
    /// Why, shown to the person and the model.
    pub justification: Option<String>,
    /// Its name as written, if any.
    pub name: Option<String>,
    /// The file it came from (`None`: registered by code).
    pub file: Option<PathBuf>,
    /// Its line in the file.
    pub line: usize,
    /// Where it was written.
    pub origin: Origin,
}

impl Rule {
    /// A rule matching a command prefix, as an application registers one.
    pub fn command(prefix: Vec<Token>, decision: PolicyDecision) -> Self {
        Rule {
            pattern: Pattern::Command(prefix),
            decision,
            justification: None,
            name: None,
            file: None,
            line: 0,
            origin: Origin::User,
        }
    }

    /// Set the justification.
    pub fn with_justification(mut self, justification: impl Into<String>) -> Self {
        self.justification = Some(justification.into());
        self
    }

    /// Set the name.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// How the rule is named to a person: `rules/git.toml:3 (no-push)`.
    pub fn label(&self) -> String {
        let place = match &self.file {
            Some(file) => format!("{}:{}", file.display(), self.line),
            None => "registered".to_string(),
        };
        match &self.name {
            Some(name) => format!("{name} ({place})"),
            None => place,
        }
    }

    /// Whether the rule narrows (ask, forbid): then it matches where it could apply.
    pub(crate) fn narrows(&self) -> bool {
        self.decision != PolicyDecision::Allow
    }

    /// Whether this command rule matches `cmd`.
    pub(crate) fn matches_command(&self, cmd: &SeenCommand) -> bool {
        let Pattern::Command(prefix) = &self.pattern else {
            return false;
        };
        if self.narrows() {
            narrowing_match(prefix, &cmd.words)
        } else {
            !cmd.guess && allowing_match(prefix, &cmd.words)
        }
    }

    /// Whether this tool rule matches a call of `tool_id` with `arguments`, whose
    /// assessment names `subjects` (where its paths lead), in `workspace`.
    pub(crate) fn matches_tool(
        &self,
        tool_id: &str,
        arguments: &serde_json::Value,
        subjects: Option<&PermissionSubjects>,
        workspace: Option<&Path>,
    ) -> bool {
        let Pattern::Tool {
            matcher,
            arguments: patterns,
            ..
        } = &self.pattern
        else {
            return false;
        };
        if !matcher.is_match(tool_id) {
            return false;
        }
        patterns.iter().all(|(key, (_, glob))| {
            let Some(value) = arguments.get(key) else {
                return false;
            };
            let text = match value {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            if PATH_KEYS.contains(&key.as_str()) {
                let normalized = normalize_path(&text, workspace);
                if glob.is_match(&normalized) {
                    return true;
                }
                // A narrowing rule also sees where the path leads (through symlinks).
                self.narrows()
                    && subjects.is_some_and(|s| s.subjects.iter().any(|p| glob.is_match(p)))
            } else {
                glob.is_match(&text)
            }
        })
    }
}

/// A program word as a narrowing rule sees it: its name when given by a path.
fn program_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// The program matches the first position (by name), and every later position matches
/// some later word, in order; a word the judge cannot read matches anything.
fn narrowing_match(prefix: &[Token], words: &[Option<String>]) -> bool {
    let Some((first, rest)) = prefix.split_first() else {
        return false;
    };
    let Some(program) = words.first() else {
        return false;
    };
    match program {
        Some(p) if first.accepts(program_name(p)) || first.accepts(p) => {}
        Some(_) => return false,
        None => {}
    }
    let mut words = words.iter().skip(1);
    rest.iter().all(|token| {
        words.any(|w| match w {
            Some(w) => token.accepts(w),
            None => true,
        })
    })
}

/// Every position matches the word at that position exactly, and every such word is
/// plain text.
fn allowing_match(prefix: &[Token], words: &[Option<String>]) -> bool {
    !prefix.is_empty()
        && words.len() >= prefix.len()
        && prefix.iter().zip(words).all(|(token, word)| match word {
            Some(w) => token.accepts(w),
            None => false,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Option<String>> {
        line.split(' ')
            .map(|w| (w != "$").then(|| w.to_string()))
            .collect()
    }

    fn prefix(tokens: &[&[&str]]) -> Vec<Token> {
        tokens
            .iter()
            .map(|t| Token(t.iter().map(|w| w.to_string()).collect()))
            .collect()
    }

    #[test]
    fn narrowing_rules_match_where_they_could_apply() {
        let p = prefix(&[&["git"], &["push"]]);
        for hit in [
            "git push",
            "git push origin main",
            "/usr/bin/git push",
            "git -C dir push",
            "git $ x",
            "$ push",
        ] {
            assert!(narrowing_match(&p, &words(hit)), "{hit}");
        }
        for miss in ["git pull", "git", "echo git push", "gitx push"] {
            assert!(!narrowing_match(&p, &words(miss)), "{miss}");
        }
    }

    #[test]
    fn allowing_rules_match_an_exact_prefix_of_plain_words() {
        let p = prefix(&[&["make"], &["test", "check"]]);
        assert!(allowing_match(&p, &words("make test")));
        assert!(allowing_match(&p, &words("make check -j2")));
        for miss in [
            "make",
            "make build",
            "make -j2 test",
            "/tmp/make test",
            "make $",
        ] {
            assert!(!allowing_match(&p, &words(miss)), "{miss}");
        }
    }
}
