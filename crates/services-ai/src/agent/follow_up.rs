//! Requests of more than one step under a constrained decision ("Read source.txt and
//! write the same text into copy.txt", "Find the file that mentions the budget, then
//! open it"). A small model asked for the answer after the first results never takes the
//! second step itself; so before the answer, each clause of the request is routed as the
//! first reply was, and the first that asks for a call not made yet is made — a forced
//! call whose arguments are held to that clause's words, the files the results name and
//! (for content) the results' own text. Every such call is validated, assessed and
//! approved like any other.

use super::iterate::Setup;
use super::route::{mentioned, Route};
use super::run::Run;
use core_models::{ArgumentChoices, LlmRequest, Tool, ToolChoice, ToolDefinition};
use std::path::PathBuf;
use std::sync::Arc;

/// The least score for a later step's call: its clause must ask for it in words of the
/// tool's own that say more than a word or two in passing ("tell me what the second
/// *line* says" is no search).
const STEP_THRESHOLD: f64 = 3.0;
/// Most calls one request makes before its answer under a constrained decision.
const MOST_CALLS: usize = 4;
/// Most lines of earlier results offered as an argument's value.
const RESULT_LINES: usize = 20;
/// Longest earlier result (in bytes) offered whole as an argument's value.
const WHOLE_RESULT: usize = 2_000;

/// What a routed call's arguments are held to.
pub(super) struct Held<'a> {
    /// The words that asked for the call: the request, or one clause of it.
    pub(super) text: &'a str,
    /// For a later step: what the calls so far said and gave back.
    pub(super) earlier: Option<&'a Earlier>,
}

/// What the calls of a request so far said and gave back.
pub(super) struct Earlier {
    /// Their arguments and results as words that may name a file (`path:line:` split).
    names: String,
    /// Their results' text, whole when short, and line by line.
    values: Vec<String>,
}

impl Run {
    /// The workspace of the request, if any.
    pub(super) fn workspace(&self) -> Option<PathBuf> {
        self.request
            .tool_context
            .as_ref()
            .and_then(|c| c.workspace_path.clone())
    }

    /// Before the answer: the request for the next step of the request, when one of its
    /// clauses asks for a call not made yet.
    pub(super) async fn follow_up(&self, setup: &Setup) -> Option<LlmRequest> {
        if !setup.decides
            || self.request.tool_choice != ToolChoice::Auto
            || self.done.is_empty()
            || self.done.len() >= MOST_CALLS
        {
            return None;
        }
        let clauses = clauses(&self.request.message);
        if clauses.len() < 2 {
            return None;
        }
        let limit = self.shared.config.path_choices_limit;
        let found = super::choices::gather(&setup.tools, self.workspace(), limit).await;
        let mut request =
            super::iterate::llm_request(setup, &self.request, &self.history, self.iteration);
        super::choices::apply(&mut request.tools, &found);
        let earlier = self.earlier();
        for clause in &clauses {
            let routed = super::route::route_above(clause, &request.tools, &found, STEP_THRESHOLD);
            let Route::Call(id) = routed else {
                continue;
            };
            if self.served(&id, clause) {
                continue;
            }
            let tool = setup
                .tools
                .iter()
                .find(|t| super::guard::definition(t.as_ref()).is_ok_and(|d| d.id == id));
            let Some(tool) = tool else {
                continue;
            };
            let Some(at) = request.tools.iter().position(|d| d.id == id) else {
                continue;
            };
            let mut definition = request.tools[at].clone();
            let held = Held {
                text: clause,
                earlier: Some(&earlier),
            };
            self.hold_routed(&mut definition, tool, &found, held).await;
            // A call whose text the model would have to write itself is not made.
            if !every_required_text_held(&definition) {
                continue;
            }
            request.tools[at] = definition;
            request.tool_choice = ToolChoice::Tool(id);
            return Some(request);
        }
        None
    }

    /// The routed call's arguments held: what `held.text` (or, for a later step, the
    /// calls before) names settled, the text arguments held to its runs of words (and
    /// to earlier results, for content), and those narrowed by the tool.
    pub(super) async fn hold_routed(
        &self,
        definition: &mut ToolDefinition,
        tool: &Arc<dyn Tool>,
        found: &[(String, ArgumentChoices)],
        held: Held<'_>,
    ) {
        // A tool whose definition panics now has nothing settled (its call, if made,
        // fails when it is screened).
        let own = found
            .iter()
            .find(|(id, _)| *id == definition.id)
            .map(|(_, own)| own)
            .zip(super::guard::definition(tool.as_ref()).ok());
        let mut settled = own
            .map(|(own, original)| {
                super::choices::settle_named(definition, original, own, held.text)
            })
            .unwrap_or_default();
        if let (true, Some((own, original)), Some(earlier)) =
            (settled.is_empty(), own, held.earlier)
        {
            // "then open *it*": the file the earlier calls named.
            settled = super::choices::settle_named(definition, original, own, &earlier.names);
        }
        let max_words = self.shared.config.argument_span_words as usize;
        if max_words == 0 {
            return;
        }
        super::choices::hold_to_spans(definition, |tool, argument| {
            let mut values =
                super::route::argument_spans(held.text, max_words, tool, argument, found);
            if let Some(earlier) = held.earlier.filter(|_| holds_content(argument)) {
                values.extend(earlier.values.iter().cloned());
            }
            values
        });
        let workspace = self.workspace();
        let limit = usize::try_from(self.shared.config.path_choices_limit).unwrap_or(usize::MAX);
        let (text, tool) = (held.text, Arc::clone(tool));
        super::choices::narrow(text, definition, tool, settled, workspace, limit).await;
    }

    /// What the calls of this request so far said and gave back.
    fn earlier(&self) -> Earlier {
        let mut names = String::new();
        let mut values: Vec<String> = Vec::new();
        for (call, result) in &self.done {
            names.push_str(&call.parameters.to_string());
            names.push(' ');
            if !result.success {
                continue;
            }
            names.push_str(&result.content);
            names.push(' ');
            let content = result.content.trim();
            if !content.is_empty() && content.len() <= WHOLE_RESULT {
                values.push(content.to_string());
            }
            values.extend(
                content
                    .lines()
                    .map(str::trim)
                    .filter(|line| !line.is_empty())
                    .take(RESULT_LINES)
                    .map(String::from),
            );
        }
        values.dedup();
        // `path:line: text` and `{"path":"a.txt"}` name files too.
        let names = names.replace([':', '"', '{', '}', ','], " ");
        Earlier { names, values }
    }

    /// Whether a call of `tool` that `clause` asks for was made already: one of the
    /// tool's calls names every file the clause names.
    fn served(&self, tool: &str, clause: &str) -> bool {
        let named: Vec<String> = mentioned(clause)
            .into_iter()
            .filter(|w| w.contains(['.', '/']))
            .collect();
        self.done.iter().any(|(call, _)| {
            let arguments = call.parameters.to_string().to_lowercase();
            call.tool_id == tool && named.iter().all(|name| arguments.contains(name.as_str()))
        })
    }
}

/// Whether an argument holds content (what is written), which an earlier result may be.
fn holds_content(argument: &str) -> bool {
    let argument = argument.to_lowercase();
    ["content", "text", "body"]
        .iter()
        .any(|c| argument.contains(c))
}

/// Whether each required string argument of `definition` is held to values.
fn every_required_text_held(definition: &ToolDefinition) -> bool {
    super::prompt::required_names(&definition.input_schema)
        .iter()
        .all(|name| {
            let property = &definition.input_schema["properties"][name];
            property.get("type").and_then(|t| t.as_str()) != Some("string")
                || property.get("enum").is_some()
        })
}

/// The clauses of a request, in order: it is cut after a word that ends in `.`, `,`,
/// `;`, `?` or `!`, and before "and" or "then" (which are left out).
pub(super) fn clauses(request: &str) -> Vec<String> {
    let mut clauses = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    let mut close = |current: &mut Vec<&str>| {
        if !current.is_empty() {
            clauses.push(current.join(" "));
            current.clear();
        }
    };
    for word in request.split_whitespace() {
        let bare = word
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase();
        if matches!(bare.as_str(), "and" | "then") {
            close(&mut current);
            continue;
        }
        current.push(word);
        // A full stop inside a name ("notes.txt") ends nothing; one at a word's end does.
        if word.ends_with(['.', ',', ';', '?', '!']) {
            close(&mut current);
        }
    }
    close(&mut current);
    clauses
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_cut_into_its_clauses() {
        assert_eq!(
            clauses("Read source.txt and write the same text into copy.txt."),
            ["Read source.txt", "write the same text into copy.txt."]
        );
        assert_eq!(
            clauses("Find the file that mentions the budget, then tell me the total."),
            [
                "Find the file that mentions the budget,",
                "tell me the total."
            ]
        );
        assert_eq!(
            clauses("There is one file here. Find it and then open it"),
            ["There is one file here.", "Find it", "open it"]
        );
        assert_eq!(clauses("What is in notes.txt?"), ["What is in notes.txt?"]);
    }
}
