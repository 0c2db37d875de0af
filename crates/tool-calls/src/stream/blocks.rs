//! The marked blocks of the streaming parser: ```` ```tool_call ````/```` ```json ````
//! fences, `<tool_call>` (Hermes JSON, Qwen3-Coder or GLM XML) and `[TOOL_CALLS]`, from
//! their opening marker to their closing one (split from `mod.rs`).

use super::recover::{self, Opening};
use super::{
    is_ident, is_ws, Block, BlockKind, Body, Matcher, Mode, StreamingFunctionCallParser, FENCE,
    MISTRAL_ARGS, MISTRAL_GAP, TOOL_CALL_CLOSE, TOOL_CALL_OPEN,
};
use crate::calls::{calls_from_value, Shape};
/// Most call objects one fence or tag may hold.
const MAX_CALLS: usize = 64;
use crate::formats::{self, Found};
use crate::json::{self, JsonScanner, Scan};
use crate::ToolCallFormat;
use core_models::ToolCallRequest;

impl StreamingFunctionCallParser {
    pub(super) fn step_block(&mut self, mut block: Block, c: char) {
        block.raw.push(c);
        let kind = block.kind;
        match std::mem::replace(&mut block.body, Body::Pre) {
            Body::Pre => {
                if is_ws(c) {
                    // stay
                } else if (c == '{' || c == '[')
                    && self.json_allowed(kind, block.mistral_name.is_some(), c)
                {
                    let mut scanner = JsonScanner::new();
                    scanner.push(c);
                    block.body = Body::Json {
                        start: block.raw.len() - c.len_utf8(),
                        scanner,
                        decided: false,
                    };
                } else if kind == BlockKind::ToolCall
                    && ((c == '<' && self.options.has(ToolCallFormat::QwenXml))
                        || (is_ident(c) && self.options.has(ToolCallFormat::Glm)))
                {
                    let mut closer = Matcher::default();
                    closer.feed(c, &[TOOL_CALL_CLOSE], &mut String::new());
                    block.body = Body::Xml {
                        start: block.raw.len() - c.len_utf8(),
                        closer,
                    };
                } else if kind == BlockKind::JsonFence
                    && c == '<'
                    && block.tag_close.is_none()
                    && self.options.recovers()
                {
                    let mut matcher = Matcher::default();
                    matcher.feed(c, &self.fence_tags(), &mut String::new());
                    block.body = Body::Tag { matcher };
                } else if kind == BlockKind::Mistral && block.mistral_name.is_none() && is_ident(c)
                {
                    block.mistral_name = Some(c.to_string());
                    block.body = Body::MistralName {
                        gap: 0,
                        matcher: Matcher::default(),
                    };
                } else {
                    return self.malformed(
                        block,
                        c,
                        format!("the {} does not hold a tool call", kind.describe()),
                    );
                }
            }
            Body::Json {
                start,
                mut scanner,
                mut decided,
            } => match scanner.push(c) {
                Scan::More if !decided => {
                    // A fence or a tag that need not hold a call: given up as soon as its
                    // JSON cannot begin one.
                    let loose = matches!(kind, BlockKind::JsonFence | BlockKind::Wrapper { .. });
                    match recover::opening(&scanner, &block.raw[start..], c) {
                        Opening::NotCall if loose => {
                            return self.malformed(block, c, "not a call".into());
                        }
                        Opening::Undecided => {}
                        _ => decided = true,
                    }
                    block.body = Body::Json {
                        start,
                        scanner,
                        decided,
                    };
                }
                Scan::More => {
                    block.body = Body::Json {
                        start,
                        scanner,
                        decided,
                    }
                }
                Scan::Done => {
                    let end = block.raw.len();
                    return self.json_done(block, (start, end));
                }
                Scan::Invalid => {
                    return self.malformed(
                        block,
                        c,
                        format!("malformed JSON in the {}", kind.describe()),
                    );
                }
            },
            Body::Post { json, mut closer } => {
                // Only blocks with a closing marker wait in Post (see `json_done`).
                let close = kind.closer().unwrap_or(FENCE);
                let loose = matches!(kind, BlockKind::JsonFence | BlockKind::Wrapper { .. })
                    && self.options.recovers();
                // A stray `}` after a complete object is a common slip; it is ignored.
                if (is_ws(c) || c == '}' || (loose && c == ',')) && closer.is_empty() {
                    block.body = Body::Post { json, closer };
                } else if loose && c == '{' && closer.is_empty() && block.earlier.len() < MAX_CALLS
                {
                    // Several call objects in one fence or tag.
                    block.earlier.push(json);
                    let mut scanner = JsonScanner::new();
                    scanner.push(c);
                    block.body = Body::Json {
                        start: block.raw.len() - 1,
                        scanner,
                        decided: false,
                    };
                } else {
                    let mut out = String::new();
                    let closers: &[&str] = match block.tag_close {
                        Some(tag) => &[tag, close],
                        None => &[close],
                    };
                    let closed = closer.feed(c, closers, &mut out);
                    if !out.trim().is_empty() {
                        return self.malformed(
                            block,
                            c,
                            format!("unexpected text after the JSON in the {}", kind.describe()),
                        );
                    }
                    match closed.map(|i| closers[i]) {
                        Some(tag) if Some(tag) == block.tag_close => block.tag_close = None,
                        Some(_) => return self.close_json_block(block, json),
                        None => {}
                    }
                    block.body = Body::Post { json, closer };
                }
            }
            Body::Tag { mut matcher } => {
                let tags = self.fence_tags();
                let mut out = String::new();
                match matcher.feed(c, &tags, &mut out) {
                    Some(i) => {
                        block.tag_close = Some(fence_tag_close(&self.options, tags[i]));
                        block.body = Body::Pre;
                    }
                    None if out.is_empty() => block.body = Body::Tag { matcher },
                    None => return self.malformed(block, c, "not a call".into()),
                }
            }
            Body::Xml { start, mut closer } => {
                if closer
                    .feed(c, &[TOOL_CALL_CLOSE], &mut String::new())
                    .is_some()
                {
                    let end = block.raw.len() - TOOL_CALL_CLOSE.len();
                    let body = block.raw[start..end].to_string();
                    return self.finish_xml(&body);
                }
                block.body = Body::Xml { start, closer };
            }
            Body::MistralName {
                mut gap,
                mut matcher,
            } => {
                let naming = matcher.is_empty() && gap == 0;
                if naming && is_ident(c) {
                    if let Some(name) = block.mistral_name.as_mut() {
                        name.push(c);
                    }
                    block.body = Body::MistralName { gap, matcher };
                } else if naming && c == '{' {
                    // `[TOOL_CALLS]NAME{…}`: the arguments right after the name.
                    let mut scanner = JsonScanner::new();
                    scanner.push(c);
                    block.body = Body::Json {
                        start: block.raw.len() - 1,
                        scanner,
                        decided: true,
                    };
                } else {
                    let mut out = String::new();
                    let matched = matcher.feed(c, &[MISTRAL_ARGS], &mut out).is_some();
                    gap += out.chars().count();
                    if out.contains('\n') || gap > MISTRAL_GAP {
                        return self.malformed(
                            block,
                            c,
                            "a [TOOL_CALLS] name is not followed by [ARGS]".into(),
                        );
                    }
                    block.body = if matched {
                        Body::Pre
                    } else {
                        Body::MistralName { gap, matcher }
                    };
                }
            }
            Body::Raw { reason, closer } => return self.skip_to_closer(block, c, reason, closer),
        }
        self.mode = Mode::Block(Box::new(block));
    }

    /// In a broken block: feed `c` to the closing-marker matcher; once the marker is
    /// complete, report `reason` and drop the block.
    fn skip_to_closer(&mut self, mut block: Block, c: char, reason: String, mut closer: Matcher) {
        let close = block.kind.closer().unwrap_or(FENCE);
        if closer.feed(c, &[close], &mut String::new()).is_some() {
            self.diagnostic(reason);
            self.call_removed();
        } else {
            block.body = Body::Raw { reason, closer };
            self.mode = Mode::Block(Box::new(block));
        }
    }

    fn json_allowed(&self, kind: BlockKind, named: bool, c: char) -> bool {
        match kind {
            BlockKind::ToolCall => self.options.has(ToolCallFormat::Hermes),
            BlockKind::Mistral if named => c == '{',
            _ => true,
        }
    }

    /// The opening tags a recovered fence may hold around its call.
    fn fence_tags(&self) -> Vec<&'static str> {
        let mut tags = vec![TOOL_CALL_OPEN, "<tools>"];
        tags.extend(self.options.wrappers().iter().map(|(open, _)| *open));
        tags
    }

    /// The block's content is not a call. Blocks with a closing marker swallow everything
    /// up to it and report `reason`; a ```` ```json ```` block becomes an ordinary code
    /// fence; a tag the format also writes stays text; blocks without a closer are
    /// released as text with a diagnostic.
    fn malformed(&mut self, mut block: Block, c: char, reason: String) {
        match block.kind {
            BlockKind::Wrapper { .. } => {
                block.raw.truncate(block.raw.len() - c.len_utf8());
                self.emit_text(&block.raw);
                self.step(c);
            }
            BlockKind::JsonFence => {
                block.raw.truncate(block.raw.len() - c.len_utf8());
                self.emit_text(&block.raw);
                self.matcher = Matcher::default();
                self.mode = Mode::CodeFence;
                self.step(c);
            }
            BlockKind::ToolCallFence | BlockKind::ToolCall => {
                self.skip_to_closer(block, c, reason, Matcher::default());
            }
            BlockKind::Mistral => {
                block.raw.truncate(block.raw.len() - c.len_utf8());
                self.diagnostic(reason);
                self.emit_text(&block.raw);
                self.step(c);
            }
        }
    }

    fn json_done(&mut self, mut block: Block, json: (usize, usize)) {
        match block.kind {
            BlockKind::ToolCallFence
            | BlockKind::JsonFence
            | BlockKind::ToolCall
            | BlockKind::Wrapper { .. } => {
                block.body = Body::Post {
                    json,
                    closer: Matcher::default(),
                };
                self.mode = Mode::Block(Box::new(block));
            }
            BlockKind::Mistral => {
                let text = &block.raw[json.0..json.1];
                let result = match &block.mistral_name {
                    Some(name) => match json::parse(text) {
                        Ok(args @ serde_json::Value::Object(_)) => {
                            Ok(vec![self.catalog.request(name, args, text)])
                        }
                        Ok(_) => Err(format!("the arguments of {name} are not a JSON object")),
                        Err(e) => Err(format!("the arguments of {name} are not valid JSON: {e}")),
                    },
                    None => self.marked_calls(text),
                };
                match result {
                    Ok(calls) => self.emit_calls(calls),
                    Err(e) => {
                        self.diagnostic(format!("{}: {e}", BlockKind::Mistral.describe()));
                        self.emit_text(&block.raw);
                    }
                }
            }
        }
    }

    fn marked_calls(&self, text: &str) -> Result<Vec<ToolCallRequest>, String> {
        let value = json::parse(text).map_err(|e| format!("malformed JSON: {e}"))?;
        calls_from_value(value, Shape::Marked, text, &self.catalog)?
            .ok_or_else(|| "not a tool call".to_string())
    }

    /// The closing marker of a JSON block arrived (or the output ended after its JSON).
    fn close_json_block(&mut self, block: Block, json: (usize, usize)) {
        let text = &block.raw[json.0..json.1];
        if let BlockKind::JsonFence | BlockKind::Wrapper { .. } = block.kind {
            // Every object the block holds must be a call.
            let mut calls = Some(Vec::new());
            for (from, to) in block.earlier.iter().copied().chain([json]) {
                let text = &block.raw[from..to];
                let found = json::parse(text).ok().and_then(|v| {
                    calls_from_value(v, Shape::Bare, text, &self.catalog)
                        .ok()
                        .flatten()
                });
                calls = calls.zip(found).map(|(mut all, more)| {
                    all.extend(more);
                    all
                });
            }
            let spelling = self.block_spelling(&block);
            match calls {
                // Another spelling than the model's own: a call if the reply ends with it.
                Some(calls) if self.options.recovers() => {
                    let bare = !self.seen_visible;
                    self.hold(calls, &block.raw, (bare, true), spelling);
                }
                Some(calls) => self.emit_spelled(calls, spelling),
                None => self.emit_text(&block.raw),
            }
            return;
        }
        match self.marked_calls(text) {
            Ok(calls) => self.emit_calls(calls),
            Err(e) => {
                self.diagnostic(format!("{}: {e}", block.kind.describe()));
                self.call_removed();
            }
        }
    }

    fn finish_xml(&mut self, body: &str) {
        let parsed = if body.trim_start().starts_with('<') {
            formats::xml::qwen(body, &self.catalog)
        } else {
            formats::xml::glm(body, &self.catalog)
        };
        match parsed {
            Ok(found) => self.emit_found(found),
            Err(e) => {
                self.diagnostic(format!("{}: {e}", BlockKind::ToolCall.describe()));
                self.call_removed();
            }
        }
    }

    /// How a fenced or tagged call was written, in words, unless that is the model's own.
    fn block_spelling(&self, block: &Block) -> Option<String> {
        let first = block.raw.lines().next().unwrap_or_default().trim_end();
        match block.kind {
            BlockKind::Wrapper { .. } => {
                let tag = block.raw.find('>').map_or(first, |end| &block.raw[..=end]);
                self.spelling(None, &format!("{tag} tags"))
            }
            _ => {
                let words = format!("a {first} fence");
                let own = (first.eq_ignore_ascii_case("```json"))
                    .then_some(crate::ToolCallFormat::InlineJson);
                self.spelling(own, &words)
            }
        }
    }

    /// Report what a call body held: its warnings, text and calls.
    pub(super) fn emit_found(&mut self, found: Found) {
        for warning in found.warnings {
            self.diagnostic(warning);
        }
        if !found.text.is_empty() {
            self.emit_text(&found.text);
        }
        if !found.calls.is_empty() {
            self.emit_calls(found.calls);
        }
    }

    pub(super) fn flush_block(&mut self, block: Block) {
        match block.body {
            Body::Post { json, .. } => self.close_json_block(block, json),
            Body::Xml { start, .. }
                if block.raw[start..].contains("</function>")
                    || block.raw[start..].contains("</arg_value>") =>
            {
                let body = block.raw[start..].to_string();
                self.finish_xml(&body);
            }
            _ => {
                if !matches!(block.kind, BlockKind::JsonFence | BlockKind::Wrapper { .. }) {
                    self.diagnostic(format!(
                        "incomplete {} at the end of the output",
                        block.kind.describe()
                    ));
                }
                self.emit_text(&block.raw);
            }
        }
    }
}

impl Block {
    pub(super) fn open(kind: BlockKind, marker: &str) -> Mode {
        Mode::Block(Box::new(Block {
            kind,
            raw: marker.to_string(),
            body: Body::Pre,
            mistral_name: None,
            tag_close: None,
            earlier: Vec::new(),
        }))
    }
}

/// The closing tag of `open`, a tag a recovered fence may hold.
fn fence_tag_close(options: &crate::ParserOptions, open: &str) -> &'static str {
    match open {
        TOOL_CALL_OPEN => TOOL_CALL_CLOSE,
        "<tools>" => "</tools>",
        _ => options
            .wrappers()
            .iter()
            .find(|(o, _)| *o == open)
            .map_or("", |(_, close)| close),
    }
}
