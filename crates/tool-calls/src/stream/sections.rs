//! The format sections of the streaming parser (see `formats/registry.rs`): a marker opens
//! reasoning, a call section collected up to its closing marker, or a harmony header;
//! and the bare pythonic reply. Every decision depends on the characters alone.

use super::{Candidate, Matcher, Mode, StreamingFunctionCallParser};
use crate::formats::pythonic::{PyScan, PythonicScanner};
use crate::formats::special::{self, Harmony};
use crate::formats::{self, Section, SectionKind, HARMONY_ENDS};
use crate::ToolCallFormat;

/// The body of a call section, or of a harmony header, being collected.
#[derive(Debug)]
pub(crate) struct SectionState {
    section: Section,
    /// Everything after the opening marker.
    pub(super) body: String,
    closer: Matcher,
    /// JSON-aware sections: inside a string (closing markers do not count there).
    in_string: bool,
    escaped: bool,
    /// A harmony call: the recipient named in the header.
    harmony_call: Option<String>,
}

/// The section that collects a harmony call's arguments.
const HARMONY_CALL: Section = Section {
    format: ToolCallFormat::Harmony,
    open: "",
    close: HARMONY_ENDS,
    kind: SectionKind::Calls {
        parse: |_, _| Err("unreachable".into()),
        json_aware: true,
    },
    in_auto: true,
};

impl SectionState {
    pub(super) fn open(section: Section, harmony_call: Option<String>) -> Self {
        SectionState {
            section,
            body: String::new(),
            closer: Matcher::default(),
            in_string: false,
            escaped: false,
            harmony_call,
        }
    }

    fn json_aware(&self) -> bool {
        matches!(
            self.section.kind,
            SectionKind::Calls {
                json_aware: true,
                ..
            }
        )
    }

    /// Length of a leading run of `b` that cannot end the section.
    pub(super) fn plain_run(&self, b: &[u8]) -> Option<usize> {
        if !self.closer.is_empty() {
            return None;
        }
        let close = self.section.close;
        let stop = |x: u8| {
            (self.json_aware() && (x == b'"' || x == b'\\'))
                || close.iter().any(|m| m.as_bytes()[0] == x)
        };
        if self.in_string || self.escaped {
            return None;
        }
        Some(b.iter().position(|&x| stop(x)).unwrap_or(b.len()))
    }

    /// Track JSON strings for `c`; true when `c` may belong to a closing marker.
    fn outside_string(&mut self, c: char) -> bool {
        if !self.json_aware() {
            return true;
        }
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if c == '\\' {
                self.escaped = true;
            } else if c == '"' {
                self.in_string = false;
            }
            return false;
        }
        if c == '"' {
            self.in_string = true;
            return false;
        }
        true
    }
}

impl StreamingFunctionCallParser {
    /// A section marker was seen in visible text.
    pub(super) fn open_section(&mut self, section: Section) {
        self.mode = match section.kind {
            SectionKind::Thinking => Mode::Thinking(section.close),
            SectionKind::Drop => {
                self.call_removed();
                Mode::Text
            }
            SectionKind::Calls { .. } | SectionKind::HarmonyHeader => {
                Mode::Section(Box::new(SectionState::open(section, None)))
            }
        };
    }

    /// A closing marker that is also an opening one (`<|start|>`, `>>>`) opens again.
    pub(super) fn reopen(&mut self, closer: &str) {
        self.mode = Mode::Text;
        if let Some(i) = self.markers.iter().position(|m| *m == closer) {
            self.open(i);
        }
    }

    pub(super) fn step_section(&mut self, mut state: SectionState, c: char) {
        if !state.outside_string(c) {
            state.body.push(c);
            self.mode = Mode::Section(Box::new(state));
            return;
        }
        let mut out = String::new();
        let closed = state.closer.feed(c, state.section.close, &mut out);
        state.body.push_str(&out);
        match closed {
            None => self.mode = Mode::Section(Box::new(state)),
            Some(i) => {
                let closer = state.section.close[i];
                self.finish_section(state, true);
                if matches!(self.mode, Mode::Text) {
                    self.reopen(closer);
                }
            }
        }
    }

    /// The section's body is complete (`closed`), or the output ended.
    fn finish_section(&mut self, state: SectionState, closed: bool) {
        self.mode = Mode::Text;
        let section = state.section;
        if let SectionKind::HarmonyHeader = section.kind {
            if !closed {
                return self.call_removed();
            }
            let header = format!("{}{}", section.open, state.body);
            self.mode = match special::harmony_header(&header) {
                Harmony::Thinking => Mode::Thinking(HARMONY_ENDS),
                Harmony::Text => Mode::Text,
                Harmony::Call(name) => {
                    Mode::Section(Box::new(SectionState::open(HARMONY_CALL, Some(name))))
                }
            };
            self.call_removed();
            return;
        }
        let SectionKind::Calls { parse, .. } = section.kind else {
            return;
        };
        let parsed = match &state.harmony_call {
            Some(name) => special::harmony_call(name, &state.body, &self.catalog),
            None => parse(&state.body, &self.catalog),
        };
        let what = formats::format_info(section.format).map_or("tool-call", |i| i.name);
        match parsed {
            Ok(found) => {
                if found.calls.is_empty() && !found.text.is_empty() {
                    self.emit_text(&found.text);
                    for w in found.warnings {
                        self.diagnostic(w);
                    }
                } else {
                    self.emit_found(found);
                }
            }
            Err(e) if closed || section.close.is_empty() || state.harmony_call.is_some() => {
                self.diagnostic(format!("{what} tool call: {e}"));
                self.call_removed();
            }
            Err(e) => {
                self.diagnostic(format!(
                    "incomplete {what} tool call at the end of the output ({e})"
                ));
                let raw = format!("{}{}", section.open, state.body);
                self.emit_text(&raw);
            }
        }
    }

    /// The output ended inside a section.
    pub(super) fn flush_section(&mut self, mut state: SectionState, pending: &str) {
        state.body.push_str(&state.closer.take());
        state.body.push_str(pending);
        // An unfinished section always leaves the parser in text: nothing reopens.
        self.finish_section(state, false);
    }

    /// A pythonic call list may begin here: the format enabled, and not inside text that
    /// is being replayed. Without knowing the format (`auto`), only as the whole reply:
    /// nothing visible yet, and not tried before in this output.
    pub(super) fn may_start_pythonic(&self) -> bool {
        self.matcher.is_empty()
            && !self.replaying
            && self.options.has(ToolCallFormat::Pythonic)
            && (!self.options.auto || (!self.pythonic_tried && !self.seen_visible))
    }

    /// A bare JSON list of calls may begin here (Llama 3.x, llama.cpp's generic format):
    /// nothing visible yet.
    pub(super) fn may_start_bare_list(&self) -> bool {
        self.matcher.is_empty()
            && !self.seen_visible
            && !self.replaying
            && (self.options.has(ToolCallFormat::Llama)
                || self.options.has(ToolCallFormat::Generic))
    }

    pub(super) fn step_pythonic(
        &mut self,
        buf: &mut String,
        scanner: &mut PythonicScanner,
        c: char,
    ) {
        buf.push(c);
        match scanner.push(c) {
            PyScan::More => {
                self.mode = Mode::Pythonic {
                    buf: std::mem::take(buf),
                    scanner: std::mem::take(scanner),
                };
            }
            PyScan::Done => match formats::pythonic::calls(buf, &self.catalog) {
                Ok(calls) => {
                    self.emit_calls(calls);
                    self.mode = Mode::Text;
                }
                Err(_) => self.replay(buf),
            },
            // `[{`: not pythonic, but perhaps a bare JSON list of calls.
            PyScan::Invalid
                if c == '{'
                    && buf[..buf.len() - 1].trim_end() == "["
                    && self.may_start_bare_list() =>
            {
                self.mode = Mode::Candidate(Box::new(Candidate::starting_with(buf, true)));
            }
            PyScan::Invalid => self.replay(buf),
        }
    }

    /// Feed `text` again as ordinary output (a pythonic reply that was not one). Each
    /// character is replayed at most once per output: the attempt is made only once.
    pub(super) fn replay(&mut self, text: &str) {
        self.mode = Mode::Text;
        let replaying = std::mem::replace(&mut self.replaying, true);
        for c in text.chars() {
            self.step(c);
        }
        self.replaying = replaying;
    }
}
