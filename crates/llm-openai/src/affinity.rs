//! Cache affinity: a conversation sent where its cache is. A request's session key goes
//! to the server as `prompt_cache_key` (hosted APIs route on it) and, when configured, in
//! a header (for a router that keeps a session on one replica). On llama-server a session
//! can be pinned to a slot (`id_slot`), chosen per request among the idle ones
//! (`GET /slots`): the slot it last used here, else the one its key hashes to, else any;
//! that slot is saved when a request ends and restored before a request whose slot, as
//! far as this client knows, does not hold the session.

use crate::classify::Context;
use crate::config::OpenAiConfig;
use crate::discover::ServerInfo;
use crate::error::Error;
use crate::http;
use crate::Inner;
use core_models::{LlmRequest, MessageRole, SessionKey};
use reqwest::header::{HeaderName, HeaderValue};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;
use tokio::time::Instant;

/// The body field that carries a session's key for hosted APIs.
pub(crate) const PROMPT_CACHE_KEY: &str = "prompt_cache_key";

/// How long the slots' state may take (llama-server answers in milliseconds, even while
/// its slots decode); past it, the session's hash slot.
const SLOTS_TIMEOUT: Duration = Duration::from_secs(2);

/// What one client does to keep sessions' caches warm, and what it learned doing it.
#[derive(Debug)]
pub(crate) struct Affinity {
    /// Send the key as `prompt_cache_key`.
    prompt_cache_key: bool,
    /// The header that carries the key.
    header: Option<HeaderName>,
    /// llama-server's number of slots, when sessions are pinned to them.
    slots: Option<u32>,
    /// Pinned slots are saved and restored.
    save: bool,
    /// The server cannot save slots (started without `--slot-save-path`): not asked again.
    save_refused: AtomicBool,
    /// The server does not list its slots (started with `--no-slots`): not asked again,
    /// sessions go to their hash slots.
    listing_refused: AtomicBool,
    /// What this client did with slots.
    state: Mutex<SlotState>,
}

#[derive(Debug, Default)]
struct SlotState {
    /// The slot each session last used in this client.
    used: HashMap<SessionKey, u32>,
    /// The session each slot last served for this client: a slot is saved for a session
    /// only while it holds that session, and restored before a request unless it does.
    holders: HashMap<u32, SessionKey>,
}

impl Affinity {
    /// The affinity `config` asks for, on the server `info` describes.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] when the affinity header's name is not a header name.
    pub(crate) fn new(config: &OpenAiConfig, info: &ServerInfo) -> Result<Self, Error> {
        let header = match &config.affinity_header {
            None => None,
            Some(name) => Some(HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| {
                Error::InvalidConfig(format!(
                    "backend.affinity_header: '{name}' is not an HTTP header name"
                ))
            })?),
        };
        let slots = if config.pin_slots && info.llama_server {
            info.total_slots
        } else {
            None
        };
        if config.pin_slots && slots.is_none() {
            tracing::debug!("the server says no slot count: sessions are not pinned to slots");
        }
        Ok(Affinity {
            prompt_cache_key: config.prompt_cache_key,
            header,
            slots,
            save: config.save_slots && slots.is_some(),
            save_refused: AtomicBool::new(false),
            listing_refused: AtomicBool::new(false),
            state: Mutex::new(SlotState::default()),
        })
    }

    /// Whether slots are saved and restored (and the server can).
    fn saving(&self) -> bool {
        self.save && !self.save_refused.load(Ordering::Relaxed)
    }

    /// The slot for a request of `key` among `total`, given the idle slots when known:
    /// the slot the session last used here if idle; its hash slot if idle; the lowest
    /// idle slot; else (all busy, or unknown) its hash slot, where the request waits.
    fn pick(&self, key: &SessionKey, total: u32, idle: Option<&[u32]>) -> u32 {
        let hashed = slot_of(key, total);
        let Some(idle) = idle else {
            return hashed;
        };
        let last = self.lock().used.get(key).copied();
        last.into_iter()
            .chain([hashed])
            .find(|slot| idle.contains(slot))
            .or_else(|| idle.iter().copied().filter(|&s| s < total).min())
            .unwrap_or(hashed)
    }

    /// The session's fields in a chat-completions body: its key as `prompt_cache_key`,
    /// its `slot` as `id_slot`.
    pub(crate) fn add_to_body(
        &self,
        body: &mut Value,
        session: Option<&SessionKey>,
        slot: Option<u32>,
    ) {
        let (Some(key), Some(object)) = (session, body.as_object_mut()) else {
            return;
        };
        if self.prompt_cache_key {
            object.insert(PROMPT_CACHE_KEY.into(), key.as_str().into());
        }
        if let Some(slot) = slot {
            object.insert("id_slot".into(), slot.into());
        }
    }

    /// `request` with the header that carries the session's key, when one is configured.
    pub(crate) fn with_header(
        &self,
        request: reqwest::RequestBuilder,
        session: Option<&SessionKey>,
    ) -> reqwest::RequestBuilder {
        let (Some(name), Some(key)) = (&self.header, session) else {
            return request;
        };
        match HeaderValue::from_str(key.as_str()) {
            Ok(value) => request.header(name.clone(), value),
            Err(_) => request,
        }
    }

    /// Note that a request of `key` goes to `slot` now; whether the slot already held the
    /// session (this client's previous request there was the session's).
    fn note_request(&self, key: &SessionKey, slot: u32) -> bool {
        let mut state = self.lock();
        state.used.insert(key.clone(), slot);
        let held = state.holders.get(&slot) == Some(key);
        if !held {
            state.holders.insert(slot, key.clone());
        }
        held
    }

    /// The slot to save for `key`: the one it last used here, while that slot still holds
    /// it.
    fn kept_slot(&self, key: &SessionKey) -> Option<u32> {
        let state = self.lock();
        let slot = *state.used.get(key)?;
        (state.holders.get(&slot) == Some(key)).then_some(slot)
    }

    /// The server cannot save slots: said once, and not asked again.
    fn refuse_saving(&self) {
        if !self.save_refused.swap(true, Ordering::Relaxed) {
            tracing::info!(
                "llama-server was started without --slot-save-path: sessions' slots are not saved"
            );
        }
    }

    fn lock(&self) -> MutexGuard<'_, SlotState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The slot of `key` among `total`: FNV-1a (64 bits) of the key's bytes, modulo `total`.
/// The same in every process and every version, so that a session returns to its slot.
pub(crate) fn slot_of(key: &SessionKey, total: u32) -> u32 {
    let slot = fnv1a(key.as_str().as_bytes()) % u64::from(total.max(1));
    // Below `total`, which is a u32.
    u32::try_from(slot).unwrap_or(0)
}

/// The 64-bit FNV-1a hash of `bytes`.
fn fnv1a(bytes: &[u8]) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes.iter().fold(OFFSET_BASIS, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(PRIME)
    })
}

/// The file a session's slot is saved in, under llama-server's `--slot-save-path`: the
/// key's characters (letters, digits, `-`, `_`) between a prefix and a suffix, which
/// llama-server's file-name check accepts.
pub(crate) fn slot_file(key: &SessionKey) -> String {
    format!("aintern-{}.bin", key.as_str())
}

/// The ids of the idle slots in llama-server's `GET /slots` answer (a list of slots, each
/// with its `id` and `is_processing`), lowest first; `None` when it is no such list.
fn idle_in(slots: &Value) -> Option<Vec<u32>> {
    let mut idle = Vec::new();
    for slot in slots.as_array()? {
        let id = u32::try_from(slot.get("id")?.as_u64()?).ok()?;
        if !slot.get("is_processing")?.as_bool()? {
            idle.push(id);
        }
    }
    idle.sort_unstable();
    Some(idle)
}

/// Whether a failed slot action says the server cannot save slots at all.
fn cannot_save(error: &Error) -> bool {
    matches!(error, Error::Server { status: 501, .. })
}

impl Inner {
    /// Before a request of a session, when sessions are pinned: the slot it goes to
    /// (chosen among the idle ones, see [`Affinity::pick`]), noted as serving the
    /// session; and, when slots are saved and that slot does not hold the session as far
    /// as this client knows, the session's saved slot restored into it. A conversation the
    /// model never answered has nothing saved worth restoring, and is not asked for (a
    /// restore that finds no file empties the slot, losing the prefix it may share with
    /// other sessions). Any failure is only logged: the request goes on as it would have.
    pub(crate) async fn prepare_session(&self, request: &LlmRequest) -> Option<u32> {
        let key = request.session.as_ref()?;
        let total = self.affinity.slots?;
        let idle = self.idle_slots().await;
        let slot = self.affinity.pick(key, total, idle.as_deref());
        let held = self.affinity.note_request(key, slot);
        tracing::debug!(slot, held, ?idle, "the session's slot");
        let answered = request
            .messages
            .iter()
            .any(|m| m.role == MessageRole::Assistant);
        if held || !answered || !self.affinity.saving() {
            return Some(slot);
        }
        match self.slot_action(key, slot, "restore").await {
            Ok(answer) => {
                let tokens = answer.get("n_restored").and_then(Value::as_u64);
                tracing::debug!(slot, ?tokens, "the session's slot was restored");
            }
            Err(e) => {
                if cannot_save(&e) {
                    self.affinity.refuse_saving();
                }
                tracing::debug!(slot, error = %e, "the session's slot was not restored");
            }
        }
        Some(slot)
    }

    /// The ids of llama-server's idle slots (`GET {root}/slots`), or `None` when the
    /// server does not say in time (a server that does not list its slots is not asked
    /// again).
    async fn idle_slots(&self) -> Option<Vec<u32>> {
        if self.affinity.listing_refused.load(Ordering::Relaxed) {
            return None;
        }
        let url = &self.urls.slots;
        let deadline = Instant::now() + SLOTS_TIMEOUT;
        let context = Context {
            url: url.to_string(),
            key_sent: self.config.api_key.is_some(),
            limit: SLOTS_TIMEOUT,
            ..Context::default()
        };
        let sent = http::send(
            self.http.get(url.clone()),
            url,
            deadline,
            self.config.connect_timeout,
            &context,
        )
        .await;
        let listed = match sent {
            Ok(response) => http::read_json(response, http::DISCOVERY_CAP, deadline).await,
            Err(failure) => Err(failure.error),
        };
        let slots = match listed {
            Ok(slots) => slots,
            Err(e) => {
                if matches!(
                    e,
                    Error::Server { status: 501, .. } | Error::NotFound { .. }
                ) && !self.affinity.listing_refused.swap(true, Ordering::Relaxed)
                {
                    tracing::debug!(error = %e, "the server does not list its slots: sessions go to their hash slots");
                } else {
                    tracing::debug!(error = %e, "the slots' state is unknown: the session's hash slot");
                }
                return None;
            }
        };
        let idle = idle_in(&slots);
        if idle.is_none() {
            tracing::debug!("the slots' state is not a list of slots: the session's hash slot");
        }
        idle
    }

    /// Save the slot of `key` on llama-server, for a later process to restore; whether it
    /// was saved. Nothing is saved unless slots are saved and the slot the session last
    /// used here still holds it (another session of this client may have taken it since).
    ///
    /// # Errors
    /// [`Error::Slot`] when the server could not save it (a server without
    /// `--slot-save-path` is no error: it is not asked again).
    pub(crate) async fn keep_session(&self, key: &SessionKey) -> Result<bool, Error> {
        if !self.affinity.saving() {
            return Ok(false);
        }
        let Some(slot) = self.affinity.kept_slot(key) else {
            tracing::debug!("no slot here holds the session: not saved");
            return Ok(false);
        };
        match self.slot_action(key, slot, "save").await {
            Ok(answer) => {
                let tokens = answer.get("n_saved").and_then(Value::as_u64);
                tracing::debug!(slot, ?tokens, "the session's slot was saved");
                Ok(true)
            }
            Err(e) if cannot_save(&e) => {
                self.affinity.refuse_saving();
                Ok(false)
            }
            Err(e) => Err(Error::Slot {
                action: "save",
                slot,
                source: Box::new(e),
            }),
        }
    }

    /// `POST {root}/slots/{slot}?action={action}` with the session's file (with the
    /// client's headers and key, and the session's header), sent again once when the
    /// connection breaks before any reply; the server's answer.
    async fn slot_action(
        &self,
        key: &SessionKey,
        slot: u32,
        action: &'static str,
    ) -> Result<Value, Error> {
        let url = self.urls.slot_action(slot, action);
        let limit = self.config.first_token_timeout;
        let deadline = Instant::now() + limit;
        let context = Context {
            url: url.to_string(),
            key_sent: self.config.api_key.is_some(),
            limit,
            ..Context::default()
        };
        let send = || {
            let request = self
                .http
                .post(url.clone())
                .json(&json!({ "filename": slot_file(key) }));
            let request = self.affinity.with_header(request, Some(key));
            http::send(
                request,
                &url,
                deadline,
                self.config.connect_timeout,
                &context,
            )
        };
        // A kept-alive connection the server closed meanwhile breaks before any reply:
        // sent again once, on a new connection (saving or restoring twice does no harm).
        let response = match send().await {
            Err(failure) if matches!(failure.error, Error::Disconnected { .. }) => {
                tracing::debug!(error = %failure.error, action, "the slot action is sent again");
                send().await
            }
            sent => sent,
        }
        .map_err(|f| f.error)?;
        // The answer only tells how much was moved.
        Ok(http::read_json(response, http::DISCOVERY_CAP, deadline)
            .await
            .unwrap_or(Value::Null))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn key(text: &str) -> SessionKey {
        SessionKey::new(text).unwrap_or_else(|| panic!("not a key: {text}"))
    }

    #[test]
    fn fnv1a_is_the_published_function() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn slots_are_stable_and_in_range() {
        // Fixed here: a session must return to its slot in every later version.
        assert_eq!(slot_of(&key("a"), 4), 0);
        assert_eq!(slot_of(&key("foobar"), 7), 6);
        let id = key("0b0f4d6c-52a2-4d1e-9a43-0f0c8c1d2e3f");
        for total in 1..=64 {
            let slot = slot_of(&id, total);
            assert!(slot < total, "{slot} of {total}");
            assert_eq!(slot, slot_of(&id, total));
        }
        assert_eq!(slot_of(&id, 0), 0, "no division by zero");
        // Keys spread over the slots.
        let used: HashSet<u32> = (0..64)
            .map(|i| slot_of(&key(&format!("session-{i}")), 8))
            .collect();
        assert_eq!(used.len(), 8);
    }

    #[test]
    fn slot_files_hold_only_the_key() {
        let id = key("Ab_9-z");
        assert_eq!(slot_file(&id), "aintern-Ab_9-z.bin");
        let longest = key(&"x".repeat(SessionKey::MAX_LEN));
        let name = slot_file(&longest);
        assert!(name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)));
        assert!(!name.contains(".."));
    }

    fn pinned(total: u32) -> Affinity {
        let mut config = OpenAiConfig::new("http://127.0.0.1:1/v1");
        config.pin_slots = true;
        let info = ServerInfo {
            llama_server: true,
            total_slots: Some(total),
            ..ServerInfo::default()
        };
        Affinity::new(&config, &info).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_slot_is_chosen_idle_first() {
        let affinity = pinned(4);
        let session = key("foobar");
        let hashed = slot_of(&session, 4);
        let other = (hashed + 1) % 4;
        // Unknown state, or every slot busy: the hash slot.
        assert_eq!(affinity.pick(&session, 4, None), hashed);
        assert_eq!(affinity.pick(&session, 4, Some(&[])), hashed);
        // The hash slot when idle, else the lowest idle slot.
        assert_eq!(affinity.pick(&session, 4, Some(&[0, 1, 2, 3])), hashed);
        let idle: Vec<u32> = (0..4).filter(|&s| s != hashed).collect();
        assert_eq!(affinity.pick(&session, 4, Some(&idle)), idle[0]);
        // The slot the session last used, while idle, before its hash slot.
        assert!(!affinity.note_request(&session, other));
        assert!(affinity.note_request(&session, other), "it holds it now");
        assert_eq!(affinity.pick(&session, 4, Some(&[0, 1, 2, 3])), other);
        assert_eq!(affinity.pick(&session, 4, Some(&[hashed])), hashed);
        assert_eq!(affinity.kept_slot(&session), Some(other));
        // Another session takes it: it no longer holds the first.
        assert!(!affinity.note_request(&key("else"), other));
        assert_eq!(affinity.kept_slot(&session), None);
        assert!(!affinity.note_request(&session, other));
        // A slot the server names beyond its count is not chosen.
        assert_eq!(
            affinity.pick(&key("new"), 4, Some(&[7])),
            slot_of(&key("new"), 4)
        );
    }

    #[test]
    fn idle_slots_are_read_from_the_slot_list() {
        let slots = json!([
            {"id": 2, "is_processing": false, "n_ctx": 4096},
            {"id": 0, "is_processing": true},
            {"id": 1, "is_processing": false, "params": {}},
        ]);
        assert_eq!(idle_in(&slots), Some(vec![1, 2]));
        assert_eq!(idle_in(&json!([])), Some(vec![]));
        for odd in [
            json!({"id": 0}),
            json!([{"id": 0}]),
            json!([{"id": -1, "is_processing": false}]),
        ] {
            assert_eq!(idle_in(&odd), None, "{odd}");
        }
    }
}
