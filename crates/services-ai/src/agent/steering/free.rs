//! [`Free`]: the model writes what it wants — an answer, or calls in its own call
//! language — and the parser takes the calls from its text. For models able to decide
//! for themselves.

use super::{Chooser, Halt, Plan, Steering, Turn};
use async_trait::async_trait;
use core_models::{ChatMessage, ToolChoice};

/// See the module documentation.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Free;

#[async_trait]
impl Steering for Free {
    fn name(&self) -> &'static str {
        "free"
    }

    async fn before_reply(&self, turn: &Turn<'_>, _model: &dyn Chooser) -> Result<Plan, Halt> {
        let request = turn.base.clone();
        let held = match &request.tool_choice {
            ToolChoice::Tool(id) => Some(format!("the request forced a call of {id}")),
            ToolChoice::Required => Some("the request required a tool call".to_string()),
            ToolChoice::Auto | ToolChoice::None => None,
        };
        Ok(Plan {
            text_only: request.tool_choice == ToolChoice::None,
            request,
            held,
        })
    }

    fn answer(&self, turn: &Turn<'_>) -> Plan {
        let mut request = turn.base.clone();
        request.tool_choice = ToolChoice::None;
        if !turn.done.is_empty() {
            // Asked after a reply that only repeated calls: the model is told why it is
            // asked again (the conversation as it is, with one note after it), and shown
            // no tools (offered them, a model that repeats itself answers with nothing).
            request.messages.push(ChatMessage::user(ANSWER_NOW));
            request.tools.clear();
        }
        Plan {
            request,
            text_only: true,
            held: None,
        }
    }

    fn after_result(&self, turn: &Turn<'_>) -> String {
        turn.config
            .tool_result_instruction
            .replace("{request}", turn.request.message.trim())
    }

    /// A first reply that names offered tools but calls none (a model that writes "I will
    /// use `read_file` to read it" and then imagines the file): asked once more, with its
    /// reply and a note saying that nothing ran, and every tool still offered. The model
    /// decides again: it calls, or answers (the note says a request that needs no tool is
    /// simply answered). Only before any call of the request, once, and only when tools
    /// may be called; what is read is the model's reply, never the request.
    fn after_no_call(&self, turn: &Turn<'_>, said: &str) -> Option<Plan> {
        if !turn.done.is_empty() || turn.base.tool_choice != ToolChoice::Auto {
            return None;
        }
        let named = named_tools(said, turn.base.tools.iter().map(|t| t.id.as_str()));
        if named.is_empty() {
            return None;
        }
        let mut request = turn.base.clone();
        request
            .messages
            .push(ChatMessage::assistant(said.to_string()));
        request.messages.push(ChatMessage::user(described(&named)));
        Some(Plan {
            request,
            text_only: false,
            held: None,
        })
    }

    /// A reply with nothing in it (a model that ends its turn right after a tool result,
    /// with the request not done or not answered): asked once more, the conversation as it
    /// is with a note after it, every tool still offered. Nothing is added for the model
    /// but the note; it decides again.
    fn after_empty(&self, turn: &Turn<'_>) -> Option<Plan> {
        let mut request = turn.base.clone();
        request.messages.push(ChatMessage::user(EMPTY_REPLY));
        Some(Plan {
            text_only: request.tool_choice == ToolChoice::None,
            request,
            held: None,
        })
    }
}

/// The note after a reply with nothing in it.
const EMPTY_REPLY: &str = "(Your reply was empty. If my request needs another step, make \
that call now; if it is done, answer in plain text from the results above.)";

/// The tools of `offered` that `text` names: an id written as a word of its own, when it
/// cannot be an everyday word (it holds `_`, `-` or `.`) or is quoted in backticks.
fn named_tools<'a>(text: &str, offered: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    offered
        .filter(|id| !id.is_empty())
        .filter(|id| {
            let marked = id.contains(['_', '-', '.']);
            text.match_indices(id).any(|(at, _)| {
                let before = text[..at].chars().next_back();
                let after = text[at + id.len()..].chars().next();
                let alone = !before.is_some_and(word) && !after.is_some_and(word);
                let quoted = before == Some('`') && after == Some('`');
                alone && (marked || quoted)
            })
        })
        .collect()
}

/// The note after a first reply that named tools and called none.
fn described(named: &[&str]) -> String {
    format!(
        "(You described a call of {} instead of making it: nothing ran, and nothing you \
         wrote about the workspace came from it. To use a tool, write the call itself now. \
         If my request needs no tool, just answer it.)",
        named.join(", ")
    )
}

/// The note after a reply that only repeated calls made already.
const ANSWER_NOW: &str = "(You called that tool with the same arguments already; its result \
is above. Answer my request now from the results, in plain text, without calling a tool.)";

#[cfg(test)]
mod tests {
    use super::named_tools;

    #[test]
    fn tools_are_named_as_words_of_their_own() {
        let offered = ["read_file", "search", "list_dir"];
        let named = |text: &str| named_tools(text, offered.into_iter());
        assert_eq!(named("I will use the `read_file` function."), ["read_file"]);
        assert_eq!(
            named("read_file(path) then list_dir"),
            ["read_file", "list_dir"]
        );
        // An id inside a longer word, or an everyday word, is not a tool named.
        assert!(named("my_read_file_helper and reread_files").is_empty());
        assert!(named("I will search for it.").is_empty());
        assert_eq!(named("Use `search` here."), ["search"]);
    }
}
