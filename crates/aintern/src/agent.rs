//! [`Agent`] and its builder: the model, the tools, the workspace, the configuration, the
//! approval policy and the sandbox, given in one place.

use crate::approval::ApprovalPolicy;
use crate::compose;
use crate::error::{Error, Result};
use crate::run::{Reply, Run};
use core_models::{
    AgentRequest, AgentService as _, ChatMessage, InferenceOptions, LlmService, PermissionManager,
    SandboxMode, Tool, ToolAvailabilityContext, ToolChoice, ToolRegistry,
};
use services_ai::{AgentConfig, AgentEngine, DefaultPermissionManager, InMemoryToolRegistry};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use uuid::Uuid;

/// Which settings the agent starts from when no [`AgentConfig`] is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Preset {
    /// The preset for the size the model reports (see [`services_ai::defaults_for`]):
    /// the small-model preset under a billion parameters (SmolLM2-135M), the lean one up
    /// to ten billion (Qwen2.5-Coder-1.5B), else the standard settings. What `aintern run`
    /// does.
    #[default]
    Auto,
    /// The standard settings: the full tool prompt, the model deciding on its own,
    /// greedy sampling and up to 4096 tokens a reply
    /// ([`services_ai::standard_inference`]).
    Standard,
    /// The small-model preset ([`AgentConfig::small_model`] and
    /// [`services_ai::small_model_inference`]): the compact tool prompt, the small-model
    /// steering (the model chooses each step among answering and the tools, then writes
    /// it under a grammar), greedy sampling and 512 tokens a reply.
    SmallModel,
}

/// Builds an [`Agent`]. Only the model and the workspace are required; see
/// [`Agent::builder`].
#[must_use]
pub struct AgentBuilder {
    model: Option<Arc<dyn LlmService>>,
    workspace: Option<PathBuf>,
    config: Option<AgentConfig>,
    preset: Preset,
    inference: Option<InferenceOptions>,
    approval: ApprovalPolicy,
    sandbox: Option<SandboxMode>,
    builtin_tools: bool,
    tools: Vec<Arc<dyn Tool>>,
    tools_from: Vec<Arc<dyn ToolRegistry>>,
    permissions: Option<Arc<dyn PermissionManager>>,
    #[cfg(feature = "tools")]
    launcher: Option<Arc<sandbox::Launcher>>,
    /// Read the project's instructions and skills, with the user's own from this folder.
    #[cfg(feature = "tools")]
    project: Option<Option<PathBuf>>,
    #[cfg(feature = "tools")]
    editor: Option<Arc<dyn tools::EditorFiles>>,
    /// Where the workspace's checkpoints are kept (AIntern's data folder).
    #[cfg(feature = "tools")]
    checkpoints: Option<(PathBuf, tools::checkpoint::Limits)>,
    /// Offer `update_plan` among the built-in tools.
    plan_tool: bool,
    /// Rules an application registered.
    #[cfg(feature = "tools")]
    rules: policy::RuleSet,
    /// Read the rule files: the user's from this folder, and the workspace's.
    #[cfg(feature = "tools")]
    rule_files: Option<Option<PathBuf>>,
    /// Rules of the application's own kind (instead of the rule sets).
    call_rules: Option<Arc<dyn core_models::CallRules>>,
    /// Hooks an application registered, before those of the configuration.
    hooks: Vec<Arc<dyn core_models::Hook>>,
}

impl std::fmt::Debug for AgentBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentBuilder")
            .field("workspace", &self.workspace)
            .field("preset", &self.preset)
            .field("approval", &self.approval)
            .field("sandbox", &self.sandbox)
            .field("builtin_tools", &self.builtin_tools)
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

impl AgentBuilder {
    fn new() -> Self {
        AgentBuilder {
            model: None,
            workspace: None,
            config: None,
            preset: Preset::Auto,
            inference: None,
            approval: ApprovalPolicy::Ask,
            sandbox: None,
            builtin_tools: cfg!(feature = "tools"),
            tools: Vec::new(),
            tools_from: Vec::new(),
            permissions: None,
            #[cfg(feature = "tools")]
            launcher: None,
            #[cfg(feature = "tools")]
            project: None,
            #[cfg(feature = "tools")]
            editor: None,
            #[cfg(feature = "tools")]
            checkpoints: None,
            plan_tool: false,
            #[cfg(feature = "tools")]
            rules: policy::RuleSet::new(),
            #[cfg(feature = "tools")]
            rule_files: None,
            call_rules: None,
            hooks: Vec::new(),
        }
    }

    /// Decide calls with these rules too (feature `tools`; see [`policy`]): allow, ask or
    /// forbid by command prefix or by tool and arguments. The strictest of the rules, the
    /// hooks and the built-in judge's floor wins; a forbidding rule refuses a call whatever
    /// the approval policy says.
    #[cfg(feature = "tools")]
    pub fn rules(mut self, rules: policy::RuleSet) -> Self {
        self.rules.extend(rules);
        self
    }

    /// Read the rule files when the agent is built (feature `tools`): every `*.toml` of
    /// `user_dir` (the user's own, e.g. AIntern's `rules` folder), then the workspace's
    /// `.aintern/rules/*.toml`, which may only ask or forbid. A rule whose example fails
    /// makes [`AgentBuilder::build`] fail with [`Error::Rules`], naming the file and line.
    #[cfg(feature = "tools")]
    pub fn rule_files(mut self, user_dir: Option<PathBuf>) -> Self {
        self.rule_files = Some(user_dir);
        self
    }

    /// Decide calls with rules of your own kind instead of rule sets
    /// ([`core_models::CallRules`]).
    pub fn call_rules(mut self, rules: Arc<dyn core_models::CallRules>) -> Self {
        self.call_rules = Some(rules);
        self
    }

    /// Tell this in-process hook of its moment ([`core_models::Hook`]): before each call
    /// (allow, deny, ask), after it (context for the model), when a request is submitted
    /// and when it ends. Hooks run in the order registered, before the program hooks of
    /// the configuration's `[hooks]`.
    pub fn hook(mut self, hook: Arc<dyn core_models::Hook>) -> Self {
        self.hooks.push(hook);
        self
    }

    /// Offer the model `update_plan` among the built-in tools (feature `tools`; off by
    /// default): it keeps a list of the task's steps, and each change reaches the events
    /// as `plan_updated`.
    pub fn plan_tool(mut self, offered: bool) -> Self {
        self.plan_tool = offered;
        self
    }

    /// Record the workspace before each request's first change, and after it, in a
    /// checkpoint store under `data_dir` (feature `tools`; see [`tools::checkpoint`]):
    /// [`Agent::checkpoints`] then lists and restores them.
    #[cfg(feature = "tools")]
    pub fn checkpoints(
        mut self,
        data_dir: impl Into<PathBuf>,
        limits: tools::checkpoint::Limits,
    ) -> Self {
        self.checkpoints = Some((data_dir.into(), limits));
        self
    }

    /// Read and write files through an editor (feature `tools`): the built-in file tools
    /// check each path as always (beneath the workspace, no secret location), then ask
    /// `editor` for the text and give it the changes, so unsaved buffers are seen and
    /// edits land in the editor (an ACP client's `fs/read_text_file` and
    /// `fs/write_text_file`).
    #[cfg(feature = "tools")]
    pub fn editor_files(mut self, editor: Arc<dyn tools::EditorFiles>) -> Self {
        self.editor = Some(editor);
        self
    }

    /// Read the project's instructions and skills (feature `tools`; see
    /// [`tools::ProjectContext`]): the AGENTS.md files from the root of the workspace's
    /// git repository down to the workspace, and the skills in its `.agents/skills/`,
    /// each after the user's own in `user_dir` (aintern's configuration folder) when
    /// given. The instructions and the skills' names and descriptions join the system
    /// prompt, and the built-in tools gain `load_skill` when there are skills. They are
    /// text for the model: they change no setting.
    #[cfg(feature = "tools")]
    pub fn project_context(mut self, user_dir: Option<PathBuf>) -> Self {
        self.project = Some(user_dir);
        self
    }

    /// The language model: [`crate::ScriptedLlm`], a GGUF model
    /// ([`crate::load_gguf`], feature `llama`), an OpenAI-compatible server
    /// ([`crate::openai`], feature `openai`), or any [`LlmService`] of your own. An
    /// `Arc` of a model is a model too: keep a clone to look at it later.
    pub fn model(self, model: impl LlmService + 'static) -> Self {
        self.shared_model(Arc::new(model))
    }

    /// The language model, already shared.
    pub fn shared_model(mut self, model: Arc<dyn LlmService>) -> Self {
        self.model = Some(model);
        self
    }

    /// The folder the tools work in (required): file tools never reach outside it, and
    /// commands run in it under the sandbox.
    pub fn workspace(mut self, dir: impl Into<PathBuf>) -> Self {
        self.workspace = Some(dir.into());
        self
    }

    /// The whole configuration (iteration limits, timeouts, prompts, budget, sandbox
    /// settings, formatters…), e.g. from [`services_ai::ConfigLoader`]. Given, it is used
    /// as it is and the [`Preset`] only chooses the sampling.
    pub fn config(mut self, config: AgentConfig) -> Self {
        self.config = Some(config);
        self
    }

    /// The settings to start from when no configuration is given (default
    /// [`Preset::Auto`]).
    pub fn preset(mut self, preset: Preset) -> Self {
        self.preset = preset;
        self
    }

    /// The sampling options of every request (default: the preset's).
    pub fn inference(mut self, options: InferenceOptions) -> Self {
        self.inference = Some(options);
        self
    }

    /// How calls that need approval are answered (default [`ApprovalPolicy::Ask`]: the
    /// application answers each [`core_models::ApprovalRequestEvent`]).
    pub fn approval(mut self, policy: ApprovalPolicy) -> Self {
        self.approval = policy;
        self
    }

    /// The sandbox commands run under (default: the configuration's, `workspace-write`:
    /// commands may write only in the workspace, with no network).
    pub fn sandbox(mut self, mode: SandboxMode) -> Self {
        self.sandbox = Some(mode);
        self
    }

    /// Add a tool of your own. Its calls are validated, rated, approved and timed out like
    /// the built-in ones.
    pub fn tool(mut self, tool: impl Tool + 'static) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Add a tool that is already shared.
    pub fn shared_tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// Offer the built-in tools (read, list, search, write and edit files, run commands,
    /// git status and diff) or not (default: offered with the `tools` feature).
    pub fn builtin_tools(mut self, offered: bool) -> Self {
        self.builtin_tools = offered && cfg!(feature = "tools");
        self
    }

    /// Where "always" approvals are kept (default: in memory, for this agent's life).
    pub fn permissions(mut self, permissions: Arc<dyn PermissionManager>) -> Self {
        self.permissions = Some(permissions);
        self
    }

    /// Also offer the tools of another registry — an MCP client's servers, say — after
    /// the agent's own (the built-ins and [`tool`](Self::tool)), which win a shared id.
    /// The registry is asked each time the tools are listed, so tools that come and go
    /// are followed.
    pub fn tools_from(mut self, registry: Arc<dyn ToolRegistry>) -> Self {
        self.tools_from.push(registry);
        self
    }

    /// The launcher the built-in tools, the git inspector and the formatters start their
    /// commands through (feature `tools`; default: one made from the configuration's
    /// `[sandbox]` section). Give one to share it with what else starts commands (an MCP
    /// client's servers) or to set what the configuration does not (the home folder).
    #[cfg(feature = "tools")]
    pub fn launcher(mut self, launcher: Arc<sandbox::Launcher>) -> Self {
        self.launcher = Some(launcher);
        self
    }

    /// Build the agent.
    ///
    /// # Errors
    /// [`Error::NoModel`] or [`Error::NoWorkspace`] when one was not given;
    /// [`Error::Workspace`] when the workspace is not an existing folder;
    /// [`Error::Config`] when the configuration breaks a rule;
    /// [`Error::DuplicateTool`] when two tools share an id.
    pub fn build(self) -> Result<Agent> {
        let model = self.model.ok_or(Error::NoModel)?;
        let workspace = self.workspace.ok_or(Error::NoWorkspace)?;
        let workspace = open_workspace(&workspace)?;
        let small = match self.preset {
            Preset::Auto => model.model_details().is_small(),
            Preset::Standard => false,
            Preset::SmallModel => true,
        };
        let mut config = match self.config {
            Some(config) => config,
            None if small => AgentConfig::small_model(),
            None if self.preset == Preset::Auto => AgentConfig::for_model(&model.model_details()),
            None => AgentConfig::default(),
        };
        if let Some(mode) = self.sandbox {
            config.sandbox.mode = mode;
        }
        // The checkpoints hold copies of this and other workspaces: no command reads them.
        #[cfg(feature = "tools")]
        if let Some((dir, _)) = &self.checkpoints {
            let store = dir.join("checkpoints");
            if store.is_absolute() {
                config.sandbox.deny_read.push(store.display().to_string());
            }
        }
        config.validate()?;
        let inference = self.inference.unwrap_or_else(|| {
            if small {
                services_ai::small_model_inference()
            } else {
                services_ai::standard_inference()
            }
        });
        let own = Arc::new(InMemoryToolRegistry::new());
        #[cfg(feature = "tools")]
        let project = self
            .project
            .map(|user_dir| tools::ProjectContext::discover(&workspace, user_dir.as_deref()));
        #[cfg(feature = "tools")]
        let mut engine = compose::Wiring::new(&config, self.launcher, self.editor)
            .with_checkpoints(self.checkpoints.clone());
        #[cfg(not(feature = "tools"))]
        let mut engine = compose::Wiring::new(&config);
        if self.builtin_tools {
            for tool in engine.builtin_tools() {
                own.register(tool);
            }
            #[cfg(feature = "tools")]
            for tool in compose::project_tools(project.as_ref()) {
                own.register(tool);
            }
            #[cfg(feature = "tools")]
            if self.plan_tool {
                own.register(Arc::new(tools::UpdatePlan::new()));
            }
        }
        for tool in self.tools {
            let id = tool.definition().id.clone();
            if own.register(tool).is_some() {
                return Err(Error::DuplicateTool(id));
            }
        }
        let tools: Arc<dyn ToolRegistry> = if self.tools_from.is_empty() {
            own
        } else {
            Arc::new(compose::Layered::new(own, self.tools_from))
        };
        let permissions = self
            .permissions
            .unwrap_or_else(|| Arc::new(DefaultPermissionManager::in_memory()));
        let mut hooks = self.hooks;
        #[cfg(feature = "tools")]
        let rule_notes;
        #[cfg(feature = "tools")]
        let call_rules = {
            let mut rules = self.rules;
            if let Some(user_dir) = &self.rule_files {
                rules.extend(policy::load(user_dir.as_deref(), Some(&workspace))?);
            }
            rule_notes = rules.warnings().to_vec();
            hooks.extend(engine.program_hooks(&config.hooks, &workspace)?);
            match self.call_rules {
                Some(custom) => Some(custom),
                None if rules.is_empty() => None,
                None => Some(Arc::new(rules) as Arc<dyn core_models::CallRules>),
            }
        };
        #[cfg(not(feature = "tools"))]
        let call_rules = self.call_rules;
        let engine = engine.engine(
            Arc::clone(&model),
            Arc::clone(&tools),
            permissions,
            config.clone(),
            compose::Policy {
                rules: call_rules,
                hooks,
            },
        );
        #[cfg(feature = "tools")]
        let system_prompt = project.as_ref().and_then(tools::ProjectContext::prompt);
        #[cfg(not(feature = "tools"))]
        let system_prompt = None;
        Ok(Agent {
            engine,
            tools,
            model,
            workspace,
            system_prompt,
            #[cfg(feature = "tools")]
            project,
            inference,
            approval: self.approval,
            sandbox: (config.sandbox.mode, config.sandbox.network),
            conversation: Mutex::new(Conversation::fresh()),
            #[cfg(feature = "tools")]
            checkpoints: self.checkpoints,
            #[cfg(feature = "tools")]
            rule_notes,
        })
    }
}

/// The workspace as a canonical, existing folder.
fn open_workspace(dir: &Path) -> Result<PathBuf> {
    let refuse = |reason: String| Error::Workspace {
        path: dir.to_path_buf(),
        reason,
    };
    let canonical = std::fs::canonicalize(dir).map_err(|e| refuse(e.to_string()))?;
    if !canonical.is_dir() {
        return Err(refuse("it is not a folder".into()));
    }
    Ok(canonical)
}

/// The conversation the agent continues.
struct Conversation {
    id: Uuid,
    /// Forget what the engine remembers: the next request starts a new conversation.
    fresh: bool,
}

impl Conversation {
    fn fresh() -> Self {
        Conversation {
            id: Uuid::new_v4(),
            fresh: true,
        }
    }
}

/// An agent over one model and one workspace: give it requests with [`Agent::run`] (a
/// stream of events) or [`Agent::ask`] (the answer). Each request continues the
/// conversation of the ones before it until [`Agent::reset`].
///
/// Needs a tokio runtime: requests run as tasks on it.
pub struct Agent {
    engine: AgentEngine,
    tools: Arc<dyn ToolRegistry>,
    model: Arc<dyn LlmService>,
    workspace: PathBuf,
    /// What the project adds to the system prompt (its instructions and skills).
    system_prompt: Option<String>,
    #[cfg(feature = "tools")]
    project: Option<tools::ProjectContext>,
    inference: InferenceOptions,
    approval: ApprovalPolicy,
    sandbox: (SandboxMode, bool),
    conversation: Mutex<Conversation>,
    #[cfg(feature = "tools")]
    checkpoints: Option<(PathBuf, tools::checkpoint::Limits)>,
    /// What the rule files held that is not in force, in words.
    #[cfg(feature = "tools")]
    rule_notes: Vec<String>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("model", &self.model.model_name())
            .field("workspace", &self.workspace)
            .field("approval", &self.approval)
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// Start building an agent:
    ///
    /// ```
    /// # async fn demo(dir: &std::path::Path) -> Result<(), aintern::Error> {
    /// use aintern::prelude::*;
    ///
    /// let agent = Agent::builder()
    ///     .model(ScriptedLlm::from_texts(["Hello!"]))
    ///     .workspace(dir)
    ///     .approval(ApprovalPolicy::ApproveSafe)
    ///     .build()?;
    /// assert_eq!(agent.ask("Say hello").await?.text(), "Hello!");
    /// # Ok(()) }
    /// # aintern::tokio::runtime::Runtime::new().unwrap().block_on(demo(&std::env::temp_dir())).unwrap();
    /// ```
    pub fn builder() -> AgentBuilder {
        AgentBuilder::new()
    }

    /// The workspace's checkpoint store, when the agent records checkpoints (see
    /// [`AgentBuilder::checkpoints`]): list them, plan a restore, apply it.
    ///
    /// # Errors
    /// [`Error::Checkpoint`] when the store cannot be opened.
    #[cfg(feature = "tools")]
    pub fn checkpoints(&self) -> Option<Result<tools::checkpoint::Checkpoints>> {
        let (dir, limits) = self.checkpoints.as_ref()?;
        let open = tools::Workspace::new(&self.workspace)
            .map_err(|e| Error::Checkpoint(e.to_string()))
            .and_then(|ws| {
                tools::checkpoint::Checkpoints::open(dir, &ws, limits.clone())
                    .map_err(|e| Error::Checkpoint(e.to_string()))
            });
        Some(open)
    }

    /// Start a request: its events arrive on the returned [`Run`], the last being
    /// `agent_complete` (or a fatal `agent_error`). Approval requests are answered by the
    /// agent's [`ApprovalPolicy`] before you see them, except under
    /// [`ApprovalPolicy::Ask`]: then answer each one
    /// ([`core_models::ApprovalRequestEvent::approve`] or `deny`) — the call waits.
    ///
    /// # Errors
    /// [`core_models::Error::Busy`] (as [`Error::Agent`]) while another request runs;
    /// [`core_models::Error::NoRuntime`] outside a tokio runtime.
    pub fn run(&self, message: impl Into<String>) -> Result<Run> {
        self.run_with(message, ToolChoice::Auto)
    }

    /// [`Agent::run`] with a tool choice: `Required` makes the first reply a call, `None`
    /// offers no tool, `Tool(id)` forces that tool.
    ///
    /// # Errors
    /// As [`Agent::run`].
    pub fn run_with(&self, message: impl Into<String>, tool_choice: ToolChoice) -> Result<Run> {
        let mut request = self.request(message);
        request.tool_choice = tool_choice;
        self.start(request)
    }

    /// Start `request` (made by [`Agent::request`]) in the agent's conversation.
    pub(crate) fn start(&self, mut request: AgentRequest) -> Result<Run> {
        let mut conversation = lock(&self.conversation);
        request.conversation_id = conversation.id;
        if !conversation.fresh {
            request.history = self.engine.conversation();
        }
        let events = self.engine.process_message(request)?;
        // Only a request that started continues the conversation: after a refused one
        // (another request running), a reset still holds.
        conversation.fresh = false;
        drop(conversation);
        Ok(Run::new(
            events,
            self.engine.clone(),
            self.approval,
            self.sandbox,
        ))
    }

    /// Run a request to its end and return the answer. Approval requests are answered by
    /// the policy; under [`ApprovalPolicy::Ask`] nobody is there to answer, so they are
    /// denied (use [`Agent::run`] to answer them yourself).
    ///
    /// # Errors
    /// As [`Agent::run`]; [`Error::Failed`] when the request ends without an answer (the
    /// model failed, the request timed out).
    pub async fn ask(&self, message: impl Into<String>) -> Result<Reply> {
        self.run(message)?.reply().await
    }

    /// A request for `message` as [`Agent::run`] makes it before the conversation is
    /// attached: the workspace as its tools' context, the project's instructions and
    /// skills ([`AgentBuilder::project_context`]) as its system prompt, the agent's
    /// inference options. For a front-end that keeps the conversation itself (the command
    /// line's saved sessions) and gives the request to [`Agent::engine`].
    pub fn request(&self, message: impl Into<String>) -> AgentRequest {
        let mut request = AgentRequest::new(message)
            .with_tool_context(ToolAvailabilityContext::for_workspace(&self.workspace));
        request.system_prompt = self.system_prompt.clone();
        request.inference_options = Some(self.inference.clone());
        request
    }

    /// The project's instructions and skills, when the agent was built to read them
    /// ([`AgentBuilder::project_context`]; feature `tools`).
    #[cfg(feature = "tools")]
    pub fn project(&self) -> Option<&tools::ProjectContext> {
        self.project.as_ref()
    }

    /// What the rule files held that is not in force (a workspace's allowing rules), in
    /// words, for the person to be told (feature `tools`).
    #[cfg(feature = "tools")]
    pub fn rule_notes(&self) -> &[String] {
        &self.rule_notes
    }

    /// Cancel the running request, if any: its [`Run`] ends with `agent_complete`
    /// (reason `cancelled`).
    pub fn cancel(&self) {
        self.engine.cancel();
    }

    /// Send a message into the running request. `Ok` means the model reads it: in this
    /// request (with the next tool results, or, when the model answers without calling a
    /// tool, it is asked again after its answer), or — when the request ends first
    /// (cancelled, failed, a limit) — in the next one: the run reports it in a
    /// `messages_carried` event ([`core_models::MessagesCarriedEvent`]) and it stays in
    /// [`Agent::conversation`], which the next request continues.
    ///
    /// # Errors
    /// [`core_models::Error::NotProcessing`] when no request is running, and
    /// [`core_models::Error::RequestEnding`] once the running request has taken its final
    /// answer (both as [`Error::Agent`]): the message was not delivered.
    pub fn send_message(&self, text: impl Into<String>) -> Result<()> {
        Ok(self.engine.send_user_message(text.into())?)
    }

    /// Forget the conversation: the next request starts a new one.
    pub fn reset(&self) {
        *lock(&self.conversation) = Conversation::fresh();
    }

    /// The conversation so far (history, requests, replies and tool results), as the
    /// last request left it.
    pub fn conversation(&self) -> Vec<ChatMessage> {
        if lock(&self.conversation).fresh {
            return Vec::new();
        }
        self.engine.conversation()
    }

    /// The workspace folder (canonical).
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The model.
    pub fn model(&self) -> &Arc<dyn LlmService> {
        &self.model
    }

    /// The tools the agent offers: its own, then those of [`AgentBuilder::tools_from`].
    pub fn tools(&self) -> &Arc<dyn ToolRegistry> {
        &self.tools
    }

    /// The configuration in use.
    pub fn config(&self) -> &AgentConfig {
        self.engine.config()
    }

    /// The engine underneath, for what the facade does not wrap (state changes, the
    /// event emitter, the first prompt a request would make).
    pub fn engine(&self) -> &AgentEngine {
        &self.engine
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
