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

/// Words after which the next names a thing.
const POSSESSIVES: &[&str] = &["my", "your", "our", "their", "his", "her", "its"];
/// What a word after a possessive, or a participle, counts, against 1 for any other.
const NOUN_WEIGHT: f64 = 0.25;
/// What the request's leading word counts.
const LEAD_WEIGHT: f64 = 2.0;
/// What a word of a tool's example requests counts (they name things besides the action:
/// "change *cats* to *dogs*"), against 1 for its description's and 2 for its name's.
const EXAMPLE_WEIGHT: f64 = 0.5;
/// Words a text argument does not begin or end with: they link its content to the
/// request ("the file *containing* ERROR", "a file *called* x with the *text* y").
const FILLERS: &[&str] = &[
    "call", "contain", "content", "file", "folder", "line", "mention", "name", "text", "word",
];

/// Rank `tools` (with the argument choices each has now) for `request`.
pub(crate) fn route(
    request: &str,
    tools: &[ToolDefinition],
    choices: &[(String, ArgumentChoices)],
) -> Route {
    route_above(request, tools, choices, THRESHOLD)
}

/// [`route`], with the least score for a call `threshold`.
pub(crate) fn route_above(
    request: &str,
    tools: &[ToolDefinition],
    choices: &[(String, ArgumentChoices)],
    threshold: f64,
) -> Route {
    let asked = weighed_words(request);
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
    let mut any_named = false;
    let mut scored: Vec<(f64, usize)> = tools
        .iter()
        .enumerate()
        .map(|(i, tool)| {
            let words: f64 = asked
                .iter()
                .filter_map(|(w, said)| vocabularies[i].get(w).map(|weight| said * weight * idf(w)))
                .sum();
            // Only an argument the tool needs: a request that names a file is about the
            // tools that work on one, not those that may be pointed at one.
            let needs = super::prompt::required_names(&tool.input_schema);
            let named = choices
                .iter()
                .filter(|(id, _)| *id == tool.id)
                .flat_map(|(_, c)| c.iter())
                .filter(|(argument, _)| needs.contains(argument))
                .flat_map(|(_, values)| values)
                .any(|value| value != "." && mentions.contains(&value.to_lowercase()));
            any_named |= named;
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
    // "How do I reverse a list?" asks to be told, not for an action — unless it names a
    // file or folder that is there.
    if asks_how(request) && !any_named {
        return Route::Answer;
    }
    if best < threshold {
        return look_first(request, tools).map_or(Route::Answer, Route::Call);
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

/// Whether `request` is a how-to question ("How do I …", "how can you …", "How to …").
fn asks_how(request: &str) -> bool {
    let mut words = request.split_whitespace().map(|w| {
        w.trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase()
    });
    words.next().as_deref() == Some("how")
        && words.next().is_some_and(|w| {
            matches!(
                w.as_str(),
                "do" | "does" | "can" | "could" | "should" | "would" | "to" | "is" | "are"
            )
        })
}

/// A request about the workspace's files ("Are there any Python files here?", "Show all
/// files in the workspace") that no tool's own words fit is a look at the workspace
/// first: the safe file tool that needs no argument. A question about a file in general
/// ("what is a file?") is not.
fn look_first(request: &str, tools: &[ToolDefinition]) -> Option<String> {
    let about_files = request
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| matches!(w.to_lowercase().as_str(), "files" | "folders" | "workspace"));
    if !about_files {
        return None;
    }
    tools
        .iter()
        .filter(|t| {
            t.category == core_models::ToolCategory::FileSystem
                && t.default_risk_level == core_models::RiskLevel::Safe
                && super::prompt::required_names(&t.input_schema).is_empty()
        })
        .map(|t| t.id.clone())
        .next()
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
        .chain(words(first_sentence(&tool.description)))
        .collect();
    // A word that says nothing here: a stopword, a filler, or the tool's own.
    let plain = |word: &str| {
        word.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .all(|w| {
                let stemmed = stem(&w);
                STOPWORDS.contains(&w.as_str())
                    || FILLERS.contains(&stemmed.as_str())
                    || own.contains(&stemmed)
            })
    };
    let names_a_file = names_file(argument);
    let entries: HashSet<String> = if names_a_file {
        HashSet::new()
    } else {
        choices
            .iter()
            .flat_map(|(_, c)| c.values().flatten())
            .map(|v| v.to_lowercase())
            .collect()
    };
    let spans = super::choices::request_spans(request, max_words);
    // A file the request names by its name is meant: its other words are not. Where the
    // tool takes a file too, that name is no other argument's value (a file's content is
    // not its own name).
    let names_one = names_a_file && spans.iter().any(|s| file_name(s));
    let takes_a_file = super::prompt::required_names(&tool.input_schema)
        .iter()
        .any(|name| names_file(name));
    spans
        .into_iter()
        .filter(|span| !names_one || file_name(span))
        .filter(|span| names_a_file || !takes_a_file || !file_name(span))
        .filter(|span| {
            let parts: Vec<&str> = span.split_whitespace().collect();
            let entry = |w: &str| entries.contains(&w.to_lowercase());
            // Something beyond the action and its target, and nothing idle at either end
            // ("the code", "lines containing ERROR" say no more than "code", "ERROR").
            let says = parts.iter().any(|w| !entry(w) && !plain(w));
            let edge = |w: Option<&&str>| w.is_some_and(|w| entry(w) || !plain(w));
            if names_a_file {
                file_name(span) || says
            } else {
                says && edge(parts.first()) && edge(parts.last())
            }
        })
        .collect()
}

/// Whether an argument's name says it names a file or folder.
fn names_file(argument: &str) -> bool {
    let argument = argument.to_lowercase();
    ["path", "file", "dir", "folder", "cwd", "target"]
        .iter()
        .any(|p| argument.contains(p))
}

/// Whether `span` is a file's name: one word with a folder in it or an extension
/// (`notes.txt`, `src/main.rs`; not `1.0`).
fn file_name(span: &str) -> bool {
    !span.contains(' ')
        && (span.contains('/')
            || span.rsplit_once('.').is_some_and(|(stem, extension)| {
                !stem.is_empty()
                    && (1..=5).contains(&extension.len())
                    && extension.chars().all(|c| c.is_ascii_alphanumeric())
                    && extension.chars().any(|c| c.is_ascii_alphabetic())
            }))
}

/// A tool's words with their weight: its examples' count half, its description's once,
/// its id's and name's double.
fn vocabulary(tool: &ToolDefinition) -> HashMap<String, f64> {
    let mut vocabulary = HashMap::new();
    for example in &tool.examples {
        // What the example's call takes from it ("change *cats* to *dogs*") is content,
        // not what asks for the tool.
        let content: HashSet<String> = example
            .arguments
            .as_object()
            .into_iter()
            .flat_map(|arguments| arguments.values())
            .filter_map(|value| value.as_str())
            .flat_map(|value| words(value).collect::<Vec<_>>())
            .collect();
        for word in words(&example.request).filter(|w| !content.contains(w)) {
            vocabulary.insert(word, EXAMPLE_WEIGHT);
        }
    }
    for word in words(first_sentence(&tool.description)) {
        vocabulary.insert(word, 1.0);
    }
    for word in words(&tool.id.replace(['_', '-'], " ")).chain(words(&tool.name)) {
        vocabulary.insert(word, 2.0);
    }
    vocabulary
}

/// The first sentence of a tool's description.
fn first_sentence(description: &str) -> &str {
    description.split(". ").next().unwrap_or(description)
}

/// The content words of `request` ([`words`]) with how much each says of the tool meant:
/// the first, before which stand only stopwords, is most often the verb that asks for the
/// action ("Please *run* make", "Can you *list* the files") and counts double; one after
/// a possessive names a thing ("my list", "your notes"), and a participle a state ("the
/// names listed"): they count a quarter.
fn weighed_words(request: &str) -> HashMap<String, f64> {
    let mut weighed = HashMap::new();
    let mut after_possessive = false;
    let mut leading = true;
    for raw in request.split_whitespace() {
        let found: Vec<String> = words(raw).collect();
        let bare = raw
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase();
        // "the author *listed* in", "a file *containing*": a state, not the action asked.
        let participle = bare.len() > 4 && (bare.ends_with("ed") || bare.ends_with("ing"));
        let said = if after_possessive || participle {
            NOUN_WEIGHT
        } else if leading && !found.is_empty() {
            LEAD_WEIGHT
        } else {
            1.0
        };
        leading &= found.is_empty();
        for word in found {
            let weight = weighed.entry(word).or_insert(0.0);
            *weight = f64::max(*weight, said);
        }
        after_possessive =
            POSSESSIVES.contains(&bare.as_str()) && !raw.ends_with([',', '.', ';', ':', '?', '!']);
    }
    weighed
}

/// The content words of `text`, lowercased and stemmed. A path or a file name
/// (`notes.txt`, `src/main.rs`) is no word: its parts would match every tool whose
/// example names a file.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split_whitespace()
        .map(|w| w.trim_end_matches(|c: char| !c.is_alphanumeric()))
        .filter(|w| !w.contains(['.', '/', '\\']))
        .flat_map(|w| w.split(|c: char| !c.is_alphanumeric()))
        // One letter says nothing (the "s" of "project's").
        .filter(|w| w.chars().nth(1).is_some())
        .map(str::to_lowercase)
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .map(|w| stem(&w))
}

/// A word's English stem (Snowball), so that "listing", "lists" and "list" meet.
fn stem(word: &str) -> String {
    static STEMMER: std::sync::OnceLock<rust_stemmers::Stemmer> = std::sync::OnceLock::new();
    STEMMER
        .get_or_init(|| rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English))
        .stem(word)
        .into_owned()
}

/// The path-like words of `text` (lowercased), as written and without a leading `./`
/// or trailing punctuation.
pub(crate) fn mentioned(text: &str) -> HashSet<String> {
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
            .with_example("What does plan.md say?", json!({}))
            .with_schema(
                json!({"type": "object", "properties": {"path": {"type": "string"}},
                                "required": ["path"]}),
            ),
            ToolDefinition::new(
                "list_dir",
                "List Directory",
                "List the files and folders in a folder.",
            )
            .with_example("Which files are in this folder?", json!({}))
            .with_category(core_models::ToolCategory::FileSystem)
            .with_risk(core_models::RiskLevel::Safe),
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
        assert_eq!(spans, ["deadline"], "no span starts or ends idle");
        let spans = argument_spans(request, 2, &tool, "path", &choices);
        assert_eq!(spans, ["notes.txt"], "a file named by its name is meant");
        let spans = argument_spans(
            "Search for lines containing ERROR",
            8,
            &tool,
            "pattern",
            &[],
        );
        assert_eq!(spans, ["ERROR"]);
    }

    #[test]
    fn a_verb_counts_more_than_a_thing_or_a_state() {
        let choices = vec![(
            "read_file".to_string(),
            ArgumentChoices::from([("path".to_string(), vec!["todo.txt".to_string()])]),
        )];
        check(
            "What is the first item on my list in todo.txt?",
            &choices,
            &["read_file"],
        );
        check(
            "Tell me the names listed in todo.txt",
            &choices,
            &["read_file"],
        );
        check("Please list the files", &[], &["list_dir"]);
        check("Can you run make", &[], &["run_command"]);
        let weighed = weighed_words("Please run the project's tests on my list");
        assert_eq!(weighed.get("run"), Some(&LEAD_WEIGHT));
        assert_eq!(weighed.get("list"), Some(&NOUN_WEIGHT));
        assert!(!weighed.contains_key("s"), "one letter is no word");
    }

    #[test]
    fn a_how_to_question_is_answered() {
        check("How do I reverse a list in Python?", &[], &[]);
        check("how to run a shell script", &[], &[]);
        let choices = vec![(
            "read_file".to_string(),
            ArgumentChoices::from([("path".to_string(), vec!["plan.md".to_string()])]),
        )];
        check("How do I start, says plan.md?", &choices, &["read_file"]);
        check(
            "How many lines does plan.md have?",
            &choices,
            &["read_file"],
        );
    }

    #[test]
    fn an_examples_own_content_is_no_tool_word() {
        let tool = ToolDefinition::new("edit_file", "Edit File", "Edit a file.").with_example(
            "In a.txt, change cats to dogs.",
            json!({"search": "cats", "replace": "dogs"}),
        );
        let vocabulary = vocabulary(&tool);
        assert!(vocabulary.contains_key("chang"), "{vocabulary:?}");
        assert!(!vocabulary.contains_key("cat") && !vocabulary.contains_key("dog"));
    }

    #[test]
    fn a_request_about_the_files_no_tool_fits_looks_first() {
        check("Are there any Python files here?", &[], &["list_dir"]);
        check("Which of the files are images?", &[], &["list_dir"]);
        check("Explain what a computer file is", &[], &[]);
    }

    #[test]
    fn stems_and_stopwords() {
        assert_eq!(
            words("The Files, listing!").collect::<Vec<_>>(),
            ["file", "list"]
        );
        assert_eq!(stem("searches"), "search");
        assert_eq!(stem("changed"), stem("change"));
    }
}
