//! The streaming parser: one character-driven state machine. The batch parser feeds it
//! the whole output at once, so both agree for every way of cutting the output into
//! tokens: every decision depends only on the characters seen, never on token bounds.
//!
//! Text is held back only while it could still be the start of a marker (at most the
//! longest marker, 14 characters) or of a JSON call (an incremental JSON scanner rejects
//! non-JSON at its first impossible character). Each character is examined a bounded
//! number of times: held-back text that turns out to be prose is released without being
//! scanned again, and a finished JSON value is parsed once.

mod blocks;
mod candidate;
mod recover;
mod sections;

use super::calls::ToolCatalog;
use super::formats::pythonic::PythonicScanner;
use super::formats::{self, Section, THINKING_ENDS};
use super::json::{JsonScanner, Scan};
use super::{ParseEvent, ParserOptions, ToolCallFormat};
use core_models::ToolCallRequest;
use recover::{Doubled, Opening, Pending};
use sections::SectionState;

const FENCE: &str = "```";
const TOOL_CALL_OPEN: &str = "<tool_call>";
const TOOL_CALL_CLOSE: &str = "</tool_call>";
const MISTRAL_CALLS: &str = "[TOOL_CALLS]";
const MISTRAL_ARGS: &str = "[ARGS]";
/// Most characters allowed between a Mistral tool name and `[ARGS]` (`[CALL_ID]…`).
const MISTRAL_GAP: usize = 128;
/// Longest fence info string considered.
const MAX_FENCE_INFO: usize = 64;

/// What a marker in prose opens.
#[derive(Debug, Clone, Copy)]
enum Opener {
    Fence,
    ToolCall,
    Mistral,
    Brace,
    /// A format's section marker (see `formats/registry.rs`).
    Section(Section),
    /// A tag the model's format also puts around a JSON call: its closing tag.
    Wrapper(&'static str),
}

/// Holds back characters that could still become one of a set of markers.
#[derive(Debug, Clone, Default)]
struct Matcher {
    pending: String,
}

impl Matcher {
    /// Feed `c`. Characters proven not to begin a marker are appended to `out`; returns the
    /// index of a marker that just completed. No marker is a prefix of another.
    fn feed(&mut self, c: char, markers: &[&str], out: &mut String) -> Option<usize> {
        self.pending.push(c);
        loop {
            if let Some(i) = markers.iter().position(|m| *m == self.pending) {
                self.pending.clear();
                return Some(i);
            }
            if markers.iter().any(|m| m.starts_with(self.pending.as_str())) {
                return None;
            }
            let first = self.pending.remove(0);
            out.push(first);
            if self.pending.is_empty() {
                return None;
            }
        }
    }

    fn take(&mut self) -> String {
        std::mem::take(&mut self.pending)
    }

    fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }
}

/// An unmarked `{` that may be a JSON call.
#[derive(Debug)]
struct Candidate {
    buf: String,
    scanner: JsonScanner,
    /// Nothing visible came before it (or it follows a bare call and `;`): a bare JSON
    /// reply (Llama 3.x) is accepted, not only the seed's inline `"tool"` form.
    bare: bool,
    /// Its first key was seen and can begin a call (see [`recover::opening`]).
    decided: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    /// ```` ```tool_call ````
    ToolCallFence,
    /// ```` ```json ```` — a call only if its content is call-shaped; otherwise code.
    JsonFence,
    /// `<tool_call>` (Hermes / Qwen JSON, or Qwen3-Coder XML)
    ToolCall,
    /// `[TOOL_CALLS]`
    Mistral,
    /// A tag the model's format also puts around a JSON call (`<response>`…): a call if
    /// it holds one, else text.
    Wrapper {
        /// Its closing tag.
        close: &'static str,
    },
}

impl BlockKind {
    fn closer(self) -> Option<&'static str> {
        match self {
            BlockKind::ToolCallFence | BlockKind::JsonFence => Some(FENCE),
            BlockKind::ToolCall => Some(TOOL_CALL_CLOSE),
            BlockKind::Mistral => None,
            BlockKind::Wrapper { close } => Some(close),
        }
    }

    fn describe(self) -> &'static str {
        match self {
            BlockKind::ToolCallFence => "```tool_call block",
            BlockKind::JsonFence => "```json block",
            BlockKind::ToolCall => "<tool_call> block",
            BlockKind::Mistral => "[TOOL_CALLS] call",
            BlockKind::Wrapper { .. } => "tagged call",
        }
    }
}

#[derive(Debug)]
enum Body {
    /// Whitespace before the content.
    Pre,
    /// Scanning a JSON value that starts at `start` in `raw`; `decided` once its start
    /// shows whether it can be a call (see [`recover::opening`]).
    Json {
        start: usize,
        scanner: JsonScanner,
        decided: bool,
    },
    /// The JSON value ended; waiting for the closing marker.
    Post {
        json: (usize, usize),
        closer: Matcher,
    },
    /// Qwen3-Coder or GLM XML from `start`, until `</tool_call>`.
    Xml { start: usize, closer: Matcher },
    /// A Mistral tool name, then `[ARGS]`.
    MistralName { gap: usize, matcher: Matcher },
    /// Broken content: skipping to the closing marker, then reporting `reason`.
    Raw { reason: String, closer: Matcher },
    /// A tag opening inside a recovered fence (`<tool_call>`, `<response>`…).
    Tag { matcher: Matcher },
}

#[derive(Debug)]
struct Block {
    kind: BlockKind,
    /// Everything consumed since the opening marker, the marker included: released as
    /// text when the block turns out not to be a call.
    raw: String,
    body: Body,
    /// The tool name of a `[TOOL_CALLS]NAME[ARGS]{…}` call.
    mistral_name: Option<String>,
    /// Inside a recovered fence: the closing tag of the tag that opened the call.
    tag_close: Option<&'static str>,
    /// Earlier JSON values of a fence or tag that holds several call objects.
    earlier: Vec<(usize, usize)>,
}

#[derive(Debug)]
enum Mode {
    Text,
    /// Reasoning, until one of these markers.
    Thinking(&'static [&'static str]),
    /// A format's section (see `formats/registry.rs`).
    Section(Box<SectionState>),
    /// A bare pythonic reply (`[f(a=1)]`) at the start of the output.
    Pythonic {
        buf: String,
        scanner: PythonicScanner,
    },
    FenceInfo {
        info: String,
    },
    CodeFence,
    Candidate(Box<Candidate>),
    /// An object that opened with doubled braces.
    Doubled(Box<Doubled>),
    AfterBareCall {
        held: String,
        semicolon: bool,
    },
    Block(Box<Block>),
}

fn is_ws(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '+')
}

/// Parses a model's output as it streams in. See the module docs.
#[derive(Debug)]
pub struct StreamingFunctionCallParser {
    catalog: ToolCatalog,
    options: ParserOptions,
    markers: Vec<&'static str>,
    openers: Vec<Opener>,
    /// First bytes of the markers in `markers`: the fast path skips everything else.
    starts: [bool; 128],
    mode: Mode,
    matcher: Matcher,
    events: Vec<ParseEvent>,
    /// Newlines at the end of the visible text emitted so far (capped at 2).
    trailing_newlines: u8,
    /// After a removed call: the newlines between the text before and after it collapse
    /// to `max(before, min(after, 2))`, so a call on its own line leaves no blank line.
    suppress_newlines: bool,
    /// Newlines that ended the visible text when the last call was removed.
    newlines_before_call: u8,
    /// Newlines seen since then.
    newlines_after_call: u8,
    /// Whether any non-whitespace visible text was emitted.
    seen_visible: bool,
    /// A bare pythonic reply was already tried (once per output).
    pythonic_tried: bool,
    /// Text that was not a pythonic call is being fed again: no new attempt starts in it.
    replaying: bool,
    /// Calls in another spelling, kept back until the output shows that they end it.
    pending: Option<Box<Pending>>,
}

impl StreamingFunctionCallParser {
    /// A parser looking tools up in `catalog`, recognizing the formats in `options`.
    pub fn new(catalog: ToolCatalog, options: ParserOptions) -> Self {
        let table: [(&'static str, Opener, bool); 4] = [
            (FENCE, Opener::Fence, true),
            (
                TOOL_CALL_OPEN,
                Opener::ToolCall,
                options.has(ToolCallFormat::Hermes)
                    || options.has(ToolCallFormat::QwenXml)
                    || options.has(ToolCallFormat::Glm),
            ),
            (
                MISTRAL_CALLS,
                Opener::Mistral,
                options.has(ToolCallFormat::Mistral),
            ),
            (
                "{",
                Opener::Brace,
                options.has(ToolCallFormat::InlineJson)
                    || options.has(ToolCallFormat::Llama)
                    || options.has(ToolCallFormat::Generic),
            ),
        ];
        let sections = formats::sections()
            .filter(|s| options.has_section(s))
            .map(|s| (s.open, Opener::Section(*s), true));
        let wrappers = options
            .wrappers()
            .iter()
            .map(|(open, close)| (*open, Opener::Wrapper(close), true));
        let mut markers = Vec::new();
        let mut openers = Vec::new();
        let mut starts = [false; 128];
        for (marker, opener, enabled) in table.into_iter().chain(sections).chain(wrappers) {
            if enabled && !markers.contains(&marker) {
                markers.push(marker);
                openers.push(opener);
                starts[usize::from(marker.as_bytes()[0])] = true;
            }
        }
        if options.has(ToolCallFormat::Pythonic)
            || options.has(ToolCallFormat::Llama)
            || options.has(ToolCallFormat::Generic)
        {
            // A pythonic call or a bare JSON list opens with `[` (see `may_start_pythonic`
            // and `may_start_bare_list`).
            starts[usize::from(b'[')] = true;
        }
        let mode = Self::initial_mode(&options);
        StreamingFunctionCallParser {
            catalog,
            options,
            markers,
            openers,
            starts,
            mode,
            matcher: Matcher::default(),
            events: Vec::new(),
            trailing_newlines: 2,
            suppress_newlines: false,
            newlines_before_call: 0,
            newlines_after_call: 0,
            seen_visible: false,
            pythonic_tried: false,
            replaying: false,
            pending: None,
        }
    }

    /// Where an output starts: in reasoning when the prompt opened it; in a Functionary
    /// v3.2 section when that is the model's format (its prompt ends with `>>>`).
    fn initial_mode(options: &ParserOptions) -> Mode {
        if options.starts_in_thinking {
            return Mode::Thinking(THINKING_ENDS);
        }
        match ToolCallFormat::FunctionaryV32
            .spec()
            .sections
            .iter()
            .find(|s| options.has_section(s))
        {
            Some(section) => Mode::Section(Box::new(SectionState::open(*section, None))),
            None => Mode::Text,
        }
    }

    /// Feed the next piece of output; returns what became known (in order). Empty while
    /// the parser holds back a possible marker or call.
    pub fn process_token(&mut self, token: &str) -> Vec<ParseEvent> {
        let mut i = 0;
        while i < token.len() {
            // Fast paths: long runs that cannot change the state.
            if let Some(run) = self.plain_run(&token[i..]) {
                if run > 0 {
                    self.consume_run(&token[i..i + run]);
                    i += run;
                    continue;
                }
            }
            let c = match token[i..].chars().next() {
                Some(c) => c,
                None => break,
            };
            self.step(c);
            i += c.len_utf8();
        }
        std::mem::take(&mut self.events)
    }

    /// The calls in another spelling kept back until what follows them is known (see the
    /// `recover` rules): they are the reply's calls if the output ends now. A caller that
    /// stops a generation early (a loop) can judge them before it does.
    pub fn held_calls(&self) -> &[ToolCallRequest] {
        self.pending.as_ref().map_or(&[], |p| p.calls.as_slice())
    }

    /// The end of the output: release or settle whatever is held back.
    pub fn flush(&mut self) -> Vec<ParseEvent> {
        let pending = self.matcher.take();
        match std::mem::replace(&mut self.mode, Mode::Text) {
            Mode::Text | Mode::CodeFence => self.emit_text(&pending),
            Mode::Thinking(_) => self.emit_thinking(&pending),
            Mode::Section(section) => self.flush_section(*section, &pending),
            Mode::Pythonic { buf, .. } => {
                if buf.contains('(') {
                    self.diagnostic(
                        "incomplete pythonic tool call at the end of the output".into(),
                    );
                }
                self.replay(&format!("{buf}{pending}"));
                return self.flush();
            }
            Mode::FenceInfo { info } => {
                if info.eq_ignore_ascii_case("tool_call")
                    && self.options.has(ToolCallFormat::FencedJson)
                {
                    self.diagnostic(format!(
                        "incomplete {} at the end of the output",
                        BlockKind::ToolCallFence.describe()
                    ));
                }
                self.emit_text(&format!("{FENCE}{info}"));
            }
            Mode::AfterBareCall { held, .. } => self.emit_text(&held),
            Mode::Candidate(cand) => {
                let looks_like_call = cand.buf.contains("\"tool\"")
                    || ((cand.bare || self.options.recovers())
                        && (cand.buf.contains("\"name\"") || cand.buf.contains("\"function\"")));
                if looks_like_call {
                    self.diagnostic("incomplete tool call at the end of the output (the JSON object is not closed)".into());
                }
                self.emit_text(&cand.buf);
            }
            Mode::Doubled(doubled) => self.flush_doubled(*doubled),
            Mode::Block(block) => self.flush_block(*block),
        }
        // Calls kept back that nothing but whitespace followed: they end the reply.
        self.flush_pending();
        self.mode = Self::initial_mode(&self.options);
        self.pythonic_tried = false;
        self.seen_visible = false;
        std::mem::take(&mut self.events)
    }

    /// Forget everything, ready for a new output.
    pub fn reset(&mut self) {
        *self = StreamingFunctionCallParser::new(self.catalog.clone(), self.options.clone());
    }

    // --- fast paths --------------------------------------------------------------------

    /// Length of a leading run of `s` that the current mode passes through unchanged.
    fn plain_run(&self, s: &str) -> Option<usize> {
        let b = s.as_bytes();
        let until = |stop: &dyn Fn(u8) -> bool| b.iter().position(|&x| stop(x)).unwrap_or(b.len());
        match &self.mode {
            Mode::Text if self.matcher.is_empty() => {
                Some(until(&|x| x < 128 && self.starts[usize::from(x)]))
            }
            Mode::Thinking(close) if self.matcher.is_empty() => {
                Some(until(&|x| close.iter().any(|m| m.as_bytes()[0] == x)))
            }
            Mode::Section(section) => section.plain_run(b),
            Mode::CodeFence if self.matcher.is_empty() => Some(until(&|x| x == b'`')),
            Mode::Candidate(c) if c.scanner.in_string() => {
                Some(until(&|x| x == b'"' || x == b'\\'))
            }
            Mode::Block(block) => match &block.body {
                Body::Json { scanner, .. } if scanner.in_string() => {
                    Some(until(&|x| x == b'"' || x == b'\\'))
                }
                Body::Xml { closer, .. } | Body::Raw { closer, .. } if closer.is_empty() => {
                    let first = block.kind.closer().map_or(b'<', |c| c.as_bytes()[0]);
                    Some(until(&|x| x == first))
                }
                _ => None,
            },
            _ => None,
        }
        // Runs end on a character boundary: every stop byte is ASCII.
    }

    fn consume_run(&mut self, run: &str) {
        match &mut self.mode {
            Mode::Text | Mode::CodeFence => self.emit_text(run),
            Mode::Thinking(_) => self.emit_thinking(run),
            Mode::Section(section) => section.body.push_str(run),
            Mode::Candidate(c) => c.buf.push_str(run),
            Mode::Block(block) => block.raw.push_str(run),
            _ => {}
        }
    }

    // --- the state machine ---------------------------------------------------------------

    fn step(&mut self, c: char) {
        match std::mem::replace(&mut self.mode, Mode::Text) {
            Mode::Text => self.step_text(c),
            Mode::Thinking(close) => {
                let mut out = String::new();
                let closed = self.matcher.feed(c, close, &mut out);
                self.emit_thinking(&out);
                self.mode = Mode::Text;
                match closed {
                    Some(i) => self.reopen(close[i]),
                    None => self.mode = Mode::Thinking(close),
                }
            }
            Mode::Section(section) => self.step_section(*section, c),
            Mode::Pythonic {
                mut buf,
                mut scanner,
            } => self.step_pythonic(&mut buf, &mut scanner, c),
            Mode::FenceInfo { mut info } => {
                if is_ident(c) && info.len() < MAX_FENCE_INFO {
                    info.push(c);
                    self.mode = Mode::FenceInfo { info };
                } else {
                    self.open_fence(&info);
                    self.step(c);
                }
            }
            Mode::CodeFence => {
                let mut out = String::new();
                let closed = self.matcher.feed(c, &[FENCE], &mut out).is_some();
                self.emit_text(&out);
                if closed {
                    self.emit_text(FENCE);
                    self.mode = Mode::Text;
                } else {
                    self.mode = Mode::CodeFence;
                }
            }
            Mode::Candidate(cand)
                if c == '{' && cand.buf.trim_end() == "{" && self.options.recovers() =>
            {
                self.start_doubled(*cand, c);
            }
            Mode::Candidate(mut cand) => {
                cand.buf.push(c);
                match cand.scanner.push(c) {
                    Scan::More if cand.decided => self.mode = Mode::Candidate(cand),
                    Scan::More => match recover::opening(&cand.scanner, &cand.buf, c) {
                        Opening::NotCall if cand.buf.starts_with('[') => self.replay(&cand.buf),
                        Opening::NotCall => self.emit_text(&cand.buf),
                        Opening::MayBeCall => {
                            cand.decided = true;
                            self.mode = Mode::Candidate(cand);
                        }
                        Opening::Undecided => self.mode = Mode::Candidate(cand),
                    },
                    Scan::Done => self.finish_candidate(*cand),
                    // Not a JSON list: `[` may have begun a marker (`[TOOL_CALLS]`).
                    Scan::Invalid if cand.buf.starts_with('[') => self.replay(&cand.buf),
                    Scan::Invalid => {
                        cand.buf.pop();
                        self.emit_text(&cand.buf);
                        if cand.bare && c == '{' {
                            // A broken bare call cut short by another object: that one
                            // may still be the reply's call.
                            self.mode = Mode::Candidate(Box::new(Candidate::open(true)));
                        } else {
                            self.step(c);
                        }
                    }
                }
            }
            Mode::AfterBareCall {
                mut held,
                semicolon,
            } => {
                if is_ws(c) {
                    held.push(c);
                    self.mode = Mode::AfterBareCall { held, semicolon };
                } else if c == ';' && !semicolon {
                    held.push(c);
                    self.mode = Mode::AfterBareCall {
                        held,
                        semicolon: true,
                    };
                } else if c == '{' && semicolon {
                    self.mode = Mode::Candidate(Box::new(Candidate::open(true)));
                } else {
                    self.emit_text(&held);
                    self.step(c);
                }
            }
            Mode::Block(block) => self.step_block(*block, c),
            Mode::Doubled(doubled) => self.step_doubled(doubled, c),
        }
    }

    fn step_text(&mut self, c: char) {
        if c == '[' && self.may_start_pythonic() {
            self.pythonic_tried |= !self.seen_visible;
            self.mode = Mode::Pythonic {
                buf: "[".into(),
                scanner: PythonicScanner::default(),
            };
            return;
        }
        if c == '[' && self.may_start_bare_list() {
            self.mode = Mode::Candidate(Box::new(Candidate::starting_with("[", true)));
            return;
        }
        let mut out = String::new();
        let matched = self.matcher.feed(c, &self.markers, &mut out);
        self.emit_text(&out);
        if let Some(i) = matched {
            self.open(i);
        }
    }

    /// Open what marker `i` opens.
    fn open(&mut self, i: usize) {
        self.mode = match self.openers[i] {
            Opener::Fence => Mode::FenceInfo {
                info: String::new(),
            },
            Opener::ToolCall => Block::open(BlockKind::ToolCall, TOOL_CALL_OPEN),
            Opener::Section(section) => return self.open_section(section),
            Opener::Mistral => Block::open(BlockKind::Mistral, MISTRAL_CALLS),
            Opener::Wrapper(close) => {
                let open = self.markers[i];
                Block::open(BlockKind::Wrapper { close }, open)
            }
            Opener::Brace => Mode::Candidate(Box::new(Candidate::open(!self.seen_visible))),
        };
    }

    fn open_fence(&mut self, info: &str) {
        let lowered = info.to_ascii_lowercase();
        let recovering = self.options.recovers() && matches!(lowered.as_str(), "" | "json" | "xml");
        self.mode = if lowered == "tool_call" && self.options.has(ToolCallFormat::FencedJson) {
            Block::open(BlockKind::ToolCallFence, &format!("{FENCE}{info}"))
        } else if (lowered == "json" && self.options.has(ToolCallFormat::InlineJson)) || recovering
        {
            Block::open(BlockKind::JsonFence, &format!("{FENCE}{info}"))
        } else {
            self.emit_text(&format!("{FENCE}{info}"));
            Mode::CodeFence
        };
    }

    // --- output ---------------------------------------------------------------------------

    /// A call (or a broken call block) was removed from the visible text.
    fn call_removed(&mut self) {
        if !self.suppress_newlines {
            self.newlines_before_call = self.trailing_newlines;
            self.newlines_after_call = 0;
        }
        self.suppress_newlines = true;
    }

    fn emit_calls(&mut self, calls: Vec<ToolCallRequest>) {
        // Calls kept back and followed by a call: no prose came between, they are calls.
        self.flush_pending();
        for call in calls {
            self.events.push(ParseEvent::ToolCall(call));
        }
        self.call_removed();
    }

    fn diagnostic(&mut self, message: String) {
        tracing::debug!(%message, "tool-call parser diagnostic");
        self.events.push(ParseEvent::Diagnostic(message));
    }

    fn emit_thinking(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        if let Some(ParseEvent::Thinking(t)) = self.events.last_mut() {
            t.push_str(s);
        } else {
            self.events.push(ParseEvent::Thinking(s.to_string()));
        }
    }

    /// Emit visible text. Calls kept back (see [`Pending`]) take whitespace, separators
    /// and stray closing braces with them; any other text shows they were quoted in
    /// prose, and they are released as text first.
    fn emit_text(&mut self, s: &str) {
        if let Some(pending) = self.pending.as_mut() {
            if s.chars().all(|c| is_ws(c) || matches!(c, '}' | ';' | ',')) {
                pending.held.push_str(s);
                return;
            }
            self.release_pending();
        }
        self.emit_visible(s);
    }

    /// Emit visible text. Right after a removed call, newlines are collapsed (see
    /// `suppress_newlines`) and carriage returns among them dropped.
    fn emit_visible(&mut self, s: &str) {
        let mut s = s;
        if self.suppress_newlines {
            let mut kept = String::new();
            let mut rest = s.len();
            for (i, c) in s.char_indices() {
                match c {
                    '\r' => {}
                    '\n' => {
                        self.newlines_after_call = self.newlines_after_call.saturating_add(1);
                        if self.newlines_after_call > self.newlines_before_call
                            && self.trailing_newlines < 2
                        {
                            kept.push('\n');
                            self.trailing_newlines += 1;
                        }
                    }
                    _ => {
                        self.suppress_newlines = false;
                        rest = i;
                        break;
                    }
                }
            }
            self.push_text(&kept);
            s = &s[rest..];
        }
        if s.is_empty() {
            return;
        }
        let tail = s
            .chars()
            .rev()
            .take_while(|c| *c == '\n' || *c == '\r')
            .filter(|c| *c == '\n')
            .count();
        let only_newlines = s.chars().all(|c| c == '\n' || c == '\r');
        let base = if only_newlines {
            usize::from(self.trailing_newlines)
        } else {
            0
        };
        self.trailing_newlines = u8::try_from((base + tail).min(2)).unwrap_or(2);
        if !self.seen_visible && !s.trim().is_empty() {
            self.seen_visible = true;
        }
        self.push_text(s);
    }

    fn push_text(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        if let Some(ParseEvent::Text(t)) = self.events.last_mut() {
            t.push_str(s);
        } else {
            self.events.push(ParseEvent::Text(s.to_string()));
        }
    }
}
