//! Keeping each generation inside the model's context window: the prompt's tokens plus
//! the reply's allowance must fit. The allowance is the request's `max_tokens`, but never
//! more than a quarter of the window ([`REPLY_SHARE`]): a reply allowance as large as the
//! window would leave the prompt nothing. When prompt and allowance would not fit, the
//! conversation is compacted, in this order, each step only when the one before was not
//! enough:
//!
//! 1. `tool_results` — results older than the latest round are cut to short stubs;
//! 2. `summary` — the turns before the current request are summarized by the model itself,
//!    in a request that is made to fit;
//! 3. the reply's token allowance is lowered to what is left (not below a minimum).
//!
//! The system prompt and the current request are never dropped. Compaction aims well below
//! the window (not just under it), so that the new prefix stays stable — and the backend's
//! KV cache useful — for several turns. Each step that removed something is reported as a
//! `context_compacted` event (a lower allowance removes nothing, and is only logged); a
//! conversation that cannot fit is an error that says what to change.

use super::prompt;
use super::run::Run;
use core_models::{
    CancellationToken, ChatMessage, ContextCompactedEvent, Error, LlmChunk, LlmRequest, LlmService,
    MessageRole, ToolChoice,
};
use futures::StreamExt;
use std::sync::Arc;

/// Tokens a summary may take.
const SUMMARY_TOKENS: u32 = 256;
/// The smallest reply allowance compaction may leave.
const MIN_REPLY_TOKENS: u32 = 64;
/// After compaction the prompt aims at this share of what the window leaves it.
const TARGET_SHARE: f64 = 0.6;
/// Results shorter than this are kept as they are.
const STUB_BYTES: usize = 200;
/// The largest share of the window one reply may be allowed.
pub const REPLY_SHARE: f64 = 0.25;

/// The reply allowance for `max_tokens` in a window of `window` tokens: at most
/// [`REPLY_SHARE`] of it, and at least 64 tokens where the window has room.
pub fn reply_allowance(max_tokens: u32, window: u32) -> u32 {
    let share = (f64::from(window) * REPLY_SHARE) as u32;
    max_tokens.min(share.max(MIN_REPLY_TOKENS.min(window)))
}

/// About how many tokens `request` takes when the backend cannot count: 4 bytes a token,
/// plus a little for each message's markers, plus the tools' schemas.
pub fn estimate_tokens(request: &LlmRequest) -> u64 {
    let messages: usize = request
        .messages
        .iter()
        .map(|m| m.as_written().len() + 16)
        .sum();
    let tools: usize = request
        .tools
        .iter()
        .map(|t| t.description.len() + t.input_schema.to_string().len() + t.id.len())
        .sum();
    ((messages + tools) as u64).div_ceil(prompt::BYTES_PER_TOKEN as u64)
}

impl Run {
    /// The prompt's tokens, counted by the backend or estimated.
    pub(super) async fn count_tokens(&self, request: &LlmRequest) -> u64 {
        count_tokens(self.shared.ports.llm.as_ref(), request).await
    }

    /// Make `request` fit the context window, compacting the conversation (and rebuilding
    /// the request's messages with `system` first) when needed.
    ///
    /// # Errors
    /// [`Error::Llm`] when even the system prompt and the current request do not fit.
    pub(super) async fn fit_context(
        &mut self,
        request: &mut LlmRequest,
        system: Option<&str>,
    ) -> Result<(), Error> {
        let Some(window) = self.shared.ports.llm.model_details().context_length else {
            return Ok(());
        };
        request.options.max_tokens = reply_allowance(request.options.max_tokens, window);
        let window = u64::from(window);
        let allowance = u64::from(request.options.max_tokens);
        let mut tokens = self.count_tokens(request).await;
        if tokens + allowance <= window {
            return Ok(());
        }
        let target = ((window.saturating_sub(allowance)) as f64 * TARGET_SHARE) as u64;
        // 1. Old tool results to stubs.
        if self.stub_old_results() {
            *request = self.rebuilt(request, system);
            let after = self.count_tokens(request).await;
            self.compacted(tokens, after, "tool_results");
            tokens = after;
        }
        // 2. Earlier turns summarized.
        if tokens + allowance > window && tokens > target && self.request_start > 0 {
            self.summarize_earlier(window).await;
            *request = self.rebuilt(request, system);
            let after = self.count_tokens(request).await;
            self.compacted(tokens, after, "summary");
            tokens = after;
        }
        if tokens + allowance <= window {
            return Ok(());
        }
        // 3. A shorter reply: nothing is removed.
        let room = window.saturating_sub(tokens);
        if room >= u64::from(MIN_REPLY_TOKENS) {
            request.options.max_tokens = u32::try_from(room).unwrap_or(u32::MAX);
            tracing::debug!(
                tokens,
                room,
                "the reply's allowance lowered to fit the window"
            );
            return Ok(());
        }
        Err(Error::llm(format!(
            "the conversation does not fit the model's context window even after compaction: \
             the system prompt, the tools and the current request take {tokens} of its {window} \
             tokens, and a reply needs at least {MIN_REPLY_TOKENS}; give the model a larger \
             context (--context-size, or the server's), offer fewer tools, keep tool results \
             shorter (max_tool_result_tokens) or ask a shorter request"
        )))
    }

    fn compacted(&self, before: u64, after: u64, strategy: &str) {
        if after >= before {
            tracing::debug!(strategy, before, "compaction removed nothing");
            return;
        }
        self.emit(ContextCompactedEvent::create(
            self.request.request_id,
            before,
            after,
            strategy,
            self.iteration,
        ));
    }

    /// The request again, with the system prompt and the (compacted) history.
    fn rebuilt(&self, request: &LlmRequest, system: Option<&str>) -> LlmRequest {
        let mut messages = Vec::with_capacity(self.history.len() + 1);
        messages.extend(system.map(|s| ChatMessage::system(s.to_string())));
        messages.extend(self.history.iter().cloned());
        self.tell_listing(&mut messages);
        request.clone().with_messages(messages)
    }

    /// Cut every tool result older than the latest round to a stub; whether any was.
    fn stub_old_results(&mut self) -> bool {
        let latest_round = self
            .history
            .iter()
            .rposition(|m| m.role == MessageRole::Assistant && !m.tool_calls.is_empty())
            .unwrap_or(self.history.len());
        let mut changed = false;
        for message in &mut self.history[..latest_round] {
            if message.role == MessageRole::Tool && message.content.len() > STUB_BYTES {
                let first = message.content.lines().next().unwrap_or_default();
                let first: String = first.chars().take(80).collect();
                message.content = Arc::from(format!(
                    "{first}\n(earlier result of {} bytes, cut to save context)",
                    message.content.len()
                ));
                changed = true;
            }
        }
        changed
    }

    /// Replace the turns before the current request with one message summarizing them
    /// (the model's summary, or a note that they were left out when it cannot give one).
    async fn summarize_earlier(&mut self, window: u64) {
        let earlier: Vec<ChatMessage> = self.history[..self.request_start].to_vec();
        let summary = match self.summary_of(&earlier, window).await {
            Some(summary) => format!("Summary of the conversation so far:\n{summary}"),
            None => format!(
                "({} earlier messages were left out to fit the context window.)",
                earlier.len()
            ),
        };
        self.history
            .splice(..self.request_start, [ChatMessage::user(summary)]);
        self.request_start = 1;
    }

    /// The model's summary of `earlier`, from a request made to fit the window.
    async fn summary_of(&mut self, earlier: &[ChatMessage], window: u64) -> Option<String> {
        let llm = Arc::clone(&self.shared.ports.llm);
        let stop = self.handle.stop.clone();
        let summary = summarize(llm.as_ref(), earlier, window, &stop).await;
        if let Some(usage) = summary.usage {
            self.prompt_tokens = self.prompt_tokens.saturating_add(usage.prompt_tokens);
            self.completion_tokens = self
                .completion_tokens
                .saturating_add(usage.generated_tokens);
        }
        summary.text
    }
}

/// A conversation summarized by the model: what [`summarize`] gives.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// The summary; `None` when the model gave none (it failed, was stopped, or wrote
    /// nothing).
    pub text: Option<String>,
    /// What the summary's request used, when the backend reported it.
    pub usage: Option<core_models::LlmUsage>,
}

/// The model's summary of `earlier` in a few sentences (names, file names, numbers and
/// decisions kept), from a request made to fit a window of `window` tokens (the
/// transcript shortened in its middle until it does). What compaction puts in place of
/// earlier turns, and what a front-end's "compact now" (`/compact`) does.
pub async fn summarize(
    llm: &dyn LlmService,
    earlier: &[ChatMessage],
    window: u64,
    stop: &CancellationToken,
) -> Summary {
    let instructions = "Summarize the conversation below in a few short sentences. \
                        Keep names, file names, numbers and decisions. Write only the summary.";
    let mut transcript = prompt::render_plain(earlier);
    let mut request = LlmRequest::new(Vec::new());
    request.tool_choice = ToolChoice::None;
    request.options.temperature = 0.0;
    request.options.max_tokens = SUMMARY_TOKENS;
    // Shorten the transcript (keeping its beginning and end) until the request fits.
    for _ in 0..8 {
        request.messages = vec![
            ChatMessage::system(instructions),
            ChatMessage::user(transcript.clone()),
        ];
        let tokens = count_tokens(llm, &request).await;
        if tokens + u64::from(SUMMARY_TOKENS) <= window {
            break;
        }
        let keep = transcript.len() * 2 / 3;
        transcript = prompt::truncate_middle(&transcript, keep);
    }
    let mut out = Summary::default();
    let mut stream = tokio::select! {
        s = llm.generate(request) => match s {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!(error = %e, "the summary failed");
                return out;
            }
        },
        () = stop.cancelled() => return out,
    };
    let mut summary = String::new();
    loop {
        let item = tokio::select! {
            item = stream.next() => item,
            () = stop.cancelled() => return out,
        };
        let Some(item) = item else { break };
        match item {
            Ok(LlmChunk::Text { text }) => summary.push_str(&text),
            // Each report is the whole usage so far; the last one is counted.
            Ok(LlmChunk::Usage(reported)) => out.usage = Some(reported),
            Ok(_) => {}
            Err(e) => {
                tracing::debug!(error = %e, "the summary failed");
                summary.clear();
                break;
            }
        }
        if summary.len() > usize::try_from(SUMMARY_TOKENS).unwrap_or(256) * 8 {
            break;
        }
    }
    let summary = summary.trim().to_string();
    out.text = (!summary.is_empty()).then_some(summary);
    out
}

/// The prompt's tokens, counted by the backend or estimated.
async fn count_tokens(llm: &dyn LlmService, request: &LlmRequest) -> u64 {
    match llm.count_tokens(request).await {
        Ok(Some(n)) => n,
        Ok(None) => estimate_tokens(request),
        Err(e) => {
            tracing::debug!(error = %e, "the backend could not count; estimating");
            estimate_tokens(request)
        }
    }
}
