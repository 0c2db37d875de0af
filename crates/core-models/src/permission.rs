//! Permission models (seed 001 part h).

use serde::{Deserialize, Serialize};

/// The outcome of checking whether a call may run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionCheckResult {
    /// The call may run without asking.
    pub is_allowed: bool,
    /// A person must approve the call first.
    pub requires_approval: bool,
    /// Why approval is needed.
    #[serde(default)]
    pub approval_reason: Option<String>,
    /// Why the call is refused outright (an "always deny" setting or a denied pattern).
    #[serde(default)]
    pub denial_reason: Option<String>,
    /// The answer came from a remembered decision.
    #[serde(default)]
    pub was_cached: bool,
}

impl PermissionCheckResult {
    /// Allowed without asking.
    pub fn allowed() -> Self {
        PermissionCheckResult {
            is_allowed: true,
            requires_approval: false,
            approval_reason: None,
            denial_reason: None,
            was_cached: false,
        }
    }

    /// Allowed because of a remembered decision.
    pub fn allowed_cached() -> Self {
        PermissionCheckResult {
            was_cached: true,
            ..Self::allowed()
        }
    }

    /// A person must approve first.
    pub fn requires_approval(reason: impl Into<String>) -> Self {
        PermissionCheckResult {
            is_allowed: false,
            requires_approval: true,
            approval_reason: Some(reason.into()),
            denial_reason: None,
            was_cached: false,
        }
    }

    /// Refused without asking.
    pub fn denied(reason: impl Into<String>, was_cached: bool) -> Self {
        PermissionCheckResult {
            is_allowed: false,
            requires_approval: false,
            approval_reason: None,
            denial_reason: Some(reason.into()),
            was_cached,
        }
    }

    /// Whether the call is refused outright.
    pub fn is_denied(&self) -> bool {
        !self.is_allowed && !self.requires_approval
    }
}

/// Persistent permission settings for one tool.
///
/// Patterns are globs matched against the call's main argument (a path, a command…; see
/// [`crate::ToolCallRequest::main_argument`]). Deny wins over allow, and explicit settings
/// win over the call's risk level.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolPermissionSettings {
    /// The tool.
    pub tool_id: String,
    /// Run every call without asking.
    pub always_allow: bool,
    /// Refuse every call.
    pub always_deny: bool,
    /// Run calls whose main argument matches one of these without asking.
    pub allowed_patterns: Vec<String>,
    /// Refuse calls whose main argument matches one of these.
    pub denied_patterns: Vec<String>,
}

impl ToolPermissionSettings {
    /// Empty settings for `tool_id`.
    pub fn new(tool_id: impl Into<String>) -> Self {
        ToolPermissionSettings {
            tool_id: tool_id.into(),
            ..Default::default()
        }
    }

    /// Whether the settings say nothing.
    pub fn is_empty(&self) -> bool {
        !self.always_allow
            && !self.always_deny
            && self.allowed_patterns.is_empty()
            && self.denied_patterns.is_empty()
    }
}
