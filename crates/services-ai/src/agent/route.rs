//! The first decision of a request under [`AutoToolChoice::Constrained`]: answer in plain
//! text, or call a tool — and which tools may be called. Small models choose a tool's
//! name by its position in the list rather than by the request; the words of the
//! request, weighed against each tool's own words (its id, name, description and example
//! requests), rank the tools far better. A request that names a file or folder a tool can
//! take (its argument choices) counts for that tool. The model then writes the call —
//! under the grammar, among the best-ranked tools only — or the answer.
//!
//! [`AutoToolChoice::Constrained`]: crate::config::AutoToolChoice::Constrained

use core_models::{ArgumentChoices, ToolDefinition};
use std::collections::{HashMap, HashSet};

/// What the first reply may be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    /// Plain text: no tool fits the request.
    Answer,
    /// A call of this tool.
    Call(String),
}

/// The least score for a tool to be called.
const THRESHOLD: f64 = 1.0;
/// What naming one of a tool's argument choices adds.
const MENTION: f64 = 2.5;
/// Scores this close to the best count as the best.
const TIE: f64 = 0.25;

/// Words that say nothing of which tool is meant.
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "all", "an", "and", "any", "are", "as", "at", "be", "by", "can",
    "could", "do", "does", "for", "from", "give", "have", "here", "how", "i", "in", "into", "is",
    "it", "its", "me", "my", "of", "on", "one", "or", "our", "please", "say", "says", "should",
    "so", "some", "tell", "that", "the", "their", "them", "then", "there", "this", "to", "us",
    "use", "want", "was", "we", "what", "when", "where", "which", "who", "why", "will", "with",
    "would", "you", "your",
];

/// Rank `tools` (with the argument choices each has now) for `request`.
pub(crate) fn route(
    request: &str,
    tools: &[ToolDefinition],
    choices: &[(String, ArgumentChoices)],
) -> Route {
    let asked: HashSet<String> = words(request).collect();
    let mentions = mentioned(request);
    let vocabularies: Vec<HashMap<String, f64>> = tools.iter().map(vocabulary).collect();
    let count = tools.len() as f64;
    // A word most tools share ("file") tells them apart no better than a stopword.
    let idf = |word: &str| {
        let df = vocabularies.iter().filter(|v| v.contains_key(word)).count() as f64;
        if count > 2.0 && df * 2.0 >= count {
            0.0
        } else {
            (1.0 + count / df.max(1.0)).ln()
        }
    };
    let mut scored: Vec<(f64, usize)> = tools
        .iter()
        .enumerate()
        .map(|(i, tool)| {
            let words: f64 = asked
                .iter()
                .filter_map(|w| vocabularies[i].get(w).map(|weight| weight * idf(w)))
                .sum();
            let named = choices
                .iter()
                .filter(|(id, _)| *id == tool.id)
                .flat_map(|(_, c)| c.values().flatten())
                .any(|value| value != "." && mentions.contains(&value.to_lowercase()));
            (words + if named { MENTION } else { 0.0 }, i)
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    tracing::debug!(
        scores = ?scored.iter().map(|(s, i)| (tools[*i].id.as_str(), *s)).collect::<Vec<_>>(),
        "tools ranked for the request"
    );
    let Some(&(best, _)) = scored.first() else {
        return Route::Answer;
    };
    if best < THRESHOLD {
        return Route::Answer;
    }
    // Among tools ranked alike, the one that risks least (the first listed, then): a
    // request that only names a file is about reading it.
    let chosen = scored
        .iter()
        .take_while(|(score, _)| best - score <= TIE)
        .min_by_key(|(_, i)| (tools[*i].default_risk_level, *i))
        .map_or(0, |(_, i)| *i);
    Route::Call(tools[chosen].id.clone())
}

/// The values `tool`'s text argument `argument` may take for `request`: its runs of up
/// to `max_words` words that say something beyond naming the action — each holds a word
/// that is neither a stopword nor one of the tool's own id and name words. An argument
/// that names a file (`path`, `file`, …) may be an existing file or folder's name; any
/// other is more than one: the name of an existing entry in it says nothing (it is the
/// target, which the path argument takes).
pub(crate) fn argument_spans(
    request: &str,
    max_words: usize,
    tool: &ToolDefinition,
    argument: &str,
    choices: &[(String, ArgumentChoices)],
) -> Vec<String> {
    let own: HashSet<String> = words(&tool.id.replace(['_', '-'], " "))
        .chain(words(&tool.name))
        .collect();
    let names_a_file = ["path", "file", "filename", "dir", "folder", "cwd", "target"]
        .iter()
        .any(|p| argument.to_lowercase().contains(p));
    let entries: HashSet<String> = if names_a_file {
        HashSet::new()
    } else {
        choices
            .iter()
            .flat_map(|(_, c)| c.values().flatten())
            .map(|v| v.to_lowercase())
            .collect()
    };
    super::choices::request_spans(request, max_words)
        .into_iter()
        .filter(|span| {
            let mut parts = span
                .split_whitespace()
                .filter(|w| !entries.contains(&w.to_lowercase()));
            let path_like = span.contains(['.', '/']) && !span.contains(' ');
            (names_a_file && path_like)
                || parts.any(|w| {
                    w.split(|c: char| !c.is_alphanumeric())
                        .filter(|w| !w.is_empty())
                        .map(|w| stem(&w.to_lowercase()))
                        .any(|w| !STOPWORDS.contains(&w.as_str()) && !own.contains(&w))
                })
        })
        .collect()
}

/// A tool's words with their weight: its id's and name's count double.
fn vocabulary(tool: &ToolDefinition) -> HashMap<String, f64> {
    let mut vocabulary = HashMap::new();
    let first_sentence = tool
        .description
        .split(". ")
        .next()
        .unwrap_or(&tool.description);
    let examples = tool.examples.iter().map(|e| e.request.as_str());
    for text in std::iter::once(first_sentence).chain(examples) {
        for word in words(text) {
            vocabulary.entry(word).or_insert(1.0);
        }
    }
    for word in words(&tool.id.replace(['_', '-'], " ")).chain(words(&tool.name)) {
        vocabulary.insert(word, 2.0);
    }
    vocabulary
}

/// The content words of `text`, lowercased and stemmed. A path or a file name
/// (`notes.txt`, `src/main.rs`) is no word: its parts would match every tool whose
/// example names a file.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split_whitespace()
        .map(|w| w.trim_end_matches(|c: char| !c.is_alphanumeric()))
        .filter(|w| !w.contains(['.', '/', '\\']))
        .flat_map(|w| w.split(|c: char| !c.is_alphanumeric()))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .map(|w| stem(&w))
}

/// A crude English stem: common endings taken off longer words.
fn stem(word: &str) -> String {
    for ending in ["ing", "ed", "es", "s"] {
        if word.len() > ending.len() + 3 {
            if let Some(stem) = word.strip_suffix(ending) {
                return stem.to_string();
            }
        }
    }
    word.to_string()
}

/// The path-like words of `text` (lowercased), as written and without a leading `./`
/// or trailing punctuation.
fn mentioned(text: &str) -> HashSet<String> {
    text.split(|c: char| c.is_whitespace() || matches!(c, '`' | '"' | '\'' | ',' | '(' | ')'))
        .map(|w| w.trim_end_matches(['.', '?', '!', ':', ';']))
        .map(|w| w.trim_start_matches("./").to_lowercase())
        .filter(|w| !w.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools() -> Vec<ToolDefinition> {
        vec![
            ToolDefinition::new(
                "read_file",
                "Read File",
                "Read a text file in the workspace.",
            )
            .with_example("What does plan.md say?", json!({})),
            ToolDefinition::new(
                "list_dir",
                "List Directory",
                "List the files and folders in a folder.",
            )
            .with_example("Which files are in this folder?", json!({})),
            ToolDefinition::new(
                "search_files",
                "Search Files",
                "Search the files for a word.",
            )
            .with_example("Find the files that mention invoices.", json!({})),
            ToolDefinition::new("run_command", "Run Command", "Run a shell command.")
                .with_example("Run ls -la and show me the output.", json!({})),
        ]
    }

    fn check(request: &str, choices: &[(String, ArgumentChoices)], expected: &[&str]) {
        let got = route(request, &tools(), choices);
        let want = if expected.is_empty() {
            Route::Answer
        } else {
            Route::Call(expected.join(","))
        };
        assert_eq!(got, want, "{request}");
    }

    #[test]
    fn tools_are_ranked_by_the_request_words() {
        check("Please read the notes", &[], &["read_file"]);
        check("list everything in the docs folder", &[], &["list_dir"]);
        check("Search for the word banana", &[], &["search_files"]);
        check("run make test", &[], &["run_command"]);
        check("Hello, how are you?", &[], &[]);
        check("What is the capital of France?", &[], &[]);
    }

    #[test]
    fn naming_an_existing_file_counts_for_the_tools_that_take_it() {
        let choices = vec![(
            "read_file".to_string(),
            ArgumentChoices::from([("path".to_string(), vec!["notes/Todo.txt".to_string()])]),
        )];
        check("How long is ./notes/todo.txt?", &choices, &["read_file"]);
        check("How long is todo.txt?", &choices, &[]);
    }

    #[test]
    fn argument_spans_say_more_than_the_action_and_its_target() {
        let tool = ToolDefinition::new("search_files", "Search Files", "Search the files.");
        let choices = vec![(
            "read_file".to_string(),
            ArgumentChoices::from([("path".to_string(), vec!["notes.txt".to_string()])]),
        )];
        let request = "Search the files in notes.txt for deadline";
        let spans = argument_spans(request, 2, &tool, "pattern", &choices);
        assert_eq!(spans, ["for deadline", "deadline"]);
        let spans = argument_spans(request, 2, &tool, "path", &choices);
        assert_eq!(
            spans,
            [
                "in notes.txt",
                "notes.txt",
                "notes.txt for",
                "for deadline",
                "deadline"
            ]
        );
    }

    #[test]
    fn stems_and_stopwords() {
        assert_eq!(
            words("The Files, listing!").collect::<Vec<_>>(),
            ["file", "list"]
        );
        assert_eq!(stem("searches"), "search");
        assert_eq!(stem("runs"), "runs", "short words keep their ending");
    }
}
