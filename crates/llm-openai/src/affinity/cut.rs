//! A reply its reader stopped early (the agent cuts a reply that loops): its slot (the one
//! it was pinned to, or else the one idle slot that holds it) saved all the same, once the server has stopped generating, so that the session's file
//! holds its latest state. Without it, the file keeps the state before the cut reply, and
//! the next process restores that older state every turn after.
//!
//! The save runs on its own task (the reply's stream is gone); the session's
//! [`Inner::keep_session`] waits for it, so a process that ends after its request still
//! saves. The slot is saved only when it is idle and holds about what the cut reply left
//! there: its prompt and the pieces read, and at most [`CUT_SLACK`] tokens more (what the
//! server generated before it noticed the reader was gone).

use super::{Kept, Pinned, SlotView};
use crate::Inner;
use core_models::{LlmChunk, SessionKey};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Most tokens the server may generate after the reader went before it stops.
const CUT_SLACK: u64 = 64;
/// How long the save waits for the slot to go idle.
const IDLE_WAIT: Duration = Duration::from_secs(3);
/// How often it looks.
const IDLE_POLL: Duration = Duration::from_millis(25);
/// Most time [`Inner::keep_session`] waits for a save under way.
const SAVE_WAIT: Duration = Duration::from_secs(30);

/// Armed over a pinned reply whose slot is to be saved: dropped while armed (its reader
/// stopped it), it saves the slot on a task of its own; disarmed when the reply ended
/// whole (then [`Inner::after_reply`] saves it).
pub(crate) struct CutSave {
    inner: Arc<Inner>,
    pinned: Option<Pinned>,
    /// The prompt's tokens, as the server reported them before the reply.
    prompt: Option<u64>,
    /// Pieces of the reply read (about a token each).
    pieces: u64,
}

impl CutSave {
    /// A guard over the reply of `pinned` (none when slots are not saved).
    pub(crate) fn new(inner: &Arc<Inner>, pinned: Option<&Pinned>) -> Self {
        CutSave {
            inner: Arc::clone(inner),
            pinned: pinned.filter(|_| inner.affinity.saving()).cloned(),
            prompt: None,
            pieces: 0,
        }
    }

    /// Note a chunk handed to the reader.
    pub(crate) fn saw(&mut self, chunk: &LlmChunk) {
        match chunk {
            LlmChunk::Usage(usage) => self.prompt = Some(usage.prompt_tokens),
            LlmChunk::Progress(_) => {}
            LlmChunk::Text { .. } | LlmChunk::Reasoning { .. } | LlmChunk::ToolCall(_) => {
                self.pieces = self.pieces.saturating_add(1);
            }
        }
    }

    /// The reply ended whole: nothing to do on drop.
    pub(crate) fn disarm(&mut self) {
        self.pinned = None;
    }
}

impl Drop for CutSave {
    fn drop(&mut self) {
        let (Some(pinned), Some(prompt)) = (self.pinned.take(), self.prompt) else {
            return;
        };
        if self.pieces == 0 {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let inner = Arc::clone(&self.inner);
        let pieces = self.pieces;
        let key = pinned.of.key.clone();
        let task = runtime.spawn(async move { inner.after_cut(&pinned, prompt, pieces).await });
        if let Some(earlier) = self.inner.affinity.lock().pending.insert(key, task) {
            earlier.abort();
        }
    }
}

/// Whether `slot` holds what a reply cut after `pieces` pieces of a `prompt`-token prompt
/// left there: idle, and holding the prompt and the pieces but the last, plus at most
/// [`CUT_SLACK`] tokens. The counts come from the server: none overflows.
pub(super) fn holds_cut(slot: &SlotView, prompt: u64, pieces: u64) -> bool {
    let Some(least) = prompt.checked_add(pieces).and_then(|n| n.checked_sub(1)) else {
        return false;
    };
    let most = least.saturating_add(CUT_SLACK);
    !slot.busy && slot.tokens.is_some_and(|t| (least..=most).contains(&t))
}

impl Inner {
    /// After a pinned reply was cut: wait for its slot to go idle, then save it if it
    /// holds the cut reply (see [`holds_cut`]). A reply the server chose the slot of (see
    /// [`Pinned::pin`]): the one idle slot that holds it, once one does.
    async fn after_cut(&self, pinned: &Pinned, prompt: u64, pieces: u64) {
        if !pinned.pin {
            return self.after_unpinned_cut(pinned, prompt, pieces).await;
        }
        let until = Instant::now() + IDLE_WAIT;
        let now = loop {
            match self.slot_now(pinned.slot).await {
                Some(slot) if slot.busy && Instant::now() < until => {
                    tokio::time::sleep(IDLE_POLL).await;
                }
                other => break other,
            }
        };
        if !now.is_some_and(|s| holds_cut(&s, prompt, pieces)) {
            tracing::debug!(
                slot = pinned.slot,
                ?now,
                prompt,
                pieces,
                "the slot does not hold the cut reply: not saved"
            );
            self.affinity.note_lost(pinned);
            self.affinity.note_kept(&pinned.of.key, Kept::NotSaved);
            return;
        }
        self.save(pinned, now).await;
    }

    /// After a cut reply the server chose the slot of: the slots listed until exactly one
    /// idle slot holds it (or for [`IDLE_WAIT`]), which is then saved and where the session
    /// goes next in this client; else nothing is saved.
    async fn after_unpinned_cut(&self, pinned: &Pinned, prompt: u64, pieces: u64) {
        let until = Instant::now() + IDLE_WAIT;
        loop {
            let listed = self.list_slots().await.unwrap_or_default();
            let mut holding = listed.iter().filter(|s| holds_cut(s, prompt, pieces));
            match (holding.next(), holding.next()) {
                (Some(found), None) => return self.save_found(pinned, *found).await,
                (Some(_), Some(_)) => break,
                (None, _) if Instant::now() >= until => break,
                (None, _) => tokio::time::sleep(IDLE_POLL).await,
            }
        }
        tracing::debug!(prompt, pieces, "no one slot holds the cut reply: not saved");
        self.affinity.note_kept(&pinned.of.key, Kept::NotSaved);
    }

    /// Wait (a while) for the save of `key`'s cut reply, if one is under way.
    pub(super) async fn finish_cut_save(&self, key: &SessionKey) {
        let pending = self.affinity.lock().pending.remove(key);
        if let Some(task) = pending {
            if tokio::time::timeout(SAVE_WAIT, task).await.is_err() {
                tracing::debug!("the cut reply's save took too long");
            }
        }
    }
}
