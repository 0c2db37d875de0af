//! mockall mocks of every port. The tool mock is `MockToolPort` (the name `MockTool` is
//! the seed's hand-written tool).

#![allow(missing_docs)]

use core_models::{
    AgentRequest, AgentService, AgentState, AgentStateChange, ApprovalDecision, Error, EventStream,
    Formatter, GitCommit, GitInspector, LlmRequest, LlmService, LlmStream, PermissionCheckResult,
    PermissionManager, PermissionStore, RiskLevel, Tool, ToolAvailabilityContext, ToolCallRequest,
    ToolDefinition, ToolExecutionContext, ToolExecutionService, ToolPermissionSettings,
    ToolRegistry, ToolResult, ToolValidationResult,
};
use futures::stream::BoxStream;
use mockall::mock;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use uuid::Uuid;

mock! {
    pub ToolPort {}

    #[async_trait::async_trait]
    impl Tool for ToolPort {
        fn definition(&self) -> &ToolDefinition;
        fn is_available(&self, context: &ToolAvailabilityContext) -> bool;
        fn validate(&self, parameters: &Value) -> ToolValidationResult;
        fn execution_summary(&self, parameters: &Value) -> String;
        fn effective_risk_level(&self, parameters: &Value) -> RiskLevel;
        async fn execute(&self, context: ToolExecutionContext) -> ToolResult;
    }
}

mock! {
    pub ToolRegistry {}

    impl ToolRegistry for ToolRegistry {
        fn get_tool(&self, id: &str) -> Option<Arc<dyn Tool>>;
        fn all_tools(&self) -> Vec<Arc<dyn Tool>>;
        fn available_tools<'a>(&self, context: Option<&'a ToolAvailabilityContext>) -> Vec<Arc<dyn Tool>>;
    }
}

mock! {
    pub ToolExecutionService {}

    #[async_trait::async_trait]
    impl ToolExecutionService for ToolExecutionService {
        async fn execute(&self, tool: Arc<dyn Tool>, context: ToolExecutionContext) -> ToolResult;
    }
}

mock! {
    pub LlmService {}

    #[async_trait::async_trait]
    impl LlmService for LlmService {
        fn model_name(&self) -> String;
        fn is_model_loaded(&self) -> bool;
        async fn generate(&self, request: LlmRequest) -> Result<LlmStream, Error>;
    }
}

mock! {
    pub PermissionManager {}

    #[async_trait::async_trait]
    impl PermissionManager for PermissionManager {
        async fn check_permission(
            &self,
            conversation_id: Uuid,
            request: &ToolCallRequest,
        ) -> Result<PermissionCheckResult, Error>;
        async fn remember_decision(
            &self,
            conversation_id: Uuid,
            request: &ToolCallRequest,
            decision: &ApprovalDecision,
        ) -> Result<(), Error>;
        async fn clear_session_permissions(&self, conversation_id: Uuid) -> Result<(), Error>;
        async fn get_tool_permissions(&self, tool_id: &str) -> Result<Option<ToolPermissionSettings>, Error>;
        async fn set_tool_permissions(&self, tool_id: &str, settings: ToolPermissionSettings) -> Result<(), Error>;
        async fn all_tool_permissions(&self) -> Result<Vec<ToolPermissionSettings>, Error>;
        async fn remove_tool_permissions(&self, tool_id: &str) -> Result<bool, Error>;
    }
}

mock! {
    pub PermissionStore {}

    #[async_trait::async_trait]
    impl PermissionStore for PermissionStore {
        async fn load(&self) -> Result<BTreeMap<String, ToolPermissionSettings>, Error>;
        async fn save(&self, settings: &BTreeMap<String, ToolPermissionSettings>) -> Result<(), Error>;
    }
}

mock! {
    pub AgentService {}

    impl AgentService for AgentService {
        fn process_message(&self, request: AgentRequest) -> Result<EventStream, Error>;
        fn cancel(&self);
        fn state(&self) -> AgentState;
        fn is_processing(&self) -> bool;
        fn current_iteration(&self) -> u32;
        fn subscribe_state_changes(&self) -> BoxStream<'static, AgentStateChange>;
        fn provide_approval(&self, call_id: Uuid, decision: ApprovalDecision) -> Result<(), Error>;
        fn send_user_message(&self, text: String) -> Result<(), Error>;
    }
}

mock! {
    pub GitInspector {}

    #[async_trait::async_trait]
    impl GitInspector for GitInspector {
        async fn head(&self, workspace: &Path) -> Result<Option<String>, Error>;
        async fn commits_since(&self, workspace: &Path, since: &str) -> Result<Vec<GitCommit>, Error>;
    }
}

mock! {
    pub Formatter {}

    #[async_trait::async_trait]
    impl Formatter for Formatter {
        fn name(&self) -> String;
        fn handles(&self, path: &str) -> bool;
        async fn format(&self, workspace: &Path, files: &[String]) -> Result<Vec<String>, Error>;
    }
}
