//! Tools from Model Context Protocol servers, for AIntern's agent.
//!
//! Each server configured under `[mcp_servers.NAME]` is started at session start (in
//! parallel, each within its startup timeout): a program spoken to over its stdin and
//! stdout, run in the same kernel sandbox as the tools' commands, or a streamable-HTTP
//! endpoint. Its tools join the registry as `NAME__tool` and go through exactly what a
//! built-in tool goes through — validation, permission rules, remembered decisions,
//! approvals, the tool timeout, cancellation, progress events, results cut head and tail —
//! because the agent only sees [`core_models::Tool`]s.
//!
//! Why a crate of its own: the official SDK (`rmcp`) moves quickly between major
//! versions, so it is named in one file (`client.rs`) and nowhere else; the rest of the
//! project sees [`McpServers`] and the [`Tool`](core_models::Tool)s it offers.

mod client;
mod error;
mod limit;
mod server;
mod tool;

pub use error::Error;
pub use server::ServerStatus;
pub use tool::tool_id;

use core_models::McpServerConfig;
use core_models::{Tool, ToolRegistry};
use sandbox::Launcher;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// The MCP servers of a session.
pub struct McpServers {
    servers: Vec<Arc<server::Server>>,
}

/// One server's state and tools, for `aintern mcp list`.
#[derive(Debug, Clone)]
pub struct ServerReport {
    /// The server's name.
    pub name: String,
    /// Where it stands.
    pub status: ServerStatus,
    /// Its tools (when running): id, description, risk.
    pub tools: Vec<(String, String, core_models::RiskLevel)>,
}

impl McpServers {
    /// Start every enabled server of `configs` at once, each within its startup timeout;
    /// commands run in `launcher`'s sandbox over `workspace`. A server that fails is
    /// reported in [`McpServers::reports`] and offers no tools; the others work.
    pub async fn start(
        configs: &BTreeMap<String, McpServerConfig>,
        launcher: Arc<Launcher>,
        workspace: &Path,
    ) -> McpServers {
        let servers: Vec<Arc<server::Server>> = configs
            .iter()
            .map(|(name, spec)| {
                Arc::new(server::Server::new(
                    name.clone(),
                    spec.clone(),
                    Arc::clone(&launcher),
                    workspace.to_path_buf(),
                ))
            })
            .collect();
        futures::future::join_all(servers.iter().map(|s| s.start())).await;
        McpServers { servers }
    }

    /// No servers.
    pub fn none() -> McpServers {
        McpServers {
            servers: Vec::new(),
        }
    }

    /// The tools of the running servers, as they last listed them.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        for server in &self.servers {
            for info in server.tools() {
                tools.push(Arc::new(tool::McpTool::new(Arc::clone(server), info)));
            }
        }
        tools
    }

    /// Each server's state and tools.
    pub fn reports(&self) -> Vec<ServerReport> {
        self.servers
            .iter()
            .map(|s| ServerReport {
                name: s.name.clone(),
                status: s.status(),
                tools: s
                    .tools()
                    .into_iter()
                    .map(|info| {
                        let tool = tool::McpTool::new(Arc::clone(s), info);
                        let d = tool.definition();
                        (d.id.clone(), d.description.clone(), d.default_risk_level)
                    })
                    .collect(),
            })
            .collect()
    }

    /// Stop every server.
    pub async fn stop(&self) {
        futures::future::join_all(self.servers.iter().map(|s| s.stop())).await;
    }
}

/// The servers' tools as a registry, in the order of their ids (an agent offers them
/// after its own: `aintern::AgentBuilder::tools_from`). Their lists are read at each
/// look, so a server's `tools/list_changed` shows at once.
impl ToolRegistry for McpServers {
    fn get_tool(&self, id: &str) -> Option<Arc<dyn Tool>> {
        self.tools().into_iter().find(|t| t.definition().id == id)
    }

    fn all_tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut tools = self.tools();
        tools.sort_by(|a, b| a.definition().id.cmp(&b.definition().id));
        tools
    }
}
