//! The HTTP side: the client (time limits, headers, no redirects), URLs, sending with
//! failures classified, bodies read within a cap, and event streams whose events are
//! bounded in size.

use crate::classify::{self, Context};
use crate::config::OpenAiConfig;
use crate::error::Error;
use bytes::Bytes;
use futures::{Stream, StreamExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use reqwest::Url;
use serde_json::Value;
use std::time::Duration;
use tokio::time::Instant;

/// Largest whole (not streamed) reply read.
pub(crate) const REPLY_CAP: usize = 64 * 1024 * 1024;
/// Largest discovery answer (`/models`, `/props`) read.
pub(crate) const DISCOVERY_CAP: usize = 4 * 1024 * 1024;
/// Largest error body kept for its message.
const ERROR_BODY_CAP: usize = 64 * 1024;
/// Largest single server-sent event.
pub(crate) const EVENT_CAP: usize = 16 * 1024 * 1024;

/// The endpoints of one server.
#[derive(Debug, Clone)]
pub(crate) struct Urls {
    pub(crate) chat: Url,
    pub(crate) models: Url,
    /// llama-server's `/props`, at the server's root.
    pub(crate) props: Url,
    /// llama-server's `/apply-template` (a chat request's prompt).
    pub(crate) apply_template: Url,
    /// llama-server's `/tokenize`.
    pub(crate) tokenize: Url,
    /// llama-server's `/slots`, whose `/{id}?action=…` saves and restores a slot.
    pub(crate) slots: Url,
}

impl Urls {
    /// The endpoints under `base` (`/v1` is added to a URL with no path).
    pub(crate) fn new(base: &str) -> Result<Self, Error> {
        let invalid = |reason: &str| Error::InvalidUrl {
            url: redacted(base),
            reason: reason.to_string(),
        };
        let mut url = Url::parse(base.trim()).map_err(|e| invalid(&e.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(invalid("it must start with http:// or https://"));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(invalid("it names no host"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(invalid(
                "credentials do not belong in the URL: put the key in the variable named by backend.api_key_env",
            ));
        }
        // A query (`?api-version=…`) stays on every endpoint.
        url.set_fragment(None);
        let path = url.path().trim_end_matches('/').to_string();
        let path = if path.is_empty() {
            "/v1".to_string()
        } else {
            path
        };
        url.set_path(&path);
        let join = |suffix: &str| {
            let mut u = url.clone();
            u.set_path(&format!("{path}/{suffix}"));
            u
        };
        let root = path.strip_suffix("/v1").unwrap_or(&path).to_string();
        let at_root = |name: &str| {
            let mut u = url.clone();
            u.set_path(&format!("{root}/{name}"));
            u
        };
        Ok(Urls {
            chat: join("chat/completions"),
            models: join("models"),
            props: at_root("props"),
            apply_template: at_root("apply-template"),
            tokenize: at_root("tokenize"),
            slots: at_root("slots"),
        })
    }

    /// `{root}/slots/{slot}?action={action}` (after any query the base URL has).
    pub(crate) fn slot_action(&self, slot: u32, action: &str) -> Url {
        let mut url = self.slots.clone();
        url.set_path(&format!("{}/{slot}", self.slots.path()));
        url.query_pairs_mut().append_pair("action", action);
        url
    }
}

/// `url` with any `user:password@` replaced, for messages.
fn redacted(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            match rest[..authority_end].rsplit_once('@') {
                Some((_, host)) => {
                    format!("{scheme}://<credentials>@{host}{}", &rest[authority_end..])
                }
                None => url.to_string(),
            }
        }
        None => url.to_string(),
    }
}

/// Installs ring as rustls's process-wide crypto provider when none is installed yet.
/// Every client this crate builds calls it first; an application building its own
/// `reqwest` client beside it calls it too (reqwest is built without a provider of its
/// own, so that a fresh build compiles one TLS library, not two).
pub fn ensure_tls_provider() {
    // An error means a provider is installed already, which is as good.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The HTTP client for `config`: its time limits, its headers (the key marked sensitive,
/// so that it never appears in debug output), no redirects (an API does not redirect; a
/// redirect could carry the key elsewhere).
pub(crate) fn client(config: &OpenAiConfig) -> Result<reqwest::Client, Error> {
    ensure_tls_provider();
    let mut headers = HeaderMap::new();
    for (name, value) in &config.headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| Error::InvalidConfig(format!("'{name}' is not an HTTP header name")))?;
        let mut value = HeaderValue::from_str(value).map_err(|_| {
            Error::InvalidConfig(format!("the value of header '{name}' is not valid"))
        })?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    if let Some(key) = &config.api_key {
        let mut value =
            HeaderValue::from_str(&format!("Bearer {}", key.expose())).map_err(|_| {
                Error::InvalidConfig("the API key holds characters a header cannot".into())
            })?;
        value.set_sensitive(true);
        headers.insert(AUTHORIZATION, value);
    }
    reqwest::Client::builder()
        .default_headers(headers)
        .user_agent(concat!("aintern/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(config.connect_timeout)
        .redirect(reqwest::redirect::Policy::none())
        .tcp_nodelay(true)
        .build()
        .map_err(|e| Error::InvalidConfig(format!("cannot set up the HTTP client: {e}")))
}

/// A failed attempt: the error, and how long the server asked to wait before the next.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) error: Error,
    pub(crate) retry_after: Option<Duration>,
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Failure {
            error,
            retry_after: None,
        }
    }
}

/// A reqwest error with its causes, in words.
pub(crate) fn describe(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text = format!("{text}: {s}");
        source = s.source();
    }
    text
}

/// A network error in words.
pub(crate) fn network_error(url: &Url, e: &reqwest::Error, connect_timeout: Duration) -> Error {
    let mut reason = describe(e);
    if e.is_connect() || e.is_timeout() && e.is_request() {
        if e.is_timeout() {
            reason = format!(
                "no connection within {:.1} s (backend.connect_timeout_ms)",
                connect_timeout.as_secs_f64()
            );
        }
        Error::Connect {
            url: url.to_string(),
            reason,
        }
    } else {
        Error::Disconnected {
            after_output: false,
            reason,
        }
    }
}

/// Send `request` and wait for its headers until `deadline`; a failure status becomes its
/// error (with the wait a 429 or 503 asks for).
pub(crate) async fn send(
    request: reqwest::RequestBuilder,
    url: &Url,
    deadline: Instant,
    connect_timeout: Duration,
    context: &Context,
) -> Result<reqwest::Response, Failure> {
    let response = match tokio::time::timeout_at(deadline, request.send()).await {
        Err(_) => {
            return Err(Error::Timeout {
                what: "the server did not answer",
                after: context.limit,
                hint: " — backend.first_token_timeout_ms sets how long to wait",
            }
            .into())
        }
        Ok(Err(e)) => return Err(network_error(url, &e, connect_timeout).into()),
        Ok(Ok(response)) => response,
    };
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    if status.is_redirection() {
        let to = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|l| l.to_str().ok())
            .unwrap_or("elsewhere")
            .to_string();
        return Err(Error::Rejected {
            status: status.as_u16(),
            message: format!("the server redirects to {to}; use that URL as the base URL"),
        }
        .into());
    }
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(classify::retry_after);
    let body = read_capped(response, ERROR_BODY_CAP, deadline)
        .await
        .map(|(b, _)| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let mut error = classify::http_error(status.as_u16(), &body, context);
    if let Error::RateLimited {
        retry_after: wait, ..
    } = &mut error
    {
        *wait = retry_after;
    }
    Err(Failure { error, retry_after })
}

/// The body, at most `cap` bytes (the rest is not read), by `deadline`; and whether it
/// was longer.
async fn read_capped(
    response: reqwest::Response,
    cap: usize,
    deadline: Instant,
) -> Result<(Vec<u8>, bool), Error> {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    let waited = Instant::now();
    loop {
        let next = tokio::time::timeout_at(deadline, stream.next())
            .await
            .map_err(|_| Error::Timeout {
                what: "the server's answer did not arrive",
                after: deadline.saturating_duration_since(waited),
                hint: "",
            })?;
        match next {
            None => return Ok((body, false)),
            Some(Err(e)) => {
                return Err(Error::Disconnected {
                    after_output: false,
                    reason: e.to_string(),
                })
            }
            Some(Ok(bytes)) => {
                let room = cap.saturating_sub(body.len());
                if bytes.len() > room {
                    body.extend_from_slice(&bytes[..room]);
                    return Ok((body, true));
                }
                body.extend_from_slice(&bytes);
            }
        }
    }
}

/// A body of at most `cap` bytes, by `deadline`.
pub(crate) async fn read_body(
    response: reqwest::Response,
    cap: usize,
    deadline: Instant,
) -> Result<Vec<u8>, Error> {
    match read_capped(response, cap, deadline).await? {
        (_, true) => Err(Error::TooLarge(format!(
            "the server's answer passed {} MiB",
            (cap / (1024 * 1024)).max(1)
        ))),
        (body, false) => Ok(body),
    }
}

/// A JSON body of at most `cap` bytes, by `deadline`.
pub(crate) async fn read_json(
    response: reqwest::Response,
    cap: usize,
    deadline: Instant,
) -> Result<Value, Error> {
    let body = read_body(response, cap, deadline).await?;
    serde_json::from_slice(&body).map_err(|e| {
        Error::Protocol(format!(
            "not JSON ({e}): {}",
            crate::decode::snippet(&String::from_utf8_lossy(&body))
        ))
    })
}

/// Whether a response is an event stream (a server may answer a streamed request with one
/// JSON body).
pub(crate) fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().starts_with("text/event-stream"))
}

/// Why a body stream failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyError {
    /// The connection failed.
    #[error("{0}")]
    Http(#[from] reqwest::Error),
    /// One event passed [`EVENT_CAP`].
    #[error("one event passed {} MiB", EVENT_CAP / (1024 * 1024))]
    EventTooLarge,
}

/// Where the stream stands with respect to event boundaries (a blank line).
#[derive(Debug, Default)]
struct Boundary {
    /// Bytes since the last boundary.
    since: usize,
    /// Line ends in a row.
    line_ends: u8,
    /// The last byte was `\r` (a following `\n` belongs to it).
    after_cr: bool,
}

impl Boundary {
    /// Account for `bytes`; whether an event passed `cap`.
    fn feed(&mut self, bytes: &[u8], cap: usize) -> bool {
        for &b in bytes {
            match b {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' | b'\r' => {
                    self.after_cr = b == b'\r';
                    self.line_ends = self.line_ends.saturating_add(1);
                    if self.line_ends >= 2 {
                        self.since = 0;
                    }
                }
                _ => {
                    self.after_cr = false;
                    self.line_ends = 0;
                    self.since += 1;
                    if self.since > cap {
                        return true;
                    }
                }
            }
        }
        false
    }
}

/// The body's bytes, failing as soon as one event passes `cap` bytes: a server cannot make
/// the client buffer without bound.
pub(crate) fn bounded_body(
    body: impl Stream<Item = Result<Bytes, reqwest::Error>> + Send + 'static,
    cap: usize,
) -> impl Stream<Item = Result<Bytes, BodyError>> + Send + 'static {
    let mut boundary = Boundary::default();
    let mut failed = false;
    body.map(move |item| {
        let bytes = item?;
        if failed || boundary.feed(&bytes, cap) {
            failed = true;
            return Err(BodyError::EventTooLarge);
        }
        Ok(bytes)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_under_the_base() {
        let u = Urls::new("http://127.0.0.1:8080").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(u.chat.as_str(), "http://127.0.0.1:8080/v1/chat/completions");
        assert_eq!(u.models.as_str(), "http://127.0.0.1:8080/v1/models");
        assert_eq!(u.props.as_str(), "http://127.0.0.1:8080/props");
        assert_eq!(
            u.slot_action(3, "save").as_str(),
            "http://127.0.0.1:8080/slots/3?action=save"
        );
        let u = Urls::new("https://api.example.com/openai/v1/").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            u.chat.as_str(),
            "https://api.example.com/openai/v1/chat/completions"
        );
        assert_eq!(u.props.as_str(), "https://api.example.com/openai/props");
        assert_eq!(
            u.slot_action(0, "restore").as_str(),
            "https://api.example.com/openai/slots/0?action=restore"
        );
        for bad in ["ftp://h/v1", "localhost:8080", "http://user:pw@h/v1", ""] {
            assert!(Urls::new(bad).is_err(), "{bad}");
        }
        let message = Urls::new("http://user:s3cret@h/v1")
            .err()
            .map(|e| e.to_string());
        assert!(message.is_some_and(|m| !m.contains("s3cret")));
        let azure = Urls::new("https://r.example.com/openai/v1?api-version=2025-01-01")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            azure.chat.as_str(),
            "https://r.example.com/openai/v1/chat/completions?api-version=2025-01-01"
        );
    }

    #[test]
    fn event_boundaries_reset_the_count() {
        let mut b = Boundary::default();
        assert!(!b.feed(b"data: 12\n\n", 8));
        assert!(!b.feed(b"data: 1\r\n\r\ndata: 2\r\r", 8));
        assert!(!b.feed(b"data: 12", 8));
        assert!(b.feed(b"3\n", 8), "one event of 9 bytes");
        let mut b = Boundary::default();
        assert!(
            !b.feed(b"data: a\ndata: b\n\n", 16),
            "lines of one event count together"
        );
        let mut b = Boundary::default();
        assert!(b.feed(b"data: abcdef\ndata: b", 12));
    }
}
