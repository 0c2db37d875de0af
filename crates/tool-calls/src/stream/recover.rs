//! Calls a model wrote in another spelling than its format's own, read when the model's
//! format is known and its calls are JSON objects (see `ParserOptions::with_native`):
//!
//! * **bare JSON** — a reply that is, or ends with, call objects. A call object is kept
//!   back until the output shows what follows it: only whitespace, separators, a stray
//!   closing brace or `</tool_call>` (the opening tag left out), or more call objects,
//!   to the end of the output, and the objects are calls; anything else, and they were
//!   JSON quoted in prose, released as text. After prose, an object must name a known
//!   tool to be taken for a call; a reply that is nothing but call objects is calls
//!   whatever they name (an unknown tool is then reported to the model, never run).
//! * **doubled braces** — `{{"name": …, "arguments": {{…}}}}`, as a template that shows
//!   its example with Jinja's escaped braces teaches some models to write.
//! * every object is given up as a call as soon as its first key cannot begin one
//!   (see [`opening`]), so that JSON which is not a call is held back only for a few
//!   characters.
//!
//! Fenced calls and the other tags are blocks (`blocks.rs`); this file holds the state
//! that follows bare objects. Every decision depends on the characters alone, so the
//! streaming parser and the batch parser agree.

use super::{is_ws, Candidate, Matcher, Mode, StreamingFunctionCallParser, TOOL_CALL_CLOSE};
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

/// Call objects read from bare JSON, kept back until what follows them is known.
#[derive(Debug)]
pub(super) struct Trailing {
    /// The calls, each marked with its spelling.
    calls: Vec<ToolCallRequest>,
    /// Everything consumed since the first of them began: released as text when prose
    /// follows.
    held: String,
    /// A closing `</tool_call>` being matched.
    closer: Matcher,
    /// Nothing visible came before the first call: later ones may name any tool too.
    whole: bool,
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
    trailing: Option<Box<Trailing>>,
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
        if let Some(words) = spelling {
            for call in &mut calls {
                call.recovered = Some(words.clone());
            }
        }
        self.emit_calls(calls);
    }

    /// A finished JSON value `buf` that the model's format does not read as a call: a
    /// bare call object (or list) kept back as trailing, when the parser recovers other
    /// spellings; `Err(buf)` when it is not one.
    /// `value` is `buf` read as JSON (undoubled), when it is JSON.
    pub(super) fn recover_bare(
        &mut self,
        buf: String,
        bare: bool,
        trailing: Option<Box<Trailing>>,
        words: &str,
        value: Option<serde_json::Value>,
    ) -> Result<(), (String, Option<Box<Trailing>>)> {
        if !self.options.recovers() {
            return Err((buf, trailing));
        }
        let calls = value.and_then(|v| {
            calls_from_value(v, Shape::Bare, &buf, &self.catalog)
                .ok()
                .flatten()
        });
        let whole = trailing.as_ref().map_or(bare, |t| t.whole);
        match calls {
            Some(calls) if whole || calls.iter().all(|c| self.catalog.knows(&c.tool_id)) => {
                let spelling = self.spelling(Some(ToolCallFormat::Llama), words);
                let mut held = trailing.unwrap_or_else(|| {
                    Box::new(Trailing {
                        calls: Vec::new(),
                        held: String::new(),
                        closer: Matcher::default(),
                        whole,
                    })
                });
                for mut call in calls {
                    call.recovered.clone_from(&spelling);
                    held.calls.push(call);
                }
                held.held.push_str(&buf);
                self.mode = Mode::Trailing(held);
                Ok(())
            }
            _ => Err((buf, trailing)),
        }
    }

    /// Calls kept back turned out to be followed by prose: they were text.
    pub(super) fn release_trailing(&mut self, trailing: Option<Box<Trailing>>) {
        if let Some(t) = trailing {
            self.emit_text(&t.held);
        }
    }

    /// After kept-back calls: what may follow them, or prose.
    pub(super) fn step_trailing(&mut self, mut t: Box<Trailing>, c: char) {
        if t.closer.is_empty() && (is_ws(c) || matches!(c, ';' | ',' | '}')) {
            t.held.push(c);
            self.mode = Mode::Trailing(t);
            return;
        }
        if t.closer.is_empty() && c == '{' {
            let mut next = Candidate::open(false);
            next.trailing = Some(t);
            self.mode = Mode::Candidate(Box::new(next));
            return;
        }
        let mut out = String::new();
        match t.closer.feed(c, &[TOOL_CALL_CLOSE], &mut out) {
            Some(_) => {
                t.held.push_str(TOOL_CALL_CLOSE);
                self.mode = Mode::Trailing(t);
            }
            None if out.is_empty() => self.mode = Mode::Trailing(t),
            None => {
                let rest = format!("{out}{}", t.closer.take());
                self.release_trailing(Some(t));
                self.mode = Mode::Text;
                for c in rest.chars() {
                    self.step(c);
                }
            }
        }
    }

    /// The output ended after kept-back calls: they end the reply, so they are calls.
    pub(super) fn flush_trailing(&mut self, t: Trailing) {
        self.emit_calls(t.calls);
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
            trailing: cand.trailing,
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
        self.release_trailing(d.trailing);
        self.emit_text(&d.buf);
        self.mode = Mode::Text;
    }

    fn finish_doubled(&mut self, d: Doubled) {
        // Every brace doubled; else only the outer ones.
        let value = json::parse(&undouble(&d.buf))
            .or_else(|_| json::parse(&d.buf[1..d.buf.len() - 1]))
            .ok();
        if let Err((buf, trailing)) =
            self.recover_bare(d.buf, d.bare, d.trailing, "JSON with doubled braces", value)
        {
            self.release_trailing(trailing);
            self.emit_text(&buf);
            self.mode = Mode::Text;
        }
    }

    /// The output ended inside a doubled object: text.
    pub(super) fn flush_doubled(&mut self, d: Doubled) {
        self.release_trailing(d.trailing);
        self.emit_text(&d.buf);
    }
}
