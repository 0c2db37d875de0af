//! One configured server's life: started at session start, restarted on its next use after
//! it died (a bounded number of times), stopped at the end.

use crate::client::{CallError, Connection, Outcome, ToolInfo};
use core_models::McpServerConfig;
use core_models::{ProgressReporter, RiskLevel};
use sandbox::Launcher;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

/// Restarts allowed after the server died, per session.
pub(crate) const MAX_RESTARTS: u32 = 3;

/// Where a server stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerStatus {
    /// Running, its tools offered.
    Running,
    /// It could not start, or died and could not be restarted: its tools are unavailable.
    Failed(String),
    /// Turned off in the configuration.
    Disabled,
}

pub(crate) struct Server {
    pub(crate) name: String,
    spec: McpServerConfig,
    launcher: Arc<Launcher>,
    workspace: PathBuf,
    connection: tokio::sync::Mutex<Option<Arc<Connection>>>,
    /// The tools of the running (or last running) connection.
    tools: RwLock<Arc<RwLock<Vec<ToolInfo>>>>,
    status: RwLock<ServerStatus>,
    restarts: std::sync::atomic::AtomicU32,
}

impl Server {
    pub(crate) fn new(
        name: String,
        spec: McpServerConfig,
        launcher: Arc<Launcher>,
        workspace: PathBuf,
    ) -> Server {
        let status = if spec.enabled {
            ServerStatus::Failed("not started".into())
        } else {
            ServerStatus::Disabled
        };
        Server {
            name,
            spec,
            launcher,
            workspace,
            connection: tokio::sync::Mutex::new(None),
            tools: RwLock::default(),
            status: RwLock::new(status),
            restarts: std::sync::atomic::AtomicU32::new(0),
        }
    }

    pub(crate) fn status(&self) -> ServerStatus {
        self.status
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn set_status(&self, status: ServerStatus) {
        *self.status.write().unwrap_or_else(|e| e.into_inner()) = status;
    }

    /// The server's tools as last listed (none unless it is running or may restart).
    pub(crate) fn tools(&self) -> Vec<ToolInfo> {
        if self.status() != ServerStatus::Running {
            return Vec::new();
        }
        let shared = Arc::clone(&self.tools.read().unwrap_or_else(|e| e.into_inner()));
        let tools = shared.read().unwrap_or_else(|e| e.into_inner()).clone();
        tools
    }

    /// The risk of `tool`: the configuration's for the tool, then for the server; else
    /// high for a tool its server says is destructive, medium otherwise (read-only
    /// hints are the server's word, not a promise the sandbox keeps).
    pub(crate) fn risk(&self, tool: &ToolInfo) -> RiskLevel {
        if let Some(risk) = self.spec.tool_risk.get(&tool.name) {
            return *risk;
        }
        if let Some(risk) = self.spec.risk {
            return risk;
        }
        if tool.destructive {
            RiskLevel::High
        } else {
            RiskLevel::Medium
        }
    }

    /// Start the server (at session start).
    pub(crate) async fn start(&self) {
        if !self.spec.enabled {
            return;
        }
        let mut connection = self.connection.lock().await;
        self.connect(&mut connection).await;
    }

    async fn connect(&self, slot: &mut Option<Arc<Connection>>) {
        if let Some(old) = slot.take() {
            old.stop().await;
        }
        match Connection::start(&self.name, &self.spec, &self.launcher, &self.workspace).await {
            Ok(connection) => {
                *self.tools.write().unwrap_or_else(|e| e.into_inner()) =
                    Arc::clone(&connection.tools);
                *slot = Some(Arc::new(connection));
                self.set_status(ServerStatus::Running);
            }
            Err(e) => {
                // Reported through the status; the log has it for -v.
                tracing::info!(server = %self.name, error = %e, "MCP server not started");
                self.set_status(ServerStatus::Failed(e.to_string()));
            }
        }
    }

    /// Call `tool`, restarting the server first when it died since its last use.
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        progress: ProgressReporter,
        cancel: &core_models::CancellationToken,
    ) -> Result<Outcome, String> {
        let mut slot = self.connection.lock().await;
        let alive = slot.as_ref().is_some_and(|c| c.alive());
        if !alive {
            let restarts = self
                .restarts
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if restarts >= MAX_RESTARTS {
                let why = format!(
                    "the MCP server '{}' stopped and was restarted {MAX_RESTARTS} times already",
                    self.name
                );
                self.set_status(ServerStatus::Failed(why.clone()));
                return Err(why);
            }
            tracing::warn!(server = %self.name, "MCP server stopped; restarting it");
            self.connect(&mut slot).await;
            if self.status() != ServerStatus::Running {
                return Err(match self.status() {
                    ServerStatus::Failed(why) => why,
                    _ => format!("the MCP server '{}' is not running", self.name),
                });
            }
        }
        let Some(connection) = slot.as_ref().map(Arc::clone) else {
            return Err(format!("the MCP server '{}' is not running", self.name));
        };
        // Calls to one server run side by side.
        drop(slot);
        match connection.call(tool, arguments, progress, cancel).await {
            Ok(outcome) => Ok(outcome),
            Err(CallError::Cancelled) => Err("Cancelled".into()),
            Err(CallError::Gone(why)) => Err(format!(
                "the MCP server '{}' stopped during the call ({why}); it is restarted on its next use",
                self.name
            )),
            Err(CallError::Failed(why)) => Err(format!("the MCP server '{}': {why}", self.name)),
        }
    }

    /// Stop the server.
    pub(crate) async fn stop(&self) {
        if let Some(connection) = self.connection.lock().await.take() {
            connection.stop().await;
        }
    }
}
