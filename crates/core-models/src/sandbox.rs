//! What a process a tool starts may do: the sandbox modes, and how a call's sandbox is
//! described to the person who approves it.
//!
//! The mechanism (Landlock, seccomp) lives in the `sandbox` crate; these are the words
//! every crate shares: configuration, the [`crate::Tool::assess`] answer and the
//! approval request.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How much a command started by a tool may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Reads everything but the secret locations; writes only a private temporary folder.
    ReadOnly,
    /// Reads everything but the secret locations; writes only the workspace, a private
    /// temporary folder and the configured cache folders.
    #[default]
    WorkspaceWrite,
    /// No sandbox: the command may do whatever the user may do.
    FullAccess,
}

impl SandboxMode {
    /// The configuration spelling (`"workspace-write"`).
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::FullAccess => "full-access",
        }
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SandboxMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "read-only" => Ok(SandboxMode::ReadOnly),
            "workspace-write" => Ok(SandboxMode::WorkspaceWrite),
            "full-access" => Ok(SandboxMode::FullAccess),
            other => Err(format!(
                "unknown sandbox mode '{other}' (read-only, workspace-write or full-access)"
            )),
        }
    }
}

/// The sandbox one call's process will run under, as the approval prompt shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxSummary {
    /// The mode.
    pub mode: SandboxMode,
    /// Whether the process may use the network.
    pub network: bool,
    /// Whether the kernel enforces the mode. `false` means the process runs without a
    /// sandbox (the kernel cannot sandbox, or the mode is full access).
    pub enforced: bool,
    /// Where the process may write, in words ("the workspace", "a private temporary
    /// folder", configured cache folders).
    #[serde(default)]
    pub writable: Vec<String>,
    /// One line in words: "workspace-write: writes only the workspace and a private
    /// temporary folder, no network, secrets unreadable (Landlock ABI 7, seccomp)".
    pub description: String,
}

/// What to do with a command when the kernel cannot sandbox it (no Landlock).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxFallback {
    /// Put every command to a person before it runs, unsandboxed.
    #[default]
    Ask,
    /// Refuse every command.
    Deny,
    /// Run commands unsandboxed, asking only as their risk says.
    Unsandboxed,
}

impl SandboxFallback {
    /// The configuration spelling (`"ask"`).
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxFallback::Ask => "ask",
            SandboxFallback::Deny => "deny",
            SandboxFallback::Unsandboxed => "unsandboxed",
        }
    }
}

impl fmt::Display for SandboxFallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
