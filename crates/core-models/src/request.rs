//! Request models (seed 001 part c): what a caller hands the agent.

use crate::tool::{RiskLevel, ToolCategory, ToolDefinition};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use uuid::Uuid;

/// Who wrote a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageRole {
    /// Instructions for the model.
    System,
    /// The person.
    User,
    /// The model.
    Assistant,
    /// A tool's result.
    Tool,
}

impl MessageRole {
    /// The snake_case name (`"assistant"`), as chat templates expect it.
    pub fn as_str(self) -> &'static str {
        match self {
            MessageRole::System => "system",
            MessageRole::User => "user",
            MessageRole::Assistant => "assistant",
            MessageRole::Tool => "tool",
        }
    }
}

impl fmt::Display for MessageRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One message of a conversation.
///
/// The content is shared ([`Arc<str>`]): the conversation is handed to the model again at
/// every iteration, and a clone costs the same whatever the content's size. Read it as a
/// `&str` (`&message.content`, `message.content.lines()`); the JSON form is a plain string.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Who wrote it.
    pub role: MessageRole,
    /// What it says (shared: see the type's documentation).
    pub content: Arc<str>,
    /// For tool messages: the tool's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// For tool messages: the id of the call this answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For assistant messages: the tool calls it made (rendered by templates that know
    /// calls as the OpenAI `tool_calls` list).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<MessageToolCall>,
    /// For assistant messages: the reasoning written before the content
    /// (`reasoning_content`, which templates keep or drop).
    #[serde(
        default,
        rename = "reasoning_content",
        skip_serializing_if = "Option::is_none"
    )]
    pub reasoning: Option<Arc<str>>,
    /// For assistant messages with calls: the model's output exactly as written, for
    /// templates that cannot render structured calls (the model then sees its own words).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original: Option<Arc<str>>,
}

/// One tool call of an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageToolCall {
    /// The call's id (tool messages answer it with `tool_call_id`).
    pub id: String,
    /// The tool's id.
    pub name: String,
    /// The arguments (a JSON object; shared with the call request).
    pub arguments: Arc<serde_json::Value>,
}

impl ChatMessage {
    /// A message with a role and content.
    pub fn new(role: MessageRole, content: impl Into<Arc<str>>) -> Self {
        ChatMessage {
            role,
            content: content.into(),
            name: None,
            tool_call_id: None,
            tool_calls: Vec::new(),
            reasoning: None,
            original: None,
        }
    }

    /// A system message.
    pub fn system(content: impl Into<Arc<str>>) -> Self {
        Self::new(MessageRole::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<Arc<str>>) -> Self {
        Self::new(MessageRole::User, content)
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<Arc<str>>) -> Self {
        Self::new(MessageRole::Assistant, content)
    }

    /// The text as the model wrote it: [`ChatMessage::original`] when kept, else the
    /// content. For prompts that cannot show structured calls.
    pub fn as_written(&self) -> &str {
        self.original.as_deref().unwrap_or(&self.content)
    }

    /// An assistant message that made `calls`: `content` is its visible text,
    /// `reasoning` what it thought first, `original` its output exactly as written.
    pub fn assistant_with_calls(
        content: impl Into<Arc<str>>,
        calls: Vec<MessageToolCall>,
        reasoning: Option<Arc<str>>,
        original: impl Into<Arc<str>>,
    ) -> Self {
        ChatMessage {
            tool_calls: calls,
            reasoning,
            original: Some(original.into()),
            ..Self::new(MessageRole::Assistant, content)
        }
    }

    /// A tool-result message for `tool_id`, answering call `call_id`.
    pub fn tool(
        tool_id: impl Into<String>,
        call_id: impl Into<String>,
        content: impl Into<Arc<str>>,
    ) -> Self {
        ChatMessage {
            name: Some(tool_id.into()),
            tool_call_id: Some(call_id.into()),
            ..Self::new(MessageRole::Tool, content)
        }
    }
}

/// Sampling and length settings for one generation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct InferenceOptions {
    /// Most tokens to generate.
    pub max_tokens: u32,
    /// Sampling temperature; 0 means greedy.
    pub temperature: f32,
    /// Nucleus sampling threshold.
    pub top_p: f32,
    /// Keep only the k most likely tokens (0 = off).
    pub top_k: u32,
    /// Drop tokens less likely than `min_p` × the most likely one (0 = off).
    pub min_p: f32,
    /// Penalty for repeating recent tokens (1 = off).
    pub repeat_penalty: f32,
    /// Random seed; `None` picks one.
    pub seed: Option<u32>,
    /// Stop when any of these strings is generated.
    pub stop: Vec<String>,
}

impl Default for InferenceOptions {
    /// The seed's defaults (4096 tokens, temperature 0.7, top-p 0.9) and llama.cpp's for
    /// the rest.
    fn default() -> Self {
        InferenceOptions {
            max_tokens: 4096,
            temperature: 0.7,
            top_p: 0.9,
            top_k: 40,
            min_p: 0.05,
            repeat_penalty: 1.0,
            seed: None,
            stop: Vec::new(),
        }
    }
}

impl InferenceOptions {
    /// Every problem with these options, in words (empty when they are usable): sampling
    /// values must be finite numbers in their ranges, and at least one token generated.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let mut check = |ok: bool, problem: String| {
            if !ok {
                problems.push(problem);
            }
        };
        check(
            self.temperature.is_finite() && self.temperature >= 0.0,
            format!(
                "temperature must be a finite number of at least 0 (got {})",
                self.temperature
            ),
        );
        for (name, value) in [("top_p", self.top_p), ("min_p", self.min_p)] {
            check(
                value.is_finite() && (0.0..=1.0).contains(&value),
                format!("{name} must be a number from 0 to 1 (got {value})"),
            );
        }
        check(
            self.repeat_penalty.is_finite() && self.repeat_penalty > 0.0,
            format!(
                "repeat_penalty must be a positive finite number (got {})",
                self.repeat_penalty
            ),
        );
        check(
            self.max_tokens >= 1,
            "max_tokens must be at least 1".to_string(),
        );
        problems
    }
}

/// Whether and which tool the model must call.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// The model's first reply must call some tool; the replies after the results are the
    /// answer (one forced round of tool use: calls written then are not run).
    Required,
    /// The model must not call a tool.
    None,
    /// The model's first reply must call this tool; then as for `Required`.
    Tool(String),
}

impl fmt::Display for ToolChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolChoice::Auto => f.write_str("auto"),
            ToolChoice::Required => f.write_str("required"),
            ToolChoice::None => f.write_str("none"),
            ToolChoice::Tool(id) => f.write_str(id),
        }
    }
}

impl FromStr for ToolChoice {
    type Err = String;

    /// `auto`, `required`, `none`, or a tool id.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "" => Err("a tool choice cannot be empty (auto, required, none or a tool id)".into()),
            "auto" => Ok(ToolChoice::Auto),
            "required" => Ok(ToolChoice::Required),
            "none" => Ok(ToolChoice::None),
            id => Ok(ToolChoice::Tool(id.to_string())),
        }
    }
}

/// A request to the agent: the message and all context needed to answer it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentRequest {
    /// The user's message.
    pub message: String,
    /// The conversation; session permissions and history hang on it.
    pub conversation_id: Uuid,
    /// This request, for tracking and logging.
    pub request_id: Uuid,
    /// Earlier messages of the conversation, tool results included.
    pub history: Vec<ChatMessage>,
    /// Files attached for context.
    pub attached_files: Vec<FileContext>,
    /// A custom system prompt, combined with the tool-use prompt when tools are offered.
    pub system_prompt: Option<String>,
    /// Which tools may be offered.
    pub tool_context: Option<ToolAvailabilityContext>,
    /// Sampling settings; the agent's defaults when `None`.
    pub inference_options: Option<InferenceOptions>,
    /// Whether tools are offered at all.
    pub enable_tools: bool,
    /// Overrides the configured iteration limit.
    pub max_iterations: Option<u32>,
    /// Whether and which tool the model must call.
    pub tool_choice: ToolChoice,
    /// A JSON Schema the final answer must match: the model may call tools as usual, and
    /// its answer is then one JSON value valid against it (`agent_complete` carries it as
    /// `output`). `None`: the answer is text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<serde_json::Value>,
    /// When the request was made.
    pub created_at: DateTime<Utc>,
}

impl Default for AgentRequest {
    fn default() -> Self {
        AgentRequest {
            message: String::new(),
            conversation_id: Uuid::new_v4(),
            request_id: Uuid::new_v4(),
            history: Vec::new(),
            attached_files: Vec::new(),
            system_prompt: None,
            tool_context: None,
            inference_options: None,
            enable_tools: true,
            max_iterations: None,
            tool_choice: ToolChoice::Auto,
            output_schema: None,
            created_at: Utc::now(),
        }
    }
}

impl AgentRequest {
    /// A request for `message` with fresh ids and defaults for everything else.
    pub fn new(message: impl Into<String>) -> Self {
        AgentRequest {
            message: message.into(),
            ..Default::default()
        }
    }

    /// Continue conversation `id`.
    pub fn with_conversation(mut self, id: Uuid) -> Self {
        self.conversation_id = id;
        self
    }

    /// Set the earlier messages.
    pub fn with_history(mut self, history: Vec<ChatMessage>) -> Self {
        self.history = history;
        self
    }

    /// Set the custom system prompt.
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Set the tool availability context.
    pub fn with_tool_context(mut self, context: ToolAvailabilityContext) -> Self {
        self.tool_context = Some(context);
        self
    }

    /// Set the sampling options.
    pub fn with_inference_options(mut self, options: InferenceOptions) -> Self {
        self.inference_options = Some(options);
        self
    }

    /// Switch tools on or off.
    pub fn with_tools_enabled(mut self, enabled: bool) -> Self {
        self.enable_tools = enabled;
        self
    }

    /// Override the iteration limit.
    pub fn with_max_iterations(mut self, max: u32) -> Self {
        self.max_iterations = Some(max);
        self
    }

    /// Set the tool choice.
    pub fn with_tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = choice;
        self
    }

    /// Hold the final answer to a JSON Schema (see [`AgentRequest::output_schema`]).
    pub fn with_output_schema(mut self, schema: serde_json::Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Attach a file.
    pub fn with_attached_file(mut self, file: FileContext) -> Self {
        self.attached_files.push(file);
        self
    }
}

/// Which tools a request may use (seed 001 part c).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct ToolAvailabilityContext {
    /// The workspace folder; `None` when no workspace is open.
    pub workspace_path: Option<PathBuf>,
    /// The file open in the editor.
    pub active_file_path: Option<PathBuf>,
    /// The editor's selection.
    pub active_selection: Option<TextSelection>,
    /// Only these tools; all when `None`.
    pub enabled_tool_ids: Option<BTreeSet<String>>,
    /// Never these tools; wins over `enabled_tool_ids`.
    pub disabled_tool_ids: Option<BTreeSet<String>>,
    /// Only these categories; all when `None`.
    pub enabled_categories: Option<BTreeSet<ToolCategory>>,
    /// Calls up to this risk are approved without asking.
    pub max_auto_approval_risk_level: RiskLevel,
    /// Whether terminal tools may be offered.
    pub allow_terminal_tools: bool,
    /// Whether network tools may be offered.
    pub allow_network_tools: bool,
    /// Whether tools that write files may be offered.
    pub allow_file_writes: bool,
    /// Permissions already granted in this session, by tool id.
    pub session_permissions: BTreeMap<String, ToolPermission>,
}

impl Default for ToolAvailabilityContext {
    fn default() -> Self {
        ToolAvailabilityContext {
            workspace_path: None,
            active_file_path: None,
            active_selection: None,
            enabled_tool_ids: None,
            disabled_tool_ids: None,
            enabled_categories: None,
            max_auto_approval_risk_level: RiskLevel::Safe,
            allow_terminal_tools: true,
            allow_network_tools: true,
            allow_file_writes: true,
            session_permissions: BTreeMap::new(),
        }
    }
}

impl ToolAvailabilityContext {
    /// A context for the workspace at `path`.
    pub fn for_workspace(path: impl Into<PathBuf>) -> Self {
        ToolAvailabilityContext {
            workspace_path: Some(path.into()),
            ..Default::default()
        }
    }

    /// Whether a workspace is open.
    pub fn has_workspace(&self) -> bool {
        self.workspace_path
            .as_ref()
            .is_some_and(|p| !p.as_os_str().is_empty())
    }

    /// Whether the tool `definition` may be offered under this context: disabled ids win
    /// over enabled ids, then categories, then the terminal, network and file-write
    /// switches, then the workspace requirement.
    pub fn allows(&self, definition: &ToolDefinition) -> bool {
        let id = definition.id.as_str();
        if self
            .disabled_tool_ids
            .as_ref()
            .is_some_and(|d| d.contains(id))
        {
            return false;
        }
        if self
            .enabled_tool_ids
            .as_ref()
            .is_some_and(|e| !e.contains(id))
        {
            return false;
        }
        if self
            .enabled_categories
            .as_ref()
            .is_some_and(|c| !c.contains(&definition.category))
        {
            return false;
        }
        if definition.category == ToolCategory::Terminal && !self.allow_terminal_tools {
            return false;
        }
        if definition.category == ToolCategory::Network && !self.allow_network_tools {
            return false;
        }
        if definition.modifies_files && !self.allow_file_writes {
            return false;
        }
        !definition.requires_workspace || self.has_workspace()
    }
}

/// A file attached to a request.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct FileContext {
    /// Relative or absolute path.
    pub path: String,
    /// The content, possibly truncated.
    pub content: String,
    /// Programming language, inferred from the extension.
    pub language: Option<String>,
    /// Whether `content` was cut.
    pub is_truncated: bool,
    /// First line, when only part of the file is attached (1-based).
    pub start_line: Option<u32>,
    /// Last line, when only part of the file is attached (1-based).
    pub end_line: Option<u32>,
    /// Size of the whole file in bytes.
    pub file_size_bytes: u64,
    /// When the file last changed.
    pub last_modified: Option<DateTime<Utc>>,
}

/// A selection in an editor (1-based lines and columns).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct TextSelection {
    /// First line.
    pub start_line: u32,
    /// First column.
    pub start_column: u32,
    /// Last line.
    pub end_line: u32,
    /// Last column.
    pub end_column: u32,
    /// The selected text.
    pub text: String,
}

impl TextSelection {
    /// Whether nothing is selected (only a cursor position).
    pub fn is_empty(&self) -> bool {
        self.start_line == self.end_line && self.start_column == self.end_column
    }
}

/// A permission granted for a tool in a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolPermission {
    /// The tool.
    pub tool_id: String,
    /// Whether calls are approved without asking.
    pub auto_approved: bool,
    /// Only calls whose main argument matches this glob, when set.
    #[serde(default)]
    pub approval_pattern: Option<String>,
    /// When it was granted.
    pub granted_at: DateTime<Utc>,
    /// Whether it outlives the session.
    #[serde(default)]
    pub is_persistent: bool,
}

setters!(ToolAvailabilityContext {
    with_workspace_path => workspace_path: Option<PathBuf>,
    with_active_file_path => active_file_path: Option<PathBuf>,
    with_active_selection => active_selection: Option<TextSelection>,
    with_enabled_tool_ids => enabled_tool_ids: Option<BTreeSet<String>>,
    with_disabled_tool_ids => disabled_tool_ids: Option<BTreeSet<String>>,
    with_enabled_categories => enabled_categories: Option<BTreeSet<ToolCategory>>,
    with_max_auto_approval_risk_level => max_auto_approval_risk_level: RiskLevel,
    with_allow_terminal_tools => allow_terminal_tools: bool,
    with_allow_network_tools => allow_network_tools: bool,
    with_allow_file_writes => allow_file_writes: bool,
    with_session_permissions => session_permissions: BTreeMap<String, ToolPermission>,
});

setters!(InferenceOptions {
    with_max_tokens => max_tokens: u32,
    with_temperature => temperature: f32,
    with_top_p => top_p: f32,
    with_top_k => top_k: u32,
    with_min_p => min_p: f32,
    with_repeat_penalty => repeat_penalty: f32,
    with_seed => seed: Option<u32>,
    with_stop => stop: Vec<String>,
});

setters!(TextSelection {
    with_start_line => start_line: u32,
    with_start_column => start_column: u32,
    with_end_line => end_line: u32,
    with_end_column => end_column: u32,
    with_text => text: String,
});
