//! A server's tool as an AIntern [`Tool`]: the same validation, permission rules,
//! approvals, timeout and events as a built-in one.

use crate::client::ToolInfo;
use crate::server::Server;
use async_trait::async_trait;
use core_models::{
    RiskLevel, Tool, ToolCategory, ToolDefinition, ToolExecutionContext, ToolResult,
    ToolValidationResult,
};
use serde_json::Value;
use std::sync::Arc;

/// The tool `info` of `server`, offered as `SERVER__tool`.
pub(crate) struct McpTool {
    server: Arc<Server>,
    info: ToolInfo,
    definition: ToolDefinition,
}

/// The id a server's tool is offered under.
pub fn tool_id(server: &str, tool: &str) -> String {
    format!("{server}__{tool}")
}

impl McpTool {
    pub(crate) fn new(server: Arc<Server>, info: ToolInfo) -> Self {
        let risk = server.risk(&info);
        let name = info.title.clone().unwrap_or_else(|| info.name.clone());
        let description = if info.description.is_empty() {
            format!("{} (from the MCP server '{}')", info.name, server.name)
        } else {
            info.description.clone()
        };
        let schema = match &info.schema {
            Value::Object(_) => info.schema.clone(),
            _ => serde_json::json!({"type": "object"}),
        };
        let definition = ToolDefinition::new(tool_id(&server.name, &info.name), name, description)
            .with_category(ToolCategory::Custom)
            .with_risk(risk)
            .with_schema(schema);
        McpTool {
            server,
            info,
            definition,
        }
    }
}

#[async_trait]
impl Tool for McpTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn validate(&self, parameters: &Value) -> ToolValidationResult {
        // The server checks its own schema; the arguments must be an object.
        if parameters.is_object() || parameters.is_null() {
            ToolValidationResult::valid()
        } else {
            ToolValidationResult::invalid(["the arguments must be a JSON object"])
        }
    }

    fn execution_summary(&self, parameters: &Value) -> String {
        let arguments = parameters.to_string();
        let shown: String = arguments.chars().take(200).collect();
        let more = if shown.len() < arguments.len() {
            "…"
        } else {
            ""
        };
        format!(
            "Call {} on the MCP server '{}' with {shown}{more}",
            self.info.name, self.server.name
        )
    }

    fn effective_risk_level(&self, _parameters: &Value) -> RiskLevel {
        self.definition.default_risk_level
    }

    async fn execute(&self, context: ToolExecutionContext) -> ToolResult {
        let arguments = match context.parameters.as_ref() {
            Value::Object(map) => map.clone(),
            _ => serde_json::Map::new(),
        };
        let outcome = self
            .server
            .call(
                &self.info.name,
                arguments,
                context.progress.clone(),
                &context.cancellation,
            )
            .await;
        match outcome {
            Ok(o) if o.is_error => {
                let mut result = ToolResult::failed(if o.text.is_empty() {
                    "the tool reported an error".to_string()
                } else {
                    o.text.clone()
                });
                result.content = o.text;
                result
            }
            Ok(o) => ToolResult::success(o.text),
            Err(why) => ToolResult::failed(why),
        }
    }
}
