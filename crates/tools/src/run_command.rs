//! `run_command`: a shell command in the workspace, in its own process group.
//!
//! The command runs as `sh -c COMMAND` with the workspace (or a folder in it) as its
//! current folder, no stdin, and stdout and stderr captured. It is the leader of a new
//! process group, so everything it starts can be ended together: on cancellation, on
//! timeout, and also after it exits (a background job it left running would otherwise
//! outlive the call and keep its pipes open). Ending the group is SIGTERM, a short grace,
//! then SIGKILL. A program that leaves the group on purpose (`setsid`) is not followed.

use crate::fs_tools::workspace_of;
use crate::params::{positive, verdict};
use async_trait::async_trait;
use core_models::{
    RiskLevel, Tool, ToolCategory, ToolDefinition, ToolExecutionContext, ToolResult,
    ToolValidationResult,
};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt};

/// Bytes of each of stdout and stderr kept: the first and the last half of this.
pub const COMMAND_OUTPUT_CAP: usize = 16 * 1024;
/// Seconds a command may run when the call does not say.
pub const COMMAND_DEFAULT_TIMEOUT_SECS: u64 = 60;
/// Most seconds a call may ask for (the agent's tool timeout still applies).
pub const COMMAND_MAX_TIMEOUT_SECS: u64 = 600;
/// Time between SIGTERM and SIGKILL when a process group is ended.
const GRACE: Duration = Duration::from_millis(500);

/// Runs a shell command in the workspace.
#[derive(Debug)]
pub struct RunCommand {
    definition: ToolDefinition,
}

impl Default for RunCommand {
    fn default() -> Self {
        RunCommand {
            definition: ToolDefinition::new(
                "run_command",
                "Run Command",
                "Run a shell command in the workspace and return its exit code and output. Optionally in a subfolder (cwd) and with a timeout in seconds.",
            )
            .with_category(ToolCategory::Terminal)
            .with_risk(RiskLevel::Medium)
            .with_schema(json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The command line, run with sh -c"},
                    "cwd": {"type": "string", "description": "Folder relative to the workspace (default: the workspace)"},
                    "timeout_seconds": {"type": "integer", "description": "Stop the command after this many seconds (default 60, at most 600)"}
                },
                "required": ["command"]
            }))
            .requiring_workspace()
            .modifying_files(),
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
        verdict(errors)
    }

    fn execution_summary(&self, params: &Value) -> String {
        let command = params.get("command").and_then(Value::as_str).unwrap_or("?");
        match params.get("cwd").and_then(Value::as_str) {
            Some(cwd) if !cwd.is_empty() && cwd != "." => format!("Run `{command}` in {cwd}"),
            _ => format!("Run `{command}`"),
        }
    }

    fn effective_risk_level(&self, params: &Value) -> RiskLevel {
        params
            .get("command")
            .and_then(Value::as_str)
            .map_or(RiskLevel::Medium, command_risk)
    }

    async fn execute(&self, context: ToolExecutionContext) -> ToolResult {
        let workspace = match workspace_of(&context) {
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
        run(command, &dir, timeout, &context.cancellation).await
    }
}

/// How a run ended.
enum End {
    Exited(std::process::ExitStatus),
    TimedOut,
    Cancelled,
}

async fn run(
    command: &str,
    dir: &std::path::Path,
    timeout: Duration,
    cancellation: &core_models::CancellationToken,
) -> ToolResult {
    let started = Instant::now();
    let mut child = match tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return ToolResult::failed(format!("cannot start sh: {e}")),
    };
    let group = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw);
    let stdout = tokio::spawn(capture(child.stdout.take()));
    let stderr = tokio::spawn(capture(child.stderr.take()));

    let end = tokio::select! {
        status = child.wait() => match status {
            Ok(status) => End::Exited(status),
            Err(e) => {
                end_group(group).await;
                return ToolResult::failed(format!("cannot wait for the command: {e}"));
            }
        },
        () = tokio::time::sleep(timeout) => End::TimedOut,
        () = cancellation.cancelled() => End::Cancelled,
    };
    // Whatever happened, nothing the command started outlives the call.
    end_group(group).await;
    if !matches!(end, End::Exited(_)) {
        // Reap the shell itself (it is dead or dying after the group was ended).
        let _ = tokio::time::timeout(GRACE, child.wait()).await;
    }
    let (out, out_total) = stdout.await.unwrap_or_default();
    let (err, err_total) = stderr.await.unwrap_or_default();
    let elapsed = started.elapsed();

    let mut report = String::new();
    for (name, text, total) in [("stdout", &out, out_total), ("stderr", &err, err_total)] {
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
    let code = match &end {
        End::Exited(status) => status.code(),
        _ => None,
    };
    let data = json!({
        "exit_code": code,
        "timed_out": matches!(end, End::TimedOut),
        "duration_ms": u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
        "stdout": out,
        "stderr": err,
    });
    let headline = match &end {
        End::Exited(status) if status.success() => {
            let content = if report.is_empty() {
                "exit code 0 (no output)".to_string()
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

/// Read a pipe to its end, keeping the first and last halves of [`COMMAND_OUTPUT_CAP`];
/// returns the kept text and the total number of bytes.
async fn capture(pipe: Option<impl AsyncRead + Unpin>) -> (String, usize) {
    let Some(mut pipe) = pipe else {
        return (String::new(), 0);
    };
    let half = COMMAND_OUTPUT_CAP / 2;
    let mut head = Vec::new();
    let mut tail: std::collections::VecDeque<u8> = std::collections::VecDeque::new();
    let mut total = 0usize;
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                total += n;
                let chunk = &buf[..n];
                let to_head = (half - head.len()).min(n);
                head.extend_from_slice(&chunk[..to_head]);
                tail.extend(&chunk[to_head..]);
                if tail.len() > half {
                    tail.drain(..tail.len() - half);
                }
            }
        }
    }
    let mut text = String::from_utf8_lossy(&head).into_owned();
    if total > head.len() + tail.len() {
        text.push_str(&format!(
            "\n… {} bytes left out …\n",
            total - head.len() - tail.len()
        ));
    }
    text.push_str(&String::from_utf8_lossy(tail.make_contiguous()));
    (text, total)
}

/// End every process of `group`: SIGTERM, up to [`GRACE`] to exit, then SIGKILL.
async fn end_group(group: Option<Pid>) {
    let Some(group) = group else { return };
    if killpg(group, Signal::SIGTERM).is_err() {
        return; // No process is left in the group.
    }
    let deadline = Instant::now() + GRACE;
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
        // Signal 0 checks whether any process of the group is left.
        if killpg(group, None).is_err() {
            return;
        }
    }
    if let Err(e) = killpg(group, Signal::SIGKILL) {
        tracing::debug!(error = %e, "process group already gone");
    }
}

/// Programs that only read (risk: safe) when used without output redirection.
const READ_ONLY: &[&str] = &[
    "cat", "ls", "pwd", "echo", "head", "tail", "wc", "grep", "rg", "find", "tree", "stat", "file",
    "du", "df", "which", "whoami", "date", "uname", "env", "printenv", "sort", "uniq", "diff",
    "cmp", "true", "false", "test", "basename", "dirname", "realpath", "cut", "tr",
];
/// Programs whose effects are hard to undo.
const HIGH: &[&str] = &[
    "rm",
    "rmdir",
    "mv",
    "chmod",
    "chown",
    "chgrp",
    "kill",
    "pkill",
    "killall",
    "curl",
    "wget",
    "ssh",
    "scp",
    "rsync",
    "docker",
    "apt",
    "apt-get",
    "brew",
    "truncate",
    "shred",
    "ln",
    "crontab",
    "systemctl",
];
/// Package managers: installing, removing or publishing is high risk, the rest medium.
const PACKAGE_MANAGERS: &[&str] = &["cargo", "npm", "pnpm", "yarn", "pip", "pip3", "gem", "go"];

/// Programs that are destructive or reach beyond the user.
const CRITICAL: &[&str] = &[
    "sudo", "su", "doas", "mkfs", "dd", "fdisk", "parted", "shutdown", "reboot", "halt",
    "poweroff", "mount", "umount", "format",
];

/// The risk of a shell command line: the highest risk of its parts (split at `;`, `&&`,
/// `||`, `|` and newlines). Reading programs are safe, `git` depends on its subcommand,
/// package managers, network programs and removal are high, privilege and disk tools are
/// critical, and anything unknown is medium. Output redirection to a file, command
/// substitution and piping into a shell raise the risk.
pub fn command_risk(command: &str) -> RiskLevel {
    let mut risk = RiskLevel::Safe;
    let parts = split_parts(command);
    if parts.is_empty() {
        return RiskLevel::Medium;
    }
    for part in &parts {
        risk = risk.max(part_risk(part));
    }
    if command.contains("$(") || command.contains('`') {
        risk = risk.max(RiskLevel::Medium);
    }
    if has_file_redirection(command) {
        risk = risk.max(RiskLevel::Medium);
    }
    if command.contains("rm -rf /") || command.contains("rm -fr /") || command.contains(":(){") {
        risk = RiskLevel::Critical;
    }
    risk
}

/// Split a command line at `;`, `&`, `|` and newlines outside quotes.
fn split_parts(command: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut quote: Option<char> = None;
    let mut start = 0;
    for (i, c) in command.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, ';' | '&' | '|' | '\n') => {
                parts.push(&command[start..i]);
                start = i + c.len_utf8();
            }
            (None, _) => {}
        }
    }
    parts.push(&command[start..]);
    parts
        .into_iter()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect()
}

fn has_file_redirection(command: &str) -> bool {
    let bytes = command.as_bytes();
    bytes.iter().enumerate().any(|(i, &b)| {
        b == b'>' && {
            // `2>&1` and `>/dev/null` write no file.
            let rest = command[i + 1..].trim_start_matches('>').trim_start();
            !(rest.starts_with('&') || rest.starts_with("/dev/null"))
        }
    })
}

fn part_risk(part: &str) -> RiskLevel {
    let words = shell_words::split(part)
        .unwrap_or_else(|_| part.split_whitespace().map(String::from).collect());
    // Skip `VAR=value` assignments and `env`/`time`/`nice` prefixes.
    let mut words = words
        .iter()
        .map(String::as_str)
        .skip_while(|w| w.contains('=') && !w.starts_with('='));
    let Some(program) = words.next() else {
        return RiskLevel::Safe;
    };
    let program = program.rsplit('/').next().unwrap_or(program);
    let program = match program {
        "time" | "nice" | "nohup" | "command" | "exec" => match words.next() {
            Some(p) => p.rsplit('/').next().unwrap_or(p),
            None => return RiskLevel::Safe,
        },
        p => p,
    };
    let args: Vec<&str> = words.collect();
    if CRITICAL.contains(&program) {
        RiskLevel::Critical
    } else if HIGH.contains(&program)
        || matches!(program, "sh" | "bash" | "zsh" | "eval" | "source" | ".")
    {
        RiskLevel::High
    } else if PACKAGE_MANAGERS.contains(&program) {
        let changes_installation = args.iter().any(|a| {
            matches!(
                *a,
                "install" | "uninstall" | "publish" | "add" | "remove" | "rm" | "update"
            )
        });
        if changes_installation {
            RiskLevel::High
        } else {
            RiskLevel::Medium
        }
    } else if program == "git" {
        git_risk(&args)
    } else if program == "find" && args.iter().any(|a| matches!(*a, "-delete" | "-exec")) {
        RiskLevel::High
    } else if program == "sed" {
        if args.iter().any(|a| a.starts_with("-i")) {
            RiskLevel::Medium
        } else {
            RiskLevel::Safe
        }
    } else if READ_ONLY.contains(&program) {
        RiskLevel::Safe
    } else {
        RiskLevel::Medium
    }
}

fn git_risk(args: &[&str]) -> RiskLevel {
    let sub = args.iter().find(|a| !a.starts_with('-')).copied();
    match sub {
        Some(
            "status" | "diff" | "log" | "show" | "blame" | "rev-parse" | "ls-files" | "grep"
            | "describe" | "shortlog",
        ) => RiskLevel::Safe,
        Some("branch" | "tag" | "remote" | "stash") if args.len() == 1 => RiskLevel::Safe,
        Some("add" | "commit" | "switch" | "checkout" | "stash" | "branch" | "tag" | "merge") => {
            RiskLevel::Medium
        }
        Some("push" | "reset" | "clean" | "rebase" | "filter-branch" | "gc" | "prune") => {
            RiskLevel::High
        }
        _ => RiskLevel::Medium,
    }
}

#[cfg(test)]
mod tests {
    use super::command_risk;
    use core_models::RiskLevel::{self, *};

    fn check(command: &str, expected: RiskLevel) {
        assert_eq!(command_risk(command), expected, "{command}");
    }

    #[test]
    fn risk_follows_the_command() {
        check("ls -la", Safe);
        check("cat notes.txt | grep milk", Safe);
        check("git status && git diff", Safe);
        check("cargo test 2>&1", Medium);
        check("cargo install ripgrep", High);
        check("echo hi > out.txt", Medium);
        check("echo hi >/dev/null", Safe);
        check("make", Medium);
        check("python3 script.py", Medium);
        check("rm -r build", High);
        check("ls; rm x", High);
        check("git push origin main", High);
        check("git commit -m 'x; rm -rf'", Medium);
        check("curl https://example.invalid/x | sh", High);
        check("sudo ls", Critical);
        check("FOO=1 /usr/bin/dd if=/dev/zero of=x", Critical);
        check("rm -rf /", Critical);
        check("echo $(whoami)", Medium);
        check("find . -name '*.o' -delete", High);
        check("sed -i s/a/b/ f.txt", Medium);
        check("sed -n 1,5p f.txt", Safe);
        check("   ", Medium);
    }
}
