//! [`SmallModel`]: decide, then write. A model of a hundred million parameters answers a
//! request for action with prose and calls a tool only when made to, so each reply is
//! taken in two steps, both the model's own:
//!
//! 1. **The decision.** The model is shown the request (and what the calls so far
//!    returned) with the options — answering, and each offered tool with the first
//!    sentence of its description — and replies under a grammar that admits exactly one
//!    option's name. Greedy decoding makes that its most likely option. Every offered
//!    tool and answering are always among the options, unless the request forces a tool
//!    (`required` leaves answering out; a named tool is no decision).
//! 2. **The reply.** A tool chosen, the model writes its call under that tool's argument
//!    grammar (path arguments held to the workspace's existing names, where the backend
//!    holds them); the call is marked as written under a grammar, for its approval.
//!    Answering chosen, it writes its answer in plain text: with no tool results yet, to
//!    the conversation as a call's request shows it (the tools described, no call
//!    allowed: the same prompt, so a cache holding one serves the other); after results,
//!    to one plain question that gives it the results and the request (a small model lost
//!    in a conversation of calls and results answers a plain question about a text well).
//!
//! Nothing here reads the request's words: the options come from the offered tools, the
//! choice from the model.

use super::{Chooser, Free, Halt, Plan, Steering, Turn};
use async_trait::async_trait;
use core_models::{
    ChatMessage, LlmRequest, ReplyConstraint, ToolCallRequest, ToolChoice, ToolDefinition,
    ToolResult,
};

/// See the module documentation.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SmallModel;

/// The option that answers without a tool.
const ANSWER: &str = "answer";
/// Most tokens a decision may take (an option's name is a few).
const DECISION_TOKENS: u32 = 16;
/// Most characters of one result shown to a later decision.
const RESULT_EXCERPT: usize = 600;

#[async_trait]
impl Steering for SmallModel {
    fn name(&self) -> &'static str {
        "small-model"
    }

    async fn before_reply(&self, turn: &Turn<'_>, model: &dyn Chooser) -> Result<Plan, Halt> {
        let tools = &turn.base.tools;
        let options: Vec<String> = match &turn.base.tool_choice {
            ToolChoice::None => return Ok(self.answer(turn)),
            ToolChoice::Tool(id) => {
                return Ok(fill(turn, id, format!("the request forced a call of {id}")))
            }
            ToolChoice::Required => tools.iter().map(|t| t.id.clone()).collect(),
            ToolChoice::Auto => std::iter::once(ANSWER.to_string())
                .chain(tools.iter().map(|t| t.id.clone()))
                .collect(),
        };
        let asked = decision_request(turn, &options, Framing::Steps);
        tracing::trace!(messages = ?asked.messages, "the decision asked");
        let mut chosen = model.choose(asked).await?;
        tracing::debug!(?options, ?chosen, "the model chose the next step");
        let mut confirmed = false;
        if let Some(tool) = chosen.clone().filter(|c| changes_something(tools, c)) {
            // A step that changes something is taken only when the model chooses it again
            // when asked the other way; when the two disagree, it answers.
            let again = model
                .choose(decision_request(turn, &options, Framing::Tools))
                .await?;
            tracing::debug!(?again, "the model chose again");
            if again.as_deref() == Some(tool.as_str()) {
                confirmed = true;
            } else if options.iter().any(|o| o == ANSWER) {
                chosen = Some(ANSWER.to_string());
            }
        }
        match chosen {
            // The backend cannot hold a choice: the model writes freely.
            None => Ok(Plan {
                text_only: turn.base.tool_choice == ToolChoice::None,
                request: turn.base.clone(),
                held: None,
            }),
            Some(choice) if choice == ANSWER => Ok(self.answer(turn)),
            Some(tool) => {
                let held = format!(
                    "written under a grammar: the model chose {tool} among {} ({}){}, then wrote its arguments under {tool}'s schema{}",
                    plural(options.len(), "option"),
                    options.join(", "),
                    if confirmed {
                        ", twice (a step that changes something is asked two ways)"
                    } else {
                        ""
                    },
                    if holds_paths(turn.base, &tool) {
                        ", its path held to the workspace's existing names"
                    } else {
                        ""
                    }
                );
                Ok(fill(turn, &tool, held))
            }
        }
    }

    fn answer(&self, turn: &Turn<'_>) -> Plan {
        if turn.done.is_empty() {
            // Nothing ran: the conversation as a call's request shows it, tools described,
            // no call allowed, as free steering asks for an answer. One prompt for both, so
            // that a cache holding the one serves the other (a conversation that
            // alternates answers and calls is evaluated once, not once in each shape).
            return Free.answer(turn);
        }
        Plan {
            request: answer_to_results(turn),
            text_only: true,
            held: None,
        }
    }

    fn after_result(&self, _turn: &Turn<'_>) -> String {
        // The answer is asked apart, with the results (see `answer`).
        String::new()
    }
}

/// The system prompt of a plain answer: the request's own, else a plain one; with what
/// the answer's JSON must match when the request holds it to a schema.
fn plain_system(turn: &Turn<'_>) -> String {
    let system = turn
        .request
        .system_prompt
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or("You are a helpful assistant.");
    match &turn.request.output_schema {
        Some(schema) => format!("{system}\n\n{}", crate::output::instruction(schema)),
        None => system.to_string(),
    }
}

/// The request asked of the model, and the messages sent into it since.
fn asked(turn: &Turn<'_>) -> String {
    std::iter::once(turn.request.message.trim())
        .chain(turn.received.iter().map(|m| m.trim()))
        .filter(|m| !m.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// How a decision is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// Answering listed as one of the steps; "the name of the first step".
    Steps,
    /// The tools listed; "the tool to use first, or answer if no tool is needed".
    Tools,
}

/// Whether the tool `id` may change something: it writes files, runs commands, or is
/// rated above safe.
fn changes_something(tools: &[ToolDefinition], id: &str) -> bool {
    tools.iter().find(|t| t.id == id).is_some_and(|t| {
        t.modifies_files
            || t.category == core_models::ToolCategory::Terminal
            || t.default_risk_level > core_models::RiskLevel::Safe
    })
}

/// The question that chooses the next step among `options`: the tools with the first
/// sentence of their descriptions (and, framed as steps, answering listed as one); the
/// request (and what the calls so far returned) as the user's message.
fn decision_request(turn: &Turn<'_>, options: &[String], framing: Framing) -> LlmRequest {
    let mut system =
        String::from("You are a helpful assistant working in a folder of files. Tools:");
    for tool in &turn.base.tools {
        system.push_str(&format!(
            "\n- {}: {}.",
            tool.id,
            first_sentence(&tool.description)
        ));
    }
    let answering = options.iter().any(|o| o == ANSWER);
    if answering && framing == Framing::Steps {
        system.push_str(&format!("\n- {ANSWER}: reply in words, with no tool."));
    }
    let user = if turn.done.is_empty() {
        system.push_str(match (framing, answering) {
            (Framing::Steps, _) => "\n\nReply with the name of the first step.",
            (Framing::Tools, true) => {
                "\n\nFor each request, name the tool to use first, or answer if no tool is needed."
            }
            (Framing::Tools, false) => "\n\nFor each request, name the tool to use first.",
        });
        asked(turn)
    } else {
        system.push_str(
            "\n\nReply with the name of the next step: answer when the results so far answer the request.",
        );
        format!(
            "Request: {}\n\nResults so far:\n{}",
            asked(turn),
            done_so_far(turn.done)
        )
    };
    let mut request = LlmRequest::new(vec![ChatMessage::system(system), ChatMessage::user(user)]);
    request.tool_choice = ToolChoice::None;
    request.options = turn.base.options.clone();
    request.options.temperature = 0.0;
    request.options.max_tokens = DECISION_TOKENS;
    request.constraint = Some(ReplyConstraint::OneOf(options.to_vec()));
    request.side_of = turn.base.session.clone();
    request
}

/// The calls made so far and the start of what each returned.
fn done_so_far(done: &[(ToolCallRequest, ToolResult)]) -> String {
    done.iter()
        .map(|(call, result)| {
            let text = crate::agent::prompt::result_text(result, u32::MAX);
            let excerpt: String = text.chars().take(RESULT_EXCERPT).collect();
            let more = if excerpt.len() < text.len() {
                " …"
            } else {
                ""
            };
            let label = match core_models::main_argument_of(&call.parameters) {
                Some((_, value)) => format!("{} {}", call.tool_id, value.trim()),
                None => call.tool_id.clone(),
            };
            format!("- {label}:\n{}{more}", excerpt.trim_end())
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The request for the call of `tool`, held to its grammar.
fn fill(turn: &Turn<'_>, tool: &str, held: String) -> Plan {
    let mut request = turn.base.clone();
    request.tool_choice = ToolChoice::Tool(tool.to_string());
    // A forced call is a call: an answer schema does not apply.
    request.constraint = None;
    Plan {
        request,
        text_only: false,
        held: Some(held),
    }
}

/// The answer after results: one plain question that gives the results, then the
/// request.
fn answer_to_results(turn: &Turn<'_>) -> LlmRequest {
    let max_tokens = turn.config.max_tool_result_tokens;
    let results: Vec<String> = turn
        .done
        .iter()
        .map(|(call, result)| {
            let text = crate::agent::prompt::result_text(result, max_tokens);
            format!("{}:\n{}", heading(call), text.trim_end())
        })
        .collect();
    let how = if turn.request.output_schema.is_some() {
        "Answer with only the JSON value."
    } else {
        "Answer in one plain sentence."
    };
    let text = format!(
        "{}\n\nQuestion: {}\n{how}",
        results.join("\n\n"),
        asked(turn)
    );
    let mut request = LlmRequest::new(vec![
        ChatMessage::system(plain_system(turn)),
        ChatMessage::user(text),
    ]);
    request.tool_choice = ToolChoice::None;
    request.options = turn.base.options.clone();
    request.side_of = turn.base.session.clone();
    if let Some(schema) = &turn.request.output_schema {
        // The answer is JSON, held to the schema: no stop may cut it.
        request.constraint = Some(ReplyConstraint::JsonSchema(schema.clone()));
        return request;
    }
    // The answer is one sentence: a small model runs on into a question of its own.
    for stop in ["\n\n", "\nQuestion:"] {
        if !request.options.stop.iter().any(|s| s == stop) {
            request.options.stop.push(stop.to_string());
        }
    }
    request
}

/// What a call was about, in a few words: its main argument (the file, the command, the
/// pattern), else its tool. (A longer heading, such as the call's summary, is echoed by a
/// small model as the start of its answer.)
fn heading(call: &ToolCallRequest) -> String {
    match core_models::main_argument_of(&call.parameters) {
        Some((_, value)) if !value.trim().is_empty() => value.trim().to_string(),
        _ => call.tool_id.clone(),
    }
}

/// Whether `tool`'s path arguments are held to what exists (the request's choices give
/// one of its arguments an `enum`).
fn holds_paths(request: &LlmRequest, tool: &str) -> bool {
    request
        .held_tools()
        .iter()
        .find(|t| t.id == tool)
        .and_then(|t| t.input_schema.get("properties"))
        .and_then(|p| p.as_object())
        .is_some_and(|p| p.values().any(|v| v.get("enum").is_some()))
}

/// The first sentence of a description, without its full stop.
fn first_sentence(text: &str) -> &str {
    let text = text.trim();
    let end = text.find(". ").unwrap_or(text.len());
    text[..end].trim_end_matches('.')
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}
