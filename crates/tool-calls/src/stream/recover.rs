//! Calls a model wrote in another spelling than its format's own, read when the model's
//! format is known and its calls are JSON objects (see `ParserOptions::with_native`):
//!
//! * **bare JSON, fences, other tags** — a reply that is, or ends with, call objects,
//!   bare or in a fence or tag ([`Pending`]). A call so written is kept back until the
//!   output shows what follows it: only whitespace, separators, a stray closing brace or
//!   `</tool_call>` (the opening tag left out), or more calls, to the end of the output,
//!   and they are calls; anything else, and they were JSON quoted in prose (a tutorial's
//!   example), released as text — unless they came in fences or tags of their own and
//!   every one of them only reads (risk `Safe`): a
//!   model that writes "I'll read it:" and a fenced call, then goes on to imagine the
//!   result, asked for the read, and reading costs nothing if it did not. After prose, an object must name a known tool to be
//!   taken for a call; a reply that is nothing but call objects is calls whatever they
//!   name (an unknown tool is then reported to the model, never run).
//! * **doubled braces** — `{{"name": …, "arguments": {{…}}}}`, as a template that shows
//!   its example with Jinja's escaped braces teaches some models to write.
//! * every object is given up as a call as soon as its first key cannot begin one
//!   (see [`opening`]), so that JSON which is not a call is held back only for a few
//!   characters.
//!
//! Fenced calls and the other tags are blocks (`blocks.rs`), bare objects candidates
//! (`candidate.rs`); this file holds what they become. Every decision depends on the
//! characters alone, so the streaming parser and the batch parser agree.

use super::{is_ws, Candidate, Mode, StreamingFunctionCallParser};
use crate::calls::{calls_from_value, Shape};
use crate::json::{self, JsonScanner};
use crate::ToolCallFormat;
use core_models::ToolCallRequest;

/// The keys a JSON call object (or a list or wrapping of calls) may begin with.
const CALL_KEYS: [&str; 12] = [
    "name",
    "tool",
    "function",
    "tool_name",
    "arguments",
    "parameters",
    "args",
    "type",
    "id",
    "tool_calls",
    "tool_call",
    "response",
];

/// Deepest nesting followed in an object with doubled braces.
const MAX_DOUBLED_DEPTH: usize = 256;

/// What the start of a JSON value says about whether it can be a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Opening {
    /// Not known yet.
    Undecided,
    /// Its first key is one a call begins with.
    MayBeCall,
    /// It cannot be a call.
    NotCall,
}

/// Whether the JSON value `buf` (scanned by `scanner`, `c` its last character) can still
/// be a call: an object, or a list of objects, whose first key is one of [`CALL_KEYS`].
pub(super) fn opening(scanner: &JsonScanner, buf: &str, c: char) -> Opening {
    let path = scanner.open_brackets();
    match path {
        [b'{'] | [b'[', b'{'] => {}
        [b'['] if is_ws(c) || c == '[' => return Opening::Undecided,
        [] => return Opening::Undecided,
        _ => return Opening::NotCall,
    }
    if !(scanner.after_key() && c == '"') {
        return Opening::Undecided;
    }
    let inner = &buf[..buf.len() - 1];
    let key = inner.rfind('"').map_or("", |at| &inner[at + 1..]);
    if CALL_KEYS.contains(&key) {
        Opening::MayBeCall
    } else {
        Opening::NotCall
    }
}

/// `text` with its doubled braces made single, outside strings: `{{` is `{` and `}}` is
/// `}` (a lone brace stays as it is).
pub(super) fn undouble(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let (mut in_string, mut escaped) = (false, false);
    while let Some(c) = chars.next() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
        } else if (c == '{' || c == '}') && chars.peek() == Some(&c) {
            chars.next();
        }
        out.push(c);
    }
    out
}

/// Calls written in another spelling, kept back until what follows them is known.
#[derive(Debug)]
pub(super) struct Pending {
    /// The calls, each marked with its spelling.
    pub(super) calls: Vec<ToolCallRequest>,
    /// Everything consumed since the first of them began: released as text when prose
    /// follows.
    pub(super) held: String,
    /// Nothing visible came before the first call: later ones may name any tool too.
    whole: bool,
    /// Every call came in a fence or tag of its own (not JSON inside a sentence).
    blocks: bool,
}

/// An object that opened with doubled braces, followed to its end.
#[derive(Debug)]
pub(super) struct Doubled {
    buf: String,
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// The first key began (the first character after the braces must open it).
    keyed: bool,
    /// The first key ended and was checked.
    checked: bool,
    /// Nothing visible came before it.
    bare: bool,
}

impl StreamingFunctionCallParser {
    /// The words for a call written as `format` (`None`: no format's own spelling), when
    /// that is not the model's own format; `None` when it is, or the format is unknown.
    pub(super) fn spelling(&self, format: Option<ToolCallFormat>, words: &str) -> Option<String> {
        match self.options.native() {
            Some(native) if format != Some(native) => Some(words.to_string()),
            _ => None,
        }
    }

    /// Calls with their spelling marked, as events.
    pub(super) fn emit_spelled(
        &mut self,
        mut calls: Vec<ToolCallRequest>,
        spelling: Option<String>,
    ) {
        mark(&mut calls, spelling.as_deref());
        self.emit_calls(calls);
    }

    /// Calls in another spelling than the model's own, written as `raw`: kept back (see
    /// [`Pending`]) when they may be the reply's calls, else released as text. `bare`:
    /// nothing visible came before them; `block`: they came in a fence or tag.
    pub(super) fn hold(
        &mut self,
        mut calls: Vec<ToolCallRequest>,
        raw: &str,
        (bare, block): (bool, bool),
        spelling: Option<String>,
    ) {
        let whole = self.pending.as_ref().map_or(bare, |p| p.whole);
        if !whole && !calls.iter().all(|c| self.catalog.knows(&c.tool_id)) {
            return self.emit_text(raw);
        }
        mark(&mut calls, spelling.as_deref());
        let pending = self.pending.get_or_insert_with(|| {
            Box::new(Pending {
                calls: Vec::new(),
                held: String::new(),
                whole,
                blocks: true,
            })
        });
        pending.blocks &= block;
        pending.calls.extend(calls);
        pending.held.push_str(raw);
    }

    /// Calls kept back were followed by prose: calls still when they came in fences or
    /// tags and every one of them only reads (its risk is `Safe`: a wrong reading costs
    /// nothing, and the model then sees what it asked for instead of imagining it), else
    /// JSON quoted in prose, text.
    pub(super) fn release_pending(&mut self) {
        let reads_only = self.pending.as_ref().is_some_and(|p| {
            p.blocks
                && p.calls
                    .iter()
                    .all(|c| c.risk_level == core_models::RiskLevel::Safe)
        });
        if reads_only {
            return self.flush_pending();
        }
        if let Some(pending) = self.pending.take() {
            self.emit_visible(&pending.held);
        }
    }

    /// Calls kept back end the reply, or a call follows them: they are calls.
    pub(super) fn flush_pending(&mut self) {
        if let Some(pending) = self.pending.take() {
            for call in pending.calls {
                self.events.push(crate::ParseEvent::ToolCall(call));
            }
            self.call_removed();
        }
    }

    /// A finished JSON value `buf`, read as `value` (undoubled), that the model's format
    /// does not read as a call: a bare call object (or list) kept back, when the parser
    /// recovers other spellings; else text.
    pub(super) fn recover_bare(
        &mut self,
        buf: String,
        bare: bool,
        words: &str,
        value: Option<serde_json::Value>,
    ) {
        let calls = value.filter(|_| self.options.recovers()).and_then(|v| {
            calls_from_value(v, Shape::Bare, &buf, &self.catalog)
                .ok()
                .flatten()
        });
        match calls {
            Some(calls) => {
                let spelling = self.spelling(Some(ToolCallFormat::Llama), words);
                self.hold(calls, &buf, (bare, false), spelling);
            }
            None => self.emit_text(&buf),
        }
    }

    /// A candidate whose second character is `{` too: followed as a doubled object.
    pub(super) fn start_doubled(&mut self, cand: Candidate, c: char) {
        let mut buf = cand.buf;
        buf.push(c);
        self.mode = Mode::Doubled(Box::new(Doubled {
            buf,
            depth: 2,
            in_string: false,
            escaped: false,
            keyed: false,
            checked: false,
            bare: cand.bare,
        }));
    }

    pub(super) fn step_doubled(&mut self, mut d: Box<Doubled>, c: char) {
        d.buf.push(c);
        if d.in_string {
            if d.escaped {
                d.escaped = false;
            } else if c == '\\' {
                d.escaped = true;
            } else if c == '"' {
                d.in_string = false;
                if !d.checked {
                    d.checked = true;
                    let inner = &d.buf[..d.buf.len() - 1];
                    let key = inner.rfind('"').map_or("", |at| &inner[at + 1..]);
                    if !CALL_KEYS.contains(&key) {
                        return self.give_up_doubled(*d);
                    }
                }
            }
            self.mode = Mode::Doubled(d);
            return;
        }
        match c {
            '"' => {
                d.keyed = true;
                d.in_string = true;
            }
            _ if is_ws(c) => {}
            _ if !d.keyed => return self.give_up_doubled(*d),
            '{' if d.depth < MAX_DOUBLED_DEPTH => d.depth += 1,
            '{' => return self.give_up_doubled(*d),
            '}' => {
                d.depth -= 1;
                if d.depth == 0 {
                    return self.finish_doubled(*d);
                }
            }
            _ => {}
        }
        self.mode = Mode::Doubled(d);
    }

    fn give_up_doubled(&mut self, d: Doubled) {
        self.emit_text(&d.buf);
        self.mode = Mode::Text;
    }

    fn finish_doubled(&mut self, d: Doubled) {
        self.mode = Mode::Text;
        // Every brace doubled; else only the outer ones.
        let value = json::parse(&undouble(&d.buf))
            .or_else(|_| json::parse(&d.buf[1..d.buf.len() - 1]))
            .ok();
        self.recover_bare(d.buf, d.bare, "JSON with doubled braces", value);
    }

    /// The output ended inside a doubled object: text.
    pub(super) fn flush_doubled(&mut self, d: Doubled) {
        self.emit_text(&d.buf);
    }
}

/// Mark each call with `spelling`.
fn mark(calls: &mut [ToolCallRequest], spelling: Option<&str>) {
    if let Some(words) = spelling {
        for call in calls {
            call.recovered = Some(words.to_string());
        }
    }
}
