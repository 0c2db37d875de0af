//! The crate's error type: every way talking to a server can go wrong, in words a user can
//! act on.

use std::time::Duration;

/// Errors of the OpenAI-compatible backend.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The base URL is not usable.
    #[error("the server URL '{url}' is not usable: {reason}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// Why.
        reason: String,
    },

    /// The configuration is not usable (a header, the API key's variable).
    #[error("{0}")]
    InvalidConfig(String),

    /// No connection could be made (refused, unreachable, TLS, DNS).
    #[error("cannot reach the server at {url}: {reason}")]
    Connect {
        /// The URL asked.
        url: String,
        /// Why, as the network layer says.
        reason: String,
    },

    /// A time limit passed.
    #[error("{what} (after {:.1} s){hint}", .after.as_secs_f64())]
    Timeout {
        /// What did not happen in time.
        what: &'static str,
        /// The limit.
        after: Duration,
        /// Which setting changes it.
        hint: &'static str,
    },

    /// The server refused the credentials (401, 403).
    #[error("the server refused the request ({status}): {message}{}", if *.key_sent { " — check the API key in the variable named by backend.api_key_env" } else { " — it wants an API key: name the variable that holds it in backend.api_key_env" })]
    Unauthorized {
        /// The HTTP status.
        status: u16,
        /// The server's message.
        message: String,
        /// Whether a key was sent.
        key_sent: bool,
    },

    /// The server does not serve the model asked for.
    #[error("the server has no model '{model}'{}", available_models(.available))]
    UnknownModel {
        /// The model asked for.
        model: String,
        /// The models the server lists (empty when it lists none).
        available: Vec<String>,
    },

    /// The URL leads nowhere (404 not about a model).
    #[error("{url} was not found (404){}: is the base URL right? It usually ends in /v1", message_suffix(.message))]
    NotFound {
        /// The URL asked.
        url: String,
        /// The server's message.
        message: String,
    },

    /// The conversation does not fit the model's context window.
    #[error("the prompt does not fit the model's context window: {}; shorten the conversation or give the server a larger context (the server said: {message})", context_numbers(*.prompt_tokens, *.context, *.estimated))]
    ContextLength {
        /// The prompt's length in tokens, as the server counted it (or as estimated).
        prompt_tokens: Option<u64>,
        /// The context window, when the server said.
        context: Option<u64>,
        /// Whether `prompt_tokens` is AIntern's estimate (about 4 bytes a token).
        estimated: bool,
        /// The server's message.
        message: String,
    },

    /// Too many requests, and retrying did not help (or the server asked for too long a
    /// wait).
    #[error("the server is rate limiting requests (429){}: {message}", retry_after_suffix(*.retry_after))]
    RateLimited {
        /// How long the server asked to wait.
        retry_after: Option<Duration>,
        /// The server's message.
        message: String,
    },

    /// The server failed (5xx), and retrying did not help.
    #[error("the server failed ({status}): {message}")]
    Server {
        /// The HTTP status.
        status: u16,
        /// The server's message.
        message: String,
    },

    /// The server refused the request as malformed or unsupported (4xx).
    #[error("the server refused the request ({status}): {message}")]
    Rejected {
        /// The HTTP status.
        status: u16,
        /// The server's message.
        message: String,
    },

    /// The server does not take `tools` for this model.
    #[error("the server does not take tools for this model ({message}); AIntern describes the tools in the prompt from the next request on — set backend.tool_mode = \"text\" to start that way")]
    ToolsRejected {
        /// The server's message.
        message: String,
    },

    /// The stream is not valid server-sent events of chat-completion chunks.
    #[error("the server's stream is malformed: {0}")]
    MalformedStream(String),

    /// The connection ended before the reply did.
    #[error("the connection to the server broke {}: {reason}", if *.after_output { "in the middle of the reply" } else { "before the reply started" })]
    Disconnected {
        /// Whether some of the reply had been delivered (then it is not retried).
        after_output: bool,
        /// Why, as the network layer says.
        reason: String,
    },

    /// The reply passed a size limit (an event, the whole reply, the number of calls).
    #[error("{0}")]
    TooLarge(String),

    /// The server's answer could not be read (a body that is not what the protocol says).
    #[error("the server's answer could not be read: {0}")]
    Protocol(String),

    /// llama-server could not save (or restore) a session's slot; the conversation itself
    /// is not affected.
    #[error("llama-server could not {action} slot {slot}: {source}")]
    Slot {
        /// `save` or `restore`.
        action: &'static str,
        /// The slot.
        slot: u32,
        /// What went wrong.
        #[source]
        source: Box<Error>,
    },
}

impl Error {
    /// Whether the request may be sent again (before any of the reply was delivered):
    /// connection errors, 429 and 5xx.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Error::Connect { .. }
                | Error::RateLimited { .. }
                | Error::Server { .. }
                | Error::Disconnected {
                    after_output: false,
                    ..
                }
        )
    }
}

impl From<Error> for core_models::Error {
    fn from(e: Error) -> Self {
        core_models::Error::llm(e.to_string())
    }
}

fn available_models(models: &[String]) -> String {
    if models.is_empty() {
        String::new()
    } else {
        const SHOWN: usize = 20;
        // Names come from the server: shown with control characters escaped.
        let mut list = models
            .iter()
            .take(SHOWN)
            .map(|m| crate::decode::snippet(m))
            .collect::<Vec<_>>()
            .join(", ");
        if models.len() > SHOWN {
            list.push_str(&format!(" and {} more", models.len() - SHOWN));
        }
        format!(" (it has: {list})")
    }
}

fn message_suffix(message: &str) -> String {
    if message.trim().is_empty() {
        String::new()
    } else {
        format!(" ({})", message.trim())
    }
}

fn retry_after_suffix(after: Option<Duration>) -> String {
    after.map_or_else(String::new, |d| {
        format!("; it asks to wait {:.0} s", d.as_secs_f64())
    })
}

fn context_numbers(prompt: Option<u64>, context: Option<u64>, estimated: bool) -> String {
    let about = if estimated { "about " } else { "" };
    match (prompt, context) {
        (Some(p), Some(c)) => format!("the prompt is {about}{p} tokens, the context {c}"),
        (Some(p), None) => format!("the prompt is {about}{p} tokens"),
        (None, Some(c)) => format!("the context is {c} tokens"),
        (None, None) => "the server gave no numbers".to_string(),
    }
}
