//! Degenerate repetition: a small model that loses its way writes the same unit of text
//! over and over until the token limit. The guard watches the tail of a reply and says
//! when it has become one unit repeated, so that the generation stops early instead of
//! burning the whole allowance (and the context) on the loop. A reply that writes the same
//! call over and over ([`Reply::take_call`]) has looped too.

use super::run::Reply;
use core_models::ToolCallRequest;

/// The longest repeating unit looked for, in characters.
const MAX_UNIT: usize = 256;
/// The fewest repeats of a unit that count as a loop (besides the length).
const MIN_REPEATS: usize = 4;
/// A reply that writes one call (the same tool, the same arguments) this many times has
/// looped: the calls a parser takes out of the text never reach the text's guard, and a
/// model stuck on them writes them until the token limit (each one a call to screen and a
/// result to read back).
const LOOPED_CALLS: usize = 3;
/// The most characters of a looping call shown as the loop's unit.
const CALL_UNIT_SHOWN: usize = 256;

/// A loop found at the end of a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Repetition {
    /// The repeating unit.
    pub(crate) unit: String,
    /// Whole repeats of the unit at the end (at least [`MIN_REPEATS`]).
    pub(crate) repeats: usize,
    /// The looping tail after its first unit: what to cut from the reply.
    pub(crate) excess: String,
}

/// Watches text as it streams for a loop.
#[derive(Debug)]
pub(crate) struct RepetitionGuard {
    /// The last characters seen (at most `window`).
    tail: Vec<char>,
    /// The fewest looping characters that count as a loop; 0 turns the guard off.
    min_chars: usize,
    window: usize,
}

impl RepetitionGuard {
    /// Whether the guard watches at all (`repetition_min_chars` is not 0).
    pub(crate) fn is_on(&self) -> bool {
        self.min_chars > 0
    }

    /// A guard that reports a tail of at least `min_chars` characters made of one unit
    /// (up to 256 characters long) repeated at least four times; 0 turns it off.
    pub(crate) fn new(min_chars: usize) -> Self {
        RepetitionGuard {
            tail: Vec::new(),
            min_chars,
            window: (min_chars.max(MAX_UNIT * MIN_REPEATS)) * 2,
        }
    }

    /// Add streamed text; the loop the reply now ends in, if any.
    pub(crate) fn push(&mut self, text: &str) -> Option<Repetition> {
        if self.min_chars == 0 || text.is_empty() {
            return None;
        }
        self.tail.extend(text.chars());
        if self.tail.len() > self.window {
            let cut = self.tail.len() - self.window / 2;
            self.tail.drain(..cut);
        }
        self.check()
    }

    fn check(&self) -> Option<Repetition> {
        let t = &self.tail;
        let n = t.len();
        if n < self.min_chars {
            return None;
        }
        for unit in 1..=MAX_UNIT.min(n / MIN_REPEATS) {
            // How far back the text repeats itself `unit` characters earlier.
            let mut same = 0;
            while same + unit < n && t[n - 1 - same] == t[n - 1 - same - unit] {
                same += 1;
            }
            let periodic = same + unit;
            let repeats = periodic / unit;
            if periodic >= self.min_chars && repeats >= MIN_REPEATS {
                // A unit that is itself a repeat of a shorter one was found at that length.
                let start = n - periodic;
                let unit_text: String = t[start..start + unit].iter().collect();
                let excess: String = t[start + unit..].iter().collect();
                return Some(Repetition {
                    unit: unit_text,
                    repeats,
                    excess,
                });
            }
        }
        None
    }
}

/// Whether `calls` hold some call (the same tool, the same arguments) [`LOOPED_CALLS`]
/// times or more.
pub(super) fn calls_looped(calls: &[&ToolCallRequest]) -> bool {
    calls.iter().enumerate().any(|(i, a)| {
        calls[..i]
            .iter()
            .filter(|b| a.tool_id == b.tool_id && a.parameters == b.parameters)
            .count()
            + 1
            >= LOOPED_CALLS
    })
}

impl Reply {
    /// Take in `call`, the next call of the reply. When it is the [`LOOPED_CALLS`]th copy
    /// of an earlier one, the reply has looped: only the first copy of each call is kept,
    /// and the loop is returned, its excess the output written since the last new call
    /// (what to cut from the reply as written).
    pub(super) fn take_call(&mut self, call: ToolCallRequest, watch: bool) -> Option<Repetition> {
        let same = |a: &ToolCallRequest, b: &ToolCallRequest| {
            a.tool_id == b.tool_id && a.parameters == b.parameters
        };
        let copies = self.calls.iter().filter(|c| same(c, &call)).count();
        if copies == 0 {
            self.calls.push(call);
            self.raw_after_new_call = self.raw.len();
            return None;
        }
        if !watch || copies + 1 < LOOPED_CALLS {
            self.calls.push(call);
            return None;
        }
        let mut kept: Vec<ToolCallRequest> = Vec::with_capacity(self.calls.len());
        for c in std::mem::take(&mut self.calls) {
            if !kept.iter().any(|k| same(k, &c)) {
                kept.push(c);
            }
        }
        self.calls = kept;
        let excess = self
            .raw
            .get(self.raw_after_new_call..)
            .unwrap_or_default()
            .to_string();
        let unit: String = format!("{} {}", call.tool_id, call.parameters)
            .chars()
            .take(CALL_UNIT_SHOWN)
            .collect();
        Some(Repetition {
            unit,
            repeats: copies + 1,
            excess,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feed `text` in pieces of `piece` characters; the first loop reported.
    fn check(text: &str, piece: usize, min_chars: usize) -> Option<Repetition> {
        let mut guard = RepetitionGuard::new(min_chars);
        let chars: Vec<char> = text.chars().collect();
        chars
            .chunks(piece)
            .find_map(|c| guard.push(&c.iter().collect::<String>()))
    }

    #[test]
    fn a_looping_sentence_is_caught_and_plain_text_is_not() {
        let sentence = "The answer is in the file notes.txt. ";
        let looped = format!("Let me see. {}", sentence.repeat(30));
        let found = check(&looped, 3, 400).expect("a loop");
        assert_eq!(found.unit.len(), sentence.len());
        assert!(found.repeats >= MIN_REPEATS, "{found:?}");
        assert!(looped.ends_with(&found.excess) || found.excess.len() < looped.len());

        // Prose and code that never repeat a unit: no loop, however long.
        let prose: String = (0..400)
            .map(|i| format!("line {i} says {} things\n", i * 7 % 13))
            .collect();
        assert_eq!(check(&prose, 5, 400), None);
        // A short run of repeats (a separator line, three equal lines) is no loop.
        let code = format!("{}\n{}", "-".repeat(80), "    x += 1;\n".repeat(3));
        assert_eq!(check(&code, 4, 400), None);
        // Off.
        assert_eq!(check(&"ab".repeat(1000), 7, 0), None);
    }

    #[test]
    fn single_characters_and_multibyte_units_are_units_too() {
        let found = check(&"=".repeat(500), 10, 400).expect("a loop");
        assert_eq!(found.unit, "=");
        let found = check(&"ありがとう。".repeat(100), 4, 400).expect("a loop");
        assert_eq!(found.unit, "ありがとう。");
        assert!(found.repeats >= MIN_REPEATS && found.excess.chars().count() >= 18);
    }
}
