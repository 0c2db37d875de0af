//! Asking the model: its reply streamed through the tool-call parser, text forwarded as
//! events (buffered as configured), calls gathered.

use super::repetition::{Repetition, RepetitionGuard};
use super::run::{Reply, Run, Stopped};
use core_models::{
    AgentErrorEvent, Error, LlmChunk, LlmRequest, LlmToolCall, LlmUsage, PromptProgressEvent,
    RepetitionDetectedEvent, TextGenerationEvent, ToolChoice, TurnState as S,
};
use futures::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use tool_calls::{FunctionCallParser, ParseEvent, StreamingFunctionCallParser};

/// Text waiting to be sent: the text, whether it is thinking, the chunks gathered.
type Pending = (String, bool, u32);

/// A piece of text longer than this (a whole reply sent at once) is parsed in slices.
const SLICED: usize = 1 << 20;
/// The size of those slices.
const SLICE: usize = 64 * 1024;

/// Whether the calls the parser holds back, with the reply's, now hold one call three
/// times (looked at only when more are held than `seen`).
fn held_loop(seen: &mut usize, reply: &Reply, parsing: &StreamingFunctionCallParser) -> bool {
    let held = parsing.held_calls();
    if held.len() <= *seen {
        *seen = held.len();
        return false;
    }
    *seen = held.len();
    let calls: Vec<&core_models::ToolCallRequest> = reply.calls.iter().chain(held).collect();
    super::repetition::calls_looped(&calls)
}

/// `text` in order, in slices of about [`SLICE`] bytes when it is longer than
/// [`SLICED`]: cut from its end, each cut freeing what it took, so that the text is held
/// once while the parser takes it in (and lets go of a slice once parsed).
fn slices(mut text: String) -> Vec<String> {
    if text.len() <= SLICED {
        return vec![text];
    }
    let mut cut = Vec::with_capacity(text.len() / SLICE + 1);
    while text.len() > SLICE {
        let mut at = text.len() - SLICE;
        while !text.is_char_boundary(at) {
            at += 1;
        }
        cut.push(text.split_off(at));
        text.shrink_to_fit();
    }
    cut.push(text);
    cut.reverse();
    cut
}

impl Run {
    /// Ask the model and stream its reply through the parser.
    pub(super) async fn generate(
        &mut self,
        request: LlmRequest,
        parser: &FunctionCallParser,
    ) -> Result<Reply, Result<Stopped, Error>> {
        let stop = self.handle.stop.clone();
        let llm = Arc::clone(&self.shared.ports.llm);
        let choice = request.tool_choice.clone();
        let held_to_schema = request.answer_schema().is_some();
        let mut stream = tokio::select! {
            r = llm.generate(request) => r.map_err(Err)?,
            _ = stop.cancelled() => return Err(Ok(Stopped)),
        };
        // A reply written again (a constrained decision that chose to answer) goes on in
        // the same state.
        if self.shared.turn.current_state() != S::ProcessingLlmResponse {
            self.turn(S::ProcessingLlmResponse, None);
        }
        let mut parsing = parser.streaming();
        let mut reply = Reply {
            raw: String::new(),
            raw_dropped: false,
            visible: String::new(),
            thinking: String::new(),
            calls: Vec::new(),
            raw_after_new_call: 0,
            looped: false,
            held_to_schema,
        };
        // How many calls the parser held back when last looked at.
        let mut held = 0;
        let buffer = if self.shared.config.enable_streaming {
            self.shared.config.streaming_buffer_size.max(1)
        } else {
            u32::MAX
        };
        let mut pending: Pending = (String::new(), false, 0);
        let mut usage: Option<LlmUsage> = None;
        let mut looping = RepetitionGuard::new(self.shared.config.repetition_min_chars as usize);
        let idle = Duration::from_millis(self.shared.config.stream_idle_timeout_ms);
        let started = self.tokens;
        // Whether the stream ended of itself (not stopped here, a loop cut short).
        let mut whole = false;
        loop {
            // Before the first piece, only the request timeout bounds the wait.
            let quiet = if self.tokens == started {
                Duration::MAX
            } else {
                idle
            };
            let item = tokio::select! {
                item = tokio::time::timeout(quiet, stream.next()) => item,
                _ = stop.cancelled() => {
                    let cut = (&mut parsing, &mut reply, &mut pending);
                    self.cut_short(cut, buffer, &mut looping);
                    self.settle_usage(usage, started, false);
                    return Err(Ok(Stopped));
                }
            };
            let Ok(item) = item else {
                let cut = (&mut parsing, &mut reply, &mut pending);
                self.cut_short(cut, buffer, &mut looping);
                self.settle_usage(usage, started, false);
                return Err(Err(Error::llm(format!(
                    "the model sent nothing for {}s in the middle of its reply; the \
                     generation was stopped (stream_idle_timeout_ms)",
                    idle.as_secs()
                ))));
            };
            match item {
                None => {
                    whole = true;
                    break;
                }
                Some(Err(e)) => {
                    self.flush_text(&mut pending);
                    self.settle_usage(usage, started, false);
                    return Err(Err(e));
                }
                // Each report is the whole usage so far; the last one holds.
                Some(Ok(LlmChunk::Usage(reported))) => usage = Some(reported),
                Some(Ok(LlmChunk::Progress(progress))) => self.emit(PromptProgressEvent::create(
                    self.request.request_id,
                    &progress,
                    self.iteration,
                )),
                Some(Ok(LlmChunk::Reasoning { text })) => {
                    self.tokens += 1;
                    pending.2 += 1;
                    let events = vec![ParseEvent::Thinking(text)];
                    if self.take_piece(events, &mut reply, &mut pending, buffer, &mut looping) {
                        break;
                    }
                }
                Some(Ok(LlmChunk::ToolCall(call))) => {
                    let event = self.native_call(parser, &call, &choice);
                    if self.take_piece(vec![event], &mut reply, &mut pending, buffer, &mut looping)
                    {
                        break;
                    }
                }
                Some(Ok(LlmChunk::Text { text })) => {
                    self.tokens += 1;
                    pending.2 += 1;
                    let mut looped = false;
                    for piece in slices(text) {
                        let events = parsing.process_token(&piece);
                        reply.keep(piece);
                        if self.take_piece(events, &mut reply, &mut pending, buffer, &mut looping) {
                            looped = true;
                            break;
                        }
                    }
                    // Calls kept back until the output shows what follows them: a model
                    // that writes them over and over never gets there. Stopped, they are
                    // settled below as the end of the output, and the loop is cut there.
                    if looped || (looping.is_on() && held_loop(&mut held, &reply, &parsing)) {
                        break;
                    }
                }
            }
        }
        // Dropping the stream ends a generation that was stopped early.
        let events = parsing.flush();
        let found =
            self.handle_parse_events(events, &mut reply, &mut pending, buffer, &mut looping);
        if let Some(found) = found.filter(|_| !reply.looped) {
            self.looped(&found, &mut reply);
        }
        self.flush_text(&mut pending);
        drop(stream);
        let usage = self.settle_usage(usage, started, whole);
        tracing::trace!(reply = %reply.raw, calls = reply.calls.len(), "the model's reply");
        let mut complete = TextGenerationEvent::complete(
            self.request.request_id,
            u32::try_from(self.tokens).unwrap_or(u32::MAX),
            self.iteration,
        );
        if let Some(usage) = usage {
            complete = complete.with_usage(usage);
        }
        self.emit(complete);
        Ok(reply)
    }

    /// The reply was cut short (the request stopped, or the model fell silent): the text
    /// the parser held back is released and shown, and what was written is kept in the
    /// conversation and as the answer so far, marked as cut. Its calls never run.
    fn cut_short(
        &mut self,
        (parsing, reply, pending): (&mut StreamingFunctionCallParser, &mut Reply, &mut Pending),
        buffer: u32,
        looping: &mut RepetitionGuard,
    ) {
        let events = parsing.flush();
        self.handle_parse_events(events, reply, pending, buffer, looping);
        self.flush_text(pending);
        let visible = reply.visible.trim();
        if !visible.is_empty() {
            self.final_response = visible.to_string();
            self.history
                .push(core_models::ChatMessage::assistant(format!(
                    "{visible}\n[the reply was cut short here]"
                )));
        }
    }

    /// Take in the parser's events for one streamed piece, sending text as the buffer
    /// fills; `true` when the reply has looped and its generation must stop.
    fn take_piece(
        &mut self,
        events: Vec<ParseEvent>,
        reply: &mut Reply,
        pending: &mut Pending,
        buffer: u32,
        looping: &mut RepetitionGuard,
    ) -> bool {
        let found = self.handle_parse_events(events, reply, pending, buffer, looping);
        if pending.2 >= buffer || found.is_some() {
            self.flush_text(pending);
        }
        match found {
            Some(found) => {
                self.looped(&found, reply);
                true
            }
            None => false,
        }
    }

    /// Count one reply's usage, once: the last report the backend sent. A backend may
    /// report the prompt's counts as soon as it is evaluated, before the reply, so a reply
    /// stopped early (a loop cut, a cancellation, an error) still counts its prompt; the
    /// pieces streamed since `started` are then its generated tokens, when the report
    /// counts fewer. With no report at all, the pieces streamed in the whole request stand
    /// for its generated tokens.
    fn settle_usage(
        &mut self,
        usage: Option<LlmUsage>,
        started: u64,
        whole: bool,
    ) -> Option<LlmUsage> {
        let Some(mut usage) = usage else {
            if self.completion_tokens == 0 {
                self.completion_tokens = self.tokens;
            }
            return None;
        };
        if !whole {
            let streamed = self.tokens.saturating_sub(started);
            usage.generated_tokens = usage.generated_tokens.max(streamed);
        }
        self.count_usage(&usage);
        Some(usage)
    }

    /// The reply looped: the repeats after the first are cut from it (the text shown
    /// stays as it was streamed) and the loop is reported.
    fn looped(&self, found: &Repetition, reply: &mut Reply) {
        reply.looped = true;
        for text in [&mut reply.raw, &mut reply.visible, &mut reply.thinking] {
            if let Some(kept) = text.strip_suffix(found.excess.as_str()) {
                text.truncate(kept.len());
            }
        }
        // Reported by the event; the log line is for `-v`.
        tracing::debug!(
            repeats = found.repeats,
            "the reply looped; generation stopped"
        );
        self.emit(RepetitionDetectedEvent::create(
            self.request.request_id,
            &found.unit,
            u32::try_from(found.repeats).unwrap_or(u32::MAX),
            found.excess.chars().count() as u64,
            self.iteration,
        ));
    }

    /// A call the backend delivered already taken apart: looked up and checked like a
    /// parsed one, or a diagnostic (never run) when it is broken, when no call may happen,
    /// or when it calls another tool than the one the request forces.
    fn native_call(
        &self,
        parser: &FunctionCallParser,
        call: &LlmToolCall,
        choice: &ToolChoice,
    ) -> ParseEvent {
        let name = call.name.trim();
        match choice {
            ToolChoice::None => {
                return ParseEvent::Diagnostic(format!(
                    "the model called {name} although no tool may be called now; it was not run"
                ))
            }
            ToolChoice::Tool(forced) if forced != name => {
                return ParseEvent::Diagnostic(format!(
                "the model called {name} although only {forced} may be called now; it was not run"
            ))
            }
            _ => {}
        }
        match parser.catalog().native_call(call) {
            Ok(request) => ParseEvent::ToolCall(request),
            Err(message) => ParseEvent::Diagnostic(message),
        }
    }

    /// Take the parser's events into the reply; the loop the reply's text (not its calls:
    /// a file's content may well repeat itself) now ends in, if any.
    fn handle_parse_events(
        &mut self,
        events: Vec<ParseEvent>,
        reply: &mut Reply,
        pending: &mut Pending,
        buffer: u32,
        looping: &mut RepetitionGuard,
    ) -> Option<Repetition> {
        let mut found = None;
        for event in events {
            match event {
                ParseEvent::Text(text) | ParseEvent::Thinking(text) if text.is_empty() => {}
                ParseEvent::Text(text) => {
                    reply.visible.push_str(&text);
                    found = found.or_else(|| looping.push(&text));
                    self.gather_text(pending, text, false, buffer);
                }
                ParseEvent::Thinking(text) => {
                    reply.thinking.push_str(&text);
                    found = found.or_else(|| looping.push(&text));
                    self.gather_text(pending, text, true, buffer);
                }
                // Past a loop, the rest of the batch is more of it.
                ParseEvent::ToolCall(_) if found.is_some() => {}
                ParseEvent::ToolCall(mut call) => {
                    call.iteration_number = self.iteration;
                    found = reply.take_call(call, looping.is_on());
                }
                ParseEvent::Diagnostic(message) => {
                    self.emit(AgentErrorEvent::parsing_error(
                        self.request.request_id,
                        message,
                        self.iteration,
                    ));
                }
            }
        }
        found
    }

    fn gather_text(&self, pending: &mut Pending, text: String, thinking: bool, buffer: u32) {
        if pending.1 != thinking && !pending.0.is_empty() {
            let kept = pending.2;
            self.flush_text(pending);
            pending.2 = kept;
        }
        pending.0.push_str(&text);
        pending.1 = thinking;
        if buffer <= 1 {
            self.flush_text(pending);
        }
    }

    fn flush_text(&self, pending: &mut Pending) {
        if !pending.0.is_empty() {
            self.emit(TextGenerationEvent::token(
                self.request.request_id,
                std::mem::take(&mut pending.0),
                u32::try_from(self.tokens).unwrap_or(u32::MAX),
                pending.1,
                self.iteration,
            ));
        }
        pending.2 = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::{slices, SLICE, SLICED};

    #[test]
    fn long_text_is_sliced_in_order_on_character_boundaries() {
        let short = "héllo".to_string();
        assert_eq!(slices(short.clone()), vec![short]);
        let long = "aé€😀".repeat(SLICED / 4);
        let cut = slices(long.clone());
        assert!(cut.len() > 1);
        assert!(cut.iter().all(|s| s.len() <= SLICE));
        assert_eq!(cut.concat(), long);
    }
}
