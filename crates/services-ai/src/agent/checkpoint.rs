//! Checkpoints of the workspace (see [`core_models::Checkpointer`]): recorded before the
//! request's first call that may change anything — once a request, whatever follows — and
//! at the end of such a request, so a person can undo it. Recording takes a walk of the
//! workspace; a failure costs only the undo, and is logged as a warning.

use super::run::Run;
use core_models::CheckpointMoment;

/// The most of the request's words a checkpoint's label keeps.
const LABEL_CHARS: usize = 120;

impl Run {
    /// Record the workspace before the request's first change (once).
    pub(super) async fn checkpoint_before(&mut self) {
        if self.checkpoint.is_none() {
            self.checkpoint = self.checkpoint(CheckpointMoment::BeforeChange).await;
        }
    }

    /// Record the state the request left, when it recorded one before its first change.
    pub(super) async fn checkpoint_after(&mut self) {
        if self.checkpoint.is_some() {
            self.checkpoint(CheckpointMoment::AfterRequest).await;
        }
    }

    async fn checkpoint(&self, moment: CheckpointMoment) -> Option<u64> {
        let checkpointer = self.shared.ports.checkpointer.as_ref()?;
        let workspace = self.workspace.as_ref()?;
        let label: String = self.request.message.chars().take(LABEL_CHARS).collect();
        match checkpointer
            .record(workspace, moment, self.request.conversation_id, &label)
            .await
        {
            Ok(id) => Some(id),
            Err(e) => {
                tracing::warn!(error = %e, ?moment, "the workspace could not be recorded: this request cannot be undone");
                None
            }
        }
    }
}
