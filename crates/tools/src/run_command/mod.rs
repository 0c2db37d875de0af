//! `run_command`: a shell command in the workspace, in a kernel sandbox, in its own
//! process group.
//!
//! The command runs as `sh -c COMMAND` with the workspace (or a folder in it) as its
//! current folder, no stdin, and stdout and stderr captured (head and tail). It runs in the
//! sandbox the configuration sets ([`sandbox::Launcher`]; by default `workspace-write`: it
//! writes only the workspace and a private temporary folder, reads no secrets, has no
//! network). A command judged `safe` (read-only, see [`command_risk`]) runs read-only
//! whatever the configuration: the rating's promise is kept by the kernel, not by the
//! judge. A call may ask for the network or for no sandbox at all (`"sandbox": "network"`
//! or `"full-access"`); such calls are rated high or critical and are always put to a
//! person.
//!
//! Whatever git the command runs — directly, in a pipeline or from a script — runs with
//! the repository's choices of programs and files taken away (fsmonitor, hooks, filter
//! and diff drivers, external diffs, signature programs, …; see
//! [`crate::git_config::Hardening`]), and, judged safe, with submodules not entered.
//!
//! The command leads a new session and process group and, sandboxed, cannot leave it: on
//! cancellation, on timeout (of the whole command) and after it exits, the group is ended
//! (SIGTERM, a short grace, then SIGKILL whatever the shell did).

use crate::fs_tools::confined;
use crate::git_config::Hardening;
use crate::params::{positive, verdict};
use async_trait::async_trait;
use core_models::{
    CallAssessment, RiskLevel, Tool, ToolCategory, ToolDefinition, ToolExecutionContext,
    ToolResult, ToolValidationResult,
};
use sandbox::{Admission, Launcher, Variant};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

mod process;
pub use shell_risk::command_risk;

use process::End;

/// Bytes of each of stdout and stderr kept: the first and the last half of this.
pub const COMMAND_OUTPUT_CAP: usize = 16 * 1024;
/// Seconds a command may run when the call does not say.
pub const COMMAND_DEFAULT_TIMEOUT_SECS: u64 = 60;
/// Most seconds a call may ask for (the agent's tool timeout still applies).
pub const COMMAND_MAX_TIMEOUT_SECS: u64 = 600;

/// Runs a shell command in the workspace, in the configured sandbox.
#[derive(Debug)]
pub struct RunCommand {
    definition: ToolDefinition,
    launcher: Arc<Launcher>,
}

impl Default for RunCommand {
    /// With the default sandbox settings (`workspace-write`, no network, ask when the
    /// kernel cannot sandbox).
    fn default() -> Self {
        Self::new(Arc::new(Launcher::default()))
    }
}

/// What a call asks of the sandbox (`"sandbox"` parameter).
fn requested(params: &Value) -> Result<Option<Variant>, String> {
    match params.get("sandbox") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => match s.trim() {
            "" | "default" => Ok(None),
            "network" => Ok(Some(Variant::Network)),
            "full-access" => Ok(Some(Variant::FullAccess)),
            other => Err(format!(
                "sandbox must be \"default\", \"network\" or \"full-access\" (got \"{other}\")"
            )),
        },
        Some(_) => Err("sandbox must be a string".to_string()),
    }
}

impl RunCommand {
    /// A `run_command` whose commands start through `launcher` (shared with the other
    /// tools and ports that start processes).
    pub fn new(launcher: Arc<Launcher>) -> Self {
        RunCommand {
            definition: ToolDefinition::new(
                "run_command",
                "Run Command",
                "Run a shell command and return its output. It runs in the workspace and reports its exit code too. Optionally in a subfolder (cwd) and with a timeout in seconds. Commands run in a sandbox: they write only in the workspace and have no network.",
            )
            .with_example("Run ls -la and show me the output.", json!({"command": "ls -la"}))
            .with_example("Execute make test", json!({"command": "make test"}))
            .with_category(ToolCategory::Terminal)
            .with_risk(RiskLevel::Medium)
            .with_schema(json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The command line, run with sh -c"},
                    "cwd": {"type": "string", "description": "Folder relative to the workspace (default: the workspace)"},
                    "timeout_seconds": {"type": "integer", "description": "Stop the command after this many seconds (default 60, at most 600)"},
                    "sandbox": {"type": "string", "enum": ["default", "network", "full-access"], "description": "Only when the command cannot work in the sandbox: \"network\" to open the network, \"full-access\" to run without a sandbox. The user is always asked."}
                },
                "required": ["command"]
            }))
            .with_details(["timeout_seconds", "sandbox"])
            .requiring_workspace()
            .modifying_files(),
            launcher,
        }
    }

    /// The variant of the sandbox a call runs in: what it asks for, or read-only when the
    /// command is judged safe, or the configured one.
    fn variant(&self, params: &Value, risk: RiskLevel) -> Variant {
        match requested(params) {
            Ok(Some(asked)) => asked,
            _ if risk == RiskLevel::Safe => Variant::ReadOnly,
            _ => Variant::Configured,
        }
    }
}

#[async_trait]
impl Tool for RunCommand {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn validate(&self, params: &Value) -> ToolValidationResult {
        let mut errors = Vec::new();
        let command = params.get("command").and_then(Value::as_str);
        if command.is_none_or(|c| c.trim().is_empty()) {
            errors.push("command is required (a non-empty string)".to_string());
        }
        if let Some(t) = positive(params, "timeout_seconds", &mut errors) {
            if t > COMMAND_MAX_TIMEOUT_SECS {
                errors.push(format!(
                    "timeout_seconds must be at most {COMMAND_MAX_TIMEOUT_SECS}"
                ));
            }
        }
        if params.get("cwd").is_some_and(|c| !c.is_string()) {
            errors.push("cwd must be a string".to_string());
        }
        match requested(params) {
            Err(e) => errors.push(e),
            Ok(asked) => {
                if let Admission::Refuse(why) = self
                    .launcher
                    .admission(asked.unwrap_or(Variant::Configured))
                {
                    errors.push(format!("commands cannot run here: {why}"));
                }
            }
        }
        verdict(errors)
    }

    fn execution_summary(&self, params: &Value) -> String {
        let command = params.get("command").and_then(Value::as_str).unwrap_or("?");
        let mut summary = match params.get("cwd").and_then(Value::as_str) {
            Some(cwd) if !cwd.is_empty() && cwd != "." => format!("Run `{command}` in {cwd}"),
            _ => format!("Run `{command}`"),
        };
        match requested(params) {
            Ok(Some(Variant::Network)) => summary.push_str(" with network access"),
            Ok(Some(Variant::FullAccess)) => summary.push_str(" WITHOUT a sandbox"),
            _ => {}
        }
        summary
    }

    fn effective_risk_level(&self, params: &Value) -> RiskLevel {
        let judged = params
            .get("command")
            .and_then(Value::as_str)
            .map_or(RiskLevel::Medium, command_risk);
        escalated(params, judged)
    }

    fn assess(&self, params: &Value, workspace: Option<&Path>) -> CallAssessment {
        let command = params
            .get("command")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let cwd = params.get("cwd").and_then(Value::as_str);
        let judged = shell_risk::judge(command, cwd, workspace);
        let risk = escalated(params, judged.risk);
        let variant = self.variant(params, risk);
        let mut assessment =
            CallAssessment::new(risk, judged.subjects).with_reasons(judged.reasons);
        if let Some(workspace) = workspace {
            assessment = assessment.with_sandbox(self.launcher.summary(workspace, variant));
        }
        match (requested(params), self.launcher.admission(variant)) {
            (_, Admission::AskFirst(why)) => assessment.asking(why),
            (Ok(Some(Variant::FullAccess)), _) => {
                assessment.asking("the command asks to run without a sandbox")
            }
            (Ok(Some(Variant::Network)), _) => {
                assessment.asking("the command asks for network access")
            }
            _ => assessment,
        }
    }

    async fn execute(&self, context: ToolExecutionContext) -> ToolResult {
        let workspace = match confined(&context, &self.launcher).await {
            Ok(w) => w,
            Err(e) => return ToolResult::failed(e),
        };
        let params = &context.parameters;
        let command = params
            .get("command")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let dir = match params.get("cwd").and_then(Value::as_str) {
            Some(cwd) if !cwd.trim().is_empty() => match workspace.resolve_existing(cwd) {
                Ok(d) if d.is_dir() => d,
                Ok(_) => return ToolResult::failed(format!("cwd '{cwd}' is not a folder")),
                Err(e) => return ToolResult::failed(e.to_string()),
            },
            _ => workspace.root().to_path_buf(),
        };
        let timeout = Duration::from_secs(
            params
                .get("timeout_seconds")
                .and_then(Value::as_u64)
                .unwrap_or(COMMAND_DEFAULT_TIMEOUT_SECS)
                .clamp(1, COMMAND_MAX_TIMEOUT_SECS),
        );
        if context.cancellation.is_cancelled() {
            return ToolResult::failed("Cancelled");
        }
        // The risk is judged again here, with the workspace: a command judged safe runs
        // read-only, whoever called.
        let cwd = params.get("cwd").and_then(Value::as_str);
        let judged = shell_risk::judge(command, cwd, Some(workspace.root()));
        let variant = self.variant(params, escalated(params, judged.risk));
        let sandbox = match self.launcher.sandbox(workspace.root(), variant) {
            Ok(s) => s,
            Err(e) => return ToolResult::failed(format!("the command was not run: {e}")),
        };
        let mut shell = process::command("sh", &["-c", command], &dir);
        if variant == Variant::ReadOnly {
            // A command judged safe runs the programs the judge named, not ones the
            // workspace provides through a relative or in-workspace PATH entry.
            if let Some(path) = std::env::var_os("PATH") {
                shell.env("PATH", outside_path(&path, workspace.root()));
            }
            // …and git finds the repository the judge looked at, not one named by the
            // environment or found above the workspace.
            for (name, _) in std::env::vars_os() {
                if name.to_str().is_some_and(|n| n.starts_with("GIT_")) {
                    shell.env_remove(name);
                }
            }
            if let Some(parent) = workspace.root().parent() {
                shell.env("GIT_CEILING_DIRECTORIES", parent);
            }
        }
        // Whatever git the command runs, the repository's configuration does not choose
        // a program or a file for it (see `git_config::Hardening`).
        let reader = crate::program::git_sandbox(&self.launcher, workspace.root());
        let read_only = variant == Variant::ReadOnly;
        Hardening::prepare(
            &dir,
            workspace.root(),
            &judged.repositories,
            read_only,
            &reader,
        )
        .await
        .apply(&mut shell);
        match process::run(
            shell,
            &sandbox,
            timeout,
            &context.cancellation,
            COMMAND_OUTPUT_CAP,
        )
        .await
        {
            Ok(finished) => report(finished, timeout),
            Err(e) => ToolResult::failed(e),
        }
    }
}

/// `PATH` without the entries that could name a program of the workspace: empty or
/// relative entries, and entries inside it.
fn outside_path(path: &std::ffi::OsStr, workspace: &Path) -> std::ffi::OsString {
    let kept: Vec<std::path::PathBuf> = std::env::split_paths(path)
        .filter(|p| p.is_absolute())
        .filter(|p| {
            let lexical =
                std::path::PathBuf::from(core_models::normalize_path(&p.to_string_lossy(), None));
            let resolved = p.canonicalize().unwrap_or(lexical);
            !resolved.starts_with(workspace)
        })
        .collect();
    std::env::join_paths(kept).unwrap_or_default()
}

/// A call asking for more than the sandbox is at least high (network) or critical (no
/// sandbox) risk.
fn escalated(params: &Value, judged: RiskLevel) -> RiskLevel {
    match requested(params) {
        Ok(Some(Variant::FullAccess)) => RiskLevel::Critical,
        Ok(Some(Variant::Network)) => judged.max(RiskLevel::High),
        _ => judged,
    }
}

/// The tool result of a finished run.
fn report(finished: process::Finished, timeout: Duration) -> ToolResult {
    let mut report = String::new();
    for (name, text, total) in [
        ("stdout", &finished.stdout, finished.stdout_total),
        ("stderr", &finished.stderr, finished.stderr_total),
    ] {
        if !text.is_empty() {
            report.push_str(&format!("--- {name} ---\n{text}"));
            if !text.ends_with('\n') {
                report.push('\n');
            }
            if total > text.len() {
                report.push_str(&format!("({name}: {total} bytes in all, shortened)\n"));
            }
        }
    }
    let code = match &finished.end {
        End::Exited(status) => status.code(),
        _ => None,
    };
    let data = json!({
        "exit_code": code,
        "timed_out": finished.end == End::TimedOut,
        "duration_ms": u64::try_from(finished.elapsed.as_millis()).unwrap_or(u64::MAX),
        "stdout": finished.stdout,
        "stderr": finished.stderr,
    });
    let headline = match &finished.end {
        End::Exited(status) if status.success() => {
            let plain = finished.stderr.is_empty()
                && finished.stdout_total <= finished.stdout.len()
                && !finished.stdout.is_empty();
            let content = if report.is_empty() {
                "exit code 0 (no output)".to_string()
            } else if plain {
                // Only output, whole: the output itself (a small model reads "exit code 0"
                // and section lines as the answer); `data` says the rest.
                finished.stdout.clone()
            } else {
                format!("exit code 0\n{report}")
            };
            return ToolResult::success_with_data(content, data);
        }
        End::Exited(status) => match status.code() {
            Some(code) => format!("the command exited with code {code}"),
            None => "the command was killed by a signal".to_string(),
        },
        End::TimedOut => format!(
            "the command did not finish within {} s and was stopped",
            timeout.as_secs()
        ),
        End::Cancelled => "Cancelled".to_string(),
    };
    let mut result = ToolResult::failed(if report.is_empty() {
        headline
    } else {
        format!("{headline}\n{report}")
    });
    result.content = report;
    result.data = Some(data);
    result
}

#[cfg(test)]
mod outside_path_tests {
    use super::outside_path;
    use std::path::Path;

    #[test]
    fn entries_that_could_name_workspace_programs_are_dropped() {
        let path =
            std::ffi::OsStr::new("node_modules/.bin::/usr/bin:/ws/bin:/ws/../bin:/usr/local/bin");
        assert_eq!(
            outside_path(path, Path::new("/ws")),
            "/usr/bin:/ws/../bin:/usr/local/bin"
        );
    }
}
