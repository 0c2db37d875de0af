//! What the model writes and where the loop stands: `text_generation` and `agent_iteration`.

use super::EventHeader;
use crate::llm::LlmUsage;
use crate::serde_util::{duration_ms, truncate_chars};
use serde::{Deserialize, Serialize};
use std::time::Duration;
use uuid::Uuid;

// ---------------------------------------------------------------------------------------
// text_generation
// ---------------------------------------------------------------------------------------

/// A piece of text from the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextGenerationEvent {
    /// Shared fields.
    #[serde(flatten)]
    pub header: EventHeader,
    /// The text (empty on the completion event).
    pub token: String,
    /// Whether the generation ended.
    #[serde(default)]
    pub is_complete: bool,
    /// Tokens generated so far in this request.
    #[serde(default)]
    pub token_count: u32,
    /// Whether this is reasoning rather than the answer.
    #[serde(default)]
    pub is_thinking: bool,
    /// The model that produced it.
    #[serde(default)]
    pub source: Option<String>,
    /// Position within the current stream.
    #[serde(default)]
    pub sequence_index: u32,
    /// On the completion event: the generation's counts and timings as the backend
    /// reported them (prompt, cached and generated tokens, times).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<LlmUsage>,
}

impl TextGenerationEvent {
    /// A piece of text.
    pub fn token(
        request_id: Uuid,
        token: impl Into<String>,
        token_count: u32,
        is_thinking: bool,
        iteration: u32,
    ) -> Self {
        TextGenerationEvent {
            header: EventHeader::new(request_id, iteration),
            token: token.into(),
            is_complete: false,
            token_count,
            is_thinking,
            source: None,
            sequence_index: 0,
            usage: None,
        }
    }

    /// The end of a generation.
    pub fn complete(request_id: Uuid, total_tokens: u32, iteration: u32) -> Self {
        TextGenerationEvent {
            is_complete: true,
            ..Self::token(request_id, "", total_tokens, false, iteration)
        }
    }

    /// Attach the generation's usage (on the completion event).
    pub fn with_usage(mut self, usage: LlmUsage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Set the position within the stream.
    pub fn with_sequence_index(mut self, index: u32) -> Self {
        self.sequence_index = index;
        self
    }

    /// Set the model name.
    pub fn with_source(mut self, source: impl Into<String>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// One-line description.
    pub fn summary(&self) -> String {
        if self.is_complete {
            format!("Generation complete ({} tokens)", self.token_count)
        } else {
            format!(
                "Token: \"{}\" (thinking: {})",
                truncate_chars(&self.token, 20),
                self.is_thinking
            )
        }
    }
}

// ---------------------------------------------------------------------------------------
// prompt_progress
// ---------------------------------------------------------------------------------------

/// How far the model has read the prompt, before its reply begins (`"prompt_progress"`):
/// sent as the backend reports it, so that a long prompt read on a CPU is not silence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptProgressEvent {
    /// Shared fields.
    #[serde(flatten)]
    pub header: EventHeader,
    /// The prompt's tokens read so far, those served from a cache included.
    pub tokens_done: u64,
    /// The prompt's tokens.
    pub tokens_total: u64,
    /// Of `tokens_done`, those served from a cache.
    pub tokens_cached: u64,
    /// Tokens evaluated a second so far, when any were.
    #[serde(default)]
    pub tokens_per_second: Option<f64>,
}

impl PromptProgressEvent {
    /// Progress `progress` of request `request_id` in `iteration`.
    pub fn create(request_id: Uuid, progress: &crate::PromptProgress, iteration: u32) -> Self {
        PromptProgressEvent {
            header: EventHeader::new(request_id, iteration),
            tokens_done: progress.done,
            tokens_total: progress.total,
            tokens_cached: progress.cached,
            tokens_per_second: progress.tokens_per_second(),
        }
    }

    /// One-line description.
    pub fn summary(&self) -> String {
        let speed = self
            .tokens_per_second
            .map_or_else(String::new, |s| format!(", {s:.0} tok/s"));
        format!(
            "Reading the prompt: {} of {} tokens{speed}",
            self.tokens_done, self.tokens_total
        )
    }
}

// ---------------------------------------------------------------------------------------
// agent_iteration
// ---------------------------------------------------------------------------------------

/// A loop iteration starts. Its number is the header's `iteration_number` (1-based).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentIterationEvent {
    /// Shared fields.
    #[serde(flatten)]
    pub header: EventHeader,
    /// Most iterations allowed.
    pub max_iterations: u32,
    /// Tool calls executed in the previous iteration.
    pub tool_calls_in_previous_iteration: u32,
    /// Tool calls executed so far.
    pub total_tool_calls_executed: u32,
    /// Time since the request started.
    #[serde(rename = "elapsed_ms", with = "duration_ms")]
    pub elapsed_time: Duration,
}

impl AgentIterationEvent {
    /// An iteration event.
    pub fn create(
        request_id: Uuid,
        iteration: u32,
        max_iterations: u32,
        prev_tool_calls: u32,
        total_tool_calls: u32,
        elapsed: Duration,
    ) -> Self {
        AgentIterationEvent {
            header: EventHeader::new(request_id, iteration),
            max_iterations,
            tool_calls_in_previous_iteration: prev_tool_calls,
            total_tool_calls_executed: total_tool_calls,
            elapsed_time: elapsed,
        }
    }

    /// The iteration's number.
    pub fn iteration_number(&self) -> u32 {
        self.header.iteration_number
    }

    /// Whether this is the last iteration allowed.
    pub fn is_final_iteration(&self) -> bool {
        self.header.iteration_number >= self.max_iterations
    }

    /// Iterations left after this one.
    pub fn remaining_iterations(&self) -> u32 {
        self.max_iterations
            .saturating_sub(self.header.iteration_number)
    }

    /// One-line description.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "Iteration {}/{}",
            self.header.iteration_number, self.max_iterations
        );
        if self.tool_calls_in_previous_iteration > 0 {
            s.push_str(&format!(
                " (prev tools: {})",
                self.tool_calls_in_previous_iteration
            ));
        }
        s
    }
}
