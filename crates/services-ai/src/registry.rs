//! A plain tool registry and executor.

use async_trait::async_trait;
use core_models::{Tool, ToolExecutionContext, ToolExecutionService, ToolRegistry, ToolResult};
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

/// Tools registered by id, listed in id order.
#[derive(Default)]
pub struct InMemoryToolRegistry {
    tools: RwLock<BTreeMap<String, Arc<dyn Tool>>>,
}

impl std::fmt::Debug for InMemoryToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<String> = self
            .tools
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .cloned()
            .collect();
        f.debug_struct("InMemoryToolRegistry")
            .field("tools", &ids)
            .finish()
    }
}

impl InMemoryToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Register `tool`, replacing any tool with the same id; returns the replaced one.
    pub fn register(&self, tool: Arc<dyn Tool>) -> Option<Arc<dyn Tool>> {
        let id = tool.definition().id.clone();
        self.tools
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, tool)
    }

    /// Remove the tool with this id.
    pub fn unregister(&self, id: &str) -> Option<Arc<dyn Tool>> {
        self.tools
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id)
    }
}

impl FromIterator<Arc<dyn Tool>> for InMemoryToolRegistry {
    fn from_iter<I: IntoIterator<Item = Arc<dyn Tool>>>(iter: I) -> Self {
        let registry = InMemoryToolRegistry::new();
        for tool in iter {
            registry.register(tool);
        }
        registry
    }
}

impl ToolRegistry for InMemoryToolRegistry {
    fn get_tool(&self, id: &str) -> Option<Arc<dyn Tool>> {
        self.tools
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned()
    }

    fn all_tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect()
    }
}

/// Runs a tool directly, with no sandbox around it.
#[derive(Debug, Default, Clone, Copy)]
pub struct DirectToolExecutor;

#[async_trait]
impl ToolExecutionService for DirectToolExecutor {
    async fn execute(&self, tool: Arc<dyn Tool>, context: ToolExecutionContext) -> ToolResult {
        tool.execute(context).await
    }
}
