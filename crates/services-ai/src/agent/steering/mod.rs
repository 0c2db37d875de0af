//! Steering: how the loop gets each reply from the model. The seam between the agent loop
//! and a strategy: the loop asks a [`Steering`] before every reply (which request the model
//! answers, and how a grammar narrows what it may write), for the note after each tool
//! result, what to do when a reply only repeats calls already made, and whether a reply
//! with no call is the answer. The loop holds no strategy of its own.
//!
//! Two strategies, chosen by `steering` in the configuration (`auto`: by the size the
//! backend reports):
//!
//! * [`Free`] — capable models: the model writes what it wants, an answer or calls in its
//!   own call language, parsed as it comes (a call it opens is held to the call syntax by
//!   a lazy grammar where the backend has one).
//! * [`SmallModel`] — models under a billion parameters, which do not call tools of their
//!   own accord: the model first chooses the next step among a fixed set of options
//!   (answer, or each offered tool) under a grammar that admits exactly those — the
//!   choice is the model's, by its own likelihoods —, then writes the call of the tool it
//!   chose under that tool's argument grammar, or its answer in plain text.
//!
//! What a strategy may and may not do: it may narrow what the model can write (grammars,
//! schemas, enums of existing paths) and frame the request; it never originates a call,
//! picks a tool, or supplies an argument the model did not write. Unless the request
//! forces a tool, every decision it asks for offers answering without a tool and every
//! offered tool, and nothing of it is built from the request's words.

mod free;
mod small;

pub(crate) use free::Free;
pub(crate) use small::SmallModel;

use crate::config::{AgentConfig, SteeringMode};
use async_trait::async_trait;
use core_models::{
    AgentRequest, Error, LlmRequest, LlmService, LlmUsage, ModelDetails, ToolCallRequest,
    ToolResult,
};
use std::sync::Arc;

/// What a strategy sees of the turn: read-only.
pub(crate) struct Turn<'a> {
    /// The request being carried out.
    pub(crate) request: &'a AgentRequest,
    /// The request the loop would send as it is: the system prompt, the conversation, the
    /// tools offered (path arguments held to what exists) and the tool choice.
    pub(crate) base: &'a LlmRequest,
    /// Every call of this request so far with its result, run or not (an invalid or
    /// denied call's result says why).
    pub(crate) done: &'a [(ToolCallRequest, ToolResult)],
    /// Messages sent into the request since it started.
    pub(crate) received: &'a [String],
    /// The configuration.
    pub(crate) config: &'a AgentConfig,
}

/// How the model is asked for its next reply.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// The request the model answers.
    pub(crate) request: LlmRequest,
    /// The reply is text only: nothing it writes is run.
    pub(crate) text_only: bool,
    /// How a grammar narrowed the calls of this reply, in words (shown with each call's
    /// approval); `None` when the model writes freely.
    pub(crate) held: Option<String>,
}

/// Why a strategy could not plan a reply.
#[derive(Debug)]
pub(crate) enum Halt {
    /// The request was stopped (cancelled, timed out).
    Stopped,
    /// The model failed.
    Failed(Error),
}

/// A model asked a question with a fixed set of answers ([`core_models::ReplyConstraint::OneOf`]).
#[async_trait]
pub(crate) trait Chooser: Sync {
    /// The option the model chose for `request` (whose constraint lists the options);
    /// `None` when the backend cannot hold a reply to a choice.
    async fn choose(&self, request: LlmRequest) -> Result<Option<String>, Halt>;
}

/// A strategy (see the module documentation).
#[async_trait]
pub(crate) trait Steering: Send + Sync + std::fmt::Debug {
    /// The strategy's name, for the log.
    fn name(&self) -> &'static str;

    /// Before a reply: how the model is asked for it. May ask `model` to choose first.
    async fn before_reply(&self, turn: &Turn<'_>, model: &dyn Chooser) -> Result<Plan, Halt>;

    /// The request for a plain answer, no tool allowed (also after a reply that only
    /// repeated calls made already in this request: the model is asked for its answer
    /// instead of being shown the same results again).
    fn answer(&self, turn: &Turn<'_>) -> Plan;

    /// The note after a tool result the model is shown (empty: none).
    fn after_result(&self, turn: &Turn<'_>) -> String;

    /// A reply with no call, whose visible text is `said`: the request to ask the model
    /// again with, when the strategy asks again (`None`: the reply is the answer).
    fn after_no_call(&self, _turn: &Turn<'_>, _said: &str) -> Option<Plan> {
        None
    }

    /// A reply with nothing in it (no text to show, no call): the request to ask the
    /// model again with (`None`: the empty reply is the answer). Asked once a request.
    fn after_empty(&self, _turn: &Turn<'_>) -> Option<Plan> {
        None
    }
}

/// The strategy `config` asks for with a model of these `details`.
pub(crate) fn select(config: &AgentConfig, details: &ModelDetails) -> Arc<dyn Steering> {
    match config.steering {
        SteeringMode::Free => Arc::new(Free),
        SteeringMode::SmallModel => Arc::new(SmallModel),
        SteeringMode::Auto if details.is_small() => Arc::new(SmallModel),
        SteeringMode::Auto => Arc::new(Free),
    }
}

/// The model, asked for a choice: its reply collected, nothing shown.
pub(crate) struct ModelChooser {
    pub(crate) llm: Arc<dyn LlmService>,
    pub(crate) stop: tokio_util::sync::CancellationToken,
    /// What each choice cost, as the backend reported it.
    pub(crate) spent: std::sync::Mutex<Vec<LlmUsage>>,
}

#[async_trait]
impl Chooser for ModelChooser {
    /// A choice is a side prompt, not the conversation: it carries no session (see
    /// [`LlmRequest::session`]), so that it does not take the conversation's place in a
    /// backend's cache, only [`LlmRequest::side_of`].
    async fn choose(&self, request: LlmRequest) -> Result<Option<String>, Halt> {
        use futures::StreamExt;
        let options = match &request.constraint {
            Some(core_models::ReplyConstraint::OneOf(options)) => options.clone(),
            _ => return Ok(None),
        };
        let stream = tokio::select! {
            r = self.llm.generate(request) => r,
            _ = self.stop.cancelled() => return Err(Halt::Stopped),
        };
        let mut stream = match stream {
            Ok(stream) => stream,
            Err(Error::Unsupported(why)) => {
                tracing::debug!(%why, "the backend cannot hold a choice");
                return Ok(None);
            }
            Err(e) => return Err(Halt::Failed(e)),
        };
        let mut text = String::new();
        // Each report is the whole usage so far; the last one is kept.
        let mut usage = None;
        loop {
            let item = tokio::select! {
                item = stream.next() => item,
                _ = self.stop.cancelled() => return Err(Halt::Stopped),
            };
            match item {
                None => break,
                Some(Ok(core_models::LlmChunk::Text { text: piece })) => {
                    text.push_str(&piece);
                    // A choice is a few words: anything longer is not one of them.
                    if text.len() > 256 {
                        break;
                    }
                }
                Some(Ok(core_models::LlmChunk::Usage(reported))) => usage = Some(reported),
                Some(Ok(_)) => {}
                Some(Err(Error::Unsupported(why))) => {
                    tracing::debug!(%why, "the backend cannot hold a choice");
                    return Ok(None);
                }
                Some(Err(e)) => return Err(Halt::Failed(e)),
            }
        }
        if let Some(usage) = usage {
            self.spent
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(usage);
        }
        let chosen = text.trim();
        Ok(options.iter().find(|o| o.as_str() == chosen).cloned())
    }
}
