//! The sequences the context keeps, as llama-server keeps slots: several conversations'
//! prompts cached side by side in one unified KV cache, so that a short side prompt (a
//! decision asked apart from the conversation, a summary) does not evict the
//! conversation's cache. Pure bookkeeping over token lists; the worker does the KV work.

/// How many sequences the context keeps. One: with several, llama.cpp's unified cache
/// lays a prompt's cells among the others', its attention then sums in another order, and
/// a small model's close greedy choices moved (the README demo's answer among them). The
/// bookkeeping handles any number.
pub(crate) const SEQUENCES: usize = 1;

/// The least share of a prompt a cached sequence must start with to be reused for it;
/// below — or when reusing it would discard more than half of what it holds while a
/// sequence is empty — the prompt goes to the least recently used sequence (an empty one
/// first), and the others keep what they hold.
const SIMILARITY: f64 = 0.10;

/// The tokens each sequence holds, in order, and when it was last used.
#[derive(Debug, Clone)]
pub(crate) struct Slots<T> {
    seqs: Vec<Seq<T>>,
    clock: u64,
}

#[derive(Debug, Clone)]
struct Seq<T> {
    tokens: Vec<T>,
    used: u64,
}

/// Where a prompt goes: the sequence, and how many of the prompt's first tokens it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Chosen {
    pub(crate) seq: usize,
    pub(crate) common: usize,
}

impl<T: PartialEq + Copy> Slots<T> {
    /// `n` empty sequences (at least one).
    pub(crate) fn new(n: usize) -> Self {
        Slots {
            seqs: (0..n.max(1))
                .map(|_| Seq {
                    tokens: Vec::new(),
                    used: 0,
                })
                .collect(),
            clock: 0,
        }
    }

    /// The tokens sequence `seq` holds.
    pub(crate) fn tokens(&self, seq: usize) -> &[T] {
        self.seqs.get(seq).map_or(&[], |s| &s.tokens)
    }

    /// Every token held, over all sequences (the KV cells in use).
    pub(crate) fn total(&self) -> usize {
        self.seqs.iter().map(|s| s.tokens.len()).sum()
    }

    /// The sequence for `prompt`: the one holding the longest start of it when that is
    /// at least [`SIMILARITY`] of the prompt, else the least recently used (an empty one
    /// first). Marks it used.
    pub(crate) fn choose(&mut self, prompt: &[T]) -> Chosen {
        let best = self
            .seqs
            .iter()
            .enumerate()
            .map(|(seq, s)| (seq, common_prefix(&s.tokens, prompt)))
            .max_by_key(|&(seq, common)| (common, std::cmp::Reverse(seq)));
        let has_empty = self.seqs.iter().any(|s| s.tokens.is_empty());
        let chosen = match best {
            // Similar enough, and either it keeps at least half of what the sequence
            // holds or there is no empty sequence to use instead.
            Some((seq, common))
                if common > 0
                    && common as f64 >= SIMILARITY * prompt.len() as f64
                    && (2 * common >= self.seqs[seq].tokens.len() || !has_empty) =>
            {
                Chosen { seq, common }
            }
            _ => {
                let seq = self.least_recent(None).unwrap_or(0);
                Chosen {
                    seq,
                    common: common_prefix(self.tokens(seq), prompt),
                }
            }
        };
        self.touch(chosen.seq);
        chosen
    }

    /// Mark `seq` as just used.
    pub(crate) fn touch(&mut self, seq: usize) {
        self.clock += 1;
        if let Some(s) = self.seqs.get_mut(seq) {
            s.used = self.clock;
        }
    }

    /// The least recently used sequence other than `except` (empty ones count as never
    /// used, so they come first).
    pub(crate) fn least_recent(&self, except: Option<usize>) -> Option<usize> {
        self.seqs
            .iter()
            .enumerate()
            .filter(|&(seq, _)| Some(seq) != except)
            .min_by_key(|&(seq, s)| (!s.tokens.is_empty(), s.used, seq))
            .map(|(seq, _)| seq)
    }

    /// The least recently used sequence that holds something, other than `except`: the
    /// one to evict when the cache is full.
    pub(crate) fn evictable(&self, except: usize) -> Option<usize> {
        self.seqs
            .iter()
            .enumerate()
            .filter(|&(seq, s)| seq != except && !s.tokens.is_empty())
            .min_by_key(|&(seq, s)| (s.used, seq))
            .map(|(seq, _)| seq)
    }

    /// Keep only the first `len` tokens of `seq`.
    pub(crate) fn truncate(&mut self, seq: usize, len: usize) {
        if let Some(s) = self.seqs.get_mut(seq) {
            s.tokens.truncate(len);
        }
    }

    /// Note tokens appended to `seq`.
    pub(crate) fn extend(&mut self, seq: usize, tokens: &[T]) {
        if let Some(s) = self.seqs.get_mut(seq) {
            s.tokens.extend_from_slice(tokens);
        }
    }

    /// Note that `seq` now holds exactly `tokens` (a state restored into it).
    pub(crate) fn set(&mut self, seq: usize, tokens: Vec<T>) {
        self.touch(seq);
        if let Some(s) = self.seqs.get_mut(seq) {
            s.tokens = tokens;
        }
    }

    /// Forget what `seq` holds.
    pub(crate) fn clear(&mut self, seq: usize) {
        self.truncate(seq, 0);
    }

    /// Forget everything.
    pub(crate) fn clear_all(&mut self) {
        for s in &mut self.seqs {
            s.tokens.clear();
        }
    }

    /// The sequences that hold something, most recently used first.
    pub(crate) fn held(&self) -> Vec<usize> {
        let mut held: Vec<usize> = (0..self.seqs.len())
            .filter(|&seq| !self.seqs[seq].tokens.is_empty())
            .collect();
        held.sort_by_key(|&seq| std::cmp::Reverse(self.seqs[seq].used));
        held
    }
}

/// How many first items `a` and `b` share.
pub(crate) fn common_prefix<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(slots: &mut Slots<u32>, prompt: &[u32]) -> Chosen {
        let chosen = slots.choose(prompt);
        slots.truncate(chosen.seq, chosen.common);
        slots.extend(chosen.seq, &prompt[chosen.common..]);
        chosen
    }

    #[test]
    fn a_side_prompt_does_not_evict_the_conversation() {
        let mut slots = Slots::new(4);
        let conversation: Vec<u32> = (0..400).collect();
        let first = filled(&mut slots, &conversation);
        // A short prompt sharing only the chat template's opening.
        let side: Vec<u32> = (0..8).chain(1000..1150).collect();
        let other = filled(&mut slots, &side);
        assert_ne!(first.seq, other.seq);
        assert_eq!(slots.tokens(first.seq).len(), 400);
        // The conversation, grown, finds its sequence again.
        let grown: Vec<u32> = (0..450).collect();
        let again = slots.choose(&grown);
        assert_eq!(
            again,
            Chosen {
                seq: first.seq,
                common: 400
            }
        );
    }

    #[test]
    fn a_similar_prompt_reuses_and_empty_sequences_fill_before_eviction() {
        let mut slots = Slots::new(2);
        let a: Vec<u32> = (0..100).collect();
        let b: Vec<u32> = (500..600).collect();
        let c: Vec<u32> = (900..1000).collect();
        let sa = filled(&mut slots, &a).seq;
        let sb = filled(&mut slots, &b).seq;
        assert_ne!(sa, sb);
        // Both hold something: the least recently used (a) goes.
        let sc = filled(&mut slots, &c).seq;
        assert_eq!(sc, sa);
        assert_eq!(slots.evictable(sc), Some(sb));
        assert_eq!(slots.total(), 200);
        // No sequence is empty: a prompt that starts with b's first 20 of 100 tokens
        // (20% of it) reuses b.
        let d: Vec<u32> = (500..520).chain(2000..2080).collect();
        assert_eq!(
            slots.choose(&d),
            Chosen {
                seq: sb,
                common: 20
            }
        );
        assert_eq!(slots.held(), vec![sb, sc]);
    }

    #[test]
    fn a_prompt_that_would_discard_most_of_a_sequence_takes_an_empty_one() {
        let mut slots = Slots::new(3);
        let long: Vec<u32> = (0..150).collect();
        let s_long = filled(&mut slots, &long).seq;
        // Shares 8 of 27 tokens (30%), but would keep only 8 of 150.
        let short: Vec<u32> = (0..8).chain(300..319).collect();
        let s_short = filled(&mut slots, &short).seq;
        assert_ne!(s_short, s_long);
        assert_eq!(slots.tokens(s_long).len(), 150);
        // Keeping more than half: reused.
        let longer: Vec<u32> = (0..100).chain(400..420).collect();
        assert_eq!(
            slots.choose(&longer),
            Chosen {
                seq: s_long,
                common: 100
            }
        );
    }

    #[test]
    fn nothing_panics_on_odd_input() {
        let mut slots: Slots<u32> = Slots::new(0);
        assert_eq!(slots.seqs.len(), 1);
        assert_eq!(slots.choose(&[]), Chosen { seq: 0, common: 0 });
        slots.truncate(9, 0);
        slots.extend(9, &[1]);
        assert_eq!(slots.tokens(9), &[] as &[u32]);
        assert_eq!(slots.evictable(0), None);
    }
}
