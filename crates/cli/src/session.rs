//! What `run`, `exec` and `chat` share: the options, the agent built from them, and the
//! loop that drives one request while reading the person's input.

use crate::backend;
use crate::settings;
use crate::signals::Interrupts;
use crate::terminal::Terminal;
use core_models::{
    AgentEvent, AgentRequest, AgentService as _, ApprovalDecision, ApprovalRequestEvent,
    RememberScope, RiskLevel, ToolAvailabilityContext, ToolChoice, ToolRegistry,
};
use futures::StreamExt;
use serde::Deserialize;
use services_ai::{
    AgentService, DefaultPermissionManager, FilePermissionStore, InMemoryToolRegistry,
};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt};
use tokio::sync::mpsc::UnboundedReceiver;

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

/// The options of a session with the agent (`run`, `exec` and `chat`).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct SessionArgs {
    /// The folder the tools work in (default: the current folder).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// The model: `llama:MODEL.gguf` (default: the embedded SmolLM2-135M-Instruct),
    /// `openai:URL` (a server speaking the OpenAI chat-completions protocol: llama-server,
    /// vLLM, Ollama, LM Studio, a hosted API; URL up to /v1) or `script:FILE` (a scripted
    /// model). Default: `[backend]` in aintern.toml.
    #[arg(long, value_name = "BACKEND")]
    backend: Option<String>,
    /// The model's name on the server (`openai:`; default: its only or first model), or
    /// a GGUF file.
    #[arg(long, value_name = "NAME")]
    model: Option<String>,
    /// The environment variable holding the server's API key (sent as a bearer token,
    /// never printed).
    #[arg(long, value_name = "VAR")]
    api_key_env: Option<String>,
    /// A Jinja chat template to use instead of the model's own (llama models only), as
    /// llama.cpp's `--chat-template-file`: for a model whose template is missing or wrong.
    #[arg(long, value_name = "FILE")]
    chat_template: Option<PathBuf>,
    /// Answer approvals without asking: all, safe or none. Permissions saved with
    /// `aintern permissions` still apply first.
    #[arg(long, value_enum)]
    pub(crate) approve: Option<ApproveMode>,
    /// Whether the model must call a tool: auto, required, none, or a tool id.
    #[arg(long, value_name = "CHOICE")]
    tool_choice: Option<ToolChoice>,
    /// Most loop iterations per request.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    max_iterations: Option<u32>,
    /// Request timeout in seconds (at least 5); lowers the tool timeout when shorter.
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(5..))]
    timeout: Option<u64>,
    /// Read the configuration from this TOML file instead of aintern.toml in the user's
    /// config folder and in the workspace.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Sampling temperature (0: greedy). Default: 0 with a small model (the embedded one,
    /// or any under a billion parameters), which answers best greedy; 0.7 otherwise.
    #[arg(long, value_name = "T", value_parser = temperature)]
    temperature: Option<f32>,
    /// Continue a saved session (its id, or enough of it to name it alone; without one,
    /// the most recent), in its workspace and with its model unless given.
    #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = None)]
    resume: Option<Option<String>>,
    /// With --resume (or alone): the most recently updated session.
    #[arg(long)]
    last: bool,
    /// Do not save this session.
    #[arg(long)]
    no_save: bool,
    /// Most tokens per reply. Default: 512 with a small model, 4096 otherwise.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_tokens: Option<u32>,
}

/// A temperature: a finite number from 0 to 100.
fn temperature(text: &str) -> Result<f32, String> {
    let t: f32 = text
        .trim()
        .parse()
        .map_err(|_| format!("'{text}' is not a number"))?;
    if t.is_finite() && (0.0..=100.0).contains(&t) {
        Ok(t)
    } else {
        Err(format!("must be a number from 0 to 100 (got {text})"))
    }
}

impl SessionArgs {
    /// What the flags say about the backend.
    pub(crate) fn backend_flags(&self) -> backend::Flags<'_> {
        backend::Flags {
            backend: self.backend.as_deref(),
            model: self.model.as_deref(),
            api_key_env: self.api_key_env.as_deref(),
        }
    }

    /// These options for resuming the session `header` describes: its backend and model
    /// unless given.
    fn resuming(mut self, header: &crate::sessions::Header) -> Self {
        if self.backend.is_none() && self.model.is_none() {
            match header.backend.as_str() {
                "embedded" => {}
                spec if spec.starts_with("openai:") => {
                    self.backend = Some(spec.to_string());
                    self.model = Some(header.model.clone());
                }
                spec => self.backend = Some(spec.to_string()),
            }
        }
        self
    }
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

/// The agent and what every request of the session shares.
pub(crate) struct Session {
    pub(crate) agent: AgentService,
    args: SessionArgs,
    /// A small model: greedy, short replies (and the compact tool prompt).
    small: bool,
    workspace: PathBuf,
    /// The saved side: the session's id (the conversation's), history and file.
    saved: crate::sessions::Persisted,
    launcher: Arc<sandbox::Launcher>,
}

/// Longest stdin line taken (a longer one is reported and skipped).
const STDIN_LINE_CAP: usize = 16 * 1024 * 1024;

/// Lines read from stdin, as they come; `None` once stdin ends. A line that is not UTF-8,
/// or longer than [`STDIN_LINE_CAP`], is reported on stderr and skipped; the lines after it
/// still come.
pub(crate) fn stdin_lines() -> UnboundedReceiver<String> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        let mut input = tokio::io::BufReader::new(tokio::io::stdin());
        let mut number = 0u64;
        loop {
            let mut bytes = Vec::new();
            let read = (&mut input)
                .take(STDIN_LINE_CAP as u64 + 1)
                .read_until(b'\n', &mut bytes)
                .await;
            match read {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            number += 1;
            if bytes.len() > STDIN_LINE_CAP && !bytes.ends_with(b"\n") {
                // Skip the rest of the over-long line.
                let mut rest = Vec::new();
                while !rest.ends_with(b"\n") {
                    rest.clear();
                    match (&mut input)
                        .take(64 * 1024)
                        .read_until(b'\n', &mut rest)
                        .await
                    {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                }
                eprintln!(
                    "aintern: stdin line {number} is longer than {STDIN_LINE_CAP} bytes; ignored"
                );
                continue;
            }
            while bytes.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
                bytes.pop();
            }
            match String::from_utf8(bytes) {
                Ok(line) => {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
                Err(_) => eprintln!("aintern: stdin line {number} is not UTF-8 text; ignored"),
            }
        }
    });
    rx
}

impl Session {
    /// Load the configuration and the model and build the agent. An interrupt while the
    /// model loads ends the program.
    pub(crate) async fn start(
        args: SessionArgs,
        terminal: &mut Terminal,
        interrupts: &mut Interrupts,
    ) -> Result<Self, String> {
        let resume = crate::sessions::resume_target(args.resume.as_ref(), args.last)?;
        // A resumed session continues in its workspace, with its model, unless told else.
        let args = match &resume {
            Some(saved) => args.resuming(&saved.header),
            None => args,
        };
        let workspace = match (&resume, &args.workspace) {
            (Some(saved), None) => workspace(Some(saved.header.workspace.clone()))?,
            _ => workspace(args.workspace.clone())?,
        };
        let adjust = |config: &mut services_ai::AgentConfig| {
            if let Some(secs) = args.timeout {
                config.agent_request_timeout_ms = secs.saturating_mul(1000);
                config.tool_execution_timeout_ms = config
                    .tool_execution_timeout_ms
                    .min(config.agent_request_timeout_ms);
            }
        };
        let (config, notes) =
            settings::load_config(&workspace, args.config.as_deref(), &[], adjust)?;
        for note in notes {
            terminal.note(&note);
        }
        // Chosen first: the variable holding the server's key, however it was named, is
        // kept from every command the tools start.
        let choice = backend::choose(args.backend_flags(), &config.backend)?;
        let backend_name = choice.name();
        let mut sandbox_settings = settings::sandbox_settings(&config);
        sandbox_settings.secret_env.extend(args.api_key_env.clone());
        let launcher = Arc::new(sandbox::Launcher::new(sandbox_settings));
        let registry: Arc<dyn ToolRegistry> = Arc::new(
            tools::builtin_tools_with(Arc::clone(&launcher))
                .into_iter()
                .collect::<InMemoryToolRegistry>(),
        );
        if let Some(ToolChoice::Tool(id)) = &args.tool_choice {
            if registry.get_tool(id).is_none() {
                let mut ids: Vec<String> = registry
                    .all_tools()
                    .iter()
                    .map(|t| t.definition().id.clone())
                    .collect();
                ids.sort();
                return Err(format!(
                    "--tool-choice: unknown tool '{id}' (auto, required, none, or one of: {})",
                    ids.join(", ")
                ));
            }
        }
        if let Some(note) = sandbox_note(&launcher) {
            terminal.note(&note);
        }
        let opened = tokio::select! {
            opened = backend::open(choice, args.chat_template.as_deref(), terminal) => opened?,
            () = interrupts.next() => crate::signals::leave(130),
        };
        // A small model follows the compact tool prompt (unless configured otherwise).
        let config = if opened.small {
            settings::load_config(
                &workspace,
                args.config.as_deref(),
                &[("tool_prompt_style", "compact")],
                adjust,
            )?
            .0
        } else {
            config
        };
        let (llm, small) = (opened.llm, opened.small);
        let permissions: Arc<dyn core_models::PermissionManager> =
            match settings::permissions_file() {
                Ok(file) => Arc::new(DefaultPermissionManager::new(Arc::new(
                    FilePermissionStore::new(file),
                ))),
                Err(e) => {
                    terminal.note(&format!("{e}; \"always\" decisions last only this session"));
                    Arc::new(DefaultPermissionManager::in_memory())
                }
            };
        let header = crate::sessions::Header {
            id: resume
                .as_ref()
                .map_or_else(uuid::Uuid::new_v4, |s| s.header.id),
            created: chrono::Utc::now(),
            workspace: workspace.clone(),
            backend: backend_name,
            model: llm.model_name(),
            version: 1,
        };
        let mut notes = Vec::new();
        let start = crate::sessions::Start {
            saved: resume,
            header,
            save: !args.no_save,
        };
        let saved =
            crate::sessions::Persisted::start(start, permissions.as_ref(), &mut notes).await;
        for note in notes {
            terminal.note(&note);
        }
        let mut builder = AgentService::builder(llm, registry)
            .permissions(permissions)
            .git_inspector(Arc::new(tools::GitCommandInspector::new(Arc::clone(
                &launcher,
            ))));
        for (name, f) in &config.formatters {
            builder = builder.formatter(Arc::new(
                tools::CommandFormatter::new(name.clone(), f.extensions.clone(), f.command.clone())
                    .with_launcher(Arc::clone(&launcher)),
            ));
        }
        let agent = builder.config(config).build();
        Ok(Session {
            agent,
            args,
            small,
            workspace,
            saved,
            launcher,
        })
    }

    /// A request for `message`, continuing the session's conversation.
    pub(crate) fn request(&self, message: String) -> AgentRequest {
        let mut request = AgentRequest::new(message)
            .with_tool_context(ToolAvailabilityContext::for_workspace(&self.workspace));
        request.conversation_id = self.saved.id;
        request.history = self.saved.history();
        request.max_iterations = self.args.max_iterations;
        let small = self.small;
        let defaults = core_models::InferenceOptions::default();
        request.inference_options = Some(core_models::InferenceOptions {
            temperature: self
                .args
                .temperature
                .unwrap_or(if small { 0.0 } else { defaults.temperature })
                .max(0.0),
            max_tokens: self.args.max_tokens.unwrap_or(if small {
                512
            } else {
                defaults.max_tokens
            }),
            ..defaults
        });
        if let Some(choice) = self.args.tool_choice.clone() {
            request.tool_choice = choice;
        }
        request
    }

    /// Run one request to its end, showing its events on `terminal` and taking input
    /// from `input`: JSON commands with `json`, otherwise answers to approval prompts
    /// and, while no prompt is open, messages for the running request. Ctrl-C cancels
    /// the request. `input` is `None` once stdin ended; approvals nobody can answer then
    /// are denied.
    pub(crate) async fn drive(
        &self,
        request: AgentRequest,
        terminal: &mut Terminal,
        input: &mut Option<UnboundedReceiver<String>>,
        interrupts: &mut Interrupts,
        json: bool,
    ) -> Result<Driven, String> {
        // The stream of events starts with the session's.
        if let Some(started) = self.saved.announce(request.request_id) {
            terminal.event(&started);
        }
        let history = request.history.clone();
        let request_message = request.message.clone();
        self.saved
            .asked(&core_models::ChatMessage::user(request.message.clone()));
        let mut events = self
            .agent
            .process_message(request)
            .map_err(|e| e.to_string())?;
        let mut usage = None;
        let mut pending: Vec<ApprovalRequestEvent> = Vec::new();
        let mut unsent = Vec::new();
        let mut state = core_models::AgentState::Initializing;
        let mut ok = true;
        let mut ticks = tokio::time::interval(Duration::from_millis(100));
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                event = events.next() => {
                    let Some(event) = event else { break };
                    terminal.event(&event);
                    if let AgentEvent::StateChanged(s) = &event {
                        if let core_models::MachineTransition::Agent(r) = &s.change {
                            state = r.current_state;
                        }
                    }
                    if let AgentEvent::AgentError(e) = &event {
                        if e.is_fatal {
                            ok = false;
                        }
                    }
                    if let AgentEvent::AgentComplete(c) = &event {
                        usage = Some((c.prompt_tokens, c.completion_tokens, c.cached_prompt_tokens));
                    }
                    if let AgentEvent::ApprovalRequest(a) = event {
                        match self.args.approve {
                            Some(mode) => answer_by_mode(&a, mode, self.launcher.settings()),
                            None if input.is_none() => no_one_answers(&a),
                            None => {
                                if !json {
                                    terminal.ask(&a);
                                }
                                pending.push(a);
                            }
                        }
                    }
                }
                line = next_line(input) => {
                    let Some(line) = line else {
                        // Stdin ended: nobody is left to answer what is still open.
                        *input = None;
                        pending.drain(..).for_each(|a| no_one_answers(&a));
                        continue;
                    };
                    if line.trim().is_empty() {
                        continue;
                    }
                    if json {
                        self.json_command(&line, &pending);
                    } else if let Some(a) = pending.pop() {
                        if let Some(decision) = answer_typed(&a, &line, terminal) {
                            self.saved.remembered(&a.request, &decision);
                        }
                    } else if !takes_messages(state) {
                        // The model is writing its reply: the line is the next request.
                        unsent.push(line);
                    } else if let Err(e) = self.agent.send_user_message(line.clone()) {
                        tracing::debug!(error = %e, "kept a line for after the request");
                        unsent.push(line);
                    }
                }
                () = interrupts.next() => {
                    terminal.note("cancelling (Ctrl-C)");
                    self.agent.cancel();
                }
                _ = ticks.tick() => terminal.tick(),
            }
        }
        terminal.done();
        // A request that failed before the agent took it leaves the conversation as it was,
        // with the question.
        let mut now = self.agent.conversation();
        if now.len() <= history.len() {
            now = history;
            now.push(core_models::ChatMessage::user(request_message));
        }
        if let Err(e) = self.saved.ended(now, usage) {
            terminal.note(&format!("the session was not saved: {e}"));
        }
        Ok(Driven { ok, unsent })
    }

    /// One JSON command from stdin; `pending` are the approvals still open.
    fn json_command(&self, line: &str, pending: &[ApprovalRequestEvent]) {
        let command: StdinCommand = match serde_json::from_str(line) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("aintern: ignored a stdin line that is not a command ({e}): {line}");
                return;
            }
        };
        let result = match command {
            StdinCommand::Approve { call_id, remember } => {
                let decision = ApprovalDecision::approve().remember(remember);
                let answered = self.agent.provide_approval(call_id, decision.clone());
                if answered.is_ok() && remember == RememberScope::Session {
                    if let Some(a) = pending.iter().find(|a| a.request.id == call_id) {
                        self.saved.remembered(&a.request, &decision);
                    }
                }
                answered
            }
            StdinCommand::Deny { call_id, reason } => self
                .agent
                .provide_approval(call_id, ApprovalDecision::deny(reason)),
            StdinCommand::Cancel => {
                self.agent.cancel();
                Ok(())
            }
            StdinCommand::UserMessage { text } => self.agent.send_user_message(text),
        };
        if let Err(e) = result {
            eprintln!("aintern: {e}");
        }
    }
}

/// How a request driven by [`Session::drive`] went.
pub(crate) struct Driven {
    /// Whether the request ran to an end (completed, cancelled or stopped at a limit),
    /// not failed.
    pub(crate) ok: bool,
    /// Lines typed as the request was ending, too late for it: in order.
    pub(crate) unsent: Vec<String>,
}

/// Whether a message sent in `state` reaches the running request: while tools are
/// prepared and run, before the loop gathers the messages for the next iteration. While
/// the model writes, its reply may be the last one, and the message would come too late.
fn takes_messages(state: core_models::AgentState) -> bool {
    use core_models::AgentState as A;
    matches!(
        state,
        A::ParsingToolCall | A::WaitingForApproval | A::ExecutingTool | A::ProcessingResult
    )
}

fn no_one_answers(a: &ApprovalRequestEvent) {
    if let Err(e) = a.deny(Some("no one is left to answer (stdin ended)".into())) {
        tracing::debug!(error = %e, "approval already settled");
    }
}

/// The next stdin line; never resolves once stdin has ended.
pub(crate) async fn next_line(input: &mut Option<UnboundedReceiver<String>>) -> Option<String> {
    match input {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// What to tell the person, once, when the kernel cannot sandbox commands.
fn sandbox_note(launcher: &sandbox::Launcher) -> Option<String> {
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

/// The workspace folder, canonical: `dir` or the current folder.
pub(crate) fn workspace(dir: Option<PathBuf>) -> Result<PathBuf, String> {
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

/// Whether the call asks for more than the configured sandbox: the network when it is
/// closed, or no sandbox when there is one. Only a person (or a JSON client) may grant
/// that, never `--approve`.
fn escalates(a: &ApprovalRequestEvent, settings: &sandbox::SandboxSettings) -> bool {
    a.sandbox.as_ref().is_some_and(|s| {
        (s.network && !settings.network)
            || (s.mode == core_models::SandboxMode::FullAccess
                && settings.mode != core_models::SandboxMode::FullAccess)
    })
}

fn answer_by_mode(
    a: &ApprovalRequestEvent,
    mode: ApproveMode,
    settings: &sandbox::SandboxSettings,
) {
    let result = match mode {
        ApproveMode::All if escalates(a, settings) => a.deny(Some(
            "--approve all does not lift the sandbox; approve this call yourself".into(),
        )),
        ApproveMode::All => a.approve(),
        ApproveMode::Safe if a.risk_level == RiskLevel::Safe => a.approve(),
        ApproveMode::Safe => a.deny(Some(format!("--approve safe: {} risk", a.risk_level))),
        ApproveMode::None => a.deny(Some("--approve none".into())),
    };
    if let Err(e) = result {
        tracing::debug!(error = %e, "approval already settled");
    }
}

/// Answer `a` with what was typed; the decision when it is remembered for the session.
fn answer_typed(
    a: &ApprovalRequestEvent,
    line: &str,
    terminal: &mut Terminal,
) -> Option<ApprovalDecision> {
    let mut remembered = None;
    let result = match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => a.approve(),
        "s" | "session" => {
            remembered = Some(ApprovalDecision::approve().remember(RememberScope::Session));
            a.approve_with(RememberScope::Session, None)
        }
        "t" | "tool" => {
            terminal.note(&format!(
                "{} is allowed from now on, in every workspace (undo with: aintern permissions reset {})",
                a.request.tool_id, a.request.tool_id
            ));
            a.approve_with(RememberScope::Tool, None)
        }
        _ => a.deny(Some("denied at the prompt".into())),
    };
    match result {
        Ok(()) => remembered,
        Err(e) => {
            terminal.note(&e.to_string());
            None
        }
    }
}
