//! What goes into and comes out of a language model.

use crate::error::Error;
use crate::request::{ChatMessage, InferenceOptions, ToolChoice};
use crate::serde_util::duration_ms;
use crate::tool::ToolDefinition;
use futures_core::stream::BoxStream;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One generation request: the conversation as chat messages, the tools offered, the tool
/// choice and the sampling options. A backend renders the messages and tools with the
/// model's own chat template and may constrain tool calls to the offered schemas.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LlmRequest {
    /// The conversation so far, system prompt first.
    pub messages: Vec<ChatMessage>,
    /// Tools the model may call.
    #[serde(default)]
    pub tools: Vec<ToolDefinition>,
    /// Whether and which tool the model must call.
    #[serde(default)]
    pub tool_choice: ToolChoice,
    /// Sampling and length settings.
    #[serde(default)]
    pub options: InferenceOptions,
    /// What the reply's text must be, beyond the tool choice (`None`: anything the tool
    /// choice allows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraint: Option<ReplyConstraint>,
    /// The conversation this request continues, for a backend that keeps conversations'
    /// caches warm: a saved llama state, a server's prompt-cache key, a pinned slot (see
    /// [`crate::LlmService::keep_session`]). `None`: no affinity. Side requests (a
    /// decision among steps, asked with a short prompt of its own) carry none, but name
    /// the conversation in [`LlmRequest::side_of`]: a backend that keeps one cache per
    /// session then keeps the conversation's, not the side prompt's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionKey>,
    /// The conversation a side request (with no [`LlmRequest::session`]) was asked for: a
    /// backend that keeps several prompts of a session keeps this one's with them
    /// (llm-llama's states in memory and on disk; llm-openai's key and header, and a
    /// llama-server slot saved in a file of the side prompt's own shape); one that keeps
    /// one cache per session ignores it (the conversation's cache stays where it is).
    /// `None` on the conversation's own requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side_of: Option<SessionKey>,
    /// Values a call grammar holds tools' arguments to, by tool id (the files that exist,
    /// for a tool that reads one), apart from [`LlmRequest::tools`] as the model is shown
    /// them: the prompt stays the same whatever the workspace holds, and only what the
    /// model may write is narrowed ([`LlmRequest::held_tools`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub argument_choices: Vec<(String, crate::ArgumentChoices)>,
}

impl LlmRequest {
    /// A request for `messages` with no tools and default options.
    pub fn new(messages: Vec<ChatMessage>) -> Self {
        LlmRequest {
            messages,
            tools: Vec::new(),
            tool_choice: ToolChoice::Auto,
            options: InferenceOptions::default(),
            constraint: None,
            session: None,
            side_of: None,
            argument_choices: Vec::new(),
        }
    }

    /// The session the request was sent for: its conversation ([`LlmRequest::session`])
    /// or the one it was asked apart for ([`LlmRequest::side_of`]).
    pub fn sent_for(&self) -> Option<&SessionKey> {
        self.session.as_ref().or(self.side_of.as_ref())
    }

    /// Whether the request forces a call: tools are offered and the tool choice is
    /// `required` or a named tool.
    pub fn forces_call(&self) -> bool {
        !self.tools.is_empty()
            && matches!(self.tool_choice, ToolChoice::Required | ToolChoice::Tool(_))
    }

    /// Whether the model may call a tool: tools are offered and the choice is not `none`.
    pub fn may_call(&self) -> bool {
        !self.tools.is_empty() && self.tool_choice != ToolChoice::None
    }

    /// The tools as a call grammar holds them: each argument that
    /// [`LlmRequest::argument_choices`] names given an `enum` of its values (only string
    /// properties the schema has; no argument is added).
    pub fn held_tools(&self) -> Vec<ToolDefinition> {
        let mut tools = self.tools.clone();
        for (id, choices) in &self.argument_choices {
            if let Some(tool) = tools.iter_mut().find(|t| t.id == *id) {
                hold(&mut tool.input_schema, choices);
            }
        }
        tools
    }

    /// The JSON Schema the reply's answer is held to
    /// ([`ReplyConstraint::JsonSchema`]), if any.
    pub fn answer_schema(&self) -> Option<&serde_json::Value> {
        match &self.constraint {
            Some(ReplyConstraint::JsonSchema(schema)) => Some(schema),
            _ => None,
        }
    }
}

/// A conversation's name for the caches that keep it warm: 1 to 64 ASCII letters,
/// digits, `-` or `_`. Safe as a file name and as an HTTP header value or a
/// `prompt_cache_key`; a [`uuid::Uuid`] (a session's id) is one. It names a
/// conversation, never a person, and carries no secret.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SessionKey(String);

impl SessionKey {
    /// The longest key.
    pub const MAX_LEN: usize = 64;

    /// `key` when it has the allowed form (see [`SessionKey`]).
    pub fn new(key: impl Into<String>) -> Option<Self> {
        let key = key.into();
        let allowed = !key.is_empty()
            && key.len() <= Self::MAX_LEN
            && key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        allowed.then_some(SessionKey(key))
    }

    /// The key's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<uuid::Uuid> for SessionKey {
    fn from(id: uuid::Uuid) -> Self {
        SessionKey(id.hyphenated().to_string())
    }
}

impl TryFrom<String> for SessionKey {
    type Error = String;

    fn try_from(key: String) -> Result<Self, Self::Error> {
        SessionKey::new(key)
            .ok_or_else(|| "a session key is 1 to 64 ASCII letters, digits, '-' or '_'".to_string())
    }
}

impl From<SessionKey> for String {
    fn from(key: SessionKey) -> Self {
        key.0
    }
}

impl std::fmt::Display for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a reply's text must be.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
#[non_exhaustive]
pub enum ReplyConstraint {
    /// Exactly one of these texts: the model chooses among them by its own likelihoods
    /// (a backend holds it with a grammar; one that cannot reports
    /// [`crate::Error::Unsupported`]).
    OneOf(Vec<String>),
    /// One JSON value valid against this JSON Schema — or, when the request offers tools
    /// and its tool choice is `auto`, calls in the model's call language instead (the
    /// schema holds the answer, not the calls; a forced call ignores it). Reasoning the
    /// model writes first stays free. A backend holds it with a grammar or a server's
    /// structured output where it can; the agent validates the answer either way.
    JsonSchema(serde_json::Value),
}

/// Counts and timings of one generation.
///
/// A backend that runs the model itself measures everything; one that talks to a server
/// reports what the server says (its token counts, and its own timings when it sends them,
/// as llama-server does) and otherwise the times it saw as a client.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LlmUsage {
    /// Tokens in the prompt.
    pub prompt_tokens: u64,
    /// Prompt tokens actually evaluated (the rest came from the cache).
    pub prompt_tokens_evaluated: u64,
    /// Prompt tokens taken from the cache instead of being evaluated (a KV cache reused
    /// across requests, a server's prompt cache): `prompt_tokens - prompt_tokens_evaluated`.
    #[serde(default)]
    pub cached_prompt_tokens: u64,
    /// Tokens generated.
    pub generated_tokens: u64,
    /// From the call to the first generated token.
    #[serde(rename = "time_to_first_token_ms", with = "duration_ms")]
    pub time_to_first_token: Duration,
    /// Spent evaluating the prompt.
    #[serde(rename = "prompt_time_ms", with = "duration_ms")]
    pub prompt_time: Duration,
    /// Spent generating.
    #[serde(rename = "generation_time_ms", with = "duration_ms")]
    pub generation_time: Duration,
    /// The reply stopped because it reached its token allowance (`max_tokens`), not
    /// because the model ended it.
    #[serde(default)]
    pub hit_token_limit: bool,
}

/// One item of a generation stream.
///
/// A backend that hands the model's raw output over sends only [`LlmChunk::Text`] (the
/// agent finds calls and reasoning in it with its parser). One whose server already took
/// the output apart (an OpenAI-compatible server's `tool_calls` and `reasoning_content`)
/// sends [`LlmChunk::Reasoning`] and [`LlmChunk::ToolCall`] too; the agent treats such a
/// call exactly like one it parsed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LlmChunk {
    /// A piece of generated text; never splits a UTF-8 character.
    Text {
        /// The text.
        text: String,
    },
    /// A piece of the model's reasoning, already separated from its answer.
    Reasoning {
        /// The text.
        text: String,
    },
    /// A whole tool call, already separated from the text (sent once it is complete).
    ToolCall(LlmToolCall),
    /// The statistics: the whole usage so far, never an increment. Sent after the last
    /// text piece; a backend may send one earlier too (the prompt's counts as soon as it
    /// is evaluated, before the reply), so a reader that stops a reply early (a loop cut
    /// short) still knows what its prompt cost. The last one received holds: reports are
    /// never added up.
    Usage(LlmUsage),
    /// How far the backend has read the prompt, before the reply begins (sent as it
    /// goes, for a person to see that something happens: a long prompt may take a minute
    /// on a CPU).
    Progress(PromptProgress),
}

/// How far a prompt has been read: see [`LlmChunk::Progress`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptProgress {
    /// The prompt's tokens read so far, those served from a cache included.
    pub done: u64,
    /// The prompt's tokens.
    pub total: u64,
    /// Of `done`, the tokens served from a cache (not evaluated).
    pub cached: u64,
    /// Time spent evaluating so far, in milliseconds.
    pub elapsed_ms: u64,
}

impl PromptProgress {
    /// Tokens evaluated a second so far (the cached ones left out); `None` before any.
    pub fn tokens_per_second(&self) -> Option<f64> {
        let evaluated = self.done.saturating_sub(self.cached);
        (evaluated > 0 && self.elapsed_ms > 0)
            .then(|| evaluated as f64 * 1000.0 / self.elapsed_ms as f64)
    }
}

impl LlmChunk {
    /// A text piece.
    pub fn text(text: impl Into<String>) -> Self {
        LlmChunk::Text { text: text.into() }
    }

    /// A reasoning piece.
    pub fn reasoning(text: impl Into<String>) -> Self {
        LlmChunk::Reasoning { text: text.into() }
    }
}

/// A tool call as a server delivers it, before the agent looks the tool up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlmToolCall {
    /// The id the server gave the call, when it gave one; the conversation answers the
    /// call with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The tool's name as the model wrote it.
    pub name: String,
    /// The arguments as the model wrote them: JSON text, normally an object (the agent
    /// checks it; broken JSON is reported, never run).
    pub arguments: String,
}

/// What a backend knows about its model's size, for choosing defaults.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ModelDetails {
    /// Parameters, when known (a GGUF's own count, or what a server reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<u64>,
    /// The context window in tokens, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_length: Option<u32>,
}

impl ModelDetails {
    /// Fewer parameters than this make a model "small": it follows AIntern's compact tool
    /// prompt and answers best greedy.
    pub const SMALL_MODEL_PARAMETERS: u64 = 1_000_000_000;

    /// Whether the model is known to be small (see [`Self::SMALL_MODEL_PARAMETERS`]).
    pub fn is_small(&self) -> bool {
        self.parameters
            .is_some_and(|p| p > 0 && p < Self::SMALL_MODEL_PARAMETERS)
    }

    /// Whether the model is known to have [`Self::SMALL_MODEL_PARAMETERS`] or more: a
    /// model that decides for itself, whose known lapses (an empty reply, a whole file
    /// replaced unread) the agent answers.
    pub fn is_known_large(&self) -> bool {
        self.parameters
            .is_some_and(|p| p >= Self::SMALL_MODEL_PARAMETERS)
    }
}

/// A generation in progress. Dropping it cancels the generation: a backend must stop
/// within one token of the stream being dropped.
pub type LlmStream = BoxStream<'static, Result<LlmChunk, Error>>;

setters!(LlmRequest {
    with_messages => messages: Vec<ChatMessage>,
    with_tools => tools: Vec<ToolDefinition>,
    with_tool_choice => tool_choice: ToolChoice,
    with_options => options: InferenceOptions,
    with_constraint => constraint: Option<ReplyConstraint>,
    with_session => session: Option<SessionKey>,
    with_side_of => side_of: Option<SessionKey>,
});

setters!(LlmUsage {
    with_prompt_tokens => prompt_tokens: u64,
    with_prompt_tokens_evaluated => prompt_tokens_evaluated: u64,
    with_cached_prompt_tokens => cached_prompt_tokens: u64,
    with_generated_tokens => generated_tokens: u64,
    with_time_to_first_token => time_to_first_token: Duration,
    with_prompt_time => prompt_time: Duration,
    with_generation_time => generation_time: Duration,
    with_hit_token_limit => hit_token_limit: bool,
});

setters!(ModelDetails {
    with_parameters => parameters: Option<u64>,
    with_context_length => context_length: Option<u32>,
});

/// Give each property of `schema` that `choices` names an `enum` of its values (only
/// string properties the schema has: no argument is added).
fn hold(schema: &mut serde_json::Value, choices: &crate::ArgumentChoices) {
    let Some(properties) = schema
        .get_mut("properties")
        .and_then(serde_json::Value::as_object_mut)
    else {
        return;
    };
    for (name, values) in choices {
        let Some(property) = properties.get_mut(name).and_then(|p| p.as_object_mut()) else {
            continue;
        };
        if property.get("type").and_then(|t| t.as_str()) != Some("string") || values.is_empty() {
            continue;
        }
        let values = values.iter().cloned().map(serde_json::Value::String);
        property.insert("enum".into(), serde_json::Value::Array(values.collect()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn choices_hold_only_string_arguments_the_schema_has() {
        let tool = ToolDefinition::new("read_file", "Read", "Read a file.").with_schema(json!({
            "type": "object",
            "properties": {"path": {"type": "string"}, "depth": {"type": "integer"}}}));
        let mut request = LlmRequest::new(Vec::new()).with_tools(vec![tool.clone()]);
        request.argument_choices = vec![(
            "read_file".to_string(),
            [
                ("path".to_string(), vec!["a.txt".to_string()]),
                ("depth".to_string(), vec!["1".to_string()]),
                ("other".to_string(), vec!["x".to_string()]),
            ]
            .into(),
        )];
        let held = request.held_tools();
        assert_eq!(
            held[0].input_schema,
            json!({"type": "object", "properties": {
                "path": {"type": "string", "enum": ["a.txt"]}, "depth": {"type": "integer"}}})
        );
        // The tools as shown are as they were.
        assert_eq!(request.tools[0], tool);
    }
}
