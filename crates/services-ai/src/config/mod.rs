//! Agent configuration (seed 001 part b's `SemanticKernelConfiguration`, plus seed 004's
//! budget), loaded in layers: defaults → TOML file(s) → `AINTERN_*` environment variables
//! → explicit overrides.
//!
//! Keys are the snake_case field names. Nested budget keys use `__` in the environment:
//! `AINTERN_MAX_AGENT_ITERATIONS=5`, `AINTERN_BUDGET__MAX_TOTAL_TOKENS=20000`.

mod preset;

pub use core_models::{
    valid_server_name, BackendConfig, BackendKind, McpServerConfig, ToolMode, ValidationError,
};
pub use preset::{
    defaults_for, small_model_inference, standard_inference, LEAN_MODEL_DEFAULTS,
    LEAN_MODEL_PARAMETERS, SMALL_MODEL_DEFAULTS, SMALL_MODEL_MAX_TOKENS,
};

use crate::error::{Error, Result};
use core_models::{SandboxFallback, SandboxMode};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::Duration;

/// The default tool-use system prompt: what the agent is and how it works, given to the
/// model whenever tools are offered (the seed's own text was for a chat assistant that may
/// use tools; this one is for an agent working in a folder).
pub(crate) const DEFAULT_TOOL_USE_SYSTEM_PROMPT: &str = "\
You are AIntern, an agent that works in the user's workspace (a folder on their machine) \
through the tools you are given. Paths are relative to the workspace.

- When a request needs a tool, call it; never describe a call instead of making it, and \
never make up what a tool would return.
- Read a file before you answer a question about it or change it.
- A request that needs no tool (a question, advice, a poem) is answered directly, without \
calling any tool.
- Once you have what you need, answer in plain text: say briefly what you found or what \
you changed.";

/// The seed's default tool-definition format (`{name}`, `{description}`, `{parameters}`).
pub(crate) const DEFAULT_TOOL_DEFINITION_FORMAT: &str = "\
## {name}
{description}

Parameters:
```json
{parameters}
```";

/// The seed's default instructions for writing a tool call.
pub(crate) const DEFAULT_TOOL_CALL_FORMAT: &str = "\
To use a tool, respond with a JSON block in this format:
```tool_call
{
  \"tool\": \"tool_id\",
  \"parameters\": { ... }
}
```

You may include text before or after the tool call to explain your reasoning.
Wait for the tool result before continuing with your response.";

/// How the tools are presented in the system prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolPromptStyle {
    /// The seed's prompt: `tool_use_system_prompt`, each tool through
    /// `tool_definition_format` (pretty-printed JSON schema), then `tool_call_format`.
    #[default]
    Full,
    /// One line per tool (its id, the first sentence of its description and its required
    /// parameters) and a one-line call format. Small models (around 100M parameters)
    /// lose the user's words in the full prompt's schemas and placeholders and answer
    /// with invented arguments; this one they follow. `tool_use_system_prompt`,
    /// `tool_definition_format` and `tool_call_format` are not used.
    Compact,
    /// The full prompt, each tool's schema without its detail parameters (a line range, a
    /// depth, a result limit: [`core_models::ToolDefinition::detail_parameters`]), which
    /// models of a billion or two parameters fill in with values they make up; the
    /// parameters that choose what a call acts on (a folder to list, a path to search)
    /// stay.
    Lean,
}

/// How the loop gets each reply from the model (the agent's steering).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SteeringMode {
    /// `small-model` for a model the backend reports as under a billion parameters,
    /// else `free`.
    #[default]
    Auto,
    /// The model writes what it wants: an answer, or calls in its own call language (held
    /// to the call syntax by a lazy grammar where the backend has one).
    Free,
    /// For small models, which do not call tools of their own accord: before each reply
    /// the model chooses the next step — answering, or one of the offered tools — under
    /// a grammar that admits exactly those options (the choice is the model's, by its
    /// own likelihoods), then writes the chosen tool's call under its argument grammar,
    /// or its answer in plain text (after results, to one plain question that gives it
    /// the results).
    SmallModel,
}

impl std::str::FromStr for SteeringMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "auto" => Ok(SteeringMode::Auto),
            "free" => Ok(SteeringMode::Free),
            "small-model" | "small_model" => Ok(SteeringMode::SmallModel),
            other => Err(format!(
                "unknown steering '{other}' (expected auto, free or small-model)"
            )),
        }
    }
}

impl std::fmt::Display for SteeringMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SteeringMode::Auto => "auto",
            SteeringMode::Free => "free",
            SteeringMode::SmallModel => "small-model",
        })
    }
}

/// Whether replacing an existing file waits until the conversation has seen it
/// ([`AgentConfig::read_before_change`]). The refusal runs nothing and asks no one; it tells
/// the model to read the file first, and the model decides what to do.
///
/// Off by default: with the default model it was measured to cost more tasks than it saved
/// (the model, told to read first, more often gave up than read; see the manual's
/// evaluation chapter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReadBeforeChange {
    /// Replacements are never refused for this.
    #[default]
    Never,
    /// Every replacement of an existing file the conversation has not seen is refused.
    Always,
}

/// Limits on what one request may spend (seed 004's budget).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BudgetConfig {
    /// Most tokens (prompt + completion) a request may use.
    pub max_total_tokens: Option<u64>,
    /// Most wall-clock time a request may take, in milliseconds.
    pub max_wall_time_ms: Option<u64>,
    /// Most a request may cost, in the currency of the prices below.
    pub max_cost: Option<f64>,
    /// Price of 1000 prompt tokens.
    pub prompt_cost_per_1k_tokens: f64,
    /// Price of 1000 completion tokens.
    pub completion_cost_per_1k_tokens: f64,
}

impl Default for BudgetConfig {
    fn default() -> Self {
        BudgetConfig {
            max_total_tokens: None,
            max_wall_time_ms: None,
            max_cost: None,
            prompt_cost_per_1k_tokens: 0.0,
            completion_cost_per_1k_tokens: 0.0,
        }
    }
}

impl BudgetConfig {
    /// The cost of `prompt_tokens` and `completion_tokens` at the configured prices.
    pub fn cost(&self, prompt_tokens: u64, completion_tokens: u64) -> f64 {
        (prompt_tokens as f64 * self.prompt_cost_per_1k_tokens
            + completion_tokens as f64 * self.completion_cost_per_1k_tokens)
            / 1000.0
    }

    /// The wall-time limit.
    pub fn max_wall_time(&self) -> Option<Duration> {
        self.max_wall_time_ms.map(Duration::from_millis)
    }
}

/// Everything that shapes the agent's behaviour.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentConfig {
    /// Whether tools are used at all; when off, requests are plain chat.
    pub enabled: bool,
    /// Most loop iterations per request (1–100); a request may lower or raise it.
    pub max_agent_iterations: u32,
    /// Most tool calls running at once (1–10).
    pub max_parallel_tool_calls: u32,
    /// Time one tool call may take, in milliseconds (at least 5000).
    pub tool_execution_timeout_ms: u64,
    /// Time a whole request may take, in milliseconds (at least the tool timeout).
    pub agent_request_timeout_ms: u64,
    /// Pause between iterations, in milliseconds.
    pub iteration_delay_ms: u64,
    /// Time to wait for an approval before treating silence as denial, in milliseconds.
    pub approval_timeout_ms: u64,
    /// Whether tool results go into the conversation history.
    pub include_tool_results_in_history: bool,
    /// Most tokens of one tool result kept in the history (at least 100).
    pub max_tool_result_tokens: u32,
    /// Retry a failed tool call once.
    pub auto_retry_failed_tools: bool,
    /// Added to the system prompt when tools are offered; must not be empty.
    pub tool_use_system_prompt: String,
    /// How tools are presented to the model: the seed's full prompt, or a compact one
    /// for small models.
    pub tool_prompt_style: ToolPromptStyle,
    /// How each tool is described (`{name}`, `{description}`, `{parameters}`).
    pub tool_definition_format: String,
    /// How the model is told to write a tool call.
    pub tool_call_format: String,
    /// Stream text as it is generated.
    pub enable_streaming: bool,
    /// Tokens to gather before emitting a text event.
    pub streaming_buffer_size: u32,
    /// Longest wait for the model's next token once its reply has begun (at least one
    /// second): a stream silent that long ends the generation with an error. The wait for
    /// the first token is bounded by the request timeout alone (a long prompt may take
    /// minutes to read on a CPU).
    pub stream_idle_timeout_ms: u64,
    /// A reply that ends in one unit of text (up to 256 characters) repeated at least
    /// four times over this many characters has looped: its generation stops, the repeats
    /// are cut and a `repetition_detected` event is sent. A reply that writes one call (the
    /// same tool, the same arguments) a third time has looped too: its generation stops and
    /// only the first copy of each call is kept. 0 turns both checks off.
    pub repetition_min_chars: u32,
    /// How each reply is asked for: `auto` (by the model's size), `free` or
    /// `small-model` (see [`SteeringMode`]).
    pub steering: SteeringMode,
    /// Whether a call that would replace an existing file holding something (a whole-file
    /// write) is refused until the conversation has seen that file (read it, or wrote
    /// it): `auto` for models of a billion parameters or more, which otherwise replace
    /// whole files they never read with the one line they meant to change (see
    /// [`ReadBeforeChange`]).
    pub read_before_change: ReadBeforeChange,
    /// A sentence added at the end of every tool result the model is shown (empty: none),
    /// e.g. "Using this result, answer my original request in plain text."; `{request}`
    /// stands for the request. Small models otherwise echo their call instead of
    /// answering from its result.
    pub tool_result_instruction: String,
    /// When the workspace holds at most this many files and folders, the arguments of
    /// tools that name an existing one (read a file, list a folder, edit a file) are held
    /// by the call grammar to the ones that exist (0: never). Small models otherwise
    /// misspell or invent names.
    pub path_choices_limit: u32,
    /// Spending limits.
    pub budget: BudgetConfig,
    /// Formatters run on the files tools write and new commits touch, by name (seed 004's
    /// autoformatters). The application turns each into a [`core_models::Formatter`].
    pub formatters: BTreeMap<String, FormatterConfig>,
    /// The sandbox of commands (`run_command`, formatters, git).
    pub sandbox: SandboxConfig,
    /// Which model answers and how to reach it (read by the application).
    pub backend: BackendConfig,
    /// Tool servers speaking the Model Context Protocol, by name (started by the
    /// application; their tools are offered as `NAME__tool`).
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    /// Programs told of each call and of each request's start and end (`[hooks]`, read by
    /// the application: the `policy` crate runs them). Only the user's own configuration
    /// may set them.
    pub hooks: core_models::HooksConfig,
}

/// How commands the tools start are sandboxed (see the `sandbox` crate).
///
/// Only the user's own configuration (their `aintern.toml`, `AINTERN_SANDBOX__*`, flags)
/// should set these: an application reading a workspace's configuration file must not let
/// it loosen the sandbox (the `aintern` command ignores the section there).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    /// `workspace-write` (default), `read-only` or `full-access`.
    pub mode: SandboxMode,
    /// Whether commands may use the network.
    pub network: bool,
    /// Extra folders commands may write in `workspace-write` (caches): absolute, or
    /// starting with `~/`.
    pub writable_paths: Vec<String>,
    /// Extra paths commands must not read, besides the default secret locations:
    /// absolute, or starting with `~/`.
    pub deny_read: Vec<String>,
    /// Environment variables passed to commands although they look like secrets.
    pub pass_env: Vec<String>,
    /// What to do when the kernel cannot sandbox: `ask` (default: every command is put to
    /// a person), `deny` (commands are refused) or `unsandboxed` (they run as rated).
    pub fallback: SandboxFallback,
    /// Most processes the user may have for a sandboxed command to start another (the
    /// kernel counts all of the user's processes); 0: no bound. Default 4096.
    pub max_processes: u64,
    /// The largest file a sandboxed command may write, in MiB; 0: no bound. Default 2048.
    pub max_file_size_mb: u64,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            mode: SandboxMode::WorkspaceWrite,
            network: false,
            writable_paths: Vec::new(),
            deny_read: Vec::new(),
            pass_env: Vec::new(),
            fallback: SandboxFallback::Ask,
            max_processes: 4096,
            max_file_size_mb: 2048,
        }
    }
}

/// One formatter: which files, and the command that formats them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FormatterConfig {
    /// File extensions it formats, without the dot (`["rs"]`).
    pub extensions: Vec<String>,
    /// The program and its arguments; the workspace-relative files are appended
    /// (`["rustfmt", "--edition", "2021"]`).
    pub command: Vec<String>,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            enabled: true,
            max_agent_iterations: 10,
            max_parallel_tool_calls: 3,
            tool_execution_timeout_ms: 120_000,
            agent_request_timeout_ms: 600_000,
            iteration_delay_ms: 100,
            approval_timeout_ms: 300_000,
            stream_idle_timeout_ms: 120_000,
            repetition_min_chars: 400,
            steering: SteeringMode::Auto,
            read_before_change: ReadBeforeChange::Never,
            tool_result_instruction: String::new(),
            path_choices_limit: 0,
            include_tool_results_in_history: true,
            max_tool_result_tokens: 4096,
            auto_retry_failed_tools: false,
            tool_use_system_prompt: DEFAULT_TOOL_USE_SYSTEM_PROMPT.to_string(),
            tool_prompt_style: ToolPromptStyle::Full,
            tool_definition_format: DEFAULT_TOOL_DEFINITION_FORMAT.to_string(),
            tool_call_format: DEFAULT_TOOL_CALL_FORMAT.to_string(),
            enable_streaming: true,
            streaming_buffer_size: 1,
            budget: BudgetConfig::default(),
            formatters: BTreeMap::new(),
            sandbox: SandboxConfig::default(),
            backend: BackendConfig::default(),
            mcp_servers: BTreeMap::new(),
            hooks: core_models::HooksConfig::default(),
        }
    }
}

impl AgentConfig {
    /// The tool timeout.
    pub fn tool_execution_timeout(&self) -> Duration {
        Duration::from_millis(self.tool_execution_timeout_ms)
    }

    /// The request timeout.
    pub fn agent_request_timeout(&self) -> Duration {
        Duration::from_millis(self.agent_request_timeout_ms)
    }

    /// The pause between iterations.
    pub fn iteration_delay(&self) -> Duration {
        Duration::from_millis(self.iteration_delay_ms)
    }

    /// The approval timeout.
    pub fn approval_timeout(&self) -> Duration {
        Duration::from_millis(self.approval_timeout_ms)
    }

    /// Check every rule (seed 001 part b's eight, plus the budget's) and list every
    /// broken one.
    pub fn validation_errors(&self) -> Vec<ValidationError> {
        let mut errors = Vec::new();
        let mut check = |ok: bool, field: &'static str, message: String| {
            if !ok {
                errors.push(ValidationError { field, message });
            }
        };
        self.check_limits(&mut check);
        check_budget(&self.budget, &mut check);
        self.check_tool_settings(&mut check);
        errors.extend(self.backend.validation_errors());
        errors.extend(core_models::mcp_validation_errors(&self.mcp_servers));
        errors
    }

    /// Check the limits of the loop and its tools (seed 001 part b's rules among them).
    fn check_limits(&self, check: &mut Check<'_>) {
        check(
            self.max_agent_iterations >= 1,
            "max_agent_iterations",
            format!(
                "must be at least 1 (allowed: 1 to 100; got {})",
                self.max_agent_iterations
            ),
        );
        check(
            self.max_agent_iterations <= 100,
            "max_agent_iterations",
            format!(
                "should not exceed 100 (allowed: 1 to 100; got {})",
                self.max_agent_iterations
            ),
        );
        check(
            self.max_parallel_tool_calls >= 1,
            "max_parallel_tool_calls",
            format!(
                "must be at least 1 (allowed: 1 to 10; got {})",
                self.max_parallel_tool_calls
            ),
        );
        check(
            self.tool_result_instruction.chars().count() <= 1000,
            "tool_result_instruction",
            format!(
                "must be at most 1000 characters (got {})",
                self.tool_result_instruction.chars().count()
            ),
        );
        check(
            self.path_choices_limit <= 10_000,
            "path_choices_limit",
            format!(
                "must be from 0 (off) to 10000 (got {})",
                self.path_choices_limit
            ),
        );
        check(
            self.max_parallel_tool_calls <= 10,
            "max_parallel_tool_calls",
            format!(
                "should not exceed 10 (allowed: 1 to 10; got {})",
                self.max_parallel_tool_calls
            ),
        );
        check(
            self.tool_execution_timeout_ms >= 5_000,
            "tool_execution_timeout_ms",
            format!(
                "must be at least 5 seconds (allowed: 5000 ms or more; got {})",
                self.tool_execution_timeout_ms
            ),
        );
        check(
            self.stream_idle_timeout_ms >= 1_000,
            "stream_idle_timeout_ms",
            format!(
                "must be at least 1 second (allowed: 1000 ms or more; got {})",
                self.stream_idle_timeout_ms
            ),
        );
        check(
            self.repetition_min_chars == 0 || self.repetition_min_chars >= 64,
            "repetition_min_chars",
            format!(
                "must be 0 (off) or at least 64 (got {})",
                self.repetition_min_chars
            ),
        );
        check(
            self.agent_request_timeout_ms >= self.tool_execution_timeout_ms,
            "agent_request_timeout_ms",
            format!(
                "must be >= tool_execution_timeout_ms (allowed: {} ms or more; got {})",
                self.tool_execution_timeout_ms, self.agent_request_timeout_ms
            ),
        );
        check(
            self.max_tool_result_tokens >= 100,
            "max_tool_result_tokens",
            format!(
                "must be at least 100 (allowed: 100 or more; got {})",
                self.max_tool_result_tokens
            ),
        );
        check(
            !self.tool_use_system_prompt.trim().is_empty(),
            "tool_use_system_prompt",
            "cannot be empty (allowed: any non-blank text)".to_string(),
        );
        check(
            self.approval_timeout_ms >= 1,
            "approval_timeout_ms",
            format!("must be at least 1 (got {})", self.approval_timeout_ms),
        );
        check(
            self.iteration_delay_ms <= MAX_ITERATION_DELAY_MS,
            "iteration_delay_ms",
            format!(
                "must be at most {MAX_ITERATION_DELAY_MS} (allowed: 0 to {MAX_ITERATION_DELAY_MS}; got {})",
                self.iteration_delay_ms
            ),
        );
    }

    /// Check the sandbox's paths and variables, and the formatters.
    fn check_tool_settings(&self, check: &mut Check<'_>) {
        for (field, paths) in [
            ("sandbox.writable_paths", &self.sandbox.writable_paths),
            ("sandbox.deny_read", &self.sandbox.deny_read),
        ] {
            for path in paths {
                let (ok, why) = sandbox_path(path, field == "sandbox.writable_paths");
                check(ok, field, format!("'{path}' {why}"));
            }
        }
        for name in &self.sandbox.pass_env {
            check(
                !name.is_empty() && !name.contains('=') && !name.contains('\0'),
                "sandbox.pass_env",
                format!("'{name}' is not an environment variable name"),
            );
        }
        for (name, formatter) in &self.formatters {
            check(
                formatter
                    .command
                    .first()
                    .is_some_and(|p| !p.trim().is_empty()),
                "formatters",
                format!("{name}: command must name a program"),
            );
            check(
                !formatter.extensions.is_empty()
                    && formatter.extensions.iter().all(|e| !e.trim().is_empty()),
                "formatters",
                format!("{name}: extensions must list at least one extension"),
            );
        }
    }

    /// Validate.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] listing every broken rule.
    pub fn validate(&self) -> Result<()> {
        let errors = self.validation_errors();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(Error::InvalidConfig(errors))
        }
    }
}

/// The longest pause between iterations.
pub const MAX_ITERATION_DELAY_MS: u64 = 60_000;
/// A rule's check: whether it holds, its field, and what is wrong when it does not.
type Check<'a> = dyn FnMut(bool, &'static str, String) + 'a;

/// Check the budget's limits and prices.
fn check_budget(budget: &BudgetConfig, check: &mut Check<'_>) {
    if let Some(tokens) = budget.max_total_tokens {
        check(
            tokens >= 1,
            "budget.max_total_tokens",
            format!("must be at least 1 when set (got {tokens})"),
        );
    }
    if let Some(ms) = budget.max_wall_time_ms {
        check(
            ms >= 1,
            "budget.max_wall_time_ms",
            format!("must be at least 1 when set (got {ms})"),
        );
    }
    if let Some(cost) = budget.max_cost {
        check(
            cost.is_finite() && cost > 0.0,
            "budget.max_cost",
            format!("must be a positive number when set (got {cost})"),
        );
    }
    for (field, price) in [
        (
            "budget.prompt_cost_per_1k_tokens",
            budget.prompt_cost_per_1k_tokens,
        ),
        (
            "budget.completion_cost_per_1k_tokens",
            budget.completion_cost_per_1k_tokens,
        ),
    ] {
        check(
            price.is_finite() && price >= 0.0,
            field,
            format!("must be zero or a positive number (got {price})"),
        );
    }
    if budget.max_cost.is_some() {
        check(
            budget.prompt_cost_per_1k_tokens > 0.0 || budget.completion_cost_per_1k_tokens > 0.0,
            "budget.max_cost",
            "needs a positive prompt or completion price per 1k tokens".to_string(),
        );
    }
}

/// Whether a sandbox path setting is usable, and why not.
fn sandbox_path(path: &str, writable: bool) -> (bool, &'static str) {
    let trimmed = path.trim();
    let home_relative = trimmed == "~" || trimmed.starts_with("~/");
    if !(home_relative || trimmed.starts_with('/')) {
        return (false, "must be absolute or start with ~/");
    }
    let normalized = core_models::normalize_path(trimmed.trim_start_matches('~'), None);
    let whole = matches!(normalized.as_str(), "/" | "." | "");
    if writable && whole {
        return (
            false,
            "would make the whole home folder or file system writable",
        );
    }
    (true, "")
}

/// One file layer of a [`ConfigLoader`].
#[derive(Debug, Clone)]
enum FileLayer {
    /// A file, and whether it must exist.
    Path(PathBuf, bool),
    /// TOML text.
    Text(String),
}

/// Builds an [`AgentConfig`] from its layers.
#[derive(Debug, Clone)]
pub struct ConfigLoader {
    files: Vec<FileLayer>,
    env_prefix: String,
    env_source: Option<HashMap<String, String>>,
    overrides: Vec<(String, config::Value)>,
    defaults: Vec<(String, config::Value)>,
}

impl Default for ConfigLoader {
    fn default() -> Self {
        Self::new()
    }
}

impl ConfigLoader {
    /// Defaults, then the process environment with prefix `AINTERN`.
    pub fn new() -> Self {
        ConfigLoader {
            files: Vec::new(),
            env_prefix: "AINTERN".to_string(),
            env_source: None,
            overrides: Vec::new(),
            defaults: Vec::new(),
        }
    }

    /// Add a TOML file that must exist. Later files win over earlier ones.
    pub fn file(mut self, path: impl Into<PathBuf>) -> Self {
        self.files.push(FileLayer::Path(path.into(), true));
        self
    }

    /// Add a TOML file that is read only if it exists.
    pub fn optional_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.files.push(FileLayer::Path(path.into(), false));
        self
    }

    /// Add TOML text as a file layer (for a file the application read and filtered itself,
    /// e.g. a workspace's file with the keys it may not set removed).
    pub fn toml_text(mut self, text: impl Into<String>) -> Self {
        self.files.push(FileLayer::Text(text.into()));
        self
    }

    /// Use another environment-variable prefix.
    pub fn env_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.env_prefix = prefix.into();
        self
    }

    /// Read environment variables from `vars` instead of the process environment.
    pub fn env_source(mut self, vars: HashMap<String, String>) -> Self {
        self.env_source = Some(vars);
        self
    }

    /// Change the default of `key` (dotted for nested keys): an application's own default,
    /// which files, environment variables and [`ConfigLoader::set`] still override.
    pub fn default_value(
        mut self,
        key: impl Into<String>,
        value: impl Into<config::Value>,
    ) -> Self {
        self.defaults.push((key.into(), value.into()));
        self
    }

    /// Set `key` (dotted for nested keys: `"budget.max_cost"`) above every other layer.
    pub fn set(mut self, key: impl Into<String>, value: impl Into<config::Value>) -> Self {
        self.overrides.push((key.into(), value.into()));
        self
    }

    /// Merge the layers without validating.
    ///
    /// # Errors
    /// [`Error::ConfigLoad`] when a file is missing or malformed or a value has the wrong
    /// type.
    pub fn load_unvalidated(self) -> Result<AgentConfig> {
        let defaults = config::Config::try_from(&AgentConfig::default())?;
        // The application's defaults replace the built-in ones, below every other layer.
        let mut base = config::Config::builder().add_source(defaults);
        for (key, value) in self.defaults {
            base = base.set_override(key, value)?;
        }
        let mut builder = config::Config::builder().add_source(base.build()?);
        for layer in &self.files {
            builder = match layer {
                FileLayer::Path(path, required) => builder.add_source(
                    config::File::from(path.as_path())
                        .format(config::FileFormat::Toml)
                        .required(*required),
                ),
                FileLayer::Text(text) => {
                    builder.add_source(config::File::from_str(text, config::FileFormat::Toml))
                }
            };
        }
        let env = config::Environment::with_prefix(&self.env_prefix)
            .prefix_separator("_")
            .separator("__")
            .try_parsing(true)
            .source(self.env_source);
        builder = builder.add_source(env);
        for (key, value) in self.overrides {
            builder = builder.set_override(key, value)?;
        }
        Ok(builder.build()?.try_deserialize()?)
    }

    /// Merge the layers and validate.
    ///
    /// # Errors
    /// [`Error::ConfigLoad`] as for [`ConfigLoader::load_unvalidated`];
    /// [`Error::InvalidConfig`] listing every broken rule.
    pub fn load(self) -> Result<AgentConfig> {
        let config = self.load_unvalidated()?;
        config.validate()?;
        Ok(config)
    }
}
