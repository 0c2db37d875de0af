//! Prompt-lookup drafting: the tokens that followed the last few tokens the last time they
//! appeared in the conversation, proposed as the reply's next tokens. The model checks a
//! whole draft in one batch and keeps what it would have written itself, so a reply that
//! copies from the context (a file rewritten after it was read, an edit) comes several
//! tokens per step, and the reply is the same as without drafting.
//!
//! The draft's length adapts to how drafts fare: it grows while they are taken whole and
//! shrinks when they are not, and after a draft the model refused outright, drafting
//! pauses for a while, so free text (where lookups rarely hold) costs almost nothing.
//! Pure: token lists in, a draft out.

/// The longest n-gram looked up (tried first), and the shortest.
const NGRAM_MAX: usize = 4;
const NGRAM_MIN: usize = 2;
/// The longest draft, and the first one's length.
const DRAFT_MAX: usize = 16;
const DRAFT_START: usize = 6;
/// The longest pause after refused drafts, in tokens.
const PAUSE_MAX: usize = 32;

/// Drafts for one reply, and how they fared so far.
#[derive(Debug, Clone)]
pub(crate) struct Drafter {
    length: usize,
    /// Tokens to write before drafting again.
    pause: usize,
    /// The pause after the next refused draft.
    next_pause: usize,
    /// Drafted and kept tokens, for the log.
    pub(crate) drafted: u64,
    pub(crate) accepted: u64,
}

impl Default for Drafter {
    fn default() -> Self {
        Drafter {
            length: DRAFT_START,
            pause: 0,
            next_pause: 1,
            drafted: 0,
            accepted: 0,
        }
    }
}

impl Drafter {
    /// A draft to follow `history` (the prompt and the reply so far, its last token the
    /// one about to be decoded), at most `room` tokens; empty when nothing matches or
    /// drafting pauses.
    pub(crate) fn draft<T: PartialEq + Copy>(&mut self, history: &[T], room: usize) -> Vec<T> {
        if self.pause > 0 {
            self.pause -= 1;
            return Vec::new();
        }
        let want = self.length.min(room);
        if want == 0 {
            return Vec::new();
        }
        let draft = lookup(history, want);
        self.drafted += draft.len() as u64;
        draft
    }

    /// How the last draft fared: `kept` of its `len` tokens were what the model wrote.
    pub(crate) fn record(&mut self, len: usize, kept: usize) {
        if len == 0 {
            return;
        }
        self.accepted += kept as u64;
        if kept == len {
            self.length = (self.length * 2).min(DRAFT_MAX);
            self.next_pause = 1;
        } else if kept == 0 {
            self.length = (self.length / 2).max(1);
            self.pause = self.next_pause;
            self.next_pause = (self.next_pause * 2).min(PAUSE_MAX);
        } else {
            self.length = (kept + 1).clamp(1, DRAFT_MAX);
        }
    }
}

/// The tokens that followed the most recent earlier occurrence of `history`'s last
/// n-gram (the longest n from [`NGRAM_MAX`] down to [`NGRAM_MIN`] that occurs), at most
/// `max` of them.
pub(crate) fn lookup<T: PartialEq + Copy>(history: &[T], max: usize) -> Vec<T> {
    let len = history.len();
    for n in (NGRAM_MIN..=NGRAM_MAX).rev() {
        if len <= n {
            continue;
        }
        let tail = &history[len - n..];
        // Start positions of earlier occurrences, latest first; the occurrence must be
        // followed by at least one token.
        let found = (0..len - n)
            .rev()
            .find(|&start| &history[start..start + n] == tail);
        if let Some(start) = found {
            let from = start + n;
            let to = (from + max).min(len);
            return history[from..to].to_vec();
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_is_drafted_from_where_it_was_read() {
        // "read: a b c d e f g h | now copying: a b c" → draft "d e f g h"
        let history = [1, 2, 3, 4, 5, 6, 7, 8, 90, 91, 1, 2, 3];
        assert_eq!(lookup(&history, 16), vec![4, 5, 6, 7, 8, 90, 91, 1, 2, 3]);
        assert_eq!(lookup(&history, 3), vec![4, 5, 6]);
    }

    #[test]
    fn the_longest_and_latest_match_wins_and_nothing_is_invented() {
        // "7 8" followed by 1 early, by 2 later; "6 7 8" only early.
        let history = [6, 7, 8, 1, 0, 7, 8, 2, 0, 6, 7, 8];
        assert_eq!(lookup(&history, 1), vec![1]);
        let history = [5, 7, 8, 1, 0, 7, 8, 2, 0, 9, 7, 8];
        assert_eq!(lookup(&history, 1), vec![2]);
        // No bigram seen before: no draft.
        assert!(lookup(&[1, 2, 3, 4, 5], 8).is_empty());
        assert!(lookup::<u32>(&[], 8).is_empty());
        assert!(lookup(&[1, 1], 8).is_empty());
    }

    #[test]
    fn drafts_grow_when_taken_and_pause_when_refused() {
        let history: Vec<u32> = (0..50).chain(0..10).collect();
        let mut drafter = Drafter::default();
        let first = drafter.draft(&history, 100);
        assert_eq!(first.len(), DRAFT_START);
        drafter.record(first.len(), first.len());
        assert_eq!(drafter.draft(&history, 100).len(), DRAFT_START * 2);
        drafter.record(12, 0);
        // Paused for one token, then a shorter draft; refused again, a longer pause.
        assert!(drafter.draft(&history, 100).is_empty());
        assert_eq!(drafter.draft(&history, 100).len(), DRAFT_START);
        drafter.record(DRAFT_START, 0);
        assert!(drafter.draft(&history, 100).is_empty());
        assert!(drafter.draft(&history, 100).is_empty());
        assert_eq!(drafter.draft(&history, 2).len(), 2);
        assert_eq!(drafter.accepted, DRAFT_START as u64);
    }
}
