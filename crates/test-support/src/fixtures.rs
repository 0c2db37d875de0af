//! Small ready-made values for tests.

use core_models::{AgentRequest, RiskLevel, ToolCallRequest, ToolCategory, ToolDefinition};
use serde_json::{json, Value};

/// A `read_file` definition: safe, file system, one required `path` string.
pub fn read_file_definition() -> ToolDefinition {
    ToolDefinition::new(
        "read_file",
        "Read File",
        "Read a text file in the workspace",
    )
    .with_category(ToolCategory::FileSystem)
    .with_risk(RiskLevel::Safe)
    .with_schema(json!({
        "type": "object",
        "properties": {"path": {"type": "string", "description": "File path"}},
        "required": ["path"]
    }))
    .requiring_workspace()
}

/// A `run_command` definition: high risk, terminal, one required `command` string.
pub fn run_command_definition() -> ToolDefinition {
    ToolDefinition::new(
        "run_command",
        "Run Command",
        "Run a shell command in the workspace",
    )
    .with_category(ToolCategory::Terminal)
    .with_risk(RiskLevel::High)
    .with_schema(json!({
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"]
    }))
    .requiring_workspace()
}

/// A call of `tool_id` with `parameters` at `risk`.
pub fn tool_call(tool_id: &str, parameters: Value, risk: RiskLevel) -> ToolCallRequest {
    ToolCallRequest {
        risk_level: risk,
        ..ToolCallRequest::new(tool_id, parameters)
    }
}

/// The seed's primary tool-call block for `tool_id` with `parameters`.
pub fn tool_call_block(tool_id: &str, parameters: &Value) -> String {
    format!(
        "```tool_call\n{}\n```",
        json!({"tool": tool_id, "parameters": parameters})
    )
}

/// A request with tools off and one iteration.
pub fn chat_request(message: &str) -> AgentRequest {
    AgentRequest::new(message).with_tools_enabled(false)
}
