//! Saving a session's slot when its reply ends, and the slot actions (`save`, `restore`)
//! themselves. See the parent module for when a slot is saved and restored, and
//! [`super::files`] for the files states are saved in.

use super::{cannot_save, holds_reply, Kept, Pinned, SlotView};
use crate::classify::Context;
use crate::error::Error;
use crate::http;
use crate::Inner;
use core_models::{LlmUsage, SessionKey};
use serde_json::{json, Value};
use tokio::time::Instant;

impl Inner {
    /// After a reply of a pinned session ended: its slot saved, when slots are saved and
    /// the slot still holds the reply: idle, and holding as many tokens as the reply's
    /// prompt and its tokens but the last (what llama-server keeps of a reply). A slot
    /// already serving another request, or that served one since, is not saved. What
    /// became of it is what [`Inner::keep_session`] says.
    pub(crate) async fn after_reply(&self, pinned: &Pinned, usage: Option<&LlmUsage>) {
        if !self.affinity.saving() {
            return;
        }
        if !pinned.pin {
            return self.after_unpinned_reply(pinned, usage).await;
        }
        let now = self.slot_now(pinned.slot).await;
        if now.is_some_and(|s| !holds_reply(&s, usage)) {
            tracing::debug!(
                slot = pinned.slot,
                ?now,
                "the slot holds another request now: not saved"
            );
            self.affinity.note_lost(pinned);
            self.affinity.note_kept(&pinned.of.key, Kept::NotSaved);
            return;
        }
        self.save(pinned, now).await;
    }

    /// After a reply the server chose the slot of (see [`Pinned::pin`]): the one idle slot
    /// that holds as many tokens as the reply's prompt and its tokens but the last is
    /// saved, and the session goes there next in this client. None, or more than one: not
    /// saved (a wrong file would only cost time, but nothing is saved on a guess).
    async fn after_unpinned_reply(&self, pinned: &Pinned, usage: Option<&LlmUsage>) {
        let Some(usage) = usage else {
            self.affinity.note_kept(&pinned.of.key, Kept::NotSaved);
            return;
        };
        let listed = self.list_slots().await.unwrap_or_default();
        let mut holding = listed
            .iter()
            .filter(|s| s.tokens.is_some() && holds_reply(s, Some(usage)));
        let (Some(found), None) = (holding.next(), holding.next()) else {
            tracing::debug!("the reply's slot is not known: not saved");
            self.affinity.note_kept(&pinned.of.key, Kept::NotSaved);
            return;
        };
        self.save_found(pinned, *found).await;
    }

    /// Save `found`, the slot a reply of `pinned`'s session the server chose the slot of
    /// turned out to be in; the session goes there next in this client.
    pub(super) async fn save_found(&self, pinned: &Pinned, found: SlotView) {
        let found_pin = Pinned {
            slot: found.id,
            pin: true,
            of: pinned.of.clone(),
            claim: None,
        };
        self.affinity
            .lock()
            .used
            .insert(found_pin.of.key.clone(), found_pin.slot);
        self.save(&found_pin, Some(found)).await;
    }

    /// Save `pinned`'s slot, which holds its reply (`now`: the slot as listed then), and
    /// note what became of it.
    pub(super) async fn save(&self, pinned: &Pinned, now: Option<SlotView>) {
        let Some(file) = self.affinity.files.place(&pinned.of.name()) else {
            self.affinity.note_kept(&pinned.of.key, Kept::NotSaved);
            return;
        };
        let kept = match self.slot_action(pinned, "save", &file).await {
            Ok(answer) => {
                let tokens = answer.get("n_saved").and_then(Value::as_u64);
                tracing::debug!(slot = pinned.slot, ?tokens, "the session's slot was saved");
                if tokens == Some(0) {
                    // The slot held nothing: the file holds nothing worth restoring.
                    self.affinity.note_missing(pinned);
                    Kept::NotSaved
                } else {
                    self.affinity.note_held(pinned, now.and_then(|s| s.task));
                    Kept::Saved
                }
            }
            Err(e) if cannot_save(&e) => {
                self.affinity.refuse_saving();
                self.affinity.files.forget(&pinned.of.name());
                Kept::NotSaved
            }
            Err(e) => {
                // What the file holds now is not known.
                self.affinity.note_missing(pinned);
                Kept::Failed(Error::Slot {
                    action: "save",
                    slot: pinned.slot,
                    source: Box::new(e),
                })
            }
        };
        self.affinity.note_kept(&pinned.of.key, kept);
    }

    /// Whether the state of `key`'s last reply was saved for a later process (slots are
    /// saved as soon as a reply ends, see [`Inner::after_reply`]).
    ///
    /// # Errors
    /// [`Error::Slot`] when the server could not save it (a server without
    /// `--slot-save-path` is no error: it is not asked again).
    pub(crate) async fn keep_session(&self, key: &SessionKey) -> Result<bool, Error> {
        self.finish_cut_save(key).await;
        match self.affinity.lock().kept.remove(key) {
            Some(Kept::Saved) => Ok(true),
            Some(Kept::Failed(e)) => Err(e),
            Some(Kept::NotSaved) | None => Ok(false),
        }
    }

    /// `POST {root}/slots/{slot}?action={action}` with `file`, where `pinned`'s state is
    /// (with the client's headers and key, and the session's header), sent again once
    /// when the connection breaks before any reply; the server's answer.
    pub(super) async fn slot_action(
        &self,
        pinned: &Pinned,
        action: &'static str,
        file: &str,
    ) -> Result<Value, Error> {
        let url = self.urls.slot_action(pinned.slot, action);
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
                .json(&json!({ "filename": file }));
            let request = self.affinity.with_header(request, Some(&pinned.of.key));
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
