//! `agent_complete`: why the request ended, with its statistics (per tool too).

use super::EventHeader;
use crate::serde_util::duration_ms;
use serde::{Deserialize, Serialize};
use std::time::Duration;
use uuid::Uuid;

// ---------------------------------------------------------------------------------------
// agent_complete
// ---------------------------------------------------------------------------------------

/// Why the request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompletionReason {
    /// The model answered without asking for more tools.
    #[default]
    Finished,
    /// The iteration limit was reached.
    MaxIterations,
    /// The user cancelled.
    Cancelled,
    /// An error stopped it.
    Error,
    /// The request timed out.
    Timeout,
    /// A budget limit (tokens, time, cost) was reached.
    BudgetExceeded,
}

/// How one tool was used during a request.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ToolUsageSummary {
    /// The tool's id.
    pub tool_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// Calls made.
    pub invocation_count: u32,
    /// Calls that succeeded.
    pub success_count: u32,
    /// Calls that failed.
    pub failure_count: u32,
    /// Time spent in all calls.
    #[serde(rename = "total_duration_ms", with = "duration_ms")]
    pub total_duration: Duration,
}

impl ToolUsageSummary {
    /// An empty summary for a tool.
    pub fn new(tool_id: impl Into<String>, tool_name: impl Into<String>) -> Self {
        ToolUsageSummary {
            tool_id: tool_id.into(),
            tool_name: tool_name.into(),
            ..Default::default()
        }
    }

    /// Count one call.
    pub fn record(&mut self, success: bool, duration: Duration) {
        self.invocation_count += 1;
        if success {
            self.success_count += 1;
        } else {
            self.failure_count += 1;
        }
        self.total_duration += duration;
    }

    /// Mean time per call (zero when never called).
    pub fn average_duration(&self) -> Duration {
        if self.invocation_count == 0 {
            Duration::ZERO
        } else {
            self.total_duration / self.invocation_count
        }
    }
}

/// The request is over, with its statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentCompleteEvent {
    /// Shared fields.
    #[serde(flatten)]
    pub header: EventHeader,
    /// The answer's text.
    pub final_response: String,
    /// The answer as a JSON value valid against the request's output schema
    /// ([`crate::AgentRequest::output_schema`]); `None` without a schema, or when the
    /// request did not finish with a valid answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<serde_json::Value>,
    /// Tool calls executed.
    pub tool_calls_executed: u32,
    /// Tool calls denied (by a person, by silence at the prompt or by the permission
    /// settings), never run.
    #[serde(default)]
    pub tool_calls_denied: u32,
    /// Iterations used.
    pub total_iterations: u32,
    /// Time the request took.
    #[serde(rename = "total_duration_ms", with = "duration_ms")]
    pub total_duration: Duration,
    /// Whether it was cancelled.
    pub was_cancelled: bool,
    /// Why it ended.
    pub reason: CompletionReason,
    /// Tokens generated.
    pub total_tokens: u64,
    /// Prompt tokens across all generations.
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Completion tokens across all generations.
    #[serde(default)]
    pub completion_tokens: u64,
    /// Prompt tokens the backend took from its cache instead of evaluating them, across
    /// all generations (part of `prompt_tokens`).
    #[serde(default)]
    pub cached_prompt_tokens: u64,
    /// How fast the model generated: the tokens of its replies over the time it spent
    /// generating them, as the backend measured it (tokens a second). `None` when nothing
    /// was generated or no generation time was measured (a server that reports none); the
    /// tokens of a reply whose time is not known are left out of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_second: Option<f64>,
    /// Per-tool statistics.
    #[serde(default)]
    pub tool_usage: Vec<ToolUsageSummary>,
    /// Why the request stopped early, in words (the timeout, the iteration limit, the
    /// budget); `None` when it finished normally.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_message: Option<String>,
    /// The session (conversation) the request belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<Uuid>,
}

impl AgentCompleteEvent {
    /// A normal completion.
    pub fn success(
        request_id: Uuid,
        response: impl Into<String>,
        tool_calls: u32,
        iterations: u32,
        duration: Duration,
        tokens: u64,
        usage: Vec<ToolUsageSummary>,
    ) -> Self {
        AgentCompleteEvent {
            header: EventHeader::new(request_id, iterations),
            final_response: response.into(),
            output: None,
            tool_calls_executed: tool_calls,
            tool_calls_denied: 0,
            total_iterations: iterations,
            total_duration: duration,
            was_cancelled: false,
            reason: CompletionReason::Finished,
            total_tokens: tokens,
            prompt_tokens: 0,
            completion_tokens: tokens,
            cached_prompt_tokens: 0,
            tokens_per_second: None,
            tool_usage: usage,
            stop_message: None,
            session_id: None,
        }
    }

    /// A cancelled request.
    pub fn cancelled(
        request_id: Uuid,
        tool_calls: u32,
        iterations: u32,
        duration: Duration,
    ) -> Self {
        AgentCompleteEvent {
            was_cancelled: true,
            reason: CompletionReason::Cancelled,
            ..Self::success(
                request_id,
                "",
                tool_calls,
                iterations,
                duration,
                0,
                Vec::new(),
            )
        }
    }

    /// Set the reason (and `was_cancelled` accordingly).
    pub fn with_reason(mut self, reason: CompletionReason) -> Self {
        self.reason = reason;
        self.was_cancelled = reason == CompletionReason::Cancelled;
        self
    }

    /// Set the answer's JSON value ([`AgentCompleteEvent::output`]).
    pub fn with_output(mut self, output: Option<serde_json::Value>) -> Self {
        self.output = output;
        self
    }

    /// Set the final response.
    pub fn with_final_response(mut self, response: impl Into<String>) -> Self {
        self.final_response = response.into();
        self
    }

    /// Set the token counts (total = completion tokens).
    pub fn with_token_counts(mut self, prompt_tokens: u64, completion_tokens: u64) -> Self {
        self.prompt_tokens = prompt_tokens;
        self.completion_tokens = completion_tokens;
        self.total_tokens = completion_tokens;
        self
    }

    /// Set the prompt tokens that came from the backend's cache.
    pub fn with_cached_prompt_tokens(mut self, cached: u64) -> Self {
        self.cached_prompt_tokens = cached;
        self
    }

    /// Set the generation speed from `tokens` generated in `time`
    /// ([`AgentCompleteEvent::tokens_per_second`]): none without tokens or without time.
    pub fn with_generation(mut self, tokens: u64, time: Duration) -> Self {
        let seconds = time.as_secs_f64();
        self.tokens_per_second = (tokens > 0 && seconds > 0.0).then(|| tokens as f64 / seconds);
        self
    }

    /// Set the per-tool statistics.
    pub fn with_tool_usage(mut self, usage: Vec<ToolUsageSummary>) -> Self {
        self.tool_usage = usage;
        self
    }

    /// Set the session the request belongs to.
    pub fn with_session_id(mut self, session_id: Uuid) -> Self {
        self.session_id = Some(session_id);
        self
    }

    /// Set the number of calls denied.
    pub fn with_denied(mut self, denied: u32) -> Self {
        self.tool_calls_denied = denied;
        self
    }

    /// Say why the request stopped early.
    pub fn with_stop_message(mut self, message: impl Into<String>) -> Self {
        self.stop_message = Some(message.into());
        self
    }

    /// One-line description.
    pub fn summary(&self) -> String {
        let mut text = format!(
            "Complete: {}, {} run",
            counted(self.total_iterations, "iteration"),
            counted(self.tool_calls_executed, "tool call"),
        );
        if self.tool_calls_denied > 0 {
            text.push_str(&format!(", {} denied", self.tool_calls_denied));
        }
        text.push_str(&format!(", {:.1}s", self.total_duration.as_secs_f64()));
        text
    }
}

/// `n` and `noun`, the noun in the plural unless `n` is 1.
fn counted(n: u32, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
