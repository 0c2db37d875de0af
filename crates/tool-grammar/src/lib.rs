//! Tool-call grammars: GBNF text (llama.cpp's grammar language) that constrains a reply
//! to calls in the model's own call language.
//!
//! `required` or a named tool makes the reply one or more calls whose arguments follow
//! the tools' JSON schemas, after the reasoning the model may write first (or must
//! finish, when the prompt opened it); `auto` constrains only what follows the format's
//! opening marker (a lazy grammar), so free text stays free; `none` adds nothing.
//!
//! Pure: no model, no I/O. Both backends write the same grammar — the in-process one
//! hands it to llama.cpp's sampler, the server one sends it to llama-server — so a model
//! is held to the same call syntax wherever it runs. The JSON of arguments comes from a
//! [`SchemaConverter`]: llama.cpp's own converter where it is linked, else
//! [`SubsetConverter`].
//!
//! `syntax` knows each format's call syntax; `gbnf` writes the grammar text.

mod answer;
mod counts;
mod gbnf;
mod schema;
mod syntax;

pub use counts::{check_counts, MAX_COUNT};
pub use schema::SubsetConverter;

use core_models::{LlmRequest, ReplyConstraint, ToolChoice};
use gbnf::{literal, Gbnf, SPACE};
use tool_calls::ToolCallFormat;

/// How many calls one reply may hold.
const MAX_CALLS: usize = 8;

/// The opening of a tool call in the format AIntern asks models for.
pub const CALL_FENCE: &str = "```tool_call";

/// Errors of grammar building.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The tool choice names a tool that is not offered.
    #[error("the tool choice names {0}, which is not offered")]
    UnknownTool(String),
    /// A tool's schema could not be turned into a grammar.
    #[error("{0}")]
    Schema(String),
}

/// Turns a JSON schema into a GBNF grammar of the JSON it accepts (start rule `root`).
pub trait SchemaConverter {
    /// The grammar of JSON values matching `schema`.
    ///
    /// # Errors
    /// A message when the schema cannot be converted.
    fn convert(&self, schema: &serde_json::Value) -> Result<String, String>;
}

/// A grammar for a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolGrammar {
    /// The GBNF text; its start rule is `root`.
    pub text: String,
    /// For a lazy grammar, the patterns (regular expressions, as llama.cpp's lazy
    /// grammars take them) that start it: the grammar constrains the text from the
    /// pattern's first capture group on. Empty for a grammar that constrains the whole
    /// reply.
    pub triggers: Vec<String>,
}

impl ToolGrammar {
    /// Whether the grammar waits for a trigger.
    pub fn is_lazy(&self) -> bool {
        !self.triggers.is_empty()
    }
}

/// What the grammar is written for: the model's call language and reasoning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrammarTarget {
    /// The call format ([`ToolCallFormat::FencedJson`]: AIntern's own, taught by the
    /// system prompt).
    pub format: ToolCallFormat,
    /// The reasoning markers the model writes (open, close), when it reasons.
    pub reasoning: Option<(&'static str, &'static str)>,
    /// The prompt opened reasoning: the reply starts inside it.
    pub starts_in_thinking: bool,
    /// Mistral's newer form, `[TOOL_CALLS]NAME[ARGS]{…}` (Mistral Small 3.2, Magistral,
    /// Devstral), rather than a JSON list.
    pub name_then_args: bool,
}

impl GrammarTarget {
    /// AIntern's fence, for a model whose reasoning is unknown.
    pub fn fence() -> Self {
        GrammarTarget {
            format: ToolCallFormat::FencedJson,
            reasoning: None,
            starts_in_thinking: false,
            name_then_args: false,
        }
    }

    /// The reasoning markers that apply: the model's, or `<think>` when the prompt opened
    /// reasoning without the model's being known.
    fn reasoning_markers(&self) -> Option<(&'static str, &'static str)> {
        match self.reasoning {
            None if self.starts_in_thinking => Some(("<think>", "</think>")),
            markers => markers,
        }
    }

    /// The reasoning the model may write (or, when the prompt opened it, finish) before
    /// its calls, as a GBNF expression; empty when there is none.
    fn reasoning_prefix(&self, g: &mut Gbnf<'_>) -> String {
        // A harmony reply's analysis message ends with `<|end|>`; the call is the next
        // message, whose header starts again.
        let after = if self.format == ToolCallFormat::Harmony {
            literal("<|start|>assistant")
        } else {
            SPACE.to_string()
        };
        match self.reasoning_markers() {
            Some((_, close)) if self.starts_in_thinking => {
                format!("{} {after} ", g.until(close))
            }
            Some((open, close)) => {
                format!("( {} {} {after} )? ", literal(open), g.until(close))
            }
            None => String::new(),
        }
    }
}

/// A grammar for the reply to `request` in `target`'s call language, from the offered
/// tools and the tool choice, with argument JSON as `schemas` writes it. `None` when
/// nothing constrains the reply.
///
/// # Errors
/// [`Error::UnknownTool`] when the tool choice names a tool not offered;
/// [`Error::Schema`] when a tool's schema cannot be converted.
pub fn tool_grammar(
    request: &LlmRequest,
    target: &GrammarTarget,
    schemas: &dyn SchemaConverter,
) -> Result<Option<ToolGrammar>, Error> {
    // An answer held to a schema: the whole reply is its JSON, or calls where the tool
    // choice leaves the choice to the model; a forced call is a call.
    if let Some(schema) = request.answer_schema() {
        if !request.forces_call() {
            return answer::answer_grammar(request, target, schemas, schema).map(Some);
        }
    } else if let Some(constraint) = &request.constraint {
        // Any other constraint on the whole reply wins over the tool choice.
        return Ok(Some(constraint_grammar(constraint)));
    }
    // With `none` nothing constrains the text: the agent runs nothing the model writes
    // then (a grammar forbidding the call's opening would have to check every token).
    if request.tools.is_empty() || request.tool_choice == ToolChoice::None {
        return Ok(None);
    }
    // The tools with their arguments held to the request's choices (the files that exist).
    let held = request.held_tools();
    let tools: Vec<_> = match &request.tool_choice {
        ToolChoice::Tool(name) => {
            let chosen: Vec<_> = held.iter().filter(|t| &t.id == name).collect();
            if chosen.is_empty() {
                return Err(Error::UnknownTool(name.clone()));
            }
            chosen
        }
        _ => held.iter().collect(),
    };
    let mut g = Gbnf::new(schemas);
    // A named tool is one call of it; otherwise a reply may hold several.
    let max_calls = match request.tool_choice {
        ToolChoice::Tool(_) => 1,
        _ => MAX_CALLS,
    };
    let calls = syntax::calls(&mut g, target, &tools, max_calls)?;
    let (root, triggers) = match request.tool_choice {
        ToolChoice::Auto => match calls.also {
            Some((also, more)) => (
                format!("( {} ) | {also}", calls.expr),
                calls.triggers.into_iter().chain(more).collect(),
            ),
            None => (calls.expr, calls.triggers),
        },
        _ => {
            let prefix = target.reasoning_prefix(&mut g);
            (format!("{prefix}{}", calls.expr), Vec::new())
        }
    };
    Ok(Some(ToolGrammar {
        text: g.finish(&root),
        triggers,
    }))
}

/// The grammar of a [`ReplyConstraint`] that needs no schema converter: for [`ReplyConstraint::OneOf`], exactly one of
/// its texts (none: a grammar nothing matches would stall the model, so an empty list
/// admits the empty reply).
pub fn constraint_grammar(constraint: &ReplyConstraint) -> ToolGrammar {
    let root = match constraint {
        ReplyConstraint::OneOf(options) if options.is_empty() => "\"\"".to_string(),
        ReplyConstraint::OneOf(options) => options
            .iter()
            .map(|o| literal(o))
            .collect::<Vec<_>>()
            .join(" | "),
        // A schema needs a converter (see [`tool_grammar`]); without one (and for kinds
        // of constraint added later), any text: the agent validates the answer.
        _ => "[^\\x00]*".to_string(),
    };
    ToolGrammar {
        text: format!("root ::= {root}\n"),
        triggers: Vec::new(),
    }
}

/// Keeps the reasoning before a required call from taking the whole reply: the grammar
/// lets the model reason first, and a small model may never stop. After half of the
/// reply's tokens spent reasoning, the worker writes the rest of the closing marker
/// itself, and the grammar then asks for the call.
#[derive(Debug)]
pub struct ReasoningBudget {
    open: &'static str,
    close: &'static str,
    state: Reasoning,
    /// The text since the reply started; inside reasoning, only its last marker's length.
    text: String,
    tokens: u64,
    budget: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reasoning {
    Before,
    Inside,
    Done,
}

impl ReasoningBudget {
    /// The budget for a reply to `request` under a grammar for `target`; `None` when the
    /// grammar constrains nothing before a trigger (`auto`, with no answer schema) or
    /// allows no reasoning.
    pub fn new(request: &LlmRequest, target: &GrammarTarget) -> Option<Self> {
        let whole_reply = request.forces_call() || request.answer_schema().is_some();
        if !whole_reply {
            return None;
        }
        let (open, close) = target.reasoning_markers()?;
        Some(ReasoningBudget {
            open,
            close,
            state: if target.starts_in_thinking {
                Reasoning::Inside
            } else {
                Reasoning::Before
            },
            text: String::new(),
            tokens: 0,
            budget: u64::from(request.options.max_tokens.max(2) / 2),
        })
    }

    /// Note the text of one generated token. Returns the text to write for the model
    /// when the budget is spent: the rest of the closing marker.
    pub fn push(&mut self, piece: &str) -> Option<String> {
        self.text.push_str(piece);
        if self.state == Reasoning::Before {
            let t = self.text.trim_start();
            if let Some(rest) = t.strip_prefix(self.open) {
                self.text = rest.to_string();
                self.state = Reasoning::Inside;
            } else if !self.open.starts_with(t) {
                self.state = Reasoning::Done;
            }
            return None;
        }
        if self.state == Reasoning::Done {
            return None;
        }
        self.tokens += 1;
        if self.text.contains(self.close) {
            self.state = Reasoning::Done;
            return None;
        }
        // Only a marker's length of tail can matter to the next check: keep no more, so
        // each token costs the same however long the reasoning runs.
        if self.text.len() > self.close.len() {
            let mut cut = self.text.len() - self.close.len();
            while !self.text.is_char_boundary(cut) {
                cut += 1;
            }
            self.text.drain(..cut);
        }
        if self.tokens < self.budget {
            return None;
        }
        self.state = Reasoning::Done;
        // The marker may already be partly written.
        let written = (1..self.close.len())
            .rev()
            .filter(|&k| self.close.is_char_boundary(k))
            .find(|&k| self.text.ends_with(&self.close[..k]))
            .unwrap_or(0);
        Some(self.close[written..].to_string())
    }
}

#[cfg(test)]
mod matcher;
#[cfg(test)]
mod tests;
