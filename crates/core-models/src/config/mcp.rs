//! `[mcp_servers.NAME]`: tool servers speaking the Model Context Protocol.
//!
//! Plain data: the application starts the servers (the `mcp` crate) and offers their
//! tools. Each entry starts a program or reaches a URL, so only the user's own
//! configuration should set them — a workspace's file must not (the `aintern` command
//! ignores the section there, as it ignores `[formatters]`).

use super::ValidationError;
use crate::{RiskLevel, SandboxMode};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One MCP server: a program spoken to over its stdin and stdout (`command`), or a
/// streamable-HTTP endpoint (`url`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct McpServerConfig {
    /// The program to start (stdio transport).
    pub command: Option<String>,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables set for it (on top of what the sandbox passes).
    pub env: BTreeMap<String, String>,
    /// The folder it starts in (default: the workspace); relative to the workspace.
    pub cwd: Option<String>,
    /// The endpoint (streamable HTTP transport), e.g. `https://host/mcp`.
    pub url: Option<String>,
    /// Headers sent with every HTTP request.
    pub headers: BTreeMap<String, String>,
    /// The environment variable holding a bearer token for `url` (never printed).
    pub bearer_token_env: Option<String>,
    /// Whether the server is started at all.
    pub enabled: bool,
    /// Longest wait for the server to start and list its tools, in milliseconds.
    pub startup_timeout_ms: u64,
    /// The sandbox of a stdio server's process: `read-only`, `workspace-write` (the
    /// default: as commands) or `full-access` (no sandbox).
    pub sandbox: SandboxMode,
    /// Whether a stdio server's process may reach the network.
    pub network: bool,
    /// The risk of every tool of this server, instead of what the tools' hints say.
    pub risk: Option<RiskLevel>,
    /// The risk of single tools, by the tool's name on the server.
    pub tool_risk: BTreeMap<String, RiskLevel>,
}

impl Default for McpServerConfig {
    fn default() -> Self {
        McpServerConfig {
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
            url: None,
            headers: BTreeMap::new(),
            bearer_token_env: None,
            enabled: true,
            startup_timeout_ms: 30_000,
            sandbox: SandboxMode::WorkspaceWrite,
            network: false,
            risk: None,
            tool_risk: BTreeMap::new(),
        }
    }
}

/// Whether `name` may name a server: letters, digits, `-` and `_`, no `__` (which joins
/// a server's name to its tools' names), at most 64 characters.
pub fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.contains("__")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Every broken rule of the `[mcp_servers]` section.
pub fn mcp_validation_errors(servers: &BTreeMap<String, McpServerConfig>) -> Vec<ValidationError> {
    let mut errors = Vec::new();
    for (name, server) in servers {
        let mut error = |message: String| {
            errors.push(ValidationError {
                field: "mcp_servers",
                message: format!("[mcp_servers.{name}]: {message}"),
            });
        };
        if !valid_server_name(name) {
            error(
                "the name may hold only letters, digits, '-' and '_' (not '__'), up to 64".into(),
            );
        }
        match (&server.command, &server.url) {
            (Some(c), None) if c.trim().is_empty() => error("command is empty".into()),
            (Some(_), None) => {}
            (None, Some(u)) if !(u.starts_with("http://") || u.starts_with("https://")) => {
                error(format!("url must start with http:// or https:// (got {u})"));
            }
            (None, Some(_)) => {}
            (Some(_), Some(_)) => error("set command or url, not both".into()),
            (None, None) => error("set command (a program) or url (an HTTP endpoint)".into()),
        }
        if server.startup_timeout_ms < 1_000 {
            error(format!(
                "startup_timeout_ms must be at least 1000 (got {})",
                server.startup_timeout_ms
            ));
        }
    }
    errors
}

setters!(McpServerConfig {
    with_command => command: Option<String>,
    with_args => args: Vec<String>,
    with_env => env: BTreeMap<String, String>,
    with_cwd => cwd: Option<String>,
    with_url => url: Option<String>,
    with_headers => headers: BTreeMap<String, String>,
    with_bearer_token_env => bearer_token_env: Option<String>,
    with_enabled => enabled: bool,
    with_startup_timeout_ms => startup_timeout_ms: u64,
    with_sandbox => sandbox: SandboxMode,
    with_network => network: bool,
    with_risk => risk: Option<RiskLevel>,
    with_tool_risk => tool_risk: BTreeMap<String, RiskLevel>,
});
