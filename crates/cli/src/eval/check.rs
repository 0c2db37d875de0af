//! Checking a run against its task: the calls made, the answer, the files, the number of
//! iterations. Pure: the runner gathers an [`Outcome`], this judges it.

use super::suite::{Expect, ExpectedCall, FileCheck, TextCheck};
use serde::Serialize;
use std::collections::BTreeMap;

/// A call the model made (whether or not it ran).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct MadeCall {
    /// The tool's id as the model wrote it.
    pub(crate) tool: String,
    /// Its arguments.
    pub(crate) arguments: serde_json::Value,
    /// Whether it ran and succeeded (`false`: refused, failed or never run).
    pub(crate) succeeded: bool,
}

/// What a run did.
#[derive(Debug, Clone, Default)]
pub(crate) struct Outcome {
    /// Every call, in the order the model made them.
    pub(crate) calls: Vec<MadeCall>,
    /// The final answer's text.
    pub(crate) answer: String,
    /// The text of every tool result, in order.
    pub(crate) results: Vec<String>,
    /// Iterations the request took.
    pub(crate) iterations: u32,
    /// The checked files afterwards: their content, `None` when missing (or unreadable).
    pub(crate) files: BTreeMap<String, Option<String>>,
    /// Why the request failed, when it did.
    pub(crate) error: Option<String>,
}

/// A check that failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Failure {
    /// Which check: `error`, `tool_calls`, `answer`, `files` or `max_iterations`.
    pub(crate) check: &'static str,
    /// What was wrong, in words.
    pub(crate) message: String,
}

fn failure(check: &'static str, message: String) -> Failure {
    Failure { check, message }
}

/// Every check of `expect` that `outcome` fails, in the order: error, tool_calls,
/// answer, files, max_iterations.
pub(crate) fn evaluate(expect: &Expect, outcome: &Outcome) -> Vec<Failure> {
    let mut failures = Vec::new();
    if let Some(error) = &outcome.error {
        failures.push(failure("error", error.clone()));
    }
    if let Some(expected) = &expect.tool_calls {
        if let Some(message) = calls_failure(expected, &outcome.calls) {
            failures.push(failure("tool_calls", message));
        }
    }
    if let Some(check) = &expect.answer {
        if let Some(message) = text_failure(check, &outcome.answer) {
            failures.push(failure("answer", format!("the answer {message}")));
        } else if let Some(message) = pasted(&outcome.answer, &outcome.results) {
            failures.push(failure("answer", message));
        }
    }
    for (path, check) in &expect.files {
        let content = outcome.files.get(path).cloned().flatten();
        if let Some(message) = file_failure(check, content.as_deref()) {
            failures.push(failure("files", format!("{path}: {message}")));
        }
    }
    if let Some(most) = expect.max_iterations {
        if outcome.iterations > most {
            failures.push(failure(
                "max_iterations",
                format!("took {} iterations (at most {most})", outcome.iterations),
            ));
        }
    }
    failures
}

/// The share of expected calls made (in order): `None` when the task expects nothing of
/// the calls; a task that expects none scores 1 when none was made.
pub(crate) fn call_accuracy(expect: &Expect, calls: &[MadeCall]) -> Option<f64> {
    let expected = expect.tool_calls.as_ref()?;
    if expected.is_empty() {
        return Some(if calls.is_empty() { 1.0 } else { 0.0 });
    }
    let matched = matched_in_order(expected, calls);
    Some(matched as f64 / expected.len() as f64)
}

/// How many of `expected`, in order, are found among `calls` (each call used once).
fn matched_in_order(expected: &[ExpectedCall], calls: &[MadeCall]) -> usize {
    let mut made = calls.iter();
    expected
        .iter()
        .take_while(|want| made.any(|call| call_matches(want, call)))
        .count()
}

fn calls_failure(expected: &[ExpectedCall], calls: &[MadeCall]) -> Option<String> {
    if expected.is_empty() {
        return (!calls.is_empty()).then(|| {
            format!(
                "expected no tool call, the model made {}",
                describe_calls(calls)
            )
        });
    }
    let matched = matched_in_order(expected, calls);
    let missing = expected.get(matched)?;
    Some(format!(
        "expected {} (call {} of {}); the model made {}",
        describe_expected(missing),
        matched + 1,
        expected.len(),
        describe_calls(calls)
    ))
}

/// Whether `call` is the expected one: the same tool, each given argument equal, each
/// pattern matching.
fn call_matches(want: &ExpectedCall, call: &MadeCall) -> bool {
    if call.tool != want.tool {
        return false;
    }
    let argument = |name: &str| call.arguments.get(name);
    want.arguments
        .iter()
        .all(|(name, value)| argument(name).is_some_and(|made| same_value(value, made)))
        && want.patterns.iter().all(|(name, regex)| {
            argument(name).is_some_and(|made| regex.is_match(&value_text(made)))
        })
}

/// Equal JSON values; strings equal once a leading `./` is taken off both (a path the
/// model writes as `./notes.txt` names `notes.txt`).
fn same_value(want: &serde_json::Value, made: &serde_json::Value) -> bool {
    match (want, made) {
        (serde_json::Value::String(a), serde_json::Value::String(b)) => {
            a.trim_start_matches("./") == b.trim_start_matches("./")
        }
        _ => want == made,
    }
}

/// An argument's text for a pattern: a string without a leading `./`, another value as
/// JSON.
fn value_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.trim_start_matches("./").to_string(),
        other => other.to_string(),
    }
}

fn describe_expected(call: &ExpectedCall) -> String {
    let mut parts: Vec<String> = call
        .arguments
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    parts.extend(
        call.patterns
            .iter()
            .map(|(k, r)| format!("{k}~/{}/", r.as_str())),
    );
    format!("{}({})", call.tool, parts.join(", "))
}

fn describe_calls(calls: &[MadeCall]) -> String {
    if calls.is_empty() {
        return "no call".into();
    }
    let shown: Vec<String> = calls
        .iter()
        .map(|c| {
            let mut arguments = c.arguments.to_string();
            if arguments.len() > 120 {
                let mut end = 117;
                while !arguments.is_char_boundary(end) {
                    end -= 1;
                }
                arguments.truncate(end);
                arguments.push_str("...");
            }
            format!("{}({arguments})", c.tool)
        })
        .collect();
    shown.join(", ")
}

/// What is wrong with `text` under `check`, as the end of a sentence; `None` when
/// nothing is.
/// Lines of a tool result an answer may repeat before it counts as pasting the result.
const PASTED_LINES: usize = 3;

/// Why `answer` is not an answer made from the results but one of them pasted: it repeats
/// at least [`PASTED_LINES`] lines and half of the lines of one result (a task that asks
/// for a fact must be answered from the result, not with it).
fn pasted(answer: &str, results: &[String]) -> Option<String> {
    let answered: std::collections::HashSet<&str> = answer
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    results.iter().find_map(|result| {
        let lines: Vec<&str> = result
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        let repeated = lines.iter().filter(|l| answered.contains(*l)).count();
        (repeated >= PASTED_LINES && repeated * 2 >= lines.len()).then(|| {
            format!(
                "the answer pastes a tool's output ({repeated} of its {} lines) instead of answering from it",
                lines.len()
            )
        })
    })
}

fn text_failure(check: &TextCheck, text: &str) -> Option<String> {
    let lower = text.to_lowercase();
    let quoted = || {
        let mut shown: String = text.chars().take(160).collect();
        if shown.len() < text.len() {
            shown.push_str("...");
        }
        format!("{shown:?}")
    };
    if let Some(word) = check
        .contains
        .iter()
        .find(|w| !lower.contains(&w.to_lowercase()))
    {
        return Some(format!("does not contain {word:?}: {}", quoted()));
    }
    if let Some(regex) = check.matches.as_ref().filter(|r| !r.is_match(text)) {
        return Some(format!("does not match /{}/: {}", regex.as_str(), quoted()));
    }
    if let Some(word) = check
        .not_contains
        .iter()
        .find(|w| lower.contains(&w.to_lowercase()))
    {
        return Some(format!("contains {word:?}: {}", quoted()));
    }
    None
}

fn file_failure(check: &FileCheck, content: Option<&str>) -> Option<String> {
    match (check, content) {
        (FileCheck::Absent, None) => None,
        (FileCheck::Absent, Some(_)) => Some("exists, and should not".into()),
        (_, None) => Some("does not exist".into()),
        (FileCheck::Exact(want), Some(content)) => (content.trim_end() != want.trim_end())
            .then(|| format!("holds {:?}, expected {want:?}", clip(content))),
        (FileCheck::Text(check), Some(content)) => {
            text_failure(check, content).map(|m| format!("the content {m}"))
        }
    }
}

fn clip(text: &str) -> String {
    let mut shown: String = text.chars().take(160).collect();
    if shown.len() < text.len() {
        shown.push_str("...");
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::suite::Suite;
    use serde_json::json;

    fn expect(text: &str) -> Expect {
        let line = format!("{{\"id\": \"t\", \"request\": \"r\", \"expect\": {text}}}");
        match Suite::parse(&line) {
            Ok(mut suite) => suite.tasks.remove(0).expect,
            Err(e) => panic!("{e}"),
        }
    }

    fn call(tool: &str, arguments: serde_json::Value) -> MadeCall {
        MadeCall {
            tool: tool.into(),
            arguments,
            succeeded: true,
        }
    }

    /// The checks that fail, by name.
    fn check(expect_json: &str, outcome: &Outcome) -> Vec<&'static str> {
        evaluate(&expect(expect_json), outcome)
            .into_iter()
            .map(|f| f.check)
            .collect()
    }

    #[test]
    fn an_answer_that_pastes_a_result_does_not_pass() {
        let file = "host = a\nport = 8080\nuser = b\nmode = c\n".to_string();
        let asked = r#"{"answer": {"contains": "8080"}}"#;
        let pasting = Outcome {
            answer: format!("Here it is:\n{file}"),
            results: vec![file.clone()],
            ..Outcome::default()
        };
        assert_eq!(check(asked, &pasting), ["answer"]);
        let answering = Outcome {
            answer: "The port is 8080.".into(),
            results: vec![file.clone()],
            ..Outcome::default()
        };
        assert!(check(asked, &answering).is_empty());
        // Quoting one line of it is answering.
        let quoting = Outcome {
            answer: "It says: port = 8080".into(),
            results: vec![file],
            ..Outcome::default()
        };
        assert!(check(asked, &quoting).is_empty());
    }

    #[test]
    fn calls_are_found_in_order_with_exact_and_pattern_arguments() {
        let wanted = r#"{"tool_calls": [{"tool": "list_dir"}, {"tool": "read_file", "arguments": {"path": "a.txt"}, "patterns": {"path": "^a"}}]}"#;
        let both = Outcome {
            calls: vec![
                call("list_dir", json!({"path": "."})),
                call("search_files", json!({"pattern": "x"})),
                call("read_file", json!({"path": "./a.txt"})),
            ],
            ..Outcome::default()
        };
        assert!(check(wanted, &both).is_empty());
        assert_eq!(call_accuracy(&expect(wanted), &both.calls), Some(1.0));
        let reversed = Outcome {
            calls: vec![
                call("read_file", json!({"path": "a.txt"})),
                call("list_dir", json!({"path": "."})),
            ],
            ..Outcome::default()
        };
        assert_eq!(check(wanted, &reversed), ["tool_calls"]);
        assert_eq!(call_accuracy(&expect(wanted), &reversed.calls), Some(0.5));
        let wrong_argument = Outcome {
            calls: vec![
                call("list_dir", json!({})),
                call("read_file", json!({"path": "b.txt"})),
            ],
            ..Outcome::default()
        };
        let failures = evaluate(&expect(wanted), &wrong_argument);
        assert_eq!(failures.len(), 1);
        assert!(
            failures[0].message.contains("read_file(path=\"a.txt\"")
                && failures[0].message.contains("call 2 of 2")
                && failures[0]
                    .message
                    .contains("read_file({\"path\":\"b.txt\"})"),
            "{}",
            failures[0].message
        );
        let pattern_only =
            r#"{"tool_calls": [{"tool": "search_files", "patterns": {"pattern": "(?i)^apple"}}]}"#;
        let searched = Outcome {
            calls: vec![call("search_files", json!({"pattern": "Apples"}))],
            ..Outcome::default()
        };
        assert!(check(pattern_only, &searched).is_empty());
        let numbers = r#"{"tool_calls": [{"tool": "t", "patterns": {"n": "^4\\d$"}}]}"#;
        let number = Outcome {
            calls: vec![call("t", json!({"n": 42}))],
            ..Outcome::default()
        };
        assert!(check(numbers, &number).is_empty());
    }

    #[test]
    fn no_call_expected() {
        let none = r#"{"tool_calls": []}"#;
        assert!(check(none, &Outcome::default()).is_empty());
        assert_eq!(call_accuracy(&expect(none), &[]), Some(1.0));
        let called = Outcome {
            calls: vec![call("list_dir", json!({}))],
            ..Outcome::default()
        };
        assert_eq!(check(none, &called), ["tool_calls"]);
        assert_eq!(call_accuracy(&expect(none), &called.calls), Some(0.0));
        assert_eq!(call_accuracy(&expect("{}"), &called.calls), None);
    }

    #[test]
    fn answer_checks() {
        let answer = |text: &str| Outcome {
            answer: text.into(),
            ..Outcome::default()
        };
        let wanted =
            r#"{"answer": {"contains": ["twelve", "Apples"], "not_contains": "tool_call"}}"#;
        assert!(check(wanted, &answer("There are TWELVE apples.")).is_empty());
        assert_eq!(
            check(wanted, &answer("There are twelve pears.")),
            ["answer"]
        );
        assert_eq!(
            check(wanted, &answer("twelve apples ```tool_call")),
            ["answer"]
        );
        let pattern = r#"{"answer": {"matches": "\\b12\\b"}}"#;
        assert!(check(pattern, &answer("12 crates")).is_empty());
        assert_eq!(check(pattern, &answer("120 crates")), ["answer"]);
        let failures = evaluate(&expect(wanted), &answer("pears"));
        assert!(failures[0]
            .message
            .starts_with("the answer does not contain \"twelve\": \"pears\""));
    }

    #[test]
    fn file_checks() {
        let wanted = r#"{"files": {"a.txt": "hi", "b.txt": null, "c.txt": {"contains": "x"}}}"#;
        let files = |a: Option<&str>, b: Option<&str>, c: Option<&str>| Outcome {
            files: [("a.txt", a), ("b.txt", b), ("c.txt", c)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.map(String::from)))
                .collect(),
            ..Outcome::default()
        };
        assert!(check(wanted, &files(Some("hi\n"), None, Some("axb"))).is_empty());
        assert_eq!(
            check(wanted, &files(Some("ho"), None, Some("x"))),
            ["files"]
        );
        assert_eq!(check(wanted, &files(None, None, Some("x"))), ["files"]);
        assert_eq!(
            check(wanted, &files(Some("hi"), Some(""), Some("x"))),
            ["files"]
        );
        assert_eq!(
            check(wanted, &files(Some("hi"), None, None)),
            ["files"],
            "a file that must contain something must exist"
        );
        let failures = evaluate(&expect(wanted), &files(Some("ho"), Some("1"), Some("y")));
        let messages: Vec<&str> = failures.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "a.txt: holds \"ho\", expected \"hi\"",
                "b.txt: exists, and should not",
                "c.txt: the content does not contain \"x\": \"y\""
            ]
        );
    }

    #[test]
    fn errors_and_iterations_fail_first_and_last() {
        let outcome = Outcome {
            error: Some("the model failed".into()),
            iterations: 4,
            answer: "no".into(),
            ..Outcome::default()
        };
        let wanted = r#"{"answer": {"contains": "yes"}, "max_iterations": 3}"#;
        assert_eq!(
            check(wanted, &outcome),
            ["error", "answer", "max_iterations"]
        );
        let fine = Outcome {
            iterations: 3,
            answer: "yes".into(),
            ..Outcome::default()
        };
        assert!(check(wanted, &fine).is_empty());
    }
}
