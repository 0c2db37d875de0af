//! A `{` (or a reply's opening `[`) that may begin a JSON call, once its value is complete:
//! a bare call where that is the format's own (Llama 3.x, llama.cpp's generic JSON), the
//! seed's inline `"tool"` object in prose, or a call in another spelling (`recover.rs`).

use super::{Candidate, Mode, StreamingFunctionCallParser};
use crate::calls::{calls_from_value, Shape};
use crate::json::{self, JsonScanner};
use crate::ToolCallFormat;

impl StreamingFunctionCallParser {
    pub(super) fn finish_candidate(&mut self, cand: Candidate) {
        let Candidate { buf, bare, .. } = cand;
        let value = json::parse(&buf).ok();
        let native_bare =
            self.options.has(ToolCallFormat::Llama) || self.options.has(ToolCallFormat::Generic);
        if self.pending.is_none() && bare && native_bare {
            return self.finish_bare(buf, value);
        }
        let inline = value
            .as_ref()
            .is_some_and(|v| v.get("tool").is_some_and(serde_json::Value::is_string));
        if self.pending.is_none() && inline && self.options.has(ToolCallFormat::InlineJson) {
            let calls = value.and_then(|v| {
                calls_from_value(v, Shape::Inline, &buf, &self.catalog)
                    .ok()
                    .flatten()
            });
            match calls {
                Some(calls) => {
                    let spelling = self.spelling(Some(ToolCallFormat::InlineJson), "JSON in prose");
                    self.emit_spelled(calls, spelling);
                }
                None => self.emit_text(&buf),
            }
            return;
        }
        self.recover_bare(buf, bare, "bare JSON", value);
    }

    /// A reply that begins with a JSON value, where bare JSON calls are a format's own
    /// (Llama 3.x, llama.cpp's generic JSON).
    fn finish_bare(&mut self, buf: String, value: Option<serde_json::Value>) {
        if self.options.has(ToolCallFormat::Generic) {
            // llama.cpp's generic format: {"response": "…"} is the reply's text.
            if let Some(serde_json::Value::String(text)) = value
                .as_ref()
                .filter(|v| v.as_object().is_some_and(|o| o.len() == 1))
                .and_then(|v| v.get("response"))
            {
                let text = text.clone();
                self.emit_text(&text);
                return;
            }
        }
        let calls = value.and_then(|v| {
            calls_from_value(v, Shape::Bare, &buf, &self.catalog)
                .ok()
                .flatten()
        });
        match calls {
            Some(calls) => {
                let own = match self.options.native() {
                    Some(ToolCallFormat::Generic) => ToolCallFormat::Generic,
                    _ => ToolCallFormat::Llama,
                };
                let spelling = self.spelling(Some(own), "bare JSON");
                self.emit_spelled(calls, spelling);
                self.mode = Mode::AfterBareCall {
                    held: String::new(),
                    semicolon: false,
                };
            }
            None => self.emit_text(&buf),
        }
    }
}

impl Candidate {
    pub(super) fn open(bare: bool) -> Self {
        Candidate::starting_with("{", bare)
    }

    /// A candidate whose first characters are `start` (the opening of a JSON value).
    pub(super) fn starting_with(start: &str, bare: bool) -> Self {
        let mut scanner = JsonScanner::new();
        for c in start.chars() {
            scanner.push(c);
        }
        Candidate {
            buf: start.to_string(),
            scanner,
            bare,
            decided: false,
        }
    }
}
