//! What the person undid (`aintern undo`, `/undo`), kept with a session for the model:
//! bounded, and appended by a process other than the session's own.

use super::{Record, Store, StoreError};
use chrono::Utc;
use uuid::Uuid;

/// The most of what was undone a session keeps to tell the model.
const NOTE_CAP: usize = 4096;

/// `note` cut to [`NOTE_CAP`] bytes (at a character boundary).
pub(crate) fn bounded_note(note: &str) -> String {
    let mut end = note.len().min(NOTE_CAP);
    while !note.is_char_boundary(end) {
        end -= 1;
    }
    note[..end].to_string()
}

/// Add to the saved session `id` that the person undid requests (`note` says what), for a
/// process other than the session's own (`aintern undo`).
pub(crate) fn record_undone(id: Uuid, note: &str) -> Result<(), StoreError> {
    Store::user()?.open(id)?.append(&Record::Undone {
        at: Utc::now(),
        note: bounded_note(note),
    })
}
