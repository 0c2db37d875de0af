//! The configuration sections adapters read as well as the engine: `[backend]` (which
//! model answers, read by the OpenAI-compatible backend) and `[mcp_servers]` (read by the
//! MCP client). Plain data with their validation rules; the engine's `AgentConfig` holds
//! them and loads the whole configuration.

mod backend;
mod hooks;
mod mcp;

pub use backend::{BackendConfig, BackendKind, ToolMode};
pub use hooks::{HookConfig, HooksConfig};
pub use mcp::{mcp_validation_errors, valid_server_name, McpServerConfig};

use std::fmt;

/// One broken configuration rule: the field and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationError {
    /// The field's key (`"max_agent_iterations"`, `"budget.max_cost"`).
    pub field: &'static str,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}
