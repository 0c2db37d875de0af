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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
}

impl LlmRequest {
    /// A request for `messages` with no tools and default options.
    pub fn new(messages: Vec<ChatMessage>) -> Self {
        LlmRequest {
            messages,
            tools: Vec::new(),
            tool_choice: ToolChoice::Auto,
            options: InferenceOptions::default(),
        }
    }
}

/// Counts and timings of one generation.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LlmUsage {
    /// Tokens in the prompt.
    pub prompt_tokens: u64,
    /// Prompt tokens actually evaluated (the rest came from the cache).
    pub prompt_tokens_evaluated: u64,
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
}

/// One item of a generation stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LlmChunk {
    /// A piece of generated text; never splits a UTF-8 character.
    Text {
        /// The text.
        text: String,
    },
    /// The statistics, sent once after the last text piece.
    Usage(LlmUsage),
}

impl LlmChunk {
    /// A text piece.
    pub fn text(text: impl Into<String>) -> Self {
        LlmChunk::Text { text: text.into() }
    }
}

/// A generation in progress. Dropping it cancels the generation: a backend must stop
/// within one token of the stream being dropped.
pub type LlmStream = BoxStream<'static, Result<LlmChunk, Error>>;
