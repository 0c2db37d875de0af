//! What a failed response means: the server's message taken out of whatever shape it
//! sent it in, and the error a user can act on (a bad key, an unknown model, a prompt too
//! long for the context — even when a server reports that as a 500 — a rate limit).

use crate::decode::snippet;
use crate::error::Error;
use regex::Regex;
use serde_json::Value;
use std::sync::LazyLock;
use std::time::{Duration, SystemTime};

/// What the request was, for the error's words.
#[derive(Debug, Clone, Default)]
pub(crate) struct Context {
    /// The URL asked.
    pub(crate) url: String,
    /// The model asked for.
    pub(crate) model: String,
    /// Whether an API key was sent.
    pub(crate) key_sent: bool,
    /// Whether the request offered tools natively.
    pub(crate) offered_tools: bool,
    /// AIntern's estimate of the prompt's tokens.
    pub(crate) estimated_prompt_tokens: u64,
    /// How long the answer may take (for time-limit messages).
    pub(crate) limit: Duration,
}

/// The error for a response with `status` and `body`.
pub(crate) fn http_error(status: u16, body: &str, context: &Context) -> Error {
    let json: Option<Value> = serde_json::from_str(body).ok();
    let message = json
        .as_ref()
        .and_then(message_of)
        .unwrap_or_else(|| snippet(body.trim()));
    if let Some(error) = context_error(json.as_ref(), &message, context) {
        return error;
    }
    match status {
        401 | 403 => Error::Unauthorized {
            status,
            message,
            key_sent: context.key_sent,
        },
        404 if !context.model.is_empty() && mentions_model(&message) => Error::UnknownModel {
            model: context.model.clone(),
            available: Vec::new(),
        },
        404 => Error::NotFound {
            url: context.url.clone(),
            message,
        },
        429 => Error::RateLimited {
            retry_after: None,
            message,
        },
        400 | 422 if context.offered_tools && rejects_tools(&message) => {
            Error::ToolsRejected { message }
        }
        500..=599 => Error::Server { status, message },
        _ => Error::Rejected { status, message },
    }
}

/// The error for an `{"error": …}` chunk inside a stream.
pub(crate) fn stream_error(error: &Value, context: &Context) -> Error {
    let status = error
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| (400..600).contains(c))
        .unwrap_or(500);
    let wrapped = serde_json::json!({ "error": error });
    http_error(status, &wrapped.to_string(), context)
}

/// The server's message, wherever it put it.
fn message_of(json: &Value) -> Option<String> {
    let candidates = [
        json.pointer("/error/message"),
        json.get("error").filter(|e| e.is_string()),
        json.get("message"),
        json.get("detail"),
    ];
    candidates.into_iter().flatten().find_map(|v| match v {
        Value::String(s) if !s.trim().is_empty() => Some(snippet(s.trim())),
        Value::Null => None,
        // FastAPI-style validation details: a list of objects with "msg".
        Value::Array(items) => Some(snippet(
            &items
                .iter()
                .take(10)
                .map(|i| {
                    i.get("msg")
                        .and_then(Value::as_str)
                        .map_or_else(|| i.to_string(), String::from)
                })
                .collect::<Vec<_>>()
                .join("; "),
        )),
        other => Some(snippet(&other.to_string())),
    })
}

fn mentions_model(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("model")
}

/// Whether a refusal is about tools as such (the server or the model takes none), not
/// about one call or one message.
fn rejects_tools(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    [
        "does not support tools",
        "doesn't support tools",
        "do not support tools",
        "tools are not supported",
        "tool use is not supported",
        "tools param requires",
        "tool_choice param requires",
        "enable-auto-tool-choice",
        "tool calling is not supported",
        "function calling is not supported",
        "unrecognized request argument supplied: tools",
        "unsupported parameter: 'tools'",
    ]
    .iter()
    .any(|phrase| m.contains(phrase))
}

static LIMIT: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:maximum context length|context (?:length|size|window)|n_ctx)\D{0,20}?(\d+)")
        .ok()
});
static PROMPT: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:(\d+) (?:tokens )?in the messages|resulted in (\d+) tokens|prompt (?:is |has |of )?(?:too long: )?(\d+) tokens|(\d+) prompt tokens)").ok()
});

/// A context-length error, whatever status it came with.
fn context_error(json: Option<&Value>, message: &str, context: &Context) -> Option<Error> {
    let lower = message.to_ascii_lowercase();
    let kind = json
        .and_then(|j| {
            j.pointer("/error/type")
                .or_else(|| j.pointer("/error/code"))
                .or_else(|| j.get("type"))
                .or_else(|| j.get("code"))
        })
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_ascii_lowercase();
    // Go servers say "context deadline exceeded" and "context canceled" of their own
    // request contexts: not the model's window.
    let about_context = kind.contains("context")
        || ((lower.contains("context") || lower.contains("n_ctx"))
            && !lower.contains("deadline")
            && !lower.contains("cancel")
            && (lower.contains("exceed")
                || lower.contains("too long")
                || lower.contains("maximum")
                || lower.contains("larger than")
                || lower.contains("greater than")
                || lower.contains("not enough")))
        || lower.contains("prompt is too long");
    if !about_context {
        return None;
    }
    let number = |pointer: &str| {
        json.and_then(|j| j.pointer(pointer))
            .and_then(Value::as_u64)
    };
    let limit = number("/error/n_ctx").or_else(|| {
        LIMIT
            .as_ref()
            .and_then(|r| r.captures(message))
            .and_then(|c| c.get(1))
            .and_then(|m| m.as_str().parse().ok())
    });
    let counted = number("/error/n_prompt_tokens").or_else(|| {
        PROMPT
            .as_ref()
            .and_then(|r| r.captures(message))
            .and_then(|c| {
                c.iter()
                    .skip(1)
                    .flatten()
                    .find_map(|m| m.as_str().parse().ok())
            })
    });
    let estimated = counted.is_none();
    Some(Error::ContextLength {
        prompt_tokens: counted.or(Some(context.estimated_prompt_tokens)),
        context: limit,
        estimated,
        message: message.to_string(),
    })
}

/// The wait a `Retry-After` header asks for: seconds, or an HTTP date.
pub(crate) fn retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(seconds).ok();
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context() -> Context {
        Context {
            url: "http://h/v1/chat/completions".into(),
            model: "m".into(),
            key_sent: false,
            offered_tools: true,
            estimated_prompt_tokens: 1234,
            limit: Duration::from_secs(1),
        }
    }

    #[test]
    fn context_length_errors_in_every_server_shape() {
        let cases = [
            // llama-server
            (
                400,
                r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}"#,
                Some(5000),
                Some(4096),
                false,
            ),
            // OpenAI
            (
                400,
                r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
                Some(9000),
                Some(8192),
                false,
            ),
            // vLLM
            (
                400,
                r#"{"object":"error","message":"This model's maximum context length is 2048 tokens. However, you requested 3000 tokens (2500 in the messages, 500 in the completion).","type":"BadRequestError","code":400}"#,
                Some(2500),
                Some(2048),
                false,
            ),
            // a context error reported as a generic 500, without numbers
            (
                500,
                r#"{"error":{"message":"input is too long: context size exceeded"}}"#,
                Some(1234),
                None,
                true,
            ),
        ];
        for (status, body, prompt, limit, estimated) in cases {
            match http_error(status, body, &context()) {
                Error::ContextLength {
                    prompt_tokens,
                    context,
                    estimated: e,
                    ..
                } => assert_eq!(
                    (prompt_tokens, context, e),
                    (prompt, limit, estimated),
                    "{body}"
                ),
                other => panic!("{body}: {other:?}"),
            }
        }
    }

    #[test]
    fn statuses_become_errors_a_user_can_act_on() {
        let c = context();
        assert!(matches!(
            http_error(401, r#"{"error":{"message":"Invalid API key"}}"#, &c),
            Error::Unauthorized {
                status: 401,
                key_sent: false,
                ..
            }
        ));
        assert!(matches!(
            http_error(404, r#"{"error":{"message":"model 'x' not found"}}"#, &c),
            Error::UnknownModel { .. }
        ));
        assert!(matches!(
            http_error(404, "Not Found", &c),
            Error::NotFound { .. }
        ));
        assert!(matches!(
            http_error(
                400,
                r#"{"error":"registry.ollama.ai/library/gemma does not support tools"}"#,
                &c
            ),
            Error::ToolsRejected { .. }
        ));
        assert!(matches!(
            http_error(503, "<html>busy</html>", &c),
            Error::Server { status: 503, .. }
        ));
        assert!(matches!(
            http_error(429, "slow down", &c),
            Error::RateLimited { .. }
        ));
        match http_error(
            422,
            r#"{"detail":[{"msg":"field required"},{"msg":"bad"}]}"#,
            &c,
        ) {
            Error::Rejected { message, .. } => assert_eq!(message, "field required; bad"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn retry_after_in_seconds_or_as_a_date() {
        assert_eq!(retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(retry_after(" 0.5 "), Some(Duration::from_millis(500)));
        assert_eq!(retry_after("-1"), None);
        assert_eq!(retry_after("1e300"), None, "no panic on an absurd wait");
        assert_eq!(
            retry_after("Thu, 01 Jan 1970 00:00:00 GMT"),
            Some(Duration::ZERO)
        );
        let later = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(30));
        let wait = retry_after(&later).unwrap_or_default();
        assert!(wait > Duration::from_secs(25) && wait <= Duration::from_secs(30));
        assert_eq!(retry_after("soon"), None);
    }
}
