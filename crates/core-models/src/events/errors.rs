//! `agent_error`: what went wrong, its category, and the error behind it ([`ErrorSource`]).

use super::EventHeader;
use crate::error::BoxError;
use crate::serde_util::truncate_chars;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::sync::Arc;
use uuid::Uuid;

// ---------------------------------------------------------------------------------------
// agent_error
// ---------------------------------------------------------------------------------------

/// What kind of error happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentErrorCategory {
    /// The model failed.
    LlmError,
    /// A tool failed.
    ToolError,
    /// The model's output could not be parsed.
    ParsingError,
    /// Permission was refused.
    PermissionError,
    /// Something took too long.
    TimeoutError,
    /// Something was cancelled.
    CancellationError,
    /// Anything else.
    Unknown,
}

impl fmt::Display for AgentErrorCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AgentErrorCategory::LlmError => "LlmError",
            AgentErrorCategory::ToolError => "ToolError",
            AgentErrorCategory::ParsingError => "ParsingError",
            AgentErrorCategory::PermissionError => "PermissionError",
            AgentErrorCategory::TimeoutError => "TimeoutError",
            AgentErrorCategory::CancellationError => "CancellationError",
            AgentErrorCategory::Unknown => "Unknown",
        })
    }
}

/// The error behind an [`AgentErrorEvent`] (seed 002's `Exception`). Serialized as its
/// message chain; a deserialized one carries that text as a plain error.
#[derive(Clone)]
pub struct ErrorSource(Arc<dyn std::error::Error + Send + Sync + 'static>);

impl ErrorSource {
    /// Wrap an error.
    pub fn new(error: impl Into<BoxError>) -> Self {
        ErrorSource(Arc::from(error.into()))
    }

    /// The wrapped error.
    pub fn error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }

    /// The message and every cause, joined with ": ".
    pub fn chain(&self) -> String {
        let mut text = self.0.to_string();
        let mut cause = self.0.source();
        while let Some(c) = cause {
            text.push_str(": ");
            text.push_str(&c.to_string());
            cause = c.source();
        }
        text
    }
}

impl fmt::Debug for ErrorSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ErrorSource").field(&self.chain()).finish()
    }
}

impl fmt::Display for ErrorSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.chain())
    }
}

impl PartialEq for ErrorSource {
    fn eq(&self, other: &Self) -> bool {
        self.chain() == other.chain()
    }
}

#[derive(Debug)]
struct DeserializedError(String);

impl fmt::Display for DeserializedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DeserializedError {}

impl Serialize for ErrorSource {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.chain())
    }
}

impl<'de> Deserialize<'de> for ErrorSource {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(ErrorSource(Arc::new(DeserializedError(
            String::deserialize(d)?,
        ))))
    }
}

/// Something went wrong.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentErrorEvent {
    /// Shared fields.
    #[serde(flatten)]
    pub header: EventHeader,
    /// What went wrong.
    pub error: String,
    /// Whether the request stops because of it.
    pub is_fatal: bool,
    /// What kind of error.
    pub category: AgentErrorCategory,
    /// The underlying error, when there is one.
    #[serde(default)]
    pub source: Option<ErrorSource>,
    /// What the user might do about it.
    #[serde(default)]
    pub recovery_hint: Option<String>,
    /// A code for programs.
    #[serde(default)]
    pub error_code: Option<String>,
}

impl AgentErrorEvent {
    /// An error of any category.
    pub fn new(
        request_id: Uuid,
        category: AgentErrorCategory,
        error: impl Into<String>,
        is_fatal: bool,
        iteration: u32,
    ) -> Self {
        AgentErrorEvent {
            header: EventHeader::new(request_id, iteration),
            error: error.into(),
            is_fatal,
            category,
            source: None,
            recovery_hint: None,
            error_code: None,
        }
    }

    /// The model failed (fatal).
    pub fn llm_error(
        request_id: Uuid,
        error: impl Into<String>,
        source: Option<BoxError>,
        iteration: u32,
    ) -> Self {
        AgentErrorEvent {
            source: source.map(ErrorSource::new),
            ..Self::new(
                request_id,
                AgentErrorCategory::LlmError,
                error,
                true,
                iteration,
            )
        }
        .with_recovery_hint("Try again or check model connectivity")
    }

    /// A tool failed.
    pub fn tool_error(
        request_id: Uuid,
        tool_name: &str,
        error: &str,
        is_fatal: bool,
        iteration: u32,
    ) -> Self {
        Self::new(
            request_id,
            AgentErrorCategory::ToolError,
            format!("Tool '{tool_name}' failed: {error}"),
            is_fatal,
            iteration,
        )
        .with_recovery_hint("The agent will inform you of the failure and may try alternatives")
    }

    /// The model's output could not be parsed (not fatal).
    pub fn parsing_error(request_id: Uuid, error: impl Into<String>, iteration: u32) -> Self {
        Self::new(
            request_id,
            AgentErrorCategory::ParsingError,
            error,
            false,
            iteration,
        )
        .with_recovery_hint("LLM output could not be parsed, continuing without tool call")
    }

    /// Something took too long (fatal).
    pub fn timeout_error(request_id: Uuid, context: &str, iteration: u32) -> Self {
        Self::new(
            request_id,
            AgentErrorCategory::TimeoutError,
            format!("Timeout: {context}"),
            true,
            iteration,
        )
        .with_recovery_hint("Request took too long, try a simpler task")
    }

    /// Attach the underlying error.
    pub fn with_source(mut self, source: impl Into<BoxError>) -> Self {
        self.source = Some(ErrorSource::new(source));
        self
    }

    /// Set the recovery hint.
    pub fn with_recovery_hint(mut self, hint: impl Into<String>) -> Self {
        self.recovery_hint = Some(hint.into());
        self
    }

    /// Set the error code.
    pub fn with_error_code(mut self, code: impl Into<String>) -> Self {
        self.error_code = Some(code.into());
        self
    }

    /// One-line description.
    pub fn summary(&self) -> String {
        format!(
            "Error ({}): {}{}",
            self.category,
            truncate_chars(&self.error, 50),
            if self.is_fatal { " [FATAL]" } else { "" }
        )
    }
}
