//! What `run`, `exec` and `chat` share: the options, the agent built from them, and the
//! loop that drives one request while reading the person's input.

use crate::approve::{answer_by_mode, no_one_answers, settle, Answer};
use crate::console::Key;
use crate::input::{next_key, Input};
use crate::signals::Interrupts;
use crate::terminal::Terminal;
use core_models::{
    AgentEvent, AgentRequest, AgentService as _, ApprovalDecision, ApprovalRequestEvent,
    RememberScope, ToolAvailabilityContext, ToolRegistry,
};
use futures::StreamExt;
use serde::Deserialize;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The options of a session with the agent (`run`, `exec` and `chat`).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct SessionArgs {
    /// The folder the tools work in (default: the current folder).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    #[command(flatten)]
    backend: crate::flags::BackendArgs,
    #[command(flatten)]
    load: crate::flags::LoadArgs,
    /// Answer approvals without asking: all, safe or none. Permissions saved with
    /// `aintern permissions` still apply first.
    #[arg(long, value_enum)]
    pub(crate) approve: Option<crate::approve::ApproveMode>,
    #[command(flatten)]
    policy: crate::flags::PolicyArgs,
    #[command(flatten)]
    config: crate::flags::ConfigArgs,
    /// Sampling temperature (0: greedy). Default: 0 (greedy: tool calls and answers from
    /// a file want the model's most likely words).
    #[arg(long, value_name = "T", value_parser = temperature)]
    temperature: Option<f32>,
    /// Continue a saved session (its id, or enough of it to name it alone; without one,
    /// the most recent), in its workspace and with its model unless given. `run` and
    /// `exec` take their request from the last word: `--resume "a request"` continues the
    /// most recent session with that request.
    #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = None)]
    resume: Option<Option<String>>,
    /// With --resume (or alone): the most recently updated session.
    #[arg(long)]
    last: bool,
    /// Do not save this session.
    #[arg(long)]
    no_save: bool,
    /// Show tools' outputs whole (command output, matches…) instead of a short preview.
    #[arg(long)]
    pub(crate) full_output: bool,
    /// Most tokens per reply. Default: 512 with a small model, 4096 otherwise.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_tokens: Option<u32>,
    /// MCP servers a front-end adds to the configured ones (an ACP client's), by name.
    #[arg(skip)]
    extra_mcp: Vec<(String, core_models::McpServerConfig)>,
    /// The editor the file tools go through (an ACP client's).
    #[arg(skip)]
    editor: Option<Arc<dyn tools::EditorFiles>>,
    /// The JSON Schema answers are held to (`run --output-schema`), checked already.
    #[arg(skip)]
    pub(crate) output_schema: Option<serde_json::Value>,
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
    /// The request of `run` and `exec`, which is always the last word: with none given
    /// after `--resume VALUE`, clap took the request as the session's id, and it is given
    /// back (the most recent session is continued with it).
    pub(crate) fn request(mut self, message: Option<String>) -> Result<(Self, String), String> {
        if let Some(message) = message {
            return Ok((self, message));
        }
        match self.resume.take() {
            Some(Some(request)) => {
                self.resume = Some(None);
                Ok((self, request))
            }
            resume => {
                self.resume = resume;
                Err("what to ask is missing: give the request as the last argument".into())
            }
        }
    }

    /// The same options in the workspace `dir`, with `mcp` servers added, continuing the
    /// saved session `resume` when given, the file tools going through `editor` when
    /// given (a front-end's session: `aintern acp`).
    pub(crate) fn for_front_end(
        mut self,
        dir: PathBuf,
        mcp: Vec<(String, core_models::McpServerConfig)>,
        resume: Option<String>,
        editor: Option<Arc<dyn tools::EditorFiles>>,
    ) -> Self {
        self.editor = editor;
        self.workspace = Some(dir);
        self.extra_mcp = mcp;
        self.resume = resume.map(Some);
        self.last = false;
        self
    }

    /// The same options, saving nothing.
    pub(crate) fn without_saving(mut self) -> Self {
        self.no_save = true;
        self
    }

    /// These options for resuming the session `header` describes: its backend and model
    /// unless given.
    fn resuming(mut self, header: &crate::sessions::Header) -> Self {
        let flags = &mut self.backend;
        if flags.backend.is_none() && flags.model.is_none() {
            match header.backend.as_str() {
                "embedded" => {}
                spec if spec.starts_with("openai:") => {
                    flags.backend = Some(spec.to_string());
                    flags.model = Some(header.model.clone());
                }
                spec => flags.backend = Some(spec.to_string()),
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
    pub(crate) agent: aintern::Agent,
    llm: Arc<dyn core_models::LlmService>,
    args: SessionArgs,
    /// A small model: greedy, short replies (and the compact tool prompt).
    small: bool,
    workspace: PathBuf,
    /// The saved side: the session's id (the conversation's), history and file.
    saved: crate::sessions::Persisted,
    launcher: Arc<sandbox::Launcher>,
    /// How approvals are answered: `None` asks.
    pub(crate) approve: Option<crate::approve::ApproveMode>,
    permissions: Arc<dyn core_models::PermissionManager>,
    registry: Arc<dyn ToolRegistry>,
    /// The backend as saved with the session.
    backend_name: String,
    /// The MCP servers whose tools are offered.
    servers: Arc<mcp::McpServers>,
}

mod checks;
mod front_end;
mod start;

impl Session {
    /// The model's backend.
    pub(crate) fn llm(&self) -> Arc<dyn core_models::LlmService> {
        Arc::clone(&self.llm)
    }

    /// Stop the MCP servers.
    pub(crate) async fn close(&self) {
        self.servers.stop().await;
    }

    /// The workspace the tools work in.
    pub(crate) fn workspace(&self) -> &std::path::Path {
        &self.workspace
    }

    /// The session's id.
    pub(crate) fn id(&self) -> uuid::Uuid {
        self.saved.id
    }

    /// Go on with another conversation: `saved` resumed (its decisions remembered for the
    /// session restored), or a new one. Notes for the person.
    pub(crate) async fn switch(&mut self, saved: Option<crate::sessions::Saved>) -> Vec<String> {
        let header = crate::sessions::Header {
            id: saved
                .as_ref()
                .map_or_else(uuid::Uuid::new_v4, |s| s.header.id),
            created: chrono::Utc::now(),
            workspace: self.workspace.clone(),
            backend: self.backend_name.clone(),
            model: self.llm.model_name(),
            version: 1,
        };
        let start = crate::sessions::Start {
            saved,
            header,
            save: !self.args.no_save,
        };
        let mut notes = Vec::new();
        let registry = Arc::clone(&self.registry);
        let known = |id: &str| registry.get_tool(id).is_some();
        self.saved =
            crate::sessions::Persisted::start(start, self.permissions.as_ref(), &known, &mut notes)
                .await;
        notes
    }

    /// The model, its backend, window and reply allowance, in words.
    pub(crate) fn model_text(&self) -> String {
        let details = self.llm.model_details();
        let request = self.request(String::new());
        let allowance = request.inference_options.map_or(0, |o| o.max_tokens);
        let allowance = details
            .context_length
            .map_or(allowance, |w| services_ai::reply_allowance(allowance, w));
        format!(
            "{} via {} · context window {} · up to {allowance} tokens a reply{}",
            crate::terminal::shown(&self.llm.model_name(), false),
            crate::terminal::shown(&self.backend_name, false),
            details
                .context_length
                .map_or_else(|| "unknown".to_string(), |n| format!("{n} tokens")),
            if self.small {
                " · small-model settings"
            } else {
                ""
            }
        )
    }

    /// The tools the model may call, with their risk, one a line.
    pub(crate) fn tools_text(&self) -> String {
        let context = ToolAvailabilityContext::for_workspace(&self.workspace);
        let mut tools: Vec<_> = self
            .registry
            .available_tools(Some(&context))
            .iter()
            .map(|t| {
                let d = t.definition();
                format!(
                    "{:<14} {:<8} {}",
                    crate::terminal::shown(&d.id, false),
                    d.default_risk_level.to_string(),
                    crate::terminal::shown(&d.description, false)
                )
            })
            .collect();
        tools.sort();
        tools.join("\n")
    }

    /// The workspace's checkpoint store (the agent records checkpoints when the user's
    /// data folder is known).
    pub(crate) fn checkpoints(&self) -> Result<aintern::tools::checkpoint::Checkpoints, String> {
        match self.agent.checkpoints() {
            Some(store) => store.map_err(|e| e.to_string()),
            None => {
                Err("checkpoints are not recorded (the user's data folder is not known)".into())
            }
        }
    }

    /// These options with another model, for `/model SPEC`: `spec` is a backend
    /// (`llama:…`, `openai:URL`, `script:FILE`) or a model's name (on the same server when
    /// this session's is one). The workspace is kept; nothing is resumed, and the new
    /// start saves nothing: the conversation is handed over with [`Session::adopt`].
    pub(crate) fn args_for_model(&self, spec: &str) -> SessionArgs {
        let mut args = self.args.clone();
        let flags = &mut args.backend;
        if ["llama:", "openai:", "script:"]
            .iter()
            .any(|p| spec.starts_with(p))
        {
            flags.backend = Some(spec.to_string());
            flags.model = None;
        } else {
            flags.backend = self
                .backend_name
                .starts_with("openai:")
                .then(|| self.backend_name.clone());
            flags.model = Some(spec.to_string());
        }
        args.workspace = Some(self.workspace.clone());
        args.resume = None;
        args.last = false;
        args.no_save = true;
        args
    }

    /// Go on with `old`'s conversation (its id, history and session file) and its way of
    /// answering approvals; `old`'s MCP servers are stopped.
    pub(crate) async fn adopt(&mut self, old: Session) {
        self.args.no_save = old.args.no_save;
        self.approve = old.approve;
        old.servers.stop().await;
        self.saved = old.saved;
    }

    /// The conversation so far.
    pub(crate) fn conversation(&self) -> Vec<core_models::ChatMessage> {
        self.saved.history()
    }

    /// Go on with `messages` in place of the conversation (compacted), saved as such with
    /// what the compaction used.
    pub(crate) fn replace_conversation(
        &self,
        messages: Vec<core_models::ChatMessage>,
        usage: Option<&core_models::LlmUsage>,
    ) -> Result<(), String> {
        let usage = usage.map(|u| (u.prompt_tokens, u.generated_tokens, u.cached_prompt_tokens));
        self.saved.ended(messages, usage).map_err(|e| e.to_string())
    }

    /// The person undid requests: the session keeps `note` and tells the model with the
    /// next request.
    pub(crate) fn undone(&self, note: &str) {
        self.saved.undone(note);
    }

    /// A request for `message`, continuing the session's conversation.
    pub(crate) fn request(&self, message: String) -> AgentRequest {
        // What the person undid since the last request is told before the new one.
        let message = match self.saved.take_note() {
            Some(note) => format!("{note}\n\n{message}"),
            None => message,
        };
        let mut request = self.agent.request(message);
        request.conversation_id = self.saved.id;
        request.history = self.saved.history();
        request.max_iterations = self.args.policy.max_iterations;
        request.inference_options = Some(inference_options(
            self.small,
            self.args.temperature,
            self.args.max_tokens,
        ));
        if let Some(choice) = self.args.policy.tool_choice.clone() {
            request.tool_choice = choice;
        }
        request.output_schema.clone_from(&self.args.output_schema);
        request
    }

    /// Run one request to its end, showing its events on `terminal` and taking input
    /// from `input`: JSON commands with `json`; otherwise answers to approval prompts
    /// and, while no prompt is open, messages for the running request (single keys at a
    /// terminal, gathered out of sight until Enter). Ctrl-C cancels the request.
    /// Approvals nobody can answer are denied.
    pub(crate) async fn drive(
        &self,
        request: AgentRequest,
        terminal: &mut Terminal,
        input: &mut Input,
        interrupts: &mut Interrupts,
        json: bool,
    ) -> Result<Driven, String> {
        // The stream of events starts with the session's.
        if let Some(started) = self.saved.announce(request.request_id) {
            terminal.event(&started);
        }
        self.saved
            .asked(&core_models::ChatMessage::user(request.message.clone()));
        let mut events = self
            .agent
            .engine()
            .process_message(request)
            .map_err(|e| e.to_string())?;
        let mut d = Driving {
            usage: None,
            pending: Vec::new(),
            unsent: Vec::new(),
            typing: String::new(),
            state: core_models::AgentState::Initializing,
            ok: true,
            output: None,
        };
        let mut keys = input.keys();
        let mut ticks = tokio::time::interval(Duration::from_millis(100));
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                event = events.next() => {
                    let Some(event) = event else { break };
                    terminal.event(&event);
                    if let AgentEvent::PolicyDecision(p) = &event {
                        self.saved.policy(p);
                    }
                    d.observe(&event);
                    if let AgentEvent::ApprovalRequest(a) = event {
                        match self.approve {
                            Some(mode) => answer_by_mode(&a, mode, self.launcher.settings()),
                            None if !input.can_answer() => no_one_answers(&a),
                            None => {
                                if !json {
                                    terminal.ask(&a, keys.is_some());
                                }
                                d.pending.push(a);
                            }
                        }
                    }
                }
                line = input.next_line() => {
                    let Some(line) = line else {
                        // Stdin ended: nobody is left to answer what is still open.
                        input.ended();
                        d.pending.drain(..).for_each(|a| no_one_answers(&a));
                        continue;
                    };
                    if line.trim().is_empty() {
                        continue;
                    }
                    if json {
                        self.json_command(&line, &d.pending);
                    } else if let Some(a) = d.pending.pop() {
                        self.answer(a, &line, terminal, &mut d.pending);
                    } else {
                        self.typed_line(line, &mut d);
                    }
                }
                key = next_key(&mut keys) => match key {
                    Some(key) => self.key(key, terminal, &mut d),
                    None => keys = None,
                },
                () = interrupts.next() => {
                    terminal.note("cancelling (Ctrl-C)");
                    self.agent.engine().cancel();
                }
                _ = ticks.tick() => terminal.tick(),
            }
        }
        if let Some(keys) = keys {
            keys.finish().await;
        }
        terminal.done();
        // The agent keeps the conversation as the request left it (compacted, if it was).
        if let Err(e) = self
            .saved
            .ended(self.agent.engine().conversation(), d.usage)
        {
            terminal.note(&format!("the session was not saved: {e}"));
        }
        Ok(Driven {
            ok: d.ok,
            unsent: d.unsent,
            typing: d.typing,
            output: d.output,
        })
    }

    /// A line typed (or entered at the keys) while no approval is open: a message for the
    /// running request, or the next request when it comes too late for this one.
    fn typed_line(&self, line: String, d: &mut Driving) {
        if !takes_messages(d.state) {
            // The model is writing its reply: the line is the next request.
            d.unsent.push(line);
        } else if let Err(e) = self.agent.engine().send_user_message(line.clone()) {
            tracing::debug!(error = %e, "kept a line for after the request");
            d.unsent.push(line);
        }
    }

    /// A line typed at an approval prompt: an answer, or the question asked again.
    fn answer(
        &self,
        a: ApprovalRequestEvent,
        line: &str,
        terminal: &mut Terminal,
        pending: &mut Vec<ApprovalRequestEvent>,
    ) {
        match Answer::parse(line) {
            Some(Answer::Diff) => {
                terminal.whole_diff(&a);
                terminal.ask_again(&a, false);
                pending.push(a);
            }
            Some(answer) => {
                if let Some(decision) = settle(&a, answer, terminal) {
                    self.saved.remembered(&a.request, &decision);
                }
            }
            None => {
                terminal.note(&format!(
                    "'{}' is not an answer: type y, n, s or t",
                    crate::terminal::shown(line.trim(), false)
                ));
                terminal.ask_again(&a, false);
                pending.push(a);
            }
        }
    }

    /// A key typed at a terminal while the request runs.
    fn key(&self, key: Key, terminal: &mut Terminal, d: &mut Driving) {
        if let Some(a) = d.pending.pop() {
            match key {
                Key::Char(c) => match Answer::parse(&c.to_string()) {
                    Some(Answer::Diff) => {
                        terminal.whole_diff(&a);
                        terminal.ask_again(&a, true);
                        d.pending.push(a);
                    }
                    Some(answer) => {
                        terminal.answered(answer);
                        if let Some(decision) = settle(&a, answer, terminal) {
                            self.saved.remembered(&a.request, &decision);
                        }
                    }
                    None => {
                        terminal.note("press y (yes), n (no), s (this session), t (this tool, everywhere) or d (whole diff)");
                        terminal.ask_again(&a, true);
                        d.pending.push(a);
                    }
                },
                // Enter after an answer, arrows: nothing to answer with.
                _ => d.pending.push(a),
            }
            return;
        }
        match key {
            Key::Char(c) => d.typing.push(c),
            Key::Backspace => {
                d.typing.pop();
            }
            Key::Enter if !d.typing.trim().is_empty() => {
                let line = std::mem::take(&mut d.typing);
                terminal.note(&format!("› {}", crate::terminal::shown(&line, false)));
                self.typed_line(line, d);
            }
            Key::Enter | Key::EndOfInput | Key::Other => {}
        }
        terminal.typing(&d.typing);
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
                let answered = self
                    .agent
                    .engine()
                    .provide_approval(call_id, decision.clone());
                if answered.is_ok() && remember == RememberScope::Session {
                    if let Some(a) = pending.iter().find(|a| a.request.id == call_id) {
                        self.saved.remembered(&a.request, &decision);
                    }
                }
                answered
            }
            StdinCommand::Deny { call_id, reason } => self
                .agent
                .engine()
                .provide_approval(call_id, ApprovalDecision::deny(reason)),
            StdinCommand::Cancel => {
                self.agent.engine().cancel();
                Ok(())
            }
            StdinCommand::UserMessage { text } => {
                // Refused (no request, or one that has answered): the sender is told.
                if let Err(e) = self.agent.engine().send_user_message(text) {
                    eprintln!("aintern: the user_message was refused: {e}");
                }
                return;
            }
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
    /// Keys typed at the terminal but not yet entered: the start of the next line.
    pub(crate) typing: String,
    /// The answer's value, valid against the output schema (`agent_complete.output`).
    pub(crate) output: Option<serde_json::Value>,
}

/// What [`Session::drive`] keeps track of.
struct Driving {
    usage: Option<(u64, u64, u64)>,
    /// Approvals asked and not answered yet.
    pending: Vec<ApprovalRequestEvent>,
    unsent: Vec<String>,
    typing: String,
    state: core_models::AgentState,
    ok: bool,
    output: Option<serde_json::Value>,
}

impl Driving {
    /// Follow the request's state, failure and usage.
    fn observe(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::StateChanged(s) => {
                if let core_models::MachineTransition::Agent(r) = &s.change {
                    self.state = r.current_state;
                }
            }
            AgentEvent::AgentError(e) if e.is_fatal => self.ok = false,
            AgentEvent::AgentComplete(c) => {
                self.usage = Some((c.prompt_tokens, c.completion_tokens, c.cached_prompt_tokens));
                self.output.clone_from(&c.output);
            }
            _ => {}
        }
    }
}

/// Whether a line typed in `state` goes to the running request: while tools are prepared
/// and run (the model reads it with their results). While the model writes, a typed line
/// is kept as the next request instead: a chat takes turns. (The agent would take it too —
/// it asks the model again after an answer when messages are waiting — and a message it
/// refuses, as the request ends, is kept as the next request here as well.)
fn takes_messages(state: core_models::AgentState) -> bool {
    use core_models::AgentState as A;
    matches!(
        state,
        A::ParsingToolCall | A::WaitingForApproval | A::ExecutingTool | A::ProcessingResult
    )
}

/// The sampling options of a request: those given, else a small model's (greedy, 512
/// tokens a reply) or the defaults.
pub(crate) fn inference_options(
    small: bool,
    temperature: Option<f32>,
    max_tokens: Option<u32>,
) -> core_models::InferenceOptions {
    let defaults = if small {
        services_ai::small_model_inference()
    } else {
        services_ai::standard_inference()
    };
    let (t, m) = (defaults.temperature, defaults.max_tokens);
    defaults
        .with_temperature(temperature.unwrap_or(t).max(0.0))
        .with_max_tokens(max_tokens.unwrap_or(m))
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
