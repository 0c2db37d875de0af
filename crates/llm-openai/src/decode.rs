//! Turning a server's chunks into [`LlmChunk`]s: text and reasoning as they come, tool
//! calls assembled from their pieces and delivered whole at the end, then the usage.
//!
//! Servers disagree on how calls are streamed: OpenAI sends an `id` and `name` first and
//! the arguments in pieces under the same `index`; some send each call whole in one chunk;
//! some give every call `index` 0 (each with its own `id`); some repeat the name in every
//! piece. A piece with an id that is not yet known starts a new call; a piece without one
//! continues the latest call with its index (or the latest call).

use crate::classify::Context;
use crate::error::Error;
use crate::wire::{Chunk, Delta, PromptProgress, Timings, ToolCallDelta, Usage};
use core_models::{LlmChunk, LlmToolCall, LlmUsage};
use serde_json::Value;
use std::time::Duration;

/// Most bytes of text, reasoning and arguments in one reply.
pub(crate) const MAX_REPLY_BYTES: usize = 64 * 1024 * 1024;
/// Most tool calls in one reply.
pub(crate) const MAX_CALLS: usize = 128;
/// Longest tool call id (ids go back to the server with every later request).
pub(crate) const MAX_ID_BYTES: usize = 256;

/// One call being assembled.
#[derive(Debug, Default)]
struct PartialCall {
    index: Option<u64>,
    id: Option<String>,
    name: String,
    arguments: String,
}

/// The state of one reply.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    /// What the request was, for errors reported inside the stream.
    context: Context,
    calls: Vec<PartialCall>,
    usage: Option<Usage>,
    timings: Option<Timings>,
    finish_reason: Option<String>,
    done: bool,
    bytes: usize,
    /// Text and reasoning pieces delivered (a token count when the server gives none).
    pieces: u64,
    /// Whether the prompt's counts were reported before the reply.
    prompt_reported: bool,
}

/// What a reply's end looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// `[DONE]` or a finish reason came: the reply is whole.
    Complete,
    /// The stream stopped without either: the reply may be cut.
    Truncated,
}

impl Decoder {
    /// A decoder for the reply to the request `context` describes.
    pub(crate) fn new(context: Context) -> Self {
        Decoder {
            context,
            ..Decoder::default()
        }
    }

    /// Bytes of text, reasoning and call pieces so far: grows while the reply does.
    pub(crate) fn progress(&self) -> usize {
        self.bytes
    }

    /// Whether `[DONE]` was seen.
    pub(crate) fn is_done(&self) -> bool {
        self.done
    }

    /// One SSE event's data: the chunks to deliver now.
    ///
    /// # Errors
    /// [`Error::MalformedStream`] for data that is not a chunk; the server's error when
    /// the chunk is one; [`Error::TooLarge`] past the reply's limits.
    pub(crate) fn event(&mut self, data: &str) -> Result<Vec<LlmChunk>, Error> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(Vec::new());
        }
        if data.is_empty() {
            return Ok(Vec::new());
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
            Error::MalformedStream(format!(
                "an event is not a JSON chunk ({e}): {}",
                snippet(data)
            ))
        })?;
        self.chunk(chunk)
    }

    /// One chunk (streamed, or a whole reply's body).
    pub(crate) fn chunk(&mut self, chunk: Chunk) -> Result<Vec<LlmChunk>, Error> {
        if let Some(error) = chunk.error {
            return Err(crate::classify::stream_error(&error, &self.context));
        }
        if chunk.usage.is_some() {
            self.usage = chunk.usage;
        }
        if chunk.timings.is_some() {
            self.timings = chunk.timings;
        }
        let mut out = Vec::new();
        if let Some(progress) = chunk.prompt_progress {
            out.extend(reading(&progress).map(LlmChunk::Progress));
            out.extend(self.prompt_done(&progress).map(LlmChunk::Usage));
        }
        for choice in chunk.choices {
            if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
                self.finish_reason = Some(reason);
            }
            for delta in [choice.delta, choice.message].into_iter().flatten() {
                self.delta(delta, &mut out)?;
            }
        }
        Ok(out)
    }

    fn delta(&mut self, delta: Delta, out: &mut Vec<LlmChunk>) -> Result<(), Error> {
        if let Some(reasoning) = delta.reasoning_text().filter(|r| !r.is_empty()) {
            self.grow(reasoning.len())?;
            self.pieces += 1;
            out.push(LlmChunk::reasoning(reasoning));
        }
        if let Some(text) = delta.text().filter(|t| !t.is_empty()) {
            self.grow(text.len())?;
            self.pieces += 1;
            out.push(LlmChunk::text(text));
        }
        for piece in delta.tool_calls.into_iter().flatten() {
            self.call_piece(piece)?;
        }
        Ok(())
    }

    fn grow(&mut self, bytes: usize) -> Result<(), Error> {
        self.bytes = self.bytes.saturating_add(bytes);
        if self.bytes > MAX_REPLY_BYTES {
            return Err(Error::TooLarge(format!(
                "the reply passed {} MiB; it was stopped",
                MAX_REPLY_BYTES / (1024 * 1024)
            )));
        }
        Ok(())
    }

    fn call_piece(&mut self, piece: ToolCallDelta) -> Result<(), Error> {
        let id = piece.id.filter(|id| !id.trim().is_empty());
        if id.as_ref().is_some_and(|id| id.len() > MAX_ID_BYTES) {
            return Err(Error::TooLarge(format!(
                "the server gave a tool call an id of more than {MAX_ID_BYTES} bytes"
            )));
        }
        let existing = match (&id, piece.index) {
            // A known id continues its call, unless it comes under another index (a server
            // that gave two calls one id).
            (Some(id), index) => self.calls.iter().rposition(|c| {
                c.id.as_deref() == Some(id.as_str())
                    && (index.is_none() || c.index.is_none() || c.index == index)
            }),
            (None, Some(index)) => self.calls.iter().rposition(|c| c.index == Some(index)),
            (None, None) => self.calls.len().checked_sub(1),
        };
        let position = match existing {
            Some(position) => position,
            None => {
                if self.calls.len() >= MAX_CALLS {
                    return Err(Error::TooLarge(format!(
                        "the reply made more than {MAX_CALLS} tool calls"
                    )));
                }
                self.grow(id.as_ref().map_or(0, String::len))?;
                self.calls.push(PartialCall {
                    index: piece.index,
                    id,
                    ..PartialCall::default()
                });
                self.calls.len() - 1
            }
        };
        let Some(function) = piece.function else {
            return Ok(());
        };
        let mut grown = 0;
        let call = &mut self.calls[position];
        if let Some(name) = function.name.filter(|n| !n.is_empty()) {
            // A name repeated in every piece is said once; a name sent in pieces is joined.
            if call.name != name {
                grown += name.len();
                call.name.push_str(&name);
            }
        }
        match function.arguments {
            Some(Value::String(text)) => {
                grown += text.len();
                call.arguments.push_str(&text);
            }
            Some(Value::Null) | None => {}
            // Arguments sent as the object itself: the whole arguments, not a piece.
            Some(object) => {
                let text = object.to_string();
                grown += text.len();
                call.arguments = text;
            }
        }
        self.grow(grown)
    }

    /// The reply ended: its calls (whole, with unique ids) and the usage. `ttft` is the
    /// time to the first piece and `total` the reply's time, as the client saw them.
    ///
    /// # Errors
    /// [`Error::Disconnected`] when the stream stopped without `[DONE]` or a finish reason
    /// and left a call unfinished (a cut call is never delivered).
    pub(crate) fn finish(
        &mut self,
        ending: Ending,
        ttft: Option<Duration>,
        total: Duration,
    ) -> Result<Vec<LlmChunk>, Error> {
        let complete = ending == Ending::Complete || self.done || self.finish_reason.is_some();
        if !complete {
            return Err(Error::Disconnected {
                after_output: self.pieces > 0 || !self.calls.is_empty(),
                reason: "the stream ended before the reply was complete".into(),
            });
        }
        let mut out = Vec::new();
        let mut seen: Vec<String> = Vec::new();
        let cut_short = self.finish_reason.as_deref() == Some("length");
        for call in std::mem::take(&mut self.calls) {
            // The token limit may have cut the last call: one whose arguments are not
            // whole JSON is not delivered (its name may be cut too).
            if cut_short && !is_whole_json(&call.arguments) {
                tracing::warn!(tool = %call.name, "a tool call cut off by the token limit was dropped");
                continue;
            }
            let id = call.id.map(|id| unique(id, &seen));
            if let Some(id) = &id {
                seen.push(id.clone());
            }
            out.push(LlmChunk::ToolCall(LlmToolCall {
                id,
                name: call.name,
                arguments: call.arguments,
            }));
        }
        out.push(LlmChunk::Usage(self.usage_record(ttft, total)));
        Ok(out)
    }

    /// The prompt's counts, once, when the server reports the whole prompt in its cache:
    /// the usage so far, which the reply's own replaces when it ends.
    fn prompt_done(&mut self, progress: &PromptProgress) -> Option<LlmUsage> {
        let total = progress.total.filter(|&t| t > 0)?;
        if self.prompt_reported || progress.processed? < total {
            return None;
        }
        self.prompt_reported = true;
        let cached = progress.cache.unwrap_or_default().min(total);
        let time = ms(progress.time_ms).unwrap_or_default();
        Some(
            LlmUsage::default()
                .with_prompt_tokens(total)
                .with_prompt_tokens_evaluated(total - cached)
                .with_cached_prompt_tokens(cached)
                .with_prompt_time(time)
                .with_time_to_first_token(time),
        )
    }

    /// The usage: the server's counts and timings where it sent them, the client's view
    /// otherwise.
    fn usage_record(&self, ttft: Option<Duration>, total: Duration) -> LlmUsage {
        let usage = self.usage.clone().unwrap_or_default();
        let timings = self.timings.clone().unwrap_or_default();
        let ttft = ttft.unwrap_or(total);
        let prompt_tokens = usage
            .prompt_tokens
            .or_else(|| {
                timings
                    .prompt_n
                    .map(|n| n.saturating_add(timings.cache_n.unwrap_or_default()))
            })
            .unwrap_or_default();
        let cached = usage
            .prompt_tokens_details
            .and_then(|d| d.cached_tokens)
            .or(timings.cache_n)
            .unwrap_or_default()
            .min(prompt_tokens);
        LlmUsage::default()
            .with_prompt_tokens(prompt_tokens)
            .with_prompt_tokens_evaluated(prompt_tokens - cached)
            .with_cached_prompt_tokens(cached)
            .with_generated_tokens(
                usage
                    .completion_tokens
                    .or(timings.predicted_n)
                    .unwrap_or(self.pieces),
            )
            .with_time_to_first_token(ttft)
            .with_prompt_time(ms(timings.prompt_ms).unwrap_or(ttft))
            .with_generation_time(
                ms(timings.predicted_ms).unwrap_or_else(|| total.saturating_sub(ttft)),
            )
            .with_hit_token_limit(self.finish_reason.as_deref() == Some("length"))
    }
}

/// A server's milliseconds as a duration (none for a negative or absurd value).
fn ms(value: Option<f64>) -> Option<Duration> {
    value.and_then(|v| Duration::try_from_secs_f64(v / 1000.0).ok())
}

/// Whether `text` is one whole JSON value.
fn is_whole_json(text: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

/// `id`, or `id-2`, `id-3`… when a server gave two calls the same id.
fn unique(id: String, seen: &[String]) -> String {
    if !seen.contains(&id) {
        return id;
    }
    (2..)
        .map(|n| format!("{id}-{n}"))
        .find(|candidate| !seen.contains(candidate))
        .unwrap_or(id)
}

/// The start of `text`, for error messages: at most 200 characters, with control
/// characters and the invisible ones that reorder or hide text escaped (a server's words
/// must not rewrite what the terminal shows).
pub(crate) fn snippet(text: &str) -> String {
    let hidden = |c: char| {
        c.is_control()
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2028}' | '\u{2029}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
    };
    let mut out = String::new();
    for c in text.chars().take(200) {
        if hidden(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if text.chars().nth(200).is_some() {
        out.push('…');
    }
    out
}

/// llama-server's report of how far it has read the prompt.
fn reading(progress: &PromptProgress) -> Option<core_models::PromptProgress> {
    let total = progress.total.filter(|&t| t > 0)?;
    Some(core_models::PromptProgress {
        done: progress.processed?.min(total),
        total,
        cached: progress.cache.unwrap_or_default().min(total),
        elapsed_ms: progress
            .time_ms
            .filter(|t| t.is_finite() && *t >= 0.0)
            .map_or(0, |t| t as u64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feed `events` (SSE data lines) and finish; the chunks delivered.
    fn decode(events: &[&str]) -> Result<Vec<LlmChunk>, Error> {
        let mut decoder = Decoder::default();
        let mut out = Vec::new();
        for event in events {
            out.extend(decoder.event(event)?);
        }
        out.extend(decoder.finish(Ending::Truncated, None, Duration::ZERO)?);
        Ok(out)
    }

    /// The usage reports among `chunks`, in order.
    fn usages(chunks: &[LlmChunk]) -> Vec<LlmUsage> {
        chunks
            .iter()
            .filter_map(|c| match c {
                LlmChunk::Usage(u) => Some(u.clone()),
                _ => None,
            })
            .collect()
    }

    fn calls(chunks: &[LlmChunk]) -> Vec<(Option<String>, String, String)> {
        chunks
            .iter()
            .filter_map(|c| match c {
                LlmChunk::ToolCall(c) => Some((c.id.clone(), c.name.clone(), c.arguments.clone())),
                _ => None,
            })
            .collect()
    }

    fn call(id: Option<&str>, name: &str, arguments: &str) -> (Option<String>, String, String) {
        (id.map(String::from), name.into(), arguments.into())
    }

    fn check(events: &[&str], expected: &[(Option<String>, String, String)]) {
        let chunks = decode(events).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(calls(&chunks), expected, "events: {events:?}");
    }

    #[test]
    fn openai_style_pieces_by_index() {
        check(
            &[
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"read_file","arguments":""}}]}}]}"#,
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]}}]}"#,
                r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"list_dir","arguments":"{}"}}]}}]}"#,
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":\"x\"}"}}]}}]}"#,
                r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
                "[DONE]",
            ],
            &[
                call(Some("a"), "read_file", r#"{"path":"x"}"#),
                call(Some("b"), "list_dir", "{}"),
            ],
        );
    }

    #[test]
    fn every_call_with_index_zero_and_its_own_id() {
        check(
            &[
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{\"n\":"}}]}}]}"#,
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}"#,
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"g","arguments":"{}"}}]}}]}"#,
                "[DONE]",
            ],
            &[
                call(Some("a"), "f", r#"{"n":1}"#),
                call(Some("b"), "g", "{}"),
            ],
        );
    }

    #[test]
    fn whole_calls_in_one_chunk_repeated_names_objects_and_no_index() {
        check(
            &[
                r#"{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":{"n":1}}},{"id":"b","function":{"name":"g","arguments":"{}"}}]}}]}"#,
                "[DONE]",
            ],
            &[
                call(Some("a"), "f", r#"{"n":1}"#),
                call(Some("b"), "g", "{}"),
            ],
        );
        check(
            &[
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{\"n\""}}]}}]}"#,
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":":2}"}}]}}]}"#,
                "[DONE]",
            ],
            &[call(Some("a"), "f", r#"{"n":2}"#)],
        );
    }

    #[test]
    fn names_in_pieces_are_joined_and_reused_ids_made_unique() {
        check(
            &[
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"read_"}}]}}]}"#,
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"file","arguments":"{}"}}]}}]}"#,
                "[DONE]",
            ],
            &[call(None, "read_file", "{}")],
        );
        check(
            &[
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"x","function":{"name":"f","arguments":"{}"}}]}}]}"#,
                r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"y","function":{"name":"g","arguments":"{}"}}]}}]}"#,
                r#"{"choices":[{"delta":{"tool_calls":[{"index":2,"id":"y","function":{"name":"h","arguments":"{}"}}]}}]}"#,
                "[DONE]",
            ],
            &[
                call(Some("x"), "f", "{}"),
                call(Some("y"), "g", "{}"),
                call(Some("y-2"), "h", "{}"),
            ],
        );
        assert_eq!(unique("y".into(), &["y".into(), "y-2".into()]), "y-3");
    }

    #[test]
    fn text_reasoning_and_usage_in_order() {
        let chunks = decode(&[
            r#"{"choices":[{"delta":{"role":"assistant","content":null}}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"hmm"}}]}"#,
            r#"{"choices":[{"delta":{"reasoning":" ok"}}]}"#,
            r#"{"choices":[{"delta":{"content":"Hi"}}]}"#,
            r#"{"choices":[{"delta":{"content":[{"type":"text","text":" there"}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":40,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":24}},"timings":{"prompt_n":16,"prompt_ms":50.0,"predicted_n":3,"predicted_ms":30.0,"cache_n":24}}"#,
            "[DONE]",
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(chunks[0], LlmChunk::reasoning("hmm"));
        assert_eq!(chunks[1], LlmChunk::reasoning(" ok"));
        assert_eq!(chunks[2], LlmChunk::text("Hi"));
        assert_eq!(chunks[3], LlmChunk::text(" there"));
        let LlmChunk::Usage(usage) = &chunks[4] else {
            panic!("no usage: {chunks:?}")
        };
        assert_eq!(
            (
                usage.prompt_tokens,
                usage.cached_prompt_tokens,
                usage.prompt_tokens_evaluated
            ),
            (40, 24, 16)
        );
        assert_eq!(usage.generated_tokens, 3);
        assert_eq!(usage.prompt_time, Duration::from_millis(50));
        assert_eq!(usage.generation_time, Duration::from_millis(30));
    }

    #[test]
    fn the_prompts_counts_come_once_when_the_server_has_the_whole_prompt() {
        // llama-server's `return_progress`: `processed` counts the cached tokens too.
        let chunks = decode(&[
            r#"{"choices":[{"delta":{"role":"assistant","content":null}}],"prompt_progress":{"total":45,"cache":44,"processed":44,"time_ms":0}}"#,
            r#"{"choices":[{"delta":{"role":"assistant","content":null}}],"prompt_progress":{"total":45,"cache":44,"processed":45,"time_ms":13}}"#,
            r#"{"choices":[],"prompt_progress":{"total":45,"cache":44,"processed":45,"time_ms":13}}"#,
            r#"{"choices":[{"delta":{"content":"Hi"}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":45,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":44}}}"#,
            "[DONE]",
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        let reports = usages(&chunks);
        assert_eq!(reports.len(), 2, "{chunks:?}");
        // Before the text: how far the prompt is read, and its counts once it is.
        let reading: Vec<(u64, u64, u64)> = chunks
            .iter()
            .filter_map(|c| match c {
                LlmChunk::Progress(p) => Some((p.done, p.total, p.cached)),
                _ => None,
            })
            .collect();
        assert_eq!(reading, [(44, 45, 44), (45, 45, 44), (45, 45, 44)]);
        let first = chunks.iter().find(|c| !matches!(c, LlmChunk::Progress(_)));
        assert!(matches!(first, Some(LlmChunk::Usage(_))), "{chunks:?}");
        let early = &reports[0];
        assert_eq!(
            (
                early.prompt_tokens,
                early.cached_prompt_tokens,
                early.prompt_tokens_evaluated,
                early.generated_tokens
            ),
            (45, 44, 1, 0)
        );
        assert_eq!(early.prompt_time, Duration::from_millis(13));
        // After it: the whole usage, which replaces it.
        assert_eq!(reports[1].generated_tokens, 1);

        // Progress that never covers the prompt, or is nonsense, reports nothing early;
        // a cache count past the prompt is held to it.
        let reports_of = |progress: &str| {
            usages(
                &decode(&[
                    &format!(r#"{{"choices":[],"prompt_progress":{progress}}}"#),
                    "[DONE]",
                ])
                .unwrap_or_else(|e| panic!("{e}")),
            )
        };
        for progress in [
            r#"{"total":45,"cache":0,"processed":20}"#,
            r#"{"total":0,"processed":0}"#,
            r#"{"cache":3}"#,
        ] {
            assert_eq!(reports_of(progress).len(), 1, "{progress}");
        }
        let reports = reports_of(r#"{"total":10,"cache":99,"processed":10,"time_ms":-1}"#);
        assert_eq!(reports.len(), 2);
        assert_eq!(
            (
                reports[0].cached_prompt_tokens,
                reports[0].prompt_tokens_evaluated
            ),
            (10, 0)
        );
        assert_eq!(reports[0].prompt_time, Duration::ZERO);
    }

    #[test]
    fn without_server_usage_the_client_counts() {
        let chunks = decode(&[
            r#"{"choices":[{"delta":{"content":"a"}}]}"#,
            r#"{"choices":[{"delta":{"content":"b"}}]}"#,
            "[DONE]",
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        let Some(LlmChunk::Usage(usage)) = chunks.last() else {
            panic!("no usage")
        };
        assert_eq!((usage.prompt_tokens, usage.generated_tokens), (0, 2));
    }

    #[test]
    fn a_cut_stream_is_an_error_and_its_calls_are_never_delivered() {
        let error = decode(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"write_file","arguments":"{\"path\":\"a\",\"content\":\"rm"}}]}}]}"#,
        ])
        .err();
        assert!(
            matches!(
                error,
                Some(Error::Disconnected {
                    after_output: true,
                    ..
                })
            ),
            "{error:?}"
        );
    }

    #[test]
    fn calls_cut_by_the_token_limit_are_dropped() {
        let cut = |args: &str| {
            format!(
                r#"{{"choices":[{{"delta":{{"tool_calls":[{{"index":1,"id":"b","function":{{"name":"delete","arguments":"{args}"}}}}]}}}}]}}"#
            )
        };
        for args in ["", "{\\\"path\\\": \\\"a"] {
            check(
                &[
                    r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}}]}}]}"#,
                    &cut(args),
                    r#"{"choices":[{"delta":{},"finish_reason":"length"}]}"#,
                    "[DONE]",
                ],
                &[call(Some("a"), "f", "{}")],
            );
        }
        // Without the limit, an empty argument list is no arguments.
        check(
            &[
                &cut(""),
                r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
            ],
            &[call(Some("b"), "delete", "")],
        );
    }

    #[test]
    fn absurd_ids_and_timings_are_refused_or_ignored() {
        let long = "x".repeat(MAX_ID_BYTES + 1);
        let e = decode(&[&format!(
            r#"{{"choices":[{{"delta":{{"tool_calls":[{{"id":"{long}","function":{{"name":"f"}}}}]}}}}]}}"#
        )])
        .err();
        assert!(matches!(e, Some(Error::TooLarge(_))), "{e:?}");
        let chunks = decode(&[
            r#"{"choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":18446744073709551615},"timings":{"prompt_ms":1e300,"predicted_ms":-5,"prompt_n":18446744073709551615,"cache_n":9}}"#,
            "[DONE]",
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(chunks.last(), Some(LlmChunk::Usage(_))));
    }

    #[test]
    fn snippets_escape_what_could_rewrite_the_terminal() {
        assert_eq!(snippet("it's \"fine\""), "it's \"fine\"");
        assert_eq!(snippet("a\x1b[2Jb\u{202e}c"), "a\\u{1b}[2Jb\\u{202e}c");
        assert_eq!(snippet(&"x".repeat(300)).chars().count(), 201);
    }

    #[test]
    fn malformed_events_and_errors_in_the_stream() {
        let e = decode(&["{not json"]).err();
        assert!(matches!(e, Some(Error::MalformedStream(_))), "{e:?}");
        let e = decode(&[r#"{"error":{"code":500,"message":"boom"}}"#]).err();
        assert!(
            matches!(&e, Some(Error::Server { status: 500, message }) if message == "boom"),
            "{e:?}"
        );
    }

    #[test]
    fn too_many_calls_or_bytes_stop_the_reply() {
        let mut decoder = Decoder::default();
        let mut result = Ok(Vec::new());
        for i in 0..=MAX_CALLS {
            result = decoder.event(&format!(
                r#"{{"choices":[{{"delta":{{"tool_calls":[{{"id":"c{i}","function":{{"name":"f","arguments":"{{}}"}}}}]}}}}]}}"#
            ));
            if result.is_err() {
                break;
            }
        }
        assert!(matches!(result, Err(Error::TooLarge(_))), "{result:?}");
    }
}
