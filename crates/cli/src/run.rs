//! `aintern run`: one request to the agent, printed as it happens (or as JSON lines).

use core_models::{
    AgentEvent, AgentRequest, AgentService as _, ApprovalDecision, ApprovalRequestEvent,
    LlmService, RememberScope, RiskLevel, ToolAvailabilityContext, ToolChoice, ToolRegistry,
};
use futures::StreamExt;
use serde::Deserialize;
use services_ai::scripted::ScriptedLlm;
use services_ai::{AgentService, ConfigLoader, InMemoryToolRegistry};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::io::AsyncBufReadExt;

/// How approvals are answered without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ApproveMode {
    /// Approve every call.
    All,
    /// Approve safe-risk calls, deny the rest.
    Safe,
    /// Deny every call that needs approval.
    None,
}

/// The `run` command's options.
#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// The folder the tools work in (default: the current folder).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// The model: `llama:MODEL.gguf` (default: the embedded SmolLM2-135M-Instruct) or
    /// `script:FILE` (a scripted model).
    #[arg(long, value_name = "BACKEND")]
    backend: Option<String>,
    /// Answer approvals without asking: all, safe or none.
    #[arg(long, value_enum)]
    approve: Option<ApproveMode>,
    /// Whether the model must call a tool: auto, required, none, or a tool id.
    #[arg(long, value_name = "CHOICE")]
    tool_choice: Option<ToolChoice>,
    /// Most loop iterations for this request.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    max_iterations: Option<u32>,
    /// Request timeout in seconds (at least 5); lowers the tool timeout when shorter.
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(5..))]
    timeout: Option<u64>,
    /// Read the configuration from this TOML file (default: aintern.toml in the workspace).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Sampling temperature (0: greedy). Default: 0 with the embedded model, which answers
    /// best greedy; 0.7 otherwise.
    #[arg(long, value_name = "T")]
    temperature: Option<f32>,
    /// Most tokens per reply. Default: 512 with the embedded model, 4096 otherwise.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_tokens: Option<u32>,
    /// Print every event as one JSON line; read commands as JSON lines on stdin.
    #[arg(long)]
    json: bool,
    /// What to ask.
    message: String,
}

/// A command on stdin (with `--json`).
#[derive(Debug, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
enum StdinCommand {
    Approve {
        call_id: uuid::Uuid,
        #[serde(default)]
        remember: RememberScope,
    },
    Deny {
        call_id: uuid::Uuid,
        #[serde(default)]
        reason: Option<String>,
    },
    Cancel,
    UserMessage {
        text: String,
    },
}

/// Load a GGUF model off the async runtime, saying so on stderr.
async fn load_llama(path: PathBuf, quiet: bool) -> Result<Arc<dyn LlmService>, String> {
    if !quiet {
        eprintln!("aintern: loading {} …", path.display());
    }
    let config = llm_llama::LlamaConfig::new(path);
    let llm = tokio::task::spawn_blocking(move || llm_llama::LlamaLlm::load(config))
        .await
        .map_err(|e| format!("loading the model stopped: {e}"))?
        .map_err(|e| e.to_string())?;
    Ok(Arc::new(llm))
}

async fn backend(spec: Option<&str>, quiet: bool) -> Result<Arc<dyn LlmService>, String> {
    match spec.map(|s| s.split_once(':').unwrap_or((s, ""))) {
        Some(("llama", file)) if !file.is_empty() => load_llama(PathBuf::from(file), quiet).await,
        None => {
            let path = llm_llama::default_model_path();
            if !path.is_file() {
                return Err(format!(
                    "the default model is not downloaded yet ({}): run scripts/fetch-model, or pass --backend llama:MODEL.gguf or script:FILE",
                    path.display()
                ));
            }
            load_llama(path, quiet).await
        }
        Some(("script", file)) if !file.is_empty() => {
            let text = std::fs::read_to_string(file)
                .map_err(|e| format!("cannot read the script {file}: {e}"))?;
            let llm = ScriptedLlm::from_json(&text).map_err(|e| {
                format!("the script {file} is not valid (expected {{\"responses\": [{{\"chunks\": [...], \"delay_ms\": 0}}]}}): {e}")
            })?;
            Ok(Arc::new(llm))
        }
        Some(("llama", _)) => Err("--backend llama: needs a model file (llama:MODEL.gguf)".into()),
        Some(_) => Err(format!(
            "unknown backend '{}': use script:FILE or llama:MODEL.gguf",
            spec.unwrap_or_default()
        )),
    }
}

fn workspace(dir: Option<PathBuf>) -> Result<PathBuf, String> {
    let dir = match dir {
        Some(d) => d,
        None => {
            std::env::current_dir().map_err(|e| format!("cannot read the current folder: {e}"))?
        }
    };
    tools::Workspace::new(&dir)
        .map(|w| w.root().to_path_buf())
        .map_err(|e| e.to_string())
}

impl RunArgs {
    /// Whether the request runs on the embedded default model (no `--backend`).
    fn embedded_model(&self) -> bool {
        self.backend.is_none()
    }
}

fn load_config(args: &RunArgs, workspace: &Path) -> Result<services_ai::AgentConfig, String> {
    let mut loader = ConfigLoader::new();
    if args.embedded_model() {
        // The embedded default model is small: it follows the compact tool prompt.
        loader = loader.default_value("tool_prompt_style", "compact");
    }
    let loader = match &args.config {
        Some(file) => loader.file(file),
        None => loader.optional_file(workspace.join("aintern.toml")),
    };
    let mut config = loader.load_unvalidated().map_err(|e| e.to_string())?;
    if let Some(secs) = args.timeout {
        config.agent_request_timeout_ms = secs.saturating_mul(1000);
        config.tool_execution_timeout_ms = config
            .tool_execution_timeout_ms
            .min(config.agent_request_timeout_ms);
    }
    config.validate().map_err(|e| e.to_string())?;
    Ok(config)
}

/// Run the command; `Ok(true)` when the request ran to an end (completed, cancelled or
/// stopped at a limit), `Ok(false)` when it failed.
pub(crate) async fn run(args: RunArgs) -> Result<bool, String> {
    let workspace = workspace(args.workspace.clone())?;
    let config = load_config(&args, &workspace)?;
    let llm = backend(args.backend.as_deref(), args.json).await?;
    let registry: Arc<dyn ToolRegistry> = Arc::new(
        tools::builtin_tools()
            .into_iter()
            .collect::<InMemoryToolRegistry>(),
    );
    let agent = AgentService::builder(llm, registry)
        .config(config)
        .git_inspector(Arc::new(tools::GitCommandInspector))
        .build();
    let mut request = AgentRequest::new(args.message.clone())
        .with_tool_context(ToolAvailabilityContext::for_workspace(&workspace));
    request.max_iterations = args.max_iterations;
    let embedded = args.embedded_model();
    let defaults = core_models::InferenceOptions::default();
    request.inference_options = Some(core_models::InferenceOptions {
        temperature: args
            .temperature
            .unwrap_or(if embedded { 0.0 } else { defaults.temperature })
            .max(0.0),
        max_tokens: args
            .max_tokens
            .unwrap_or(if embedded { 512 } else { defaults.max_tokens }),
        ..defaults
    });
    if let Some(choice) = args.tool_choice.clone() {
        request.tool_choice = choice;
    }
    let mut events = agent.process_message(request).map_err(|e| e.to_string())?;

    let (commands_tx, mut commands) = tokio::sync::mpsc::unbounded_channel::<String>();
    if args.json || args.approve.is_none() {
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if commands_tx.send(line).is_err() {
                    break;
                }
            }
        });
    }
    let mut printer = Printer::new(args.json);
    let mut pending: Vec<ApprovalRequestEvent> = Vec::new();
    let mut ok = true;
    loop {
        tokio::select! {
            event = events.next() => {
                let Some(event) = event else { break };
                printer.print(&event);
                if let AgentEvent::AgentError(e) = &event {
                    if e.is_fatal && e.category != core_models::AgentErrorCategory::TimeoutError {
                        ok = false;
                    }
                }
                if let AgentEvent::ApprovalRequest(a) = event {
                    match args.approve {
                        Some(mode) => answer_by_mode(&a, mode),
                        None if !args.json => printer.prompt(&a),
                        None => {}
                    }
                    if args.approve.is_none() {
                        pending.push(a);
                    }
                }
            }
            line = commands.recv() => {
                let Some(line) = line else { continue };
                if line.trim().is_empty() {
                    continue;
                }
                if args.json {
                    handle_json_command(&agent, &line);
                } else if let Some(a) = pending.pop() {
                    answer_typed(&a, &line);
                } else if let Err(e) = agent.send_user_message(line) {
                    eprintln!("aintern: {e}");
                }
            }
            _ = tokio::signal::ctrl_c() => agent.cancel(),
        }
    }
    Ok(ok)
}

fn answer_by_mode(a: &ApprovalRequestEvent, mode: ApproveMode) {
    let result = match mode {
        ApproveMode::All => a.approve(),
        ApproveMode::Safe if a.risk_level == RiskLevel::Safe => a.approve(),
        ApproveMode::Safe => a.deny(Some(format!("--approve safe: {} risk", a.risk_level))),
        ApproveMode::None => a.deny(Some("--approve none".into())),
    };
    if let Err(e) = result {
        tracing::debug!(error = %e, "approval already settled");
    }
}

fn answer_typed(a: &ApprovalRequestEvent, line: &str) {
    let result = match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => a.approve(),
        "s" | "session" => a.approve_with(RememberScope::Session, None),
        "t" | "tool" => a.approve_with(RememberScope::Tool, None),
        _ => a.deny(Some("denied at the prompt".into())),
    };
    if let Err(e) = result {
        eprintln!("aintern: {e}");
    }
}

fn handle_json_command(agent: &AgentService, line: &str) {
    let command: StdinCommand = match serde_json::from_str(line) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("aintern: ignored a stdin line that is not a command ({e}): {line}");
            return;
        }
    };
    let result = match command {
        StdinCommand::Approve { call_id, remember } => {
            agent.provide_approval(call_id, ApprovalDecision::approve().remember(remember))
        }
        StdinCommand::Deny { call_id, reason } => {
            agent.provide_approval(call_id, ApprovalDecision::deny(reason))
        }
        StdinCommand::Cancel => {
            agent.cancel();
            Ok(())
        }
        StdinCommand::UserMessage { text } => agent.send_user_message(text),
    };
    if let Err(e) = result {
        eprintln!("aintern: {e}");
    }
}

/// Prints events for a person, or as JSON lines.
struct Printer {
    json: bool,
    out: std::io::Stdout,
    at_line_start: bool,
}

impl Printer {
    fn new(json: bool) -> Self {
        Printer {
            json,
            out: std::io::stdout(),
            at_line_start: true,
        }
    }

    fn line(&mut self, text: &str) {
        let mut out = self.out.lock();
        if !self.at_line_start {
            let _ = writeln!(out);
        }
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
        self.at_line_start = true;
    }

    fn print(&mut self, event: &AgentEvent) {
        if self.json {
            match serde_json::to_string(event) {
                Ok(text) => self.line(&text),
                Err(e) => eprintln!("aintern: cannot print an event: {e}"),
            }
            return;
        }
        match event {
            AgentEvent::TextGeneration(t) if !t.is_complete && !t.is_thinking => {
                let mut out = self.out.lock();
                let _ = write!(out, "{}", t.token);
                let _ = out.flush();
                self.at_line_start = t.token.ends_with('\n');
            }
            AgentEvent::ToolCallRequest(c) => {
                let text = format!(
                    "→ {} ({} risk)",
                    c.request.execution_summary, c.request.risk_level
                );
                self.line(&text);
            }
            AgentEvent::ToolResult(r) => {
                let text = if r.success() {
                    format!("✓ {} ({} ms)", r.tool_name, r.duration.as_millis())
                } else {
                    format!(
                        "✗ {}: {}",
                        r.tool_name,
                        r.result.error_message.as_deref().unwrap_or("failed")
                    )
                };
                self.line(&text);
            }
            AgentEvent::AgentError(e) => {
                let text = format!("! {}", e.error);
                self.line(&text);
            }
            AgentEvent::AgentComplete(c) => {
                let text = format!(
                    "— {} iteration(s), {} tool call(s), {} token(s), {:.1}s ({:?})",
                    c.total_iterations,
                    c.tool_calls_executed,
                    c.total_tokens,
                    c.total_duration.as_secs_f64(),
                    c.reason
                );
                self.line(&text);
            }
            _ => {}
        }
    }

    fn prompt(&mut self, a: &ApprovalRequestEvent) {
        let mut text = format!("? {} ({} risk)", a.summary, a.risk_level);
        for d in &a.details {
            text.push_str(&format!("\n    {d}"));
        }
        for w in &a.warnings {
            text.push_str(&format!("\n    ⚠ {w}"));
        }
        text.push_str(
            "\n  Approve? [y]es / [n]o / always this [s]ession / always for this [t]ool: ",
        );
        let mut out = self.out.lock();
        let _ = write!(out, "{text}");
        let _ = out.flush();
        self.at_line_start = false;
    }
}
