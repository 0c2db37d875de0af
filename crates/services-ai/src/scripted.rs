//! A language model that plays back prepared responses: the `--backend script:FILE`
//! backend, which makes every loop behaviour reproducible without a model, and the
//! workhorse of the tests.

use async_trait::async_trait;
use core_models::{Error, LlmChunk, LlmRequest, LlmService, LlmStream, LlmUsage};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One prepared response: the chunks it streams, the delay before each chunk, and an
/// optional failure.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ScriptedResponse {
    /// Text pieces, streamed in order.
    #[serde(default)]
    pub chunks: Vec<String>,
    /// Items a server would send already taken apart (`{"type": "reasoning", "text": …}`,
    /// `{"type": "tool_call", "id": …, "name": …, "arguments": "{…}"}`), streamed after
    /// the text pieces.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<LlmChunk>,
    /// Wait this long before each chunk, in milliseconds.
    #[serde(default)]
    pub delay_ms: u64,
    /// Fail instead of starting the generation.
    #[serde(default)]
    pub fail: Option<String>,
    /// Fail with this message after the chunks instead of finishing.
    #[serde(default)]
    pub fail_after_chunks: Option<String>,
    /// Send nothing more after the chunks, never finishing (a model that fell silent).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stall_after_chunks: bool,
}

impl ScriptedResponse {
    /// A response streaming these chunks.
    pub fn chunks<I, S>(chunks: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ScriptedResponse {
            chunks: chunks.into_iter().map(Into::into).collect(),
            ..Default::default()
        }
    }

    /// A response streaming `text` split into pieces of at most `size` characters.
    pub fn split(text: &str, size: usize) -> Self {
        let chars: Vec<char> = text.chars().collect();
        Self::chunks(
            chars
                .chunks(size.max(1))
                .map(|c| c.iter().collect::<String>()),
        )
    }

    /// A call that fails to start with `message`.
    pub fn failure(message: impl Into<String>) -> Self {
        ScriptedResponse {
            fail: Some(message.into()),
            ..Default::default()
        }
    }

    /// A response streaming these items (reasoning, native tool calls, text).
    pub fn items(items: impl IntoIterator<Item = LlmChunk>) -> Self {
        ScriptedResponse {
            items: items.into_iter().collect(),
            ..Default::default()
        }
    }

    /// Wait `delay` before each chunk.
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        self
    }

    /// Fail with `message` after the last chunk.
    pub fn then_fail(mut self, message: impl Into<String>) -> Self {
        self.fail_after_chunks = Some(message.into());
        self
    }

    /// Fall silent after the last chunk, never finishing.
    pub fn then_stall(mut self) -> Self {
        self.stall_after_chunks = true;
        self
    }
}

/// The `--backend script:FILE` format: `{"responses": [{"chunks": [...], "delay_ms": 0}]}`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Script {
    /// The responses, one per LLM call.
    pub responses: Vec<ScriptedResponse>,
}

/// A model that answers each call with the next [`ScriptedResponse`]. When the responses
/// run out, the call fails with a clear LLM error. Every request it receives is recorded.
#[derive(Debug, Default)]
pub struct ScriptedLlm {
    responses: Mutex<VecDeque<ScriptedResponse>>,
    received: Mutex<Vec<LlmRequest>>,
    chat_format: Option<core_models::ChatFormat>,
    context_window: Option<u32>,
    parameters: Option<u64>,
    /// Whether it takes a [`core_models::ReplyConstraint`] (as a backend with grammars).
    no_constraints: bool,
}

impl ScriptedLlm {
    /// A model answering with `responses`, in order.
    pub fn new(responses: impl IntoIterator<Item = ScriptedResponse>) -> Self {
        ScriptedLlm {
            responses: Mutex::new(responses.into_iter().collect()),
            received: Mutex::new(Vec::new()),
            chat_format: None,
            context_window: None,
            parameters: None,
            no_constraints: false,
        }
    }

    /// The same model, reporting `parameters` as its size (what `steering = "auto"` and
    /// the small-model preset key on).
    pub fn with_parameters(mut self, parameters: u64) -> Self {
        self.parameters = Some(parameters);
        self
    }

    /// The same model, as a backend that cannot hold a reply to a
    /// [`core_models::ReplyConstraint::OneOf`]: such a request fails with
    /// [`Error::Unsupported`] (and takes no response). An answer schema is taken (the
    /// agent validates the answer).
    pub fn without_constraints(mut self) -> Self {
        self.no_constraints = true;
        self
    }

    /// The same model, with a context window of `tokens` (prompts are counted as the
    /// agent estimates them).
    pub fn with_context_window(mut self, tokens: u32) -> Self {
        self.context_window = Some(tokens);
        self
    }

    /// The same model, reporting `format` as its chat template's (as a real backend
    /// does).
    pub fn with_chat_format(mut self, format: core_models::ChatFormat) -> Self {
        self.chat_format = Some(format);
        self
    }

    /// A model answering each call with one text, as a single chunk.
    pub fn from_texts<I, S>(texts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::new(texts.into_iter().map(|t| ScriptedResponse::chunks([t])))
    }

    /// A model from the JSON script format.
    ///
    /// # Errors
    /// The JSON error when `json` is not a valid script.
    pub fn from_json(json: &str) -> Result<Self, serde_json::Error> {
        // Each chunk allocated once (a script may carry a file of many megabytes).
        let script: Script = match tool_calls::value::from_str(json) {
            Some(value) => serde_json::from_value(value)?,
            None => serde_json::from_str(json)?,
        };
        Ok(Self::new(script.responses))
    }

    /// A model from the JSON script format, read from `reader` (with no copy of the whole
    /// text: a script carrying a 50 MB file costs about 50 MB).
    ///
    /// # Errors
    /// The error in words when the text cannot be read or is not a valid script.
    pub fn from_reader(reader: impl std::io::Read) -> Result<Self, String> {
        let value = tool_calls::value::from_reader(std::io::BufReader::new(reader))
            .ok_or_else(|| "it cannot be read, or it is not JSON".to_string())?;
        let script: Script = serde_json::from_value(value).map_err(|e| e.to_string())?;
        Ok(Self::new(script.responses))
    }

    /// Add a response at the end.
    pub fn push(&self, response: ScriptedResponse) {
        self.responses
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(response);
    }

    /// Make the next call fail with `message`.
    pub fn fail_next(&self, message: impl Into<String>) {
        self.responses
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_front(ScriptedResponse::failure(message));
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<LlmRequest> {
        self.received
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// How many calls were made.
    pub fn calls(&self) -> usize {
        self.received
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }

    /// How many responses are left.
    pub fn remaining(&self) -> usize {
        self.responses
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }
}

#[async_trait]
impl LlmService for ScriptedLlm {
    fn model_name(&self) -> String {
        "scripted".to_string()
    }

    fn chat_format(&self) -> Option<core_models::ChatFormat> {
        self.chat_format.clone()
    }

    fn model_details(&self) -> core_models::ModelDetails {
        core_models::ModelDetails::default()
            .with_parameters(self.parameters)
            .with_context_length(self.context_window)
    }

    async fn generate(&self, request: LlmRequest) -> Result<LlmStream, Error> {
        let options = match &request.constraint {
            Some(core_models::ReplyConstraint::OneOf(options)) => Some(options.clone()),
            _ => None,
        };
        let prompt_chars: usize = request.messages.iter().map(|m| m.content.len()).sum();
        let request_max_tokens = request.options.max_tokens.max(1);
        // Without grammars, a choice cannot be held; an answer schema is validated by the
        // agent whatever the backend, so it is never refused.
        let unsupported = self.no_constraints
            && matches!(
                request.constraint,
                Some(core_models::ReplyConstraint::OneOf(_))
            );
        let call = {
            let mut received = self.received.lock().unwrap_or_else(|e| e.into_inner());
            received.push(request);
            received.len()
        };
        if unsupported {
            return Err(Error::Unsupported(
                "this scripted model holds no reply constraint".into(),
            ));
        }
        let Some(response) = self
            .responses
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front()
        else {
            return Err(Error::llm(format!(
                "the script has no response left for LLM call {call}"
            )));
        };
        if let Some(message) = response.fail {
            return Err(Error::llm(message));
        }
        // A backend with grammars cannot reply outside the options: a script that does
        // is wrong.
        if let Some(options) = options {
            let reply: String = response.chunks.concat();
            if !options.contains(&reply) {
                return Err(Error::llm(format!(
                    "the script replies {reply:?} where the request allows only {options:?}"
                )));
            }
        }
        let started = Instant::now();
        let delay = Duration::from_millis(response.delay_ms);
        // Each chunk is a token: a reply longer than its allowance is cut, as a model's is.
        let allowance = request_max_tokens as usize;
        let hit_token_limit = response.chunks.len() > allowance;
        let mut response = response;
        response.chunks.truncate(allowance);
        let generated = (response.chunks.len() + response.items.len()) as u64;
        let prompt_tokens = (prompt_chars as u64).div_ceil(4);
        let fail_after = response.fail_after_chunks;
        let stall = response.stall_after_chunks;
        // Items that bring their own usage replace the one made up here.
        let own_usage = response
            .items
            .iter()
            .any(|i| matches!(i, LlmChunk::Usage(_)));
        // As the real backends do, the prompt's counts come first (the usage so far), and
        // the whole usage after the reply replaces them.
        let prompt_usage = (!own_usage).then(|| {
            LlmChunk::Usage(
                LlmUsage::default()
                    .with_prompt_tokens(prompt_tokens)
                    .with_prompt_tokens_evaluated(prompt_tokens),
            )
        });
        let items: Vec<LlmChunk> = prompt_usage
            .into_iter()
            .chain(response.chunks.into_iter().map(LlmChunk::text))
            .chain(response.items)
            .collect();
        let stream = futures::stream::unfold(
            (items.into_iter(), Some(fail_after), None::<Duration>),
            move |(mut chunks, tail, mut first)| async move {
                if let Some(chunk) = chunks.next() {
                    // Counts come at once; the delay is the model's, before each piece.
                    let counts = matches!(chunk, LlmChunk::Usage(_));
                    if !delay.is_zero() && !counts {
                        tokio::time::sleep(delay).await;
                    }
                    if !counts {
                        first.get_or_insert_with(|| started.elapsed());
                    }
                    return Some((Ok(chunk), (chunks, tail, first)));
                }
                if stall {
                    futures::future::pending::<()>().await;
                }
                match tail {
                    Some(Some(message)) => Some((Err(Error::llm(message)), (chunks, None, first))),
                    Some(None) if own_usage => None,
                    Some(None) => {
                        let usage = LlmUsage::default()
                            .with_prompt_tokens(prompt_tokens)
                            .with_prompt_tokens_evaluated(prompt_tokens)
                            .with_cached_prompt_tokens(0)
                            .with_generated_tokens(generated)
                            .with_time_to_first_token(first.unwrap_or_default())
                            .with_prompt_time(Duration::ZERO)
                            .with_generation_time(started.elapsed())
                            .with_hit_token_limit(hit_token_limit);
                        Some((Ok(LlmChunk::Usage(usage)), (chunks, None, first)))
                    }
                    None => None,
                }
            },
        );
        Ok(Box::pin(stream))
    }
}
