//! A tool call's life: `tool_call_request`, `tool_execution` (with [`ToolExecutionStatus`])
//! and `tool_result`.

use super::EventHeader;
use crate::serde_util::{duration_ms, option_duration_ms, truncate_chars};
use crate::tool::{ToolProgress, ToolResult};
use crate::tool_call::ToolCallRequest;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;
use uuid::Uuid;

// ---------------------------------------------------------------------------------------
// tool_call_request
// ---------------------------------------------------------------------------------------

/// The model asked for a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRequestEvent {
    /// Shared fields.
    #[serde(flatten)]
    pub header: EventHeader,
    /// The parsed call.
    pub request: ToolCallRequest,
    /// Position of the call in this iteration (0-based).
    pub call_index: u32,
    /// Calls detected in this iteration.
    pub total_calls: u32,
}

impl ToolCallRequestEvent {
    /// A tool call request event.
    pub fn create(
        request_id: Uuid,
        request: ToolCallRequest,
        call_index: u32,
        total_calls: u32,
        iteration: u32,
    ) -> Self {
        ToolCallRequestEvent {
            header: EventHeader::new(request_id, iteration),
            request,
            call_index,
            total_calls,
        }
    }

    /// Whether this is the only call of the iteration.
    pub fn is_single_call(&self) -> bool {
        self.total_calls == 1
    }

    /// Whether this is the last call of the iteration.
    pub fn is_last_call(&self) -> bool {
        self.call_index + 1 == self.total_calls
    }

    /// One-line description.
    pub fn summary(&self) -> String {
        format!(
            "Tool call: {} ({}/{})",
            self.request.tool_name,
            self.call_index + 1,
            self.total_calls
        )
    }
}

// ---------------------------------------------------------------------------------------
// tool_execution
// ---------------------------------------------------------------------------------------

/// Where a tool's execution stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolExecutionStatus {
    /// About to run.
    Starting,
    /// Running (with progress).
    InProgress,
    /// Finished successfully.
    Completed,
    /// Finished with a failure.
    Failed,
    /// Cancelled.
    Cancelled,
    /// Ran out of time.
    TimedOut,
}

impl fmt::Display for ToolExecutionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ToolExecutionStatus::Starting => "Starting",
            ToolExecutionStatus::InProgress => "InProgress",
            ToolExecutionStatus::Completed => "Completed",
            ToolExecutionStatus::Failed => "Failed",
            ToolExecutionStatus::Cancelled => "Cancelled",
            ToolExecutionStatus::TimedOut => "TimedOut",
        })
    }
}

/// A tool's execution status changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolExecutionEvent {
    /// Shared fields.
    #[serde(flatten)]
    pub header: EventHeader,
    /// The call being executed.
    pub call_id: Uuid,
    /// The tool's id.
    pub tool_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// The new status.
    pub status: ToolExecutionStatus,
    /// Progress, when the tool reports it.
    #[serde(default)]
    pub progress: Option<ToolProgress>,
    /// A message for display (the error when failed).
    #[serde(default)]
    pub status_message: Option<String>,
    /// Time since execution started.
    #[serde(rename = "elapsed_ms", with = "option_duration_ms", default)]
    pub elapsed: Option<Duration>,
}

impl ToolExecutionEvent {
    fn with_status(
        request_id: Uuid,
        call: &ToolCallRequest,
        status: ToolExecutionStatus,
        elapsed: Option<Duration>,
        iteration: u32,
    ) -> Self {
        ToolExecutionEvent {
            header: EventHeader::new(request_id, iteration),
            call_id: call.id,
            tool_id: call.tool_id.clone(),
            tool_name: call.tool_name.clone(),
            status,
            progress: None,
            status_message: None,
            elapsed,
        }
    }

    /// The tool is about to run.
    pub fn starting(request_id: Uuid, call: &ToolCallRequest, iteration: u32) -> Self {
        Self::with_status(
            request_id,
            call,
            ToolExecutionStatus::Starting,
            None,
            iteration,
        )
    }

    /// The tool reported progress.
    pub fn in_progress(
        request_id: Uuid,
        call: &ToolCallRequest,
        progress: ToolProgress,
        elapsed: Duration,
        iteration: u32,
    ) -> Self {
        ToolExecutionEvent {
            progress: Some(progress),
            ..Self::with_status(
                request_id,
                call,
                ToolExecutionStatus::InProgress,
                Some(elapsed),
                iteration,
            )
        }
    }

    /// The tool finished successfully.
    pub fn completed(
        request_id: Uuid,
        call: &ToolCallRequest,
        elapsed: Duration,
        iteration: u32,
    ) -> Self {
        Self::with_status(
            request_id,
            call,
            ToolExecutionStatus::Completed,
            Some(elapsed),
            iteration,
        )
    }

    /// The tool failed.
    pub fn failed(
        request_id: Uuid,
        call: &ToolCallRequest,
        error_message: impl Into<String>,
        elapsed: Duration,
        iteration: u32,
    ) -> Self {
        ToolExecutionEvent {
            status_message: Some(error_message.into()),
            ..Self::with_status(
                request_id,
                call,
                ToolExecutionStatus::Failed,
                Some(elapsed),
                iteration,
            )
        }
    }

    /// The tool was cancelled.
    pub fn cancelled(
        request_id: Uuid,
        call: &ToolCallRequest,
        elapsed: Duration,
        iteration: u32,
    ) -> Self {
        Self::with_status(
            request_id,
            call,
            ToolExecutionStatus::Cancelled,
            Some(elapsed),
            iteration,
        )
    }

    /// The tool ran out of time.
    pub fn timed_out(
        request_id: Uuid,
        call: &ToolCallRequest,
        elapsed: Duration,
        iteration: u32,
    ) -> Self {
        Self::with_status(
            request_id,
            call,
            ToolExecutionStatus::TimedOut,
            Some(elapsed),
            iteration,
        )
    }

    /// One-line description.
    pub fn summary(&self) -> String {
        match &self.progress {
            Some(p) => format!(
                "Tool {}: {} ({}%)",
                self.tool_name,
                self.status,
                p.percentage()
            ),
            None => format!("Tool {}: {}", self.tool_name, self.status),
        }
    }
}

// ---------------------------------------------------------------------------------------
// tool_result
// ---------------------------------------------------------------------------------------

/// A tool finished.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultEvent {
    /// Shared fields.
    #[serde(flatten)]
    pub header: EventHeader,
    /// The call that finished.
    pub call_id: Uuid,
    /// The tool's id.
    pub tool_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// What it produced.
    pub result: ToolResult,
    /// How long it took.
    #[serde(rename = "duration_ms", with = "duration_ms")]
    pub duration: Duration,
}

impl ToolResultEvent {
    /// A result event for `call`.
    pub fn create(
        request_id: Uuid,
        call: &ToolCallRequest,
        result: ToolResult,
        duration: Duration,
        iteration: u32,
    ) -> Self {
        ToolResultEvent {
            header: EventHeader::new(request_id, iteration),
            call_id: call.id,
            tool_id: call.tool_id.clone(),
            tool_name: call.tool_name.clone(),
            result,
            duration,
        }
    }

    /// Whether the tool succeeded.
    pub fn success(&self) -> bool {
        self.result.success
    }

    /// The result cut to 500 characters for display, or "(no data)".
    pub fn display_result(&self) -> String {
        self.result
            .serialized_data()
            .map(|s| truncate_chars(&s, 500))
            .unwrap_or_else(|| "(no data)".to_string())
    }

    /// One-line description.
    pub fn summary(&self) -> String {
        format!(
            "Tool {} {} ({}ms)",
            self.tool_name,
            self.result.outcome(),
            self.duration.as_millis()
        )
    }
}
