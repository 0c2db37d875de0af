//! The suite file: one task a line (JSON lines), each with the workspace it starts from,
//! the request, how it is asked and what must be true afterwards. Everything is checked
//! when the file is read, so a mistake in the suite is an error naming its line before
//! any model runs.

use core_models::ToolChoice;
use regex::Regex;
use serde::Deserialize;
use std::collections::{BTreeMap, HashSet};
use std::path::{Component, Path};

/// One task of a suite.
#[derive(Debug, Clone)]
pub(crate) struct Task {
    /// Unique within the suite.
    pub(crate) id: String,
    /// What kind of task it is (the report gives figures per category).
    pub(crate) category: Option<String>,
    /// What the user asks.
    pub(crate) request: String,
    /// The workspace's files before the request (relative path → content).
    pub(crate) files: BTreeMap<String, String>,
    /// The tool choice the task asks for (`None`: the command line's, else auto).
    pub(crate) tool_choice: Option<ToolChoice>,
    /// Inference and loop options.
    pub(crate) options: TaskOptions,
    /// What must be true afterwards.
    pub(crate) expect: Expect,
}

/// A task's options.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TaskOptions {
    /// Most tokens per reply.
    pub(crate) max_tokens: Option<u32>,
    /// Sampling temperature.
    pub(crate) temperature: Option<f32>,
    /// The request's time limit in seconds.
    pub(crate) timeout_secs: Option<u64>,
    /// The agent's iteration limit.
    pub(crate) max_iterations: Option<u32>,
}

/// The checks of a task.
#[derive(Debug, Clone, Default)]
pub(crate) struct Expect {
    /// The calls that must be made, in this order (other calls may come between them);
    /// `Some(empty)`: no call may be made.
    pub(crate) tool_calls: Option<Vec<ExpectedCall>>,
    /// What the final answer must say.
    pub(crate) answer: Option<TextCheck>,
    /// Files and what they must hold afterwards.
    pub(crate) files: BTreeMap<String, FileCheck>,
    /// Most iterations the request may take.
    pub(crate) max_iterations: Option<u32>,
}

/// A call the model must make.
#[derive(Debug, Clone)]
pub(crate) struct ExpectedCall {
    /// The tool's id.
    pub(crate) tool: String,
    /// Arguments that must be equal (strings: a leading `./` aside).
    pub(crate) arguments: serde_json::Map<String, serde_json::Value>,
    /// Arguments whose text (strings without a leading `./`, other values as JSON) must
    /// match.
    pub(crate) patterns: Vec<(String, Regex)>,
}

/// Checks on a text: every `contains` (case-insensitive), the `matches` pattern, no
/// `not_contains`.
#[derive(Debug, Clone, Default)]
pub(crate) struct TextCheck {
    pub(crate) contains: Vec<String>,
    pub(crate) matches: Option<Regex>,
    pub(crate) not_contains: Vec<String>,
}

/// What a file must be afterwards.
#[derive(Debug, Clone)]
pub(crate) enum FileCheck {
    /// It must not exist.
    Absent,
    /// Its content, trailing whitespace aside.
    Exact(String),
    /// It must exist and its content pass these checks.
    Text(TextCheck),
}

/// A suite: its tasks in file order.
#[derive(Debug, Clone)]
pub(crate) struct Suite {
    pub(crate) tasks: Vec<Task>,
}

// The file's shapes, turned into the types above by `Suite::parse`.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTask {
    id: String,
    #[serde(default)]
    category: Option<String>,
    #[serde(alias = "prompt", alias = "message")]
    request: String,
    #[serde(default, alias = "workspace")]
    files: BTreeMap<String, String>,
    #[serde(default)]
    tool_choice: Option<String>,
    #[serde(default)]
    options: TaskOptions,
    #[serde(default, alias = "checks")]
    expect: RawExpect,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpect {
    #[serde(default, alias = "calls")]
    tool_calls: Option<Vec<RawCall>>,
    #[serde(default, alias = "final_answer")]
    answer: Option<RawText>,
    #[serde(default)]
    files: BTreeMap<String, Option<RawFile>>,
    #[serde(default)]
    max_iterations: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCall {
    #[serde(alias = "name")]
    tool: String,
    #[serde(default, alias = "parameters", alias = "args")]
    arguments: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    patterns: BTreeMap<String, String>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawText {
    #[serde(default)]
    contains: OneOrMany,
    #[serde(default)]
    matches: Option<String>,
    #[serde(default)]
    not_contains: OneOrMany,
}

#[derive(Default, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    #[default]
    None,
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::None => Vec::new(),
            OneOrMany::One(s) => vec![s],
            OneOrMany::Many(v) => v,
        }
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawFile {
    Exact(String),
    Text(RawText),
}

impl Suite {
    /// Read a suite from its text. Blank lines and lines starting with `#` are skipped.
    /// An error names the line and what is wrong with it.
    pub(crate) fn parse(text: &str) -> Result<Suite, String> {
        let mut tasks = Vec::new();
        let mut ids = HashSet::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = |e: String| format!("line {}: {e}", index + 1);
            let raw: RawTask = serde_json::from_str(line).map_err(|e| at(e.to_string()))?;
            let task = Task::from_raw(raw).map_err(at)?;
            if !ids.insert(task.id.clone()) {
                return Err(at(format!("the id '{}' is used twice", task.id)));
            }
            tasks.push(task);
        }
        if tasks.is_empty() {
            return Err("the suite has no tasks".into());
        }
        Ok(Suite { tasks })
    }
}

impl Task {
    fn from_raw(raw: RawTask) -> Result<Task, String> {
        if raw.id.trim().is_empty() {
            return Err("a task's id cannot be empty".into());
        }
        if raw.request.trim().is_empty() {
            return Err(format!("task '{}': the request is empty", raw.id));
        }
        let within = |e: String| format!("task '{}': {e}", raw.id);
        for path in raw.files.keys().chain(raw.expect.files.keys()) {
            relative_path(path).map_err(within)?;
        }
        let tool_choice = raw
            .tool_choice
            .as_deref()
            .map(str::parse::<ToolChoice>)
            .transpose()
            .map_err(within)?;
        if raw
            .options
            .temperature
            .is_some_and(|t| !(0.0..=100.0).contains(&t))
        {
            return Err(within("options.temperature must be from 0 to 100".into()));
        }
        let tool_calls = raw
            .expect
            .tool_calls
            .map(|calls| calls.into_iter().map(ExpectedCall::from_raw).collect())
            .transpose()
            .map_err(within)?;
        let answer = raw.expect.answer.map(TextCheck::from_raw).transpose();
        let mut files = BTreeMap::new();
        for (path, check) in raw.expect.files {
            let check = match check {
                None => FileCheck::Absent,
                Some(RawFile::Exact(content)) => FileCheck::Exact(content),
                Some(RawFile::Text(text)) => {
                    FileCheck::Text(TextCheck::from_raw(text).map_err(within)?)
                }
            };
            files.insert(path, check);
        }
        Ok(Task {
            expect: Expect {
                tool_calls,
                answer: answer.map_err(within)?,
                files,
                max_iterations: raw.expect.max_iterations,
            },
            id: raw.id,
            category: raw.category.filter(|c| !c.trim().is_empty()),
            request: raw.request,
            files: raw.files,
            tool_choice,
            options: raw.options,
        })
    }
}

impl ExpectedCall {
    fn from_raw(raw: RawCall) -> Result<ExpectedCall, String> {
        if raw.tool.trim().is_empty() {
            return Err("an expected call needs its tool".into());
        }
        let patterns = raw
            .patterns
            .into_iter()
            .map(|(name, pattern)| {
                let regex = Regex::new(&pattern).map_err(|e| {
                    format!(
                        "the pattern for {}'s '{name}' is not a regular expression: {e}",
                        raw.tool
                    )
                })?;
                Ok((name, regex))
            })
            .collect::<Result<_, String>>()?;
        Ok(ExpectedCall {
            tool: raw.tool,
            arguments: raw.arguments,
            patterns,
        })
    }
}

impl TextCheck {
    fn from_raw(raw: RawText) -> Result<TextCheck, String> {
        let matches = raw
            .matches
            .map(|p| Regex::new(&p).map_err(|e| format!("'{p}' is not a regular expression: {e}")))
            .transpose()?;
        let check = TextCheck {
            contains: raw.contains.into_vec(),
            matches,
            not_contains: raw.not_contains.into_vec(),
        };
        if check
            .contains
            .iter()
            .chain(&check.not_contains)
            .any(String::is_empty)
        {
            return Err("contains and not_contains cannot hold an empty text".into());
        }
        Ok(check)
    }
}

/// A path inside the workspace: relative, with no `..`.
fn relative_path(path: &str) -> Result<(), String> {
    let p = Path::new(path);
    let inside = !path.is_empty()
        && p.components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if inside {
        Ok(())
    } else {
        Err(format!(
            "'{path}' is not a path inside the workspace (relative, without ..)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        Suite::parse(text).err().unwrap_or_default()
    }

    #[test]
    fn the_shipped_suites_are_valid() {
        for (text, tasks) in [
            (include_str!("../../../../examples/eval/basic.jsonl"), 34),
            (include_str!("../../../../examples/eval/varied.jsonl"), 54),
            (include_str!("../../../../examples/eval/frozen.jsonl"), 42),
            (include_str!("../../../../examples/eval/coding.jsonl"), 24),
            (
                include_str!("../../../../examples/eval/coding-tuned.jsonl"),
                14,
            ),
        ] {
            let suite = Suite::parse(text).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(suite.tasks.len(), tasks);
        }
    }

    #[test]
    fn the_frozen_suite_has_its_categories() {
        let suite = Suite::parse(include_str!("../../../../examples/eval/frozen.jsonl"))
            .unwrap_or_else(|e| panic!("{e}"));
        let count = |c: &str| {
            suite
                .tasks
                .iter()
                .filter(|t| t.category.as_deref() == Some(c))
                .count()
        };
        assert_eq!(count("no-tool"), 10);
        assert_eq!(count("language"), 6);
        assert!(suite.tasks.iter().all(|t| t.category.is_some()));
    }

    #[test]
    fn reads_every_field() {
        let suite = Suite::parse(
            r#"
# a comment
{"id": "a", "request": "Read a.txt", "files": {"a.txt": "x"}, "tool_choice": "required", "options": {"max_tokens": 64}, "expect": {"tool_calls": [{"tool": "read_file", "arguments": {"path": "a.txt"}, "patterns": {"path": "a"}}], "answer": {"contains": "x", "matches": "^x", "not_contains": ["y"]}, "files": {"b.txt": "hi", "c.txt": null, "d.txt": {"contains": ["1", "2"]}}, "max_iterations": 2}}
{"id": "b", "request": "Hi", "expect": {"tool_calls": []}}
"#,
        )
        .map_err(|e| e.to_string());
        let suite = match suite {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(suite.tasks.len(), 2);
        let a = &suite.tasks[0];
        assert_eq!(a.tool_choice, Some(ToolChoice::Required));
        assert_eq!(a.options.max_tokens, Some(64));
        let calls = a.expect.tool_calls.as_ref().map(Vec::len);
        assert_eq!(calls, Some(1));
        assert!(matches!(
            a.expect.files.get("c.txt"),
            Some(FileCheck::Absent)
        ));
        assert!(matches!(a.expect.files.get("b.txt"), Some(FileCheck::Exact(c)) if c == "hi"));
        assert!(
            matches!(a.expect.files.get("d.txt"), Some(FileCheck::Text(t)) if t.contains.len() == 2)
        );
        assert_eq!(
            suite.tasks[1].expect.tool_calls.as_ref().map(Vec::len),
            Some(0)
        );
    }

    #[test]
    fn common_other_names_are_read() {
        let suite = Suite::parse(
            r#"{"id": "a", "prompt": "Read a.txt", "workspace": {"a.txt": "x"}, "checks": {"calls": [{"name": "read_file", "parameters": {"path": "a.txt"}}], "final_answer": {"contains": "x"}}}"#,
        );
        let task = match suite {
            Ok(mut s) => s.tasks.remove(0),
            Err(e) => panic!("{e}"),
        };
        assert_eq!(task.request, "Read a.txt");
        assert_eq!(task.files.len(), 1);
        let calls = task.expect.tool_calls.unwrap_or_default();
        assert_eq!(calls[0].tool, "read_file");
        assert_eq!(
            calls[0].arguments.get("path"),
            Some(&serde_json::json!("a.txt"))
        );
        assert!(task.expect.answer.is_some());
    }

    #[test]
    fn mistakes_name_their_line() {
        for (text, wanted) in [
            ("", "no tasks"),
            ("{\"id\": \"a\"}", "line 1: missing field `request`"),
            ("\n{\"id\": \"a\", \"request\": \"r\", \"extra\": 1}", "line 2: unknown field `extra`"),
            ("{\"id\": \"a\", \"request\": \"r\"}\n{\"id\": \"a\", \"request\": \"r\"}", "line 2: the id 'a' is used twice"),
            ("{\"id\": \"a\", \"request\": \"r\", \"files\": {\"../x\": \"\"}}", "not a path inside the workspace"),
            ("{\"id\": \"a\", \"request\": \"r\", \"files\": {\"/etc/x\": \"\"}}", "not a path inside"),
            ("{\"id\": \"a\", \"request\": \"r\", \"expect\": {\"answer\": {\"matches\": \"(\"}}}", "not a regular expression"),
            ("{\"id\": \"a\", \"request\": \"r\", \"expect\": {\"tool_calls\": [{\"tool\": \"t\", \"patterns\": {\"p\": \"[\"}}]}}", "t's 'p' is not a regular expression"),
            ("{\"id\": \"a\", \"request\": \"  \"}", "the request is empty"),
            ("{\"id\": \"a\", \"request\": \"r\", \"tool_choice\": \"\"}", "cannot be empty"),
            ("{\"id\": \"a\", \"request\": \"r\", \"expect\": {\"answer\": {\"contains\": \"\"}}}", "empty text"),
            ("not json", "line 1: expected"),
        ] {
            let e = error(text);
            assert!(e.contains(wanted), "{text:?}: {e}");
        }
    }
}
