//! One generation: the request sent (again, after a connection error, 429 or 5xx, while
//! nothing of the reply was delivered), the event stream read within its time limits and
//! decoded. The whole of it is one lazy stream: dropping it drops the response, which
//! closes the connection at once.

use crate::affinity::{CutSave, Pinned};
use crate::decode::{Decoder, Ending};
use crate::error::Error;
use crate::http::{self, Failure};
use crate::wire::{self, Chunk, Mode};
use crate::{Inner, OpenAiConfig};
use core_models::{LlmChunk, LlmRequest, LlmStream, LlmUsage};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The longest exponential backoff step (a server's `Retry-After` may ask for more, up to
/// the configured maximum wait).
const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// The stream of one generation.
pub(crate) fn stream(inner: Arc<Inner>, request: LlmRequest) -> LlmStream {
    Box::pin(async_stream::stream! {
        let mode = if inner.text_mode.load(Ordering::Relaxed) { Mode::Text } else { Mode::Native };
        let context = inner.context(&request, mode);
        let grammar = match grammar_for(&inner, &request, mode) {
            Ok(grammar) => grammar,
            Err(e) => {
                yield Err(e);
                return;
            }
        };
        // A session's slot chosen (and its saved state restored there when the slot may
        // hold something else).
        let pinned = inner.prepare_session(&request).await;
        let slot = pinned.as_ref().and_then(Pinned::id_slot);
        // A reply its reader stops early still has its slot saved.
        let mut cut = CutSave::new(&inner, pinned.as_ref());
        let mut attempt: u32 = 0;
        // Whether anything was handed to the consumer: from then on nothing is retried.
        let mut delivered = false;
        'attempts: loop {
            let mut body = wire::request_body(
                &inner.model,
                &request,
                mode,
                inner.dialect(),
                true,
                grammar.as_deref(),
            );
            inner.affinity.add_to_body(&mut body, request.sent_for(), slot);
            let body = inner.without_refused(body);
            let started = Instant::now();
            let deadline = started + inner.config.first_token_timeout;
            let sent = inner.post_chat(&body, request.sent_for(), deadline, &context).await;
            let response = match sent {
                Ok(response) => response,
                // A server that refuses an optional field (`max_tokens` for
                // `max_completion_tokens`, `temperature` on a reasoning model) is asked
                // again without it.
                Err(Failure { error: Error::Rejected { message, .. }, .. })
                    if inner.learn_refusal(&message) =>
                {
                    continue 'attempts;
                }
                Err(Failure { error: Error::ToolsRejected { message }, .. }) => {
                    // From the next request on, the agent describes the tools in the prompt.
                    inner.text_mode.store(true, Ordering::Relaxed);
                    yield Err(Error::ToolsRejected { message }.into());
                    return;
                }
                Err(failure) => match retry_wait(&inner.config, &failure, attempt) {
                    Some(wait) => {
                        tracing::debug!(error = %failure.error, attempt, ?wait, "retrying");
                        tokio::time::sleep(wait).await;
                        attempt += 1;
                        continue 'attempts;
                    }
                    None => {
                        yield Err(inner.explain(failure.error).await.into());
                        return;
                    }
                },
            };
            let mut decoder = Decoder::new(context.clone());
            if !http::is_event_stream(&response) {
                // A server that answered with the whole reply at once.
                match whole_reply(response, decoder, deadline, started).await {
                    Ok(chunks) => {
                        let used = usage_in(&chunks);
                        for chunk in chunks {
                            yield Ok(chunk);
                        }
                        after_whole_reply(&inner, pinned.as_ref(), &mut cut, used.as_ref()).await;
                    }
                    Err(e) => yield Err(e.into()),
                }
                return;
            }
            let mut events = http::bounded_body(response.bytes_stream(), http::EVENT_CAP).eventsource();
            let mut first: Option<Duration> = None;
            // What the server said the reply used.
            let mut used: Option<LlmUsage> = None;
            // The idle limit counts from the last event that moved the reply on: events
            // with nothing in them do not keep a stalled reply alive.
            let mut moved = Instant::now();
            loop {
                let limit = if first.is_some() {
                    moved + inner.config.idle_timeout
                } else {
                    deadline
                };
                let next = tokio::time::timeout_at(limit, events.next()).await;
                let failure = match next {
                    Err(_) => {
                        yield Err(timeout(&inner, first.is_some()).into());
                        return;
                    }
                    Ok(None) => match decoder.finish(Ending::Truncated, first, started.elapsed()) {
                        Ok(chunks) => {
                            for chunk in chunks {
                                yield Ok(chunk);
                            }
                            return;
                        }
                        Err(e) => e,
                    },
                    Ok(Some(Err(e))) => stream_failure(&e, delivered),
                    Ok(Some(Ok(event))) => match (decoder.progress(), decoder.event(&event.data)) {
                        (before, Ok(chunks)) => {
                            if decoder.progress() > before {
                                moved = Instant::now();
                                first.get_or_insert_with(|| started.elapsed());
                            }
                            if let Some(found) = usage_in(&chunks) {
                                used = Some(found);
                            }
                            for chunk in chunks {
                                // Counts are not output: a request that failed after them
                                // may still be tried again.
                                delivered |=
                                    !matches!(chunk, LlmChunk::Usage(_) | LlmChunk::Progress(_));
                                cut.saw(&chunk);
                                yield Ok(chunk);
                            }
                            if decoder.is_done() {
                                match decoder.finish(Ending::Complete, first, started.elapsed()) {
                                    Ok(chunks) => {
                                        if let Some(found) = usage_in(&chunks) {
                                            used = Some(found);
                                        }
                                        for chunk in chunks {
                                            yield Ok(chunk);
                                        }
                                        after_whole_reply(&inner, pinned.as_ref(), &mut cut, used.as_ref()).await;
                                    }
                                    Err(e) => yield Err(e.into()),
                                }
                                return;
                            }
                            continue;
                        }
                        (_, Err(e)) => e,
                    },
                };
                let failure = Failure::from(mark_delivered(failure, delivered));
                if !delivered {
                    if let Some(wait) = retry_wait(&inner.config, &failure, attempt) {
                        tracing::debug!(error = %failure.error, attempt, ?wait, "retrying before the first token");
                        tokio::time::sleep(wait).await;
                        attempt += 1;
                        continue 'attempts;
                    }
                }
                yield Err(failure.error.into());
                return;
            }
        }
    })
}

/// The grammar a request's reply is held to in the body, if any; an error for a choice
/// among texts that the server has nothing to hold with.
fn grammar_for(
    inner: &Inner,
    request: &LlmRequest,
    mode: Mode,
) -> Result<Option<String>, core_models::Error> {
    Ok(match &request.constraint {
        // An answer held to a schema: in text mode llama-server takes the grammar of calls
        // or the answer; otherwise the body asks for structured output (`response_format`),
        // and the agent validates the answer either way.
        Some(core_models::ReplyConstraint::JsonSchema(_)) if mode == Mode::Text => {
            inner.text_grammar(request)
        }
        Some(core_models::ReplyConstraint::JsonSchema(_)) => None,
        // A choice among texts: llama-server holds it with a grammar; another server has
        // nothing to hold it with (the caller then goes another way).
        Some(constraint) if inner.info.llama_server => {
            Some(tool_grammar::constraint_grammar(constraint).text)
        }
        Some(_) => {
            return Err(core_models::Error::Unsupported(
                "only llama-server holds a reply to a grammar".into(),
            ))
        }
        None if mode == Mode::Text => inner.text_grammar(request),
        None => None,
    })
}

/// A reply the server sent whole rather than as events: read (within the first-token
/// deadline) and decoded, its end included.
async fn whole_reply(
    response: reqwest::Response,
    mut decoder: Decoder,
    deadline: Instant,
    started: Instant,
) -> Result<Vec<LlmChunk>, Error> {
    let body = http::read_body(response, http::REPLY_CAP, deadline).await?;
    let chunk = serde_json::from_slice::<Chunk>(&body)
        .map_err(|e| Error::Protocol(format!("not a chat completion: {e}")))?;
    let mut chunks = decoder.chunk(chunk)?;
    let ttft = started.elapsed();
    chunks.extend(decoder.finish(Ending::Complete, Some(ttft), ttft)?);
    Ok(chunks)
}

/// The reply is whole: the session's slot state saved while the slot still holds it.
async fn after_whole_reply(
    inner: &Inner,
    pinned: Option<&Pinned>,
    cut: &mut CutSave,
    used: Option<&LlmUsage>,
) {
    cut.disarm();
    if let Some(pinned) = pinned {
        inner.after_reply(pinned, used).await;
    }
}

/// The usage among `chunks`, if any.
fn usage_in(chunks: &[LlmChunk]) -> Option<LlmUsage> {
    chunks.iter().rev().find_map(|c| match c {
        LlmChunk::Usage(usage) => Some(usage.clone()),
        _ => None,
    })
}

/// A broken connection after output is not retried, and says so.
fn mark_delivered(error: Error, delivered: bool) -> Error {
    match error {
        Error::Disconnected { reason, .. } if delivered => Error::Disconnected {
            after_output: true,
            reason,
        },
        other => other,
    }
}

/// The error for a failed event stream.
fn stream_failure(
    e: &eventsource_stream::EventStreamError<http::BodyError>,
    delivered: bool,
) -> Error {
    use eventsource_stream::EventStreamError as E;
    match e {
        E::Transport(http::BodyError::EventTooLarge) => Error::TooLarge(format!(
            "the server sent one event of more than {} MiB; the reply was stopped",
            http::EVENT_CAP / (1024 * 1024)
        )),
        E::Transport(http::BodyError::Http(e)) => Error::Disconnected {
            after_output: delivered,
            reason: http::describe(e),
        },
        E::Utf8(e) => Error::MalformedStream(format!("the stream is not UTF-8 text: {e}")),
        E::Parser(e) => Error::MalformedStream(format!("not server-sent events: {e}")),
    }
}

fn timeout(inner: &Inner, started: bool) -> Error {
    if started {
        Error::Timeout {
            what: "the server's stream went silent",
            after: inner.config.idle_timeout,
            hint: " — backend.idle_timeout_ms sets how long to wait",
        }
    } else {
        Error::Timeout {
            what: "the server sent no token",
            after: inner.config.first_token_timeout,
            hint: " — backend.first_token_timeout_ms sets how long to wait (a long prompt on a slow machine takes a while)",
        }
    }
}

/// How long to wait before attempt `attempt + 1`, or `None` when `failure` is not retried
/// (not retryable, out of retries, or the server asks for a longer wait than allowed).
pub(crate) fn retry_wait(
    config: &OpenAiConfig,
    failure: &Failure,
    attempt: u32,
) -> Option<Duration> {
    if !failure.error.is_retryable() || attempt >= config.max_retries {
        return None;
    }
    if let Some(asked) = failure.retry_after {
        return (asked <= config.retry_max_wait).then_some(asked);
    }
    Some(backoff(
        config.retry_base,
        attempt,
        MAX_BACKOFF.min(config.retry_max_wait),
    ))
}

/// Exponential backoff with jitter: `base × 2^attempt` capped at `cap`, then a random
/// point in its upper half (so that clients that failed together do not return together).
pub(crate) fn backoff(base: Duration, attempt: u32, cap: Duration) -> Duration {
    let step = base
        .saturating_mul(2u32.saturating_pow(attempt.min(16)))
        .min(cap);
    let millis = u64::try_from(step.as_millis()).unwrap_or(u64::MAX);
    Duration::from_millis(fastrand::u64(millis / 2..=millis))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_within_its_cap_with_jitter() {
        let base = Duration::from_millis(100);
        let cap = Duration::from_secs(1);
        for attempt in 0..8 {
            let step = (100u64 << attempt).min(1000);
            for _ in 0..20 {
                let wait = backoff(base, attempt, cap).as_millis() as u64;
                assert!(
                    wait >= step / 2 && wait <= step,
                    "attempt {attempt}: {wait}"
                );
            }
        }
    }

    #[test]
    fn only_a_break_before_output_may_be_retried() {
        let broken = |after_output| Error::Disconnected {
            after_output,
            reason: "reset".into(),
        };
        assert!(broken(false).is_retryable());
        assert!(!mark_delivered(broken(false), true).is_retryable());
        assert!(!Error::Timeout {
            what: "x",
            after: Duration::ZERO,
            hint: ""
        }
        .is_retryable());
    }
}
