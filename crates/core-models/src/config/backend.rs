//! `[backend]`: which model answers, and how to reach it.
//!
//! Plain data: the application turns it into a backend (a GGUF run in-process, or a
//! server that speaks the OpenAI chat-completions protocol). Only the user's own
//! configuration should set it: a workspace's file that could point the conversation (and
//! an API key) at another server must not (the `aintern` command ignores the section
//! there, as it ignores `[sandbox]`).

use super::ValidationError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// Which kind of backend answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackendKind {
    /// A GGUF model run in-process by llama.cpp (`model` is the file; the embedded
    /// default model when it is not set).
    #[default]
    Llama,
    /// A server speaking the OpenAI chat-completions protocol (llama-server, vLLM,
    /// Ollama, LM Studio, hosted APIs) at `url`.
    Openai,
}

/// How tools reach a server's model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolMode {
    /// Native when the server renders tools with the model's template, else text (what
    /// the server reports about its template; a server that rejects `tools` is asked in
    /// text from then on).
    #[default]
    Auto,
    /// Always the protocol's `tools` and `tool_calls`.
    Native,
    /// Tools described in the system prompt, calls parsed from the reply's text.
    Text,
}

/// The `[backend]` section. Its `Debug` hides the header values (they may carry
/// credentials).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct BackendConfig {
    /// `llama` (default) or `openai`.
    pub kind: BackendKind,
    /// `openai`: the server's base URL, up to and including `/v1`
    /// (`http://127.0.0.1:8080/v1`).
    pub url: Option<String>,
    /// `openai`: the model's name on the server (when unset, the server's only model);
    /// `llama`: the GGUF file.
    pub model: Option<String>,
    /// `openai`: the environment variable that holds the API key, sent as a bearer token.
    /// The key itself is never written in the configuration, printed or logged.
    pub api_key_env: Option<String>,
    /// `openai`: extra HTTP headers sent with every request.
    pub headers: BTreeMap<String, String>,
    /// `openai`: native tool calls, calls in the text, or the server decides.
    pub tool_mode: ToolMode,
    /// `openai`: most time to open a connection, in milliseconds.
    pub connect_timeout_ms: u64,
    /// `openai`: most time from sending a request to its first token (the prompt is
    /// evaluated in between), in milliseconds.
    pub first_token_timeout_ms: u64,
    /// `openai`: most silence in a stream once it started, in milliseconds.
    pub idle_timeout_ms: u64,
    /// `openai`: retries after a connection error, 429 or 5xx before the first token.
    pub max_retries: u32,
    /// `llama`: most disk the saved states of sessions may take, in MiB (the least
    /// recently saved are removed first); 0 saves none. A saved state lets a session
    /// resumed in a new process skip evaluating its conversation again.
    pub session_state_limit_mb: u64,
    /// `llama`: most host memory for the states of prompts the model's context held
    /// before, in MiB; 0 keeps none. A prompt of another shape (a decision asked apart, an
    /// answer from results alone) would overwrite the conversation's cache: its state is
    /// kept in memory and put back when a prompt that starts the same way comes, and a
    /// session's are saved with it.
    pub prompt_cache_mb: u64,
    /// `llama`: keep the state of each prompt's fixed start (the system prompt with the
    /// tools) on disk, beside the sessions' states and under the same limit, so that a new
    /// process whose prompt starts the same way does not evaluate it again. Nothing of a
    /// conversation is in it; `--no-save` leaves it on.
    pub prefix_cache: bool,
    /// `llama`: draft tokens from the conversation (prompt lookup) and verify them in one
    /// batch: sooner when a reply copies from the context. Drafting keeps the KV cache in
    /// 8 bits, where a greedy reply is plain decoding's token for token; off by default,
    /// because that cache shifts a small model's close choices (measured with `aintern
    /// eval`).
    pub speculative: bool,
    /// `openai`: send each session's key as `prompt_cache_key`, which hosted APIs use to
    /// route a conversation to the machine that holds its cache (servers that do not know
    /// it ignore it).
    pub prompt_cache_key: bool,
    /// `openai`: an HTTP header that carries each session's key, for a router that keeps
    /// a session on one replica (vLLM's production stack `--session-key`, SGLang's
    /// gateway `X-SMG-Routing-Key`). Off by default: some hosted APIs refuse unknown
    /// headers.
    pub affinity_header: Option<String>,
    /// `openai`: pin each session to one of llama-server's slots (its `id_slot`), so that
    /// concurrent sessions do not evict each other's caches.
    pub pin_slots: bool,
    /// `openai`: save a session's slot on llama-server when a request ends and restore it
    /// before the session's next process asks (needs llama-server `--slot-save-path`;
    /// without it nothing is saved).
    pub save_slots: bool,
    /// `openai`: with `save_slots`, most files this user's sessions keep on llama-server
    /// (it has no action that removes one: a file is reused, the least recently used
    /// first, instead of a new one written). The server's disk holds at most this many
    /// slots' states.
    pub slot_files: u32,
}

impl Default for BackendConfig {
    fn default() -> Self {
        BackendConfig {
            kind: BackendKind::Llama,
            url: None,
            model: None,
            api_key_env: None,
            headers: BTreeMap::new(),
            tool_mode: ToolMode::Auto,
            connect_timeout_ms: 10_000,
            first_token_timeout_ms: 300_000,
            idle_timeout_ms: 60_000,
            max_retries: 3,
            session_state_limit_mb: 2048,
            prompt_cache_mb: 1024,
            prefix_cache: true,
            speculative: false,
            prompt_cache_key: true,
            affinity_header: None,
            pin_slots: false,
            save_slots: false,
            slot_files: 64,
        }
    }
}

impl fmt::Debug for BackendConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .keys()
            .map(|name| (name.as_str(), "<hidden>"))
            .collect();
        f.debug_struct("BackendConfig")
            .field("kind", &self.kind)
            .field("url", &self.url)
            .field("model", &self.model)
            .field("api_key_env", &self.api_key_env)
            .field("headers", &headers)
            .field("tool_mode", &self.tool_mode)
            .field("connect_timeout_ms", &self.connect_timeout_ms)
            .field("first_token_timeout_ms", &self.first_token_timeout_ms)
            .field("idle_timeout_ms", &self.idle_timeout_ms)
            .field("max_retries", &self.max_retries)
            .field("session_state_limit_mb", &self.session_state_limit_mb)
            .field("prompt_cache_mb", &self.prompt_cache_mb)
            .field("prefix_cache", &self.prefix_cache)
            .field("speculative", &self.speculative)
            .field("prompt_cache_key", &self.prompt_cache_key)
            .field("affinity_header", &self.affinity_header)
            .field("pin_slots", &self.pin_slots)
            .field("save_slots", &self.save_slots)
            .field("slot_files", &self.slot_files)
            .finish()
    }
}

/// Most retries allowed.
const MAX_RETRIES: u32 = 10;
/// Most files a user's saved slots may take on llama-server.
const MAX_SLOT_FILES: u32 = 4096;
/// The longest time limit: a day.
const MAX_TIMEOUT_MS: u64 = 86_400_000;

impl BackendConfig {
    /// Every broken rule of the section.
    pub fn validation_errors(&self) -> Vec<ValidationError> {
        let mut errors = Vec::new();
        let mut check = |ok: bool, field: &'static str, message: String| {
            if !ok {
                errors.push(ValidationError { field, message });
            }
        };
        if self.kind == BackendKind::Openai {
            match self.url.as_deref().map(str::trim) {
                None | Some("") => check(
                    false,
                    "backend.url",
                    "is required with kind = \"openai\" (the server's base URL, e.g. http://127.0.0.1:8080/v1)".into(),
                ),
                Some(url) => check(
                    url.starts_with("http://") || url.starts_with("https://"),
                    "backend.url",
                    format!("must start with http:// or https:// (got {url})"),
                ),
            }
        }
        if let Some(model) = &self.model {
            check(
                !model.trim().is_empty(),
                "backend.model",
                "cannot be empty when set".into(),
            );
        }
        if let Some(name) = &self.api_key_env {
            check(
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "backend.api_key_env",
                format!("'{name}' is not an environment variable name (letters, digits, _)"),
            );
        }
        for (name, value) in &self.headers {
            check(
                is_header_name(name),
                "backend.headers",
                format!("'{name}' is not an HTTP header name"),
            );
            check(
                !value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0),
                "backend.headers",
                format!("the value of '{name}' holds a line break or NUL"),
            );
        }
        for (field, ms) in [
            ("backend.connect_timeout_ms", self.connect_timeout_ms),
            (
                "backend.first_token_timeout_ms",
                self.first_token_timeout_ms,
            ),
            ("backend.idle_timeout_ms", self.idle_timeout_ms),
        ] {
            check(
                (1..=MAX_TIMEOUT_MS).contains(&ms),
                field,
                format!("must be from 1 to {MAX_TIMEOUT_MS} (a day; got {ms})"),
            );
        }
        if let Some(name) = &self.affinity_header {
            check(
                is_header_name(name),
                "backend.affinity_header",
                format!("'{name}' is not an HTTP header name"),
            );
        }
        check(
            (1..=MAX_SLOT_FILES).contains(&self.slot_files),
            "backend.slot_files",
            format!(
                "must be from 1 to {MAX_SLOT_FILES} (got {})",
                self.slot_files
            ),
        );
        check(
            self.max_retries <= MAX_RETRIES,
            "backend.max_retries",
            format!("must be at most {MAX_RETRIES} (got {})", self.max_retries),
        );
        errors
    }
}

/// Whether `name` is an HTTP header name (RFC 9110 token characters).
fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

setters!(BackendConfig {
    with_kind => kind: BackendKind,
    with_url => url: Option<String>,
    with_model => model: Option<String>,
    with_api_key_env => api_key_env: Option<String>,
    with_headers => headers: BTreeMap<String, String>,
    with_tool_mode => tool_mode: ToolMode,
    with_connect_timeout_ms => connect_timeout_ms: u64,
    with_first_token_timeout_ms => first_token_timeout_ms: u64,
    with_idle_timeout_ms => idle_timeout_ms: u64,
    with_max_retries => max_retries: u32,
    with_session_state_limit_mb => session_state_limit_mb: u64,
    with_prompt_cache_mb => prompt_cache_mb: u64,
    with_prefix_cache => prefix_cache: bool,
    with_speculative => speculative: bool,
    with_prompt_cache_key => prompt_cache_key: bool,
    with_affinity_header => affinity_header: Option<String>,
    with_pin_slots => pin_slots: bool,
    with_save_slots => save_slots: bool,
    with_slot_files => slot_files: u32,
});
