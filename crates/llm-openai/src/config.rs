//! How to reach a server: its URL, the model, credentials, headers, time limits, retries.

use crate::error::Error;
use core_models::{BackendConfig, ToolMode};
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// An API key. Its `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// A key.
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<hidden>)")
    }
}

/// The settings of an [`crate::OpenAiLlm`]. Its `Debug` hides the key and the header
/// values (they may carry credentials).
#[derive(Clone)]
pub struct OpenAiConfig {
    /// The base URL, up to and including `/v1` (`http://127.0.0.1:8080/v1`); requests go to
    /// `{base}/chat/completions` and `{base}/models`.
    pub base_url: String,
    /// The model's name; `None` picks the server's only (or first) model.
    pub model: Option<String>,
    /// Sent as `Authorization: Bearer …`.
    pub api_key: Option<ApiKey>,
    /// Extra headers sent with every request.
    pub headers: Vec<(String, String)>,
    /// Native tool calls, calls in the text, or decided from what the server says.
    pub tool_mode: ToolMode,
    /// Most time to open a connection.
    pub connect_timeout: Duration,
    /// Most time from sending a request to the first token of its reply.
    pub first_token_timeout: Duration,
    /// Most silence in a stream once the reply started.
    pub idle_timeout: Duration,
    /// Retries after a connection error, 429 or 5xx, before any of the reply arrived.
    pub max_retries: u32,
    /// The first retry's wait before jitter; each later one doubles it.
    pub retry_base: Duration,
    /// The longest wait before a retry; a server asking for longer is not retried.
    pub retry_max_wait: Duration,
    /// Send a request's session key as `prompt_cache_key`, which hosted APIs use to route
    /// a conversation to the machine that holds its cache. A server that refuses the
    /// field is asked again without it, and never sent it again.
    pub prompt_cache_key: bool,
    /// An HTTP header that carries a request's session key, for a router that keeps a
    /// session on one replica; `None` sends none.
    pub affinity_header: Option<String>,
    /// Pin each session's requests to one of llama-server's slots (`id_slot`), so that
    /// concurrent sessions do not evict each other's caches: chosen per request from the
    /// slots' state (`GET /slots`), the idle slot the session last used, else the slot its
    /// key hashes to when idle, else the lowest idle slot, else (all busy, or no state)
    /// the hash slot. Only when the server says how many slots it has (`total_slots` in
    /// `/props`).
    pub pin_slots: bool,
    /// With sessions pinned: save a session's slot on llama-server when a request ends
    /// ([`core_models::LlmService::keep_session`]), in one of at most
    /// [`OpenAiConfig::slot_files`] files under the server's `--slot-save-path` (one per
    /// session and shape of prompt, the least recently used reused), and restore it
    /// before a request whose slot, as far as this client knows, does not hold the
    /// session (its first request in a process, or after another request used the slot),
    /// when a state of that shape was saved (as the record beside the slot claims tells,
    /// see [`OpenAiConfig::claim_slots`]) and the request continues a conversation the
    /// model answered before or is a side prompt. Without `--slot-save-path` nothing is
    /// saved.
    pub save_slots: bool,
    /// With slots saved: most files this user's sessions keep on the server, named
    /// `aintern-<owner>-<n>.bin` (`owner` a hash of this machine's name and the user's id,
    /// `n` below this number). llama-server has no action that removes a saved slot, so a
    /// state is saved in the file that holds it already, else in one no state holds, else
    /// in the least recently used (see [`OpenAiConfig::claim_slots`] for where that is
    /// recorded; without the record, in the file its session and shape hash to). At
    /// least 1.
    pub slot_files: u32,
    /// With sessions pinned: claim a slot among the clients of this machine before using
    /// it (an advisory lock per server and slot, in a folder only the user can enter,
    /// held until the slot's state is saved), so that two processes do not take one slot,
    /// nor one take a slot before the session whose reply it holds has saved it. On by
    /// default; where the folder cannot be used, slots are used unclaimed. The same folder
    /// records which state each slot file holds, so that a state never saved is not
    /// asked to be restored (a failed restore empties the slot) and the least recently
    /// used file is the one reused.
    pub claim_slots: bool,
    /// The folder of the slot claims and of the record of saved states; `None`: the
    /// user's own (`$XDG_RUNTIME_DIR/aintern-slots`, else `aintern-<uid>-slots` in the
    /// temporary folder). Used only while it is a folder (not a link) of this user that
    /// no one else can enter; else slots are used unclaimed.
    pub claims_dir: Option<PathBuf>,
}

impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(name, _)| (name.as_str(), "<hidden>"))
            .collect();
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key)
            .field("headers", &headers)
            .field("tool_mode", &self.tool_mode)
            .field("connect_timeout", &self.connect_timeout)
            .field("first_token_timeout", &self.first_token_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("max_retries", &self.max_retries)
            .field("retry_base", &self.retry_base)
            .field("retry_max_wait", &self.retry_max_wait)
            .field("prompt_cache_key", &self.prompt_cache_key)
            .field("affinity_header", &self.affinity_header)
            .field("pin_slots", &self.pin_slots)
            .field("save_slots", &self.save_slots)
            .field("slot_files", &self.slot_files)
            .field("claim_slots", &self.claim_slots)
            .field("claims_dir", &self.claims_dir)
            .finish()
    }
}

impl OpenAiConfig {
    /// Settings for the server at `base_url`, with the defaults of [`BackendConfig`].
    pub fn new(base_url: impl Into<String>) -> Self {
        let defaults = BackendConfig::default();
        OpenAiConfig {
            base_url: base_url.into(),
            model: None,
            api_key: None,
            headers: Vec::new(),
            tool_mode: defaults.tool_mode,
            connect_timeout: Duration::from_millis(defaults.connect_timeout_ms),
            first_token_timeout: Duration::from_millis(defaults.first_token_timeout_ms),
            idle_timeout: Duration::from_millis(defaults.idle_timeout_ms),
            max_retries: defaults.max_retries,
            retry_base: Duration::from_millis(500),
            retry_max_wait: Duration::from_secs(60),
            prompt_cache_key: defaults.prompt_cache_key,
            affinity_header: defaults.affinity_header,
            pin_slots: defaults.pin_slots,
            save_slots: defaults.save_slots,
            slot_files: defaults.slot_files,
            claim_slots: true,
            claims_dir: None,
        }
    }

    /// The settings a `[backend]` section describes; `env` looks environment variables up
    /// (the API key's variable).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] when the section has no URL or names an API-key variable
    /// that is not set.
    pub fn from_backend(
        backend: &BackendConfig,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, Error> {
        let url = backend
            .url
            .as_deref()
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .ok_or_else(|| {
                Error::InvalidConfig("backend.url: the server's base URL is missing".into())
            })?;
        let api_key = match &backend.api_key_env {
            None => None,
            Some(name) => match env(name).filter(|v| !v.trim().is_empty()) {
                Some(key) => Some(ApiKey::new(key.trim())),
                None => {
                    return Err(Error::InvalidConfig(format!(
                        "backend.api_key_env names {name}, but that variable is not set"
                    )))
                }
            },
        };
        Ok(OpenAiConfig {
            model: backend.model.clone(),
            api_key,
            headers: backend
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            tool_mode: backend.tool_mode,
            connect_timeout: Duration::from_millis(backend.connect_timeout_ms),
            first_token_timeout: Duration::from_millis(backend.first_token_timeout_ms),
            idle_timeout: Duration::from_millis(backend.idle_timeout_ms),
            max_retries: backend.max_retries,
            prompt_cache_key: backend.prompt_cache_key,
            affinity_header: backend.affinity_header.clone(),
            pin_slots: backend.pin_slots,
            save_slots: backend.save_slots,
            slot_files: backend.slot_files,
            ..OpenAiConfig::new(url)
        })
    }

    /// The same settings for `model`.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }
}
