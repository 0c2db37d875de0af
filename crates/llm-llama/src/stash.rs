//! The prompt cache in host memory: the state of a sequence a prompt of another shape was
//! about to overwrite, copied out of the KV cache and copied back when a later prompt
//! starts the way it did — as llama-server's `--cache-ram` keeps its slots' prompts.
//!
//! The context keeps one sequence (see [`crate::slots::SEQUENCES`]), and an agent's turn
//! sends prompts of several shapes: a decision asked apart, the conversation with its
//! tools, an answer asked from results alone. Each would evict the others; with the
//! stash, each shape finds its own state again, in this process and, saved with the
//! session (see [`crate::state`]), in the next.
//!
//! Pure bookkeeping over token lists and opaque payloads (llama.cpp's sequence states):
//! which entry serves a prompt best, which entries a new one supersedes, which go when
//! the memory cap is reached. The worker does the copying. A restored state holds the
//! very values the cache held, so a prompt served from the stash is evaluated as if its
//! sequence had never been overwritten.

use core_models::SessionKey;

/// Fewest tokens worth stashing, and the least gain (tokens not evaluated again) worth a
/// restore: below, evaluating them costs about what copying the state does.
pub(crate) const MIN_TOKENS: usize = 16;

/// Most entries kept, whatever their size (each lookup compares the prompt with each).
const MAX_ENTRIES: usize = 32;

/// States of sequences, in host memory, at most `cap` bytes of them.
#[derive(Debug)]
pub(crate) struct Stash<T, P> {
    entries: Vec<Stashed<T, P>>,
    cap: usize,
    clock: u64,
}

/// One stashed state.
#[derive(Debug)]
pub(crate) struct Stashed<T, P> {
    /// The tokens the state holds, in order.
    pub(crate) tokens: Vec<T>,
    /// The state itself.
    pub(crate) payload: P,
    /// Its size in memory.
    pub(crate) bytes: usize,
    /// The session its prompt was sent for, when it said.
    pub(crate) owner: Option<SessionKey>,
    used: u64,
}

impl<T: PartialEq + Copy, P> Stash<T, P> {
    /// An empty stash of at most `cap` bytes (0: nothing is ever kept).
    pub(crate) fn new(cap: usize) -> Self {
        Stash {
            entries: Vec::new(),
            cap,
            clock: 0,
        }
    }

    /// Whether anything can be kept.
    pub(crate) fn enabled(&self) -> bool {
        self.cap > 0
    }

    /// The entry that holds the longest start of `prompt`, and how many tokens of it,
    /// when that is at least [`MIN_TOKENS`] more than `than` (what the sequence itself
    /// holds of the prompt).
    pub(crate) fn best(&self, prompt: &[T], than: usize) -> Option<(usize, usize)> {
        self.entries
            .iter()
            .enumerate()
            .map(|(i, e)| (i, crate::slots::common_prefix(&e.tokens, prompt)))
            .filter(|&(_, common)| common >= than.saturating_add(MIN_TOKENS))
            .max_by_key(|&(i, common)| (common, self.entries[i].used))
    }

    /// Take entry `index` out (its state goes back into the sequence).
    pub(crate) fn take(&mut self, index: usize) -> Option<Stashed<T, P>> {
        (index < self.entries.len()).then(|| self.entries.swap_remove(index))
    }

    /// Whether keeping a state of `tokens` would add anything: it is long enough, and no
    /// entry holds `tokens` or more of the same (the state would then be a copy of part of
    /// it).
    pub(crate) fn wants(&self, tokens: &[T]) -> bool {
        self.enabled()
            && tokens.len() >= MIN_TOKENS
            && !self
                .entries
                .iter()
                .any(|e| e.tokens.len() >= tokens.len() && e.tokens.starts_with(tokens))
    }

    /// Keep the state `payload` (of `bytes`) of `tokens`, sent for `owner`: it replaces
    /// the entries it holds all of (their tokens start it); then the least recently used
    /// entries go until the cap and the count are kept. Returns whether it was kept (not
    /// when it is not [`Stash::wants`]-ed or alone exceeds the cap).
    pub(crate) fn put(
        &mut self,
        tokens: Vec<T>,
        payload: P,
        bytes: usize,
        owner: Option<SessionKey>,
    ) -> bool {
        if !self.wants(&tokens) || bytes > self.cap {
            return false;
        }
        self.entries.retain(|e| !tokens.starts_with(&e.tokens));
        self.clock += 1;
        self.entries.push(Stashed {
            tokens,
            payload,
            bytes,
            owner,
            used: self.clock,
        });
        while self.total() > self.cap || self.entries.len() > MAX_ENTRIES {
            let Some(oldest) = self
                .entries
                .iter()
                .enumerate()
                .min_by_key(|(_, e)| e.used)
                .map(|(i, _)| i)
            else {
                break;
            };
            self.entries.swap_remove(oldest);
        }
        true
    }

    /// The entries stashed for `owner`, most recently used first.
    pub(crate) fn of<'a>(&'a self, owner: &'a SessionKey) -> Vec<&'a Stashed<T, P>> {
        let mut of: Vec<&Stashed<T, P>> = self
            .entries
            .iter()
            .filter(|e| e.owner.as_ref() == Some(owner))
            .collect();
        of.sort_by_key(|e| std::cmp::Reverse(e.used));
        of
    }

    /// Bytes held.
    pub(crate) fn total(&self) -> usize {
        self.entries.iter().map(|e| e.bytes).sum()
    }

    /// How many entries are held.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Forget everything.
    pub(crate) fn clear(&mut self) {
        self.entries.clear();
    }
}

#[cfg(feature = "llama-cpp")]
pub(crate) use llama::{stash_seq, swap_in, SeqStash};

#[cfg(feature = "llama-cpp")]
mod llama {
    use super::*;
    use crate::slots::Slots;
    use llama_cpp_2::context::session::{LlamaStateSeqFlags, SeqState};
    use llama_cpp_2::context::LlamaContext;
    use llama_cpp_2::token::LlamaToken;

    /// The stash of the context's sequences' states, and whom each sequence's prompt was
    /// sent for.
    #[derive(Debug)]
    pub(crate) struct SeqStash {
        pub(crate) stash: Stash<LlamaToken, SeqState>,
        /// The session each sequence's last prompt was sent for, by sequence.
        owners: Vec<Option<SessionKey>>,
    }

    impl SeqStash {
        /// An empty stash of at most `cap` bytes.
        pub(crate) fn new(cap: usize) -> Self {
            SeqStash {
                stash: Stash::new(cap),
                owners: Vec::new(),
            }
        }

        /// The session sequence `seq`'s last prompt was sent for.
        pub(crate) fn owner(&self, seq: usize) -> Option<&SessionKey> {
            self.owners.get(seq).and_then(Option::as_ref)
        }

        /// Sequence `seq` now holds a prompt sent for `owner`.
        pub(crate) fn set_owner(&mut self, seq: usize, owner: Option<SessionKey>) {
            if self.owners.len() <= seq {
                self.owners.resize(seq + 1, None);
            }
            self.owners[seq] = owner;
        }

        /// Forget every stashed state and owner.
        pub(crate) fn clear(&mut self) {
            self.stash.clear();
            self.owners.clear();
        }
    }

    /// Copy what sequence `seq` holds into the stash, when it adds something there.
    pub(crate) fn stash_seq(
        ctx: &LlamaContext<'_>,
        slots: &Slots<LlamaToken>,
        stash: &mut SeqStash,
        seq: usize,
    ) {
        let tokens = slots.tokens(seq);
        if !stash.stash.wants(tokens) {
            return;
        }
        let Ok(seq_id) = i32::try_from(seq) else {
            return;
        };
        match ctx.state_seq_get(seq_id, LlamaStateSeqFlags::empty()) {
            Ok(state) => {
                let bytes = state.byte_len();
                let owner = stash.owner(seq).cloned();
                let kept = stash.stash.put(tokens.to_vec(), state, bytes, owner);
                tracing::debug!(
                    tokens = tokens.len(),
                    bytes,
                    kept,
                    entries = stash.stash.len(),
                    "a sequence's state stashed"
                );
            }
            Err(e) => tracing::debug!(error = %e, "a sequence's state could not be stashed"),
        }
    }

    /// Before `prompt` goes to sequence `seq`, which holds `common` of its first tokens:
    /// what the sequence holds is stashed when the prompt would discard [`MIN_TOKENS`] or
    /// more of it; then the stashed state that holds the longest start of the prompt, when
    /// that is [`MIN_TOKENS`] more than the sequence holds, is restored into the sequence.
    /// Returns how many of the prompt's first tokens the sequence holds now. A state
    /// llama.cpp will not restore leaves the sequence empty (the prompt is then evaluated
    /// in full).
    pub(crate) fn swap_in(
        ctx: &mut LlamaContext<'_>,
        slots: &mut Slots<LlamaToken>,
        stash: &mut SeqStash,
        seq: usize,
        prompt: &[LlamaToken],
        common: usize,
    ) -> usize {
        if !stash.stash.enabled() {
            return common;
        }
        // Taken out first: stashing the sequence may evict or reorder entries.
        let best = stash
            .stash
            .best(prompt, common)
            .and_then(|(index, _)| stash.stash.take(index));
        let held = slots.tokens(seq).len();
        if held >= common.saturating_add(MIN_TOKENS) || (best.is_some() && held > 0) {
            stash_seq(ctx, slots, stash, seq);
        }
        let Some(entry) = best else {
            return common;
        };
        let (Ok(seq_id), Ok(seq_u32)) = (i32::try_from(seq), u32::try_from(seq)) else {
            return common;
        };
        let started = std::time::Instant::now();
        if ctx.clear_kv_cache_seq(Some(seq_u32), None, None) != Ok(true) {
            ctx.clear_kv_cache();
            slots.clear_all();
        }
        slots.clear(seq);
        match ctx.state_seq_set(&entry.payload, seq_id) {
            Ok(()) => {
                let restored = crate::slots::common_prefix(&entry.tokens, prompt);
                tracing::debug!(
                    tokens = entry.tokens.len(),
                    serves = restored,
                    ms = started.elapsed().as_millis() as u64,
                    "a stashed state restored"
                );
                slots.set(seq, entry.tokens);
                stash.set_owner(seq, entry.owner);
                restored
            }
            Err(e) => {
                tracing::debug!(error = %e, "a stashed state could not be restored");
                let _ = ctx.clear_kv_cache_seq(Some(seq_u32), None, None);
                0
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> Option<SessionKey> {
        SessionKey::new(s)
    }

    fn range(a: u32, b: u32) -> Vec<u32> {
        (a..b).collect()
    }

    #[test]
    fn each_shape_finds_its_own_state_again() {
        let mut stash: Stash<u32, &str> = Stash::new(1000);
        // A conversation and a side prompt that share only a template's opening.
        let conversation = range(0, 300);
        let side: Vec<u32> = range(0, 4).into_iter().chain(range(5000, 5100)).collect();
        assert!(stash.put(conversation.clone(), "conversation", 300, key("s")));
        assert!(stash.put(side.clone(), "side", 100, key("s")));
        // The conversation, grown by a turn, starts with the first entry.
        let grown = range(0, 340);
        assert_eq!(stash.best(&grown, 4), Some((0, 300)));
        // Not when the sequence itself holds nearly as much.
        assert_eq!(stash.best(&grown, 290), None);
        // The next side prompt shares its start with the side entry.
        let next_side: Vec<u32> = range(0, 4).into_iter().chain(range(5000, 5050)).collect();
        let (index, common) = stash.best(&next_side, 4).unwrap();
        assert_eq!(common, 54);
        let taken = stash.take(index).unwrap();
        assert_eq!(taken.payload, "side");
        assert_eq!(stash.len(), 1);
        assert!(stash.take(5).is_none());
    }

    #[test]
    fn a_longer_state_of_the_same_tokens_supersedes_a_shorter_one() {
        let mut stash: Stash<u32, u8> = Stash::new(10_000);
        assert!(stash.put(range(0, 100), 1, 100, None));
        // A prefix of what is held adds nothing.
        assert!(!stash.wants(&range(0, 50)));
        assert!(!stash.put(range(0, 100), 2, 100, None));
        // Its continuation replaces it.
        assert!(stash.put(range(0, 150), 3, 150, None));
        assert_eq!(stash.len(), 1);
        assert_eq!(stash.total(), 150);
        // A branch (same start, then other tokens) is kept beside it.
        let branch: Vec<u32> = range(0, 80).into_iter().chain(range(900, 950)).collect();
        assert!(stash.put(branch, 4, 130, None));
        assert_eq!(stash.len(), 2);
        // Too short to be worth it.
        assert!(!stash.put(range(7000, 7000 + MIN_TOKENS as u32 - 1), 5, 1, None));
    }

    #[test]
    fn the_cap_evicts_the_least_recently_used_and_nothing_is_kept_without_one() {
        let mut stash: Stash<u32, u8> = Stash::new(250);
        assert!(stash.put(range(0, 100), 1, 100, key("a")));
        assert!(stash.put(range(1000, 1100), 2, 100, key("b")));
        assert!(stash.put(range(2000, 2100), 3, 100, key("a")));
        assert_eq!(stash.len(), 2);
        assert!(stash.total() <= 250);
        // The oldest (1) went.
        assert_eq!(stash.best(&range(0, 100), 0), None);
        // Larger than the cap alone: not kept, nothing evicted for it.
        assert!(!stash.put(range(3000, 3100), 4, 251, None));
        assert_eq!(stash.len(), 2);
        let of_a: Vec<u8> = stash
            .of(&key("a").unwrap())
            .iter()
            .map(|e| e.payload)
            .collect();
        assert_eq!(of_a, vec![3]);
        let mut off: Stash<u32, u8> = Stash::new(0);
        assert!(!off.enabled());
        assert!(!off.put(range(0, 100), 1, 0, None));
        stash.clear();
        assert_eq!(stash.len(), 0);
    }

    #[test]
    fn the_count_is_capped_too() {
        let mut stash: Stash<u32, u32> = Stash::new(usize::MAX);
        for i in 0..(MAX_ENTRIES as u32 + 5) {
            assert!(stash.put(range(i * 100, i * 100 + 20), i, 1, None));
        }
        assert_eq!(stash.len(), MAX_ENTRIES);
        // The first ones went; the last is there.
        assert_eq!(stash.best(&range(0, 20), 0), None);
        let last = MAX_ENTRIES as u32 + 4;
        assert!(stash.best(&range(last * 100, last * 100 + 20), 0).is_some());
    }
}
