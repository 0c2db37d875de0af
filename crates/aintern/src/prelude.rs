//! What an application embedding AIntern needs, in one `use`:
//!
//! ```
//! use aintern::prelude::*;
//! ```
//!
//! The agent and its builder, the events, what a custom tool implements, the scripted
//! model, and the `json!` macro, `async_trait` and `StreamExt`. Each crate's own `Error`
//! is left out (use [`crate::Error`]).

pub use crate::{Agent, AgentBuilder, ApprovalPolicy, Preset, Reply, Run};
pub use core_models::{
    AgentEvent, ApprovalRequestEvent, CompletionReason, InferenceOptions, LlmService, RiskLevel,
    SandboxMode, Tool, ToolCategory, ToolChoice, ToolDefinition, ToolExecutionContext, ToolResult,
    ToolValidationResult,
};
pub use futures::StreamExt;
pub use serde_json::{json, Value};
pub use services_ai::AgentConfig;
pub use services_ai::{ScriptedLlm, ScriptedResponse};

pub use async_trait::async_trait;
