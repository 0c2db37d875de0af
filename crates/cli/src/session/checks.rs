//! What is checked before a session starts: a `--tool-choice` that could not name a
//! tool, and whether the kernel can sandbox commands.

use core_models::ToolChoice;
use std::sync::Arc;

/// A `--tool-choice` that names a tool that cannot exist is refused before anything
/// starts: it must be a built-in, or a configured MCP server's SERVER__tool (checked again
/// once the servers list theirs).
pub(super) fn could_exist(
    choice: Option<&ToolChoice>,
    config: &services_ai::AgentConfig,
) -> Result<(), String> {
    let Some(ToolChoice::Tool(id)) = choice else {
        return Ok(());
    };
    let builtin = tools::builtin_tools();
    let known = builtin.iter().any(|t| t.definition().id == *id);
    let served = id
        .split_once("__")
        .is_some_and(|(server, _)| config.mcp_servers.contains_key(server));
    if known || served {
        Ok(())
    } else {
        Err(unknown_tool(id, &builtin))
    }
}

/// `--tool-choice` naming no tool of `tools`, in words.
pub(super) fn unknown_tool(id: &str, tools: &[Arc<dyn core_models::Tool>]) -> String {
    let mut ids: Vec<String> = tools.iter().map(|t| t.definition().id.clone()).collect();
    ids.sort();
    format!(
        "--tool-choice: unknown tool '{id}' (auto, required, none, or one of: {})",
        ids.join(", ")
    )
}

/// What to tell the person, once, when the kernel cannot sandbox commands.
pub(super) fn sandbox_note(launcher: &sandbox::Launcher) -> Option<String> {
    let settings = launcher.settings();
    if settings.mode == core_models::SandboxMode::FullAccess {
        return Some("sandbox.mode = full-access: commands run without a sandbox".to_string());
    }
    let support = launcher.support();
    if support.can_enforce() {
        return None;
    }
    let what = match settings.fallback {
        core_models::SandboxFallback::Ask => {
            "every command will be put to you before it runs, unsandboxed (sandbox.fallback = ask)"
        }
        core_models::SandboxFallback::Deny => "commands will be refused (sandbox.fallback = deny)",
        core_models::SandboxFallback::Unsandboxed => {
            "commands will run WITHOUT a sandbox (sandbox.fallback = unsandboxed)"
        }
    };
    Some(format!("{}: {what}", support.reason()))
}
