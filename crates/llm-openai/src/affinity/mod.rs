//! Cache affinity: a conversation sent where its cache is. The key of the session a
//! request is sent for ([`LlmRequest::sent_for`]: its conversation, or the one a side
//! prompt was asked apart for) goes to the server as `prompt_cache_key` (hosted APIs route
//! on it) and, when configured, in a header (for a router that keeps a session on one
//! replica). On llama-server a session can be pinned to a slot (`id_slot`), chosen per
//! request among the idle ones (`GET /slots`) that no other client of this machine has
//! claimed (see [`claim`]): the slot it last used here; else the one its key hashes to
//! (where an earlier process left the session) if idle; else, when slots are saved, the
//! idle one that went longest without a task, and when they are not, any idle one; else
//! (all busy) the one its key hashes to.
//!
//! With slots saved, a request does not queue on a busy slot: it waits for one that has
//! been idle a moment, so that the session whose reply a slot holds can save it first.
//! The slot is saved as soon as a reply of the session ends (while it
//! still holds that reply; a reply its reader stopped early, once the server stopped,
//! see [`cut`]), and restored before a request unless the slot still holds
//! what was saved: the server's listing names the last task each slot ran, so a slot
//! another request used meanwhile is known. A session may send prompts of more than one
//! shape (the conversation, and the side prompts a steering asks apart): each shape, its
//! leading message and its tools, is a state of its own, so that none evicts another.
//! States are saved in a bounded pool of files, and one is asked for only where a client
//! of this machine saved it (see [`files`]): a restore that finds no file empties the
//! slot, and the server does not look in its own prompt cache for a request pinned to an
//! empty slot. Everything here only saves work: the server reuses a
//! restored state only as far as its tokens match the prompt, and a pool of files holds
//! the states of one server and model (a server restarted with another model starts a
//! pool of its own), so a stale or foreign file costs time, never a wrong reply.

use crate::classify::Context;
use crate::config::OpenAiConfig;
use crate::discover::ServerInfo;
use crate::error::Error;
use crate::http;
use crate::Inner;
use core_models::{LlmRequest, LlmUsage, MessageRole, SessionKey};
use reqwest::header::{HeaderName, HeaderValue};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::time::Instant;

mod claim;
mod cut;
mod files;
mod save;
use claim::{Claim, Claimed, Claims};
pub(crate) use cut::CutSave;
use files::SlotFiles;

/// The body field that carries a session's key for hosted APIs.
pub(crate) const PROMPT_CACHE_KEY: &str = "prompt_cache_key";

/// How long the slots' state may take (llama-server answers in milliseconds, even while
/// its slots decode); past it, the session's hash slot.
const SLOTS_TIMEOUT: Duration = Duration::from_secs(2);

/// With slots saved, how often the slots are listed again while every one is busy (see
/// [`Inner::listed_for_pick`]).
const SLOT_POLL: Duration = Duration::from_millis(100);

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
    /// Which slots this client's requests hold, among the clients of this machine.
    claims: Claims,
    /// The files slots are saved in, and which state each holds.
    files: SlotFiles,
    /// What this client did with slots.
    state: Mutex<SlotState>,
}

/// One slot as llama-server lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SlotView {
    /// The slot's id.
    pub(crate) id: u32,
    /// Whether it is processing a task.
    pub(crate) busy: bool,
    /// The last task it ran (none before its first).
    pub(crate) task: Option<u64>,
    /// How many tokens it holds (`n_prompt_tokens`: after a reply, its prompt and the
    /// reply's tokens but the last).
    pub(crate) tokens: Option<u64>,
}

/// A session's state for prompts of one shape: what one saved file holds.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Shaped {
    /// The session.
    key: SessionKey,
    /// The shape of its prompts (see [`shape_of`]).
    shape: u64,
}

impl Shaped {
    /// This state's name in the records of slot files (see [`files`]): the key's
    /// characters (letters, digits, `-`, `_`) and the shape in hexadecimal.
    fn name(&self) -> String {
        format!("{}-{:016x}", self.key.as_str(), self.shape)
    }
}

/// A session's prompt of one shape, pinned to a slot.
#[derive(Debug, Clone)]
pub(crate) struct Pinned {
    /// The slot it goes to.
    pub(crate) slot: u32,
    /// Whether the request names the slot (`id_slot`). Not after a restore failed: the
    /// server emptied the slot, and a request pinned to an empty slot skips the server's
    /// own prompt cache; unpinned, the server chooses the slot and may load the session's
    /// prompt from its cache. The reply's slot is then found by what it holds.
    pub(crate) pin: bool,
    /// Whose state, of which shape.
    of: Shaped,
    /// The slot's claim among this machine's clients, held until its state is saved
    /// (when it could be taken; see [`claim`]).
    claim: Option<Arc<Claim>>,
}

impl Pinned {
    fn new(slot: u32, key: SessionKey, shape: u64) -> Self {
        Pinned {
            slot,
            pin: true,
            of: Shaped { key, shape },
            claim: None,
        }
    }

    /// The slot the request names, when it names one.
    pub(crate) fn id_slot(&self) -> Option<u32> {
        self.pin.then_some(self.slot)
    }
}

/// What a slot holds, as far as this client knows.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Held {
    of: Shaped,
    /// The slot's last task when it was saved; a slot whose last task is another ran
    /// something since.
    task: Option<u64>,
}

/// What became of a session's last reply's state.
#[derive(Debug)]
enum Kept {
    Saved,
    NotSaved,
    Failed(Error),
}

#[derive(Debug, Default)]
struct SlotState {
    /// The slot each session last used in this client.
    used: HashMap<SessionKey, u32>,
    /// What each slot holds, as far as this client knows.
    held: HashMap<u32, Held>,
    /// Shapes of sessions the server has no file for (a restore failed, and nothing was
    /// saved since): not asked to restore again.
    missing: HashSet<Shaped>,
    /// What became of each session's last reply.
    kept: HashMap<SessionKey, Kept>,
    /// Saves under way of replies their readers stopped early (see [`CutSave`]).
    pending: HashMap<SessionKey, tokio::task::JoinHandle<()>>,
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
        if config.slot_files == 0 {
            return Err(Error::InvalidConfig(
                "backend.slot_files: the server needs at least 1 file for saved slots".into(),
            ));
        }
        if config.pin_slots && slots.is_none() {
            tracing::debug!("the server says no slot count: sessions are not pinned to slots");
        }
        let claims = if slots.is_some() && config.claim_slots {
            Claims::new(&config.base_url, config.claims_dir.as_deref())
        } else {
            Claims::none()
        };
        Ok(Affinity {
            prompt_cache_key: config.prompt_cache_key,
            header,
            slots,
            save: config.save_slots && slots.is_some(),
            save_refused: AtomicBool::new(false),
            listing_refused: AtomicBool::new(false),
            files: SlotFiles::new(&claims, &info.model_identity(), config.slot_files),
            claims,
            state: Mutex::new(SlotState::default()),
        })
    }

    /// Whether slots are saved and restored (and the server can).
    fn saving(&self) -> bool {
        self.save && !self.save_refused.load(Ordering::Relaxed)
    }

    /// The slot for a request of `key` among `total`, given the slots when listed: the
    /// first of [`Affinity::preference`], else (all busy, or unknown) its hash slot, where
    /// the request waits.
    fn pick(&self, key: &SessionKey, total: u32, listed: Option<&[SlotView]>) -> u32 {
        listed
            .and_then(|listed| self.preference(key, total, listed).first().copied())
            .unwrap_or_else(|| slot_of(key, total))
    }

    /// The idle slots for a request of `key` among `total`, best first: the slot the
    /// session last used here; then its hash slot (where an earlier process left it; and
    /// sessions that start together spread over the slots instead of all taking the same
    /// one, whose replies then could not be saved before the next took the slot); then,
    /// when slots are saved (the state is restored wherever it goes), the others from the
    /// one that went longest without a task (one that never ran one first), whose cache is
    /// the least likely to be wanted again, and when they are not, from the lowest.
    fn preference(&self, key: &SessionKey, total: u32, listed: &[SlotView]) -> Vec<u32> {
        let mut idle: Vec<&SlotView> = listed.iter().filter(|s| !s.busy && s.id < total).collect();
        if self.saving() {
            idle.sort_by_key(|s| (s.task.map_or(0, |t| t.saturating_add(1)), s.id));
        } else {
            idle.sort_by_key(|s| s.id);
        }
        let last = self.lock().used.get(key).copied();
        let first = [last, Some(slot_of(key, total))];
        let mut order: Vec<u32> = Vec::with_capacity(idle.len());
        for slot in first
            .into_iter()
            .flatten()
            .filter(|slot| idle.iter().any(|s| s.id == *slot))
            .chain(idle.iter().map(|s| s.id))
        {
            if !order.contains(&slot) {
                order.push(slot);
            }
        }
        order
    }

    /// Note that `pinned` goes to its slot now; whether the slot still holds its state:
    /// this client left it there and (when the slots are listed) the slot ran nothing
    /// since. When it does not, whatever this client left there is gone once the request
    /// runs.
    fn note_request(&self, pinned: &Pinned, listed: Option<&[SlotView]>) -> bool {
        let mut state = self.lock();
        state.used.insert(pinned.of.key.clone(), pinned.slot);
        let Some(held) = state.held.get(&pinned.slot) else {
            return false;
        };
        let same = held.of == pinned.of;
        let holds = match listed.and_then(|l| l.iter().find(|s| s.id == pinned.slot)) {
            Some(now) => same && held.task.is_some() && now.task == held.task,
            None => same,
        };
        if !holds {
            state.held.remove(&pinned.slot);
        }
        holds
    }

    /// The file to restore `pinned`'s state from, when a restore is worth asking for:
    /// slots are saved, the server was not found without that file, the state was saved
    /// (as far as the records of this machine's clients tell, see [`files`]), and the
    /// conversation was answered before (a conversation the model never answered has
    /// nothing saved worth restoring). A restore that finds no file empties the slot, losing what it held, and a request
    /// pinned to an empty slot passes the server's own prompt cache by. A side prompt (a
    /// question asked apart for the session, see [`LlmRequest::side_of`]) does not carry
    /// the conversation: where there is no record, it is restored unless its file was
    /// found missing, as one of the session's earlier side prompts of its shape may have
    /// been saved.
    fn restore_file(&self, pinned: &Pinned, request: &LlmRequest) -> Option<String> {
        let answered_before = request.session.is_none()
            || request
                .messages
                .iter()
                .any(|m| m.role == MessageRole::Assistant);
        if !self.saving() || !answered_before || self.lock().missing.contains(&pinned.of) {
            return None;
        }
        self.files.find(&pinned.of.name())
    }

    /// `pinned`'s state is in its slot: saved from it, the slot's last task `task`.
    fn note_held(&self, pinned: &Pinned, task: Option<u64>) {
        let mut state = self.lock();
        state.missing.remove(&pinned.of);
        let of = pinned.of.clone();
        state.held.insert(pinned.slot, Held { of, task });
    }

    /// The server has no file for `pinned`'s state, or one that holds nothing.
    fn note_missing(&self, pinned: &Pinned) {
        self.files.forget(&pinned.of.name());
        let mut state = self.lock();
        state.missing.insert(pinned.of.clone());
        state.held.remove(&pinned.slot);
    }

    /// `pinned`'s slot holds something else now, or nothing known.
    fn note_lost(&self, pinned: &Pinned) {
        self.lock().held.remove(&pinned.slot);
    }

    /// What became of a reply of `key`: the last reply's outcome, except that a failure
    /// stays until [`Inner::keep_session`] reports it (a later side prompt saved does not
    /// hide that the conversation's save failed).
    fn note_kept(&self, key: &SessionKey, kept: Kept) {
        let mut state = self.lock();
        if matches!(kept, Kept::Failed(_)) || !matches!(state.kept.get(key), Some(Kept::Failed(_)))
        {
            state.kept.insert(key.clone(), kept);
        }
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
}

/// Forget what this machine recorded of `session`'s slots saved on any llama-server (see
/// [`crate::OpenAiConfig::save_slots`]), in `claims_dir` (as
/// [`crate::OpenAiConfig::claims_dir`]; `None`: the user's own): the files its states
/// were saved in are the first the next states saved reuse, and none of them is restored
/// for it again. llama-server cannot remove a saved slot, so a state stays in its file on
/// the server until the file is reused. How many records were removed.
pub fn forget_saved_slots(session: &SessionKey, claims_dir: Option<&std::path::Path>) -> usize {
    Claims::new("", claims_dir)
        .folder()
        .map_or(0, |dir| files::forget_session(dir, session.as_str()))
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

/// The shape of `request`'s prompt: what its rendering starts with, the leading message
/// (role and text) and the tools the template describes. Two prompts of one shape share
/// their beginning; prompts of different shapes share next to nothing.
pub(crate) fn shape_of(request: &LlmRequest) -> u64 {
    let mut text = String::new();
    if let Some(first) = request.messages.first() {
        text.push_str(&format!("{:?}\u{0}{}\u{0}", first.role, first.content));
    }
    for tool in &request.tools {
        text.push_str(&serde_json::to_string(tool).unwrap_or_default());
        text.push('\u{0}');
    }
    fnv1a(text.as_bytes())
}

/// The slots in llama-server's `GET /slots` answer (a list of slots, each with its `id`,
/// `is_processing` and, once it ran one, `id_task`), lowest first; `None` when it is no
/// such list.
fn slots_in(slots: &Value) -> Option<Vec<SlotView>> {
    let mut listed = Vec::new();
    for slot in slots.as_array()? {
        listed.push(SlotView {
            id: u32::try_from(slot.get("id")?.as_u64()?).ok()?,
            busy: slot.get("is_processing")?.as_bool()?,
            task: slot.get("id_task").and_then(Value::as_u64),
            tokens: slot.get("n_prompt_tokens").and_then(Value::as_u64),
        });
    }
    listed.sort_unstable_by_key(|s| s.id);
    Some(listed)
}

/// Whether `slot` still holds the reply `usage` describes: idle, and holding its prompt
/// and its tokens but the last (what llama-server keeps of a reply), when both counts are
/// known. The counts come from the server: any value is compared, none overflows.
fn holds_reply(slot: &SlotView, usage: Option<&LlmUsage>) -> bool {
    !slot.busy
        && match (slot.tokens, usage) {
            (Some(tokens), Some(usage)) => {
                Some(tokens)
                    == usage
                        .prompt_tokens
                        .checked_add(usage.generated_tokens)
                        .and_then(|all| all.checked_sub(1))
            }
            _ => true,
        }
}

/// Whether a failed slot action says the server cannot save slots at all.
fn cannot_save(error: &Error) -> bool {
    matches!(error, Error::Server { status: 501, .. })
}

/// Whether a failed restore says the server has no such file (llama-server answers 400
/// when it cannot read the file it was named).
fn no_file(error: &Error) -> bool {
    matches!(error, Error::Rejected { .. } | Error::NotFound { .. })
}

impl Inner {
    /// Before a request of a session, when sessions are pinned: the slot it goes to
    /// (chosen among the idle ones, see [`Affinity::pick`]); and, when slots are saved
    /// and that slot does not hold the session's state of this prompt's shape, that state
    /// restored into it. Any failure is only logged: the request goes on as it would have.
    pub(crate) async fn prepare_session(&self, request: &LlmRequest) -> Option<Pinned> {
        let key = request.sent_for()?;
        let total = self.affinity.slots?;
        let until = Instant::now() + self.config.first_token_timeout;
        let listed = self.listed_for_pick(until).await;
        let (slot, claim, listed) = self.claim_slot(key, total, listed, until).await;
        let pinned = Pinned {
            claim: claim.map(Arc::new),
            ..Pinned::new(slot, key.clone(), shape_of(request))
        };
        let held = self.affinity.note_request(&pinned, listed.as_deref());
        tracing::debug!(
            slot = pinned.slot,
            held,
            claimed = pinned.claim.is_some(),
            "the session's slot"
        );
        let Some(file) = (!held)
            .then(|| self.affinity.restore_file(&pinned, request))
            .flatten()
        else {
            return Some(pinned);
        };
        match self.slot_action(&pinned, "restore", &file).await {
            Ok(answer) => {
                let tokens = answer.get("n_restored").and_then(Value::as_u64);
                tracing::debug!(
                    slot = pinned.slot,
                    ?tokens,
                    "the session's slot was restored"
                );
                // Whatever this client left there is gone; what is there now is known
                // once the reply is saved.
                self.affinity.note_lost(&pinned);
            }
            Err(e) => {
                if cannot_save(&e) {
                    self.affinity.refuse_saving();
                    tracing::debug!(slot = pinned.slot, error = %e, "the session's slot was not restored");
                    return Some(pinned);
                }
                if no_file(&e) {
                    self.affinity.note_missing(&pinned);
                }
                tracing::debug!(slot = pinned.slot, error = %e, "the session's slot was not restored: the server chooses one");
                return Some(Pinned {
                    pin: false,
                    claim: None,
                    ..pinned
                });
            }
        }
        Some(pinned)
    }

    /// The slot for a request of `key` among `total`, the slots as `listed`, and its
    /// claim: the first of the idle slots in the session's order of preference that no
    /// other client of this machine holds (see [`claim`]). With slots saved, while every
    /// idle slot is held, the slots are listed again every [`SLOT_POLL`] until `until` (a
    /// slot is held until its state is saved). Else (no slot free, or not in time, or the
    /// slots not listed) the request goes to its hash slot unclaimed, where it waits.
    /// Where claims cannot be taken, the first idle slot unclaimed. The slots as last
    /// listed are returned with it.
    async fn claim_slot(
        &self,
        key: &SessionKey,
        total: u32,
        mut listed: Option<Vec<SlotView>>,
        until: Instant,
    ) -> (u32, Option<Claim>, Option<Vec<SlotView>>) {
        if !self.affinity.claims.available() {
            return (
                self.affinity.pick(key, total, listed.as_deref()),
                None,
                listed,
            );
        }
        loop {
            let Some(now) = listed.as_deref() else {
                return (slot_of(key, total), None, listed);
            };
            for slot in self.affinity.preference(key, total, now) {
                match self.affinity.claims.try_claim(slot) {
                    Claimed::Yes(claim) => return (slot, Some(claim), listed),
                    Claimed::Taken => tracing::trace!(slot, "the slot is claimed"),
                    Claimed::Unavailable => return (slot, None, listed),
                }
            }
            if !self.affinity.saving() || Instant::now() >= until {
                tracing::debug!("no slot free: the session's hash slot, unclaimed");
                return (slot_of(key, total), None, listed);
            }
            tokio::time::sleep(SLOT_POLL).await;
            listed = self.list_slots().await;
        }
    }

    /// The slots to choose a session's among. With slots saved, a request does not queue
    /// on a busy slot: llama-server would start it the moment the slot's reply ends, before
    /// the session whose reply that was could save it (its next process would then restore
    /// an older state, or find none and start empty). With claims, a slot is held until
    /// saved, and [`Inner::claim_slot`] waits for a free one. Without them, when every
    /// slot is busy, the slots are listed again every [`SLOT_POLL`] until one has been
    /// idle in two listings in a row — a slot idle in only the last listing is shown
    /// busy, left to its session's save —, or until `until` (the first-token timeout),
    /// after which the request waits at its hash slot as it would have.
    async fn listed_for_pick(&self, until: Instant) -> Option<Vec<SlotView>> {
        let mut listed = self.list_slots().await?;
        if !self.affinity.saving()
            || self.affinity.claims.available()
            || listed.iter().any(|s| !s.busy)
        {
            return Some(listed);
        }
        let mut idle_before: HashSet<u32> = HashSet::new();
        while Instant::now() < until {
            tokio::time::sleep(SLOT_POLL).await;
            let Some(now) = self.list_slots().await else {
                break;
            };
            let idle_now: HashSet<u32> = now.iter().filter(|s| !s.busy).map(|s| s.id).collect();
            listed = now;
            if idle_now.iter().any(|id| idle_before.contains(id)) {
                for slot in &mut listed {
                    slot.busy |= !idle_before.contains(&slot.id);
                }
                tracing::debug!(waited_for = ?idle_now, "a slot went idle");
                return Some(listed);
            }
            idle_before = idle_now;
        }
        tracing::debug!("every slot stayed busy: the request waits at the session's hash slot");
        Some(listed)
    }

    /// Slot `slot` as llama-server lists it now, when it does.
    async fn slot_now(&self, slot: u32) -> Option<SlotView> {
        let listed = self.list_slots().await?;
        listed.into_iter().find(|s| s.id == slot)
    }

    /// llama-server's slots (`GET {root}/slots`), or `None` when the server does not say
    /// in time (a server that does not list its slots is not asked again).
    async fn list_slots(&self) -> Option<Vec<SlotView>> {
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
        let send = || {
            http::send(
                self.http.get(url.clone()),
                url,
                deadline,
                self.config.connect_timeout,
                &context,
            )
        };
        // A kept-alive connection the server closed meanwhile breaks before any reply:
        // asked again once, on a new connection.
        let sent = match send().await {
            Err(failure) if matches!(failure.error, Error::Disconnected { .. }) => {
                tracing::debug!(error = %failure.error, "the slots are listed again");
                send().await
            }
            sent => sent,
        };
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
        let listed = slots_in(&slots);
        if listed.is_none() {
            tracing::debug!("the slots' state is not a list of slots: the session's hash slot");
        }
        listed
    }
}

#[cfg(test)]
mod tests;
