//! `aintern permissions`: the "always" decisions kept in the user's config folder.

use crate::settings;
use core_models::{PermissionManager, ToolPermissionSettings};
use services_ai::{DefaultPermissionManager, FilePermissionStore};
use std::io::Write;
use std::sync::Arc;

/// What to do with the saved permissions.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum PermissionsAction {
    /// Show every tool's saved permissions and the file they live in.
    List,
    /// Let a tool run without asking: every call, or only calls whose subjects all match
    /// the glob --pattern (the normalized workspace-relative path, or each simple command
    /// of a command line). Saved for every workspace. Critical-risk calls are still asked.
    Allow(Rule),
    /// Refuse a tool: every call, or only calls with a subject matching --pattern.
    Deny(Rule),
    /// Forget one tool's saved permissions, or everyone's.
    Reset {
        /// The tool (default: all tools).
        tool: Option<String>,
    },
}

/// A tool and, optionally, a pattern.
#[derive(Debug, clap::Args)]
pub(crate) struct Rule {
    /// The tool's id (for example write_file).
    tool: String,
    /// A glob matched against the call's normalized path or each simple command (for
    /// example 'src/**' or 'rm *').
    #[arg(long, value_name = "GLOB")]
    pattern: Option<String>,
}

fn known_tool(id: &str) -> Result<(), String> {
    let ids: Vec<String> = tools::builtin_tools()
        .iter()
        .map(|t| t.definition().id.clone())
        .collect();
    // An MCP server's tool: SERVER__tool (its server need not be running now).
    let mcp_tool = id
        .split_once("__")
        .is_some_and(|(server, tool)| services_ai::valid_server_name(server) && !tool.is_empty());
    if ids.iter().any(|i| i == id) || mcp_tool {
        Ok(())
    } else {
        Err(format!(
            "unknown tool '{id}' (tools: {}, or an MCP server's SERVER__tool)",
            ids.join(", ")
        ))
    }
}

fn describe(s: &ToolPermissionSettings) -> String {
    let mut parts = Vec::new();
    if s.always_deny {
        parts.push("always deny".to_string());
    }
    if s.always_allow {
        parts.push("always allow".to_string());
    }
    if !s.allowed_patterns.is_empty() {
        parts.push(format!("allow {}", s.allowed_patterns.join(", ")));
    }
    if !s.denied_patterns.is_empty() {
        parts.push(format!("deny {}", s.denied_patterns.join(", ")));
    }
    if parts.is_empty() {
        "ask".to_string()
    } else {
        parts.join("; ")
    }
}

/// Run the command.
pub(crate) async fn run(action: PermissionsAction) -> Result<(), String> {
    let file = settings::permissions_file()?;
    let manager = DefaultPermissionManager::new(Arc::new(FilePermissionStore::new(&file)));
    let mut out = std::io::stdout().lock();
    let mut say = |text: String| writeln!(out, "{text}").map_err(|e| e.to_string());
    match action {
        PermissionsAction::List => {
            let all = manager
                .all_tool_permissions()
                .await
                .map_err(|e| e.to_string())?;
            say(format!("# {}", file.display()))?;
            if all.is_empty() {
                say("no saved permissions: calls above safe risk are asked about".into())?;
            }
            for s in all {
                say(format!("{:<14} {}", s.tool_id, describe(&s)))?;
            }
            Ok(())
        }
        PermissionsAction::Allow(rule) => say(change(&manager, &rule, true).await?),
        PermissionsAction::Deny(rule) => say(change(&manager, &rule, false).await?),
        PermissionsAction::Reset { tool: Some(tool) } => {
            let existed = manager
                .remove_tool_permissions(&tool)
                .await
                .map_err(|e| e.to_string())?;
            say(if existed {
                format!("{tool}: saved permissions forgotten")
            } else {
                format!("{tool}: nothing was saved")
            })
        }
        PermissionsAction::Reset { tool: None } => {
            let all = manager
                .all_tool_permissions()
                .await
                .map_err(|e| e.to_string())?;
            for s in &all {
                manager
                    .remove_tool_permissions(&s.tool_id)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            say(format!(
                "forgot the saved permissions of {} tool(s)",
                all.len()
            ))
        }
    }
}

/// Add `rule` to the tool's settings as an allow (`allow`) or a deny; an "always" rule
/// replaces its opposite. The change is made on the file as it is now, under its lock, so
/// that concurrent changes are never lost. Returns the tool's settings in words.
async fn change(
    manager: &DefaultPermissionManager,
    rule: &Rule,
    allow: bool,
) -> Result<String, String> {
    if rule.pattern.as_deref().is_some_and(|p| p.trim().is_empty()) {
        return Err(format!("--pattern for {} is empty", rule.tool));
    }
    known_tool(&rule.tool)?;
    if let Some(p) = &rule.pattern {
        globset::Glob::new(p).map_err(|e| format!("--pattern '{p}' is not a valid glob: {e}"))?;
    }
    let pattern = rule.pattern.clone();
    let saved = manager
        .update_tool_permissions(&rule.tool, move |s| match (pattern, allow) {
            (None, true) => {
                s.always_allow = true;
                s.always_deny = false;
            }
            (None, false) => {
                s.always_deny = true;
                s.always_allow = false;
            }
            (Some(p), true) if !s.allowed_patterns.contains(&p) => s.allowed_patterns.push(p),
            (Some(p), false) if !s.denied_patterns.contains(&p) => s.denied_patterns.push(p),
            _ => {}
        })
        .await
        .map_err(|e| e.to_string())?
        .unwrap_or_else(|| ToolPermissionSettings::new(rule.tool.clone()));
    Ok(format!("{:<14} {}", saved.tool_id, describe(&saved)))
}
