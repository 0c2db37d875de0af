//! AIntern's second backend: any server that speaks the OpenAI chat-completions protocol —
//! llama.cpp's llama-server, vLLM, Ollama, LM Studio, hosted APIs.
//!
//! Most people who run local models already run a server, often on another machine with
//! a GPU; this crate lets the agent use it. [`OpenAiLlm`] implements
//! [`core_models::LlmService`] over `POST {base}/chat/completions`:
//!
//! - **Streaming**: text deltas as [`core_models::LlmChunk::Text`], `reasoning_content` (or
//!   `reasoning`) as [`core_models::LlmChunk::Reasoning`].
//! - **Native tool calls**: streamed `tool_calls` pieces assembled by id and index (servers
//!   that send a call whole, or give every call index 0, included) and delivered whole as
//!   [`core_models::LlmChunk::ToolCall`]; the agent checks them exactly like calls it parsed.
//!   A stream cut in the middle of a call never delivers it.
//! - **Text mode**: when the server's template cannot render tools (llama-server says so
//!   in `/props`), when the server rejects `tools`, or when configured, the tools are
//!   described in the prompt and calls parsed from the text — the model is asked as the
//!   in-process backend asks it.
//! - **Usage**: prompt, cached (`prompt_tokens_details.cached_tokens`) and generated tokens;
//!   llama-server's `timings` when it sends them.
//! - **Failures**: connect, first-token and idle-stream time limits; retries with
//!   exponential backoff and jitter on connection errors, 429 (honouring `Retry-After`) and
//!   5xx, only before any of the reply was delivered; errors that say what to do
//!   ([`Error`]). Dropping the stream closes the connection at once.
//! - **Bounded memory**: one event, one reply and the number of calls are capped.
//! - **Cache affinity**: the key of the session a request is sent for (its conversation,
//!   or the one a side prompt was asked for) goes out as `prompt_cache_key` (hosted APIs
//!   route a conversation to its cache; a server that refuses the field is asked without
//!   it) and, when configured, in a header for a router. On llama-server a session can be
//!   pinned to a slot (`id_slot`, chosen among the idle ones no other client of this
//!   machine has claimed), saved as soon as a reply ends and restored before a request
//!   whose slot no longer holds it (in a later process, or after another request used the
//!   slot), one file for each shape of prompt the session sends.
//!
//! The API key is sent as a bearer token, marked sensitive, and never printed or logged.

mod affinity;
mod classify;
mod config;
mod decode;
mod discover;
mod error;
mod generate;
mod http;
mod wire;

pub use affinity::forget_saved_slots;
pub use config::{ApiKey, OpenAiConfig};
pub use core_models::ToolMode;
pub use discover::{ModelEntry, ServerInfo};
pub use error::Error;
pub use http::ensure_tls_provider;

use async_trait::async_trait;
use classify::Context;
use core_models::{ChatFormat, LlmRequest, LlmService, LlmStream, ModelDetails, SessionKey};
use http::{Failure, Urls};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;
use wire::{Dialect, Mode};

/// A model behind an OpenAI-compatible server. Cheap to clone: clones share the client.
#[derive(Debug, Clone)]
pub struct OpenAiLlm {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    http: reqwest::Client,
    config: OpenAiConfig,
    urls: Urls,
    model: String,
    info: ServerInfo,
    /// Tools are described in the prompt (decided at connect, or after a rejection).
    text_mode: AtomicBool,
    /// The server wants `max_completion_tokens`.
    max_completion_tokens: AtomicBool,
    /// Optional fields the server refused (left out from then on).
    refused: Mutex<Vec<&'static str>>,
    /// What keeps sessions' caches warm.
    affinity: affinity::Affinity,
}

/// Time allowed for discovery requests.
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(30);

impl OpenAiLlm {
    /// Connect: list the server's models (choosing the only or first one when no model
    /// is named), read llama-server's properties where it has them, and settle the tool
    /// mode unless configured: text when the server says its template cannot render
    /// tools, else native if the server takes `tools` when asked once (a one-token
    /// request).
    ///
    /// # Errors
    /// The server cannot be reached, refuses the key, names no model, or lacks the model.
    pub async fn connect(config: OpenAiConfig) -> Result<Self, Error> {
        let urls = Urls::new(&config.base_url)?;
        let http = http::client(&config)?;
        let mut info = ServerInfo::default();
        let deadline = Instant::now() + DISCOVERY_TIMEOUT;
        match get_json(&http, &urls.models, &config, deadline).await {
            Ok(json) => info.models = discover::models(&json),
            // No model list: fine when the model is named (some servers do not list).
            Err(
                e @ (Error::NotFound { .. }
                | Error::Rejected { .. }
                | Error::UnknownModel { .. }
                | Error::Protocol(_)),
            ) if config.model.is_some() => {
                tracing::debug!(error = %e, "the server lists no models");
            }
            Err(e) => return Err(e),
        }
        if let Ok(json) = get_json(&http, &urls.props, &config, deadline).await {
            discover::props(&json, &mut info);
        }
        let model = match &config.model {
            Some(model) => model.clone(),
            None => info.models.first().map(|m| m.id.clone()).ok_or_else(|| {
                Error::InvalidConfig(
                    "the server lists no models: name one with --model (or backend.model)".into(),
                )
            })?,
        };
        let affinity = affinity::Affinity::new(&config, &info)?;
        let inner = Inner {
            http,
            urls,
            model,
            info,
            text_mode: AtomicBool::new(config.tool_mode == ToolMode::Text),
            max_completion_tokens: AtomicBool::new(false),
            refused: Mutex::new(Vec::new()),
            affinity,
            config,
        };
        if inner.config.tool_mode == ToolMode::Auto {
            // A template that cannot render tools gets them in text; otherwise the server
            // is asked (llama-server without --jinja refuses tools whatever its template).
            let text = match inner.info.template_renders_tools {
                Some(false) => true,
                Some(true) | None => !inner.probe_tools().await?,
            };
            inner.text_mode.store(text, Ordering::Relaxed);
        }
        tracing::debug!(
            model = %inner.model,
            llama_server = inner.info.llama_server,
            text_mode = inner.text_mode.load(Ordering::Relaxed),
            "connected to an OpenAI-compatible server"
        );
        Ok(OpenAiLlm {
            inner: Arc::new(inner),
        })
    }

    /// The models the server at `config.base_url` lists (`GET {base}/models`).
    ///
    /// # Errors
    /// The server cannot be reached, refuses the key, or does not answer with a list.
    pub async fn list_models(config: &OpenAiConfig) -> Result<Vec<ModelEntry>, Error> {
        let urls = Urls::new(&config.base_url)?;
        let http = http::client(config)?;
        let json = get_json(
            &http,
            &urls.models,
            config,
            Instant::now() + DISCOVERY_TIMEOUT,
        )
        .await?;
        Ok(discover::models(&json))
    }

    /// The model's name as sent to the server.
    pub fn model(&self) -> &str {
        &self.inner.model
    }

    /// What the server said about itself when connecting.
    pub fn server_info(&self) -> &ServerInfo {
        &self.inner.info
    }

    /// How tools reach the model now: [`ToolMode::Native`] or [`ToolMode::Text`].
    pub fn tool_mode(&self) -> ToolMode {
        if self.inner.text_mode.load(Ordering::Relaxed) {
            ToolMode::Text
        } else {
            ToolMode::Native
        }
    }
}

impl Inner {
    fn dialect(&self) -> Dialect {
        Dialect {
            llama_server: self.info.llama_server,
            max_completion_tokens: self.max_completion_tokens.load(Ordering::Relaxed),
        }
    }

    fn context(&self, request: &LlmRequest, mode: Mode) -> Context {
        Context {
            url: self.urls.chat.to_string(),
            model: self.model.clone(),
            key_sent: self.config.api_key.is_some(),
            offered_tools: mode == Mode::Native && !request.tools.is_empty(),
            estimated_prompt_tokens: wire::estimated_prompt_tokens(request),
            limit: self.config.first_token_timeout,
        }
    }

    /// In text mode on llama-server, the grammar that holds a forced call (`required` or a
    /// named tool) to AIntern's fence, or an answer to its schema (fenced calls or the
    /// answer), as the in-process backend holds them; `None` when nothing is held or the
    /// server takes no grammars.
    fn text_grammar(&self, request: &LlmRequest) -> Option<String> {
        if !self.info.llama_server || (!request.forces_call() && request.answer_schema().is_none())
        {
            return None;
        }
        let reasoning = self
            .info
            .chat_template
            .as_deref()
            .and_then(|t| tool_calls::detect_template(t).reasoning);
        let target = tool_grammar::GrammarTarget {
            reasoning,
            ..tool_grammar::GrammarTarget::fence()
        };
        match tool_grammar::tool_grammar(request, &target, &tool_grammar::SubsetConverter) {
            Ok(grammar) => grammar.map(|g| g.text),
            Err(e) => {
                tracing::warn!(error = %e, "no grammar for the forced call");
                None
            }
        }
    }

    /// Learn from a refusal what to leave out or rename from now on; `true` when there
    /// was something new to learn (the request is then worth sending again).
    fn learn_refusal(&self, message: &str) -> bool {
        if message.contains("max_completion_tokens") {
            return !self.max_completion_tokens.swap(true, Ordering::Relaxed);
        }
        // A server without structured output, in whatever words: the agent validates the
        // answer instead.
        let field = if message.contains("response_format") {
            Some("response_format")
        } else if message.contains(affinity::PROMPT_CACHE_KEY) {
            // Whatever the server says of it: the key only helps, and is safe to leave out.
            Some(affinity::PROMPT_CACHE_KEY)
        } else {
            refused_field(message)
        };
        let Some(field) = field else {
            return false;
        };
        let mut refused = self.refused.lock().unwrap_or_else(|e| e.into_inner());
        if refused.contains(&field) {
            return false;
        }
        tracing::debug!(field, "the server refuses this field: left out from now on");
        refused.push(field);
        true
    }

    /// `body` without the fields the server refused.
    fn without_refused(&self, mut body: Value) -> Value {
        let refused = self.refused.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(object) = body.as_object_mut() {
            for field in refused.iter() {
                object.remove(*field);
            }
        }
        body
    }

    /// The tokens of `request`'s prompt as llama-server renders (`/apply-template`) and
    /// tokenizes (`/tokenize`) it.
    async fn count(&self, request: &LlmRequest) -> Result<u64, Error> {
        let mode = if self.text_mode.load(Ordering::Relaxed) {
            Mode::Text
        } else {
            Mode::Native
        };
        let body = self.without_refused(wire::request_body(
            &self.model,
            request,
            mode,
            self.dialect(),
            false,
            None,
        ));
        let deadline = Instant::now() + DISCOVERY_TIMEOUT;
        let context = Context {
            url: self.urls.apply_template.to_string(),
            key_sent: self.config.api_key.is_some(),
            limit: DISCOVERY_TIMEOUT,
            ..Context::default()
        };
        let rendered = self
            .post_apply_template(&body, context.clone())
            .await
            .map_err(|f| f.error)?;
        let rendered = http::read_json(rendered, http::REPLY_CAP, deadline).await?;
        let prompt = rendered
            .get("prompt")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::Protocol("/apply-template gave no prompt".into()))?;
        let tokenize =
            serde_json::json!({"content": prompt, "add_special": true, "parse_special": true});
        let tokens = http::send(
            self.http.post(self.urls.tokenize.clone()).json(&tokenize),
            &self.urls.tokenize,
            deadline,
            self.config.connect_timeout,
            &context,
        )
        .await
        .map_err(|f| f.error)?;
        let tokens = http::read_json(tokens, http::REPLY_CAP, deadline).await?;
        tokens
            .get("tokens")
            .and_then(Value::as_array)
            .map(|t| t.len() as u64)
            .ok_or_else(|| Error::Protocol("/tokenize gave no tokens".into()))
    }

    /// `POST {base}/chat/completions` with `body` (and the header that carries `session`'s
    /// key, when configured), its headers awaited until `deadline`.
    async fn post_chat(
        &self,
        body: &Value,
        session: Option<&SessionKey>,
        deadline: Instant,
        context: &Context,
    ) -> Result<reqwest::Response, Failure> {
        let request = self.http.post(self.urls.chat.clone()).json(body);
        http::send(
            self.affinity.with_header(request, session),
            &self.urls.chat,
            deadline,
            self.config.connect_timeout,
            context,
        )
        .await
    }

    /// Whether the server takes `tools` for the model: one request for one token.
    async fn probe_tools(&self) -> Result<bool, Error> {
        let mut request = LlmRequest::new(vec![core_models::ChatMessage::user("Say OK.")]);
        request.tools = vec![core_models::ToolDefinition::new(
            "aintern_probe",
            "Probe",
            "Answers nothing.",
        )];
        request.options.max_tokens = 1;
        request.options.temperature = 0.0;
        if self.info.llama_server {
            if let Some(takes) = self.probe_by_template(&request).await {
                return Ok(takes);
            }
        }
        let mut attempt = 0;
        let mut rounds = 0;
        while rounds <= REFUSABLE.len() {
            let body = wire::request_body(
                &self.model,
                &request,
                Mode::Native,
                self.dialect(),
                false,
                None,
            );
            let deadline = Instant::now() + self.config.first_token_timeout;
            let context = self.context(&request, Mode::Native);
            let body = self.without_refused(body);
            let sent = self.post_chat(&body, None, deadline, &context).await;
            match sent {
                Ok(_) => return Ok(true),
                Err(Failure {
                    error: Error::ToolsRejected { message },
                    ..
                }) => {
                    tracing::debug!(%message, "the server does not take tools: text mode");
                    return Ok(false);
                }
                Err(Failure {
                    error: Error::Rejected { message, .. },
                    ..
                }) if self.learn_refusal(&message) => {
                    rounds += 1;
                }
                // A server still loading its model answers 503 for a while; a 500 to a
                // one-token probe is not worth waiting for.
                Err(failure) => match generate::retry_wait(&self.config, &failure, attempt)
                    .filter(|_| !matches!(failure.error, Error::Server { status: 500, .. }))
                {
                    Some(wait) => {
                        tokio::time::sleep(wait).await;
                        attempt += 1;
                    }
                    // What says the server cannot be used at all is said now.
                    None if matches!(
                        failure.error,
                        Error::Connect { .. }
                            | Error::Unauthorized { .. }
                            | Error::UnknownModel { .. }
                            | Error::NotFound { .. }
                    ) =>
                    {
                        return Err(self.explain(failure.error).await)
                    }
                    // Anything else (a one-token reply its parser rejects, a 500) says
                    // nothing against tools: the real requests will tell.
                    None => {
                        tracing::debug!(error = %failure.error, "the probe failed; tools are sent natively");
                        return Ok(true);
                    }
                },
            }
        }
        Ok(true)
    }

    /// llama-server is asked whether it takes tools by rendering the probe
    /// (`/apply-template` parses a request as a chat request does, and refuses tools
    /// without `--jinja` the same way) instead of running it: a probe run as a chat
    /// request would take the server's slot, and on a server of one slot the prompt it
    /// kept from the last request (the system prompt and tools every request starts with)
    /// would be read again. `None` when the render says nothing either way (no such
    /// endpoint, a failure): the chat probe decides.
    async fn probe_by_template(&self, request: &LlmRequest) -> Option<bool> {
        let body = self.without_refused(wire::request_body(
            &self.model,
            request,
            Mode::Native,
            self.dialect(),
            false,
            None,
        ));
        let sent = self
            .post_apply_template(&body, self.context(request, Mode::Native))
            .await;
        match sent {
            Ok(_) => Some(true),
            Err(Failure {
                error: Error::ToolsRejected { message },
                ..
            }) => {
                tracing::debug!(%message, "the server does not take tools: text mode");
                Some(false)
            }
            Err(failure) => {
                tracing::debug!(error = %failure.error, "no template probe; a chat probe");
                None
            }
        }
    }

    /// `POST /apply-template` with `body` (llama-server renders it as a chat request's
    /// prompt and runs nothing), its headers awaited for [`DISCOVERY_TIMEOUT`]; `context`
    /// is the request's, for the error's words.
    async fn post_apply_template(
        &self,
        body: &Value,
        context: Context,
    ) -> Result<reqwest::Response, Failure> {
        let context = Context {
            url: self.urls.apply_template.to_string(),
            limit: DISCOVERY_TIMEOUT,
            ..context
        };
        http::send(
            self.http.post(self.urls.apply_template.clone()).json(body),
            &self.urls.apply_template,
            Instant::now() + DISCOVERY_TIMEOUT,
            self.config.connect_timeout,
            &context,
        )
        .await
    }

    /// An error made more useful: an unknown model lists the models the server has.
    async fn explain(&self, error: Error) -> Error {
        match error {
            Error::UnknownModel { model, .. } => {
                let available = match get_json(
                    &self.http,
                    &self.urls.models,
                    &self.config,
                    Instant::now() + DISCOVERY_TIMEOUT,
                )
                .await
                {
                    Ok(json) => discover::models(&json).into_iter().map(|m| m.id).collect(),
                    Err(_) => self
                        .info
                        .models
                        .iter()
                        .map(|m| m.id.clone())
                        .collect::<Vec<_>>(),
                };
                Error::UnknownModel { model, available }
            }
            other => other,
        }
    }
}

/// Optional request fields a server may refuse, and be asked again without.
const REFUSABLE: [&str; 10] = [
    "response_format",
    "temperature",
    "top_p",
    "seed",
    "stop",
    "top_k",
    "min_p",
    "repeat_penalty",
    "stream_options",
    affinity::PROMPT_CACHE_KEY,
];

/// The optional field a refusal names, as OpenAI and compatible servers word it
/// ("Unsupported parameter: 'temperature'…", "Unsupported value: 'top_p'…",
/// "Unrecognized request argument supplied: top_k").
fn refused_field(message: &str) -> Option<&'static str> {
    let lower = message.to_ascii_lowercase();
    let named = [
        "unsupported parameter",
        "unsupported value",
        "unrecognized request argument supplied",
    ]
    .iter()
    .find_map(|phrase| lower.find(phrase).map(|at| &lower[at + phrase.len()..]))?;
    let first_word: String = named
        .trim_start_matches([':', ' ', '\'', '"'])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    REFUSABLE.iter().copied().find(|f| *f == first_word)
}

/// `GET url` as JSON, retried like a generation (a server still loading its model answers
/// 503 for a while).
async fn get_json(
    http: &reqwest::Client,
    url: &reqwest::Url,
    config: &OpenAiConfig,
    deadline: Instant,
) -> Result<Value, Error> {
    let context = Context {
        url: url.to_string(),
        key_sent: config.api_key.is_some(),
        limit: deadline.saturating_duration_since(Instant::now()),
        ..Context::default()
    };
    let mut attempt = 0;
    loop {
        let sent = http::send(
            http.get(url.clone()),
            url,
            deadline,
            config.connect_timeout,
            &context,
        )
        .await;
        match sent {
            Ok(response) => return http::read_json(response, http::DISCOVERY_CAP, deadline).await,
            Err(failure) => match generate::retry_wait(config, &failure, attempt) {
                Some(wait) if Instant::now() + wait < deadline => {
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
                _ => return Err(failure.error),
            },
        }
    }
}

#[async_trait]
impl LlmService for OpenAiLlm {
    fn model_name(&self) -> String {
        self.inner.model.clone()
    }

    fn chat_format(&self) -> Option<ChatFormat> {
        // The server's template, when it says which, tells what call language the model
        // knows.
        let known = self.inner.info.chat_template.as_deref().map(|template| {
            tool_calls::detect_template(template)
                .format
                .name()
                .to_string()
        });
        if self.tool_mode() == ToolMode::Native {
            // The server takes the calls apart; what it leaves as text is read in the
            // model's format too, for the spellings the server's parser does not read.
            return Some(ChatFormat::native().with_text_format(known));
        }
        // In text mode the model is asked as the in-process backend asks it.
        known.map(|format| {
            ChatFormat::default()
                .with_call_format(format)
                .with_renders_tools(false)
                .with_starts_in_thinking(false)
        })
    }

    fn model_details(&self) -> ModelDetails {
        let info = &self.inner.info;
        // llama-server serves its one model whatever name is asked for.
        let entry = info
            .models
            .iter()
            .find(|m| m.answers_to(&self.inner.model))
            .or(match info.models.as_slice() {
                [only] if info.llama_server => Some(only),
                _ => None,
            });
        ModelDetails::default()
            .with_parameters(entry.and_then(|m| m.parameters))
            .with_context_length(
                self.inner
                    .info
                    .context_length
                    .or_else(|| entry.and_then(|m| m.context_length)),
            )
    }

    /// On llama-server, the prompt as the server renders and tokenizes it; elsewhere
    /// `None` (the agent estimates).
    async fn count_tokens(&self, request: &LlmRequest) -> Result<Option<u64>, core_models::Error> {
        if !self.inner.info.llama_server {
            return Ok(None);
        }
        match self.inner.count(request).await {
            Ok(n) => Ok(Some(n)),
            Err(e) => {
                tracing::debug!(error = %e, "llama-server could not count; estimating");
                Ok(None)
            }
        }
    }

    async fn generate(&self, request: LlmRequest) -> Result<LlmStream, core_models::Error> {
        Ok(generate::stream(Arc::clone(&self.inner), request))
    }

    /// With `save_slots` on llama-server whose slots sessions are pinned to, the session's
    /// slot was saved as soon as its last reply ended (`POST /slots/{id}?action=save`, in
    /// one of [`OpenAiConfig::slot_files`] files under the server's `--slot-save-path`):
    /// whether it was.
    /// `Ok(false)` when nothing was saved: not configured, the slot already served another
    /// request, or the server cannot save (said once, then not asked again).
    ///
    /// # Errors
    /// The server's failure to save the last reply's slot.
    async fn keep_session(&self, session: &SessionKey) -> Result<bool, core_models::Error> {
        Ok(self.inner.keep_session(session).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::refused_field;

    #[test]
    fn refused_fields_in_every_wording() {
        for (message, field) in [
            (
                "Unsupported parameter: 'temperature' is not supported with this model.",
                Some("temperature"),
            ),
            (
                "Unsupported value: 'top_p' does not support 0.9 with this model.",
                Some("top_p"),
            ),
            (
                "Unrecognized request argument supplied: top_k",
                Some("top_k"),
            ),
            (
                "Unrecognized request argument supplied: prompt_cache_key",
                Some("prompt_cache_key"),
            ),
            ("Unsupported parameter: 'tools'", None),
            ("something else about temperature", None),
        ] {
            assert_eq!(refused_field(message), field, "{message}");
        }
    }
}
