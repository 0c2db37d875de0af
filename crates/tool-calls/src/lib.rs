//! The tool-call parser: finds tool calls in a model's output, in every common
//! local-model format, in one pass; the registry of those formats ([`FORMATS`]), their
//! detection from a chat template ([`detect_template`]), and the [`prompt`] pieces a
//! backend needs. Backends, the grammar builder and the MCP client depend on this crate
//! and on `core-models`, never on the engine.
//!
//! Formats (all detected automatically; [`ParserOptions`] selects a subset):
//!
//! | format | looks like |
//! | --- | --- |
//! | [`ToolCallFormat::FencedJson`] | ```` ```tool_call ```` fence around `{"tool": ID, "parameters": {…}}` |
//! | [`ToolCallFormat::InlineJson`] | `{"tool": ID, "parameters": {…}}` inside prose; a ```` ```json ```` fence holding a call |
//! | [`ToolCallFormat::Hermes`] | `<tool_call>{"name": …, "arguments": {…}}</tool_call>` (Hermes, Qwen 2.5/3), also an array |
//! | [`ToolCallFormat::QwenXml`] | `<tool_call><function=NAME><parameter=KEY>value</parameter></function></tool_call>` |
//! | [`ToolCallFormat::Llama`] | a reply that is `{"name": …, "parameters": {…}}`, optionally after `<|python_tag|>`, several joined by `;` |
//! | [`ToolCallFormat::Mistral`] | `[TOOL_CALLS][{"name": …, "arguments": …}]` and `[TOOL_CALLS]NAME[ARGS]{…}` |
//! | [`ToolCallFormat::Reasoning`] | `<think>…</think>` is thinking text; calls drafted there are not calls |
//!
//! In JSON calls, `"tool"`, `"name"` or `"function"` give the tool id; `"parameters"`,
//! `"arguments"` or `"args"` the arguments, which may be a JSON-encoded string; no
//! arguments means `{}`. Malformed calls inside a marker become diagnostics and are never
//! returned as calls.
//!
//! [`StreamingFunctionCallParser`] is a single state machine fed piece by piece;
//! [`FunctionCallParser`] feeds it a whole output. For every way of cutting an output
//! into pieces the two produce the same text, thinking and calls, in time linear in the
//! output's length.

mod calls;
mod formats;
mod json;
pub mod prompt;
mod stream;
pub mod value;
mod values;

pub use calls::ToolCatalog;
pub use formats::detect::{detect_template, prompt_opens_reasoning, TemplateProfile};
pub use formats::{format_by_name, format_info, FormatInfo, ToolCallFormat, FORMATS};
pub use stream::StreamingFunctionCallParser;

use core_models::ToolCallRequest;
use std::collections::BTreeSet;

impl ToolCallFormat {
    /// Its name for `--format`.
    pub fn name(self) -> &'static str {
        self.spec().info.name
    }
}

/// Which formats to recognize, and whether the output starts inside reasoning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParserOptions {
    formats: BTreeSet<ToolCallFormat>,
    /// The prompt opened `<think>`, so the output starts as thinking text until `</think>`.
    pub starts_in_thinking: bool,
    /// The model's format is not known: markers that prose could contain are not used.
    auto: bool,
    /// The model's own format, when known: a call written in another spelling is marked
    /// as recovered, and for the formats whose calls are JSON objects those spellings are
    /// read (see [`ParserOptions::with_native`]).
    native: Option<ToolCallFormat>,
}

impl Default for ParserOptions {
    fn default() -> Self {
        ParserOptions {
            formats: ToolCallFormat::ALL.into_iter().collect(),
            starts_in_thinking: false,
            auto: true,
            native: None,
        }
    }
}

impl ParserOptions {
    /// Every format (the default).
    pub fn auto() -> Self {
        Self::default()
    }

    /// Only these formats (when the model's format is known).
    pub fn only(formats: impl IntoIterator<Item = ToolCallFormat>) -> Self {
        ParserOptions {
            formats: formats.into_iter().collect(),
            starts_in_thinking: false,
            auto: false,
            native: None,
        }
    }

    /// The model's own format is `format` (it is recognized too). A call in another
    /// spelling is marked as *recovered* ([`core_models::ToolCallRequest::recovered`]).
    /// When `format`'s calls are JSON objects naming the tool (Hermes, Llama, Mistral,
    /// Granite, Nemotron, Phi-4, llama.cpp's generic JSON, AIntern's fence), the other
    /// spellings such models write are read as calls: a reply that is, or ends with, call
    /// objects (bare JSON; JSON in prose followed by more prose stays text), a call in a
    /// ```` ``` ````, ```` ```json ```` or ```` ```xml ```` fence, a call with its braces
    /// doubled, and for Hermes the other tags llama.cpp's Hermes parser reads
    /// (`<response>`, `<function_call>`, …). A bare call after prose must name a known
    /// tool (with a catalog that knows tools).
    pub fn with_native(mut self, format: ToolCallFormat) -> Self {
        self.formats.insert(format);
        self.native = Some(format);
        self.auto = false;
        self
    }

    /// The model's own format, when known.
    pub fn native(&self) -> Option<ToolCallFormat> {
        self.native
    }

    /// Whether other spellings of JSON calls are read (see [`ParserOptions::with_native`]).
    pub fn recovers(&self) -> bool {
        self.native.is_some_and(|f| f.spec().recovers)
    }

    /// The tags the model's format also puts around a JSON call.
    pub(crate) fn wrappers(&self) -> &'static [(&'static str, &'static str)] {
        match self.native {
            Some(f) if f.spec().recovers => f.spec().wrappers,
            _ => &[],
        }
    }

    /// Start inside reasoning.
    pub fn starting_in_thinking(mut self) -> Self {
        self.starts_in_thinking = true;
        self
    }

    /// Whether `format` is recognized.
    pub fn has(&self, format: ToolCallFormat) -> bool {
        self.formats.contains(&format)
    }

    /// Whether a section marker is used.
    pub(crate) fn has_section(&self, section: &formats::Section) -> bool {
        self.has(section.format) && (section.in_auto || !self.auto)
    }
}

/// What became known while parsing.
// Calls are rare next to text pieces, and boxing them would change the public API.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum ParseEvent {
    /// Visible text (never part of a call).
    Text(String),
    /// Reasoning text.
    Thinking(String),
    /// A complete tool call.
    ToolCall(ToolCallRequest),
    /// Something that looked like a call but could not be used.
    Diagnostic(String),
}

/// Everything found in one output.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedOutput {
    /// Visible text, every call removed.
    pub text: String,
    /// Reasoning text.
    pub thinking: String,
    /// The calls, in order.
    pub tool_calls: Vec<ToolCallRequest>,
    /// Problems found.
    pub diagnostics: Vec<String>,
}

impl ParsedOutput {
    /// Add what a parser reported.
    pub fn extend(&mut self, events: impl IntoIterator<Item = ParseEvent>) {
        for event in events {
            match event {
                ParseEvent::Text(t) => self.text.push_str(&t),
                ParseEvent::Thinking(t) => self.thinking.push_str(&t),
                ParseEvent::ToolCall(c) => self.tool_calls.push(c),
                ParseEvent::Diagnostic(d) => self.diagnostics.push(d),
            }
        }
    }

    /// The same, with text and thinking trimmed.
    pub fn trimmed(mut self) -> Self {
        self.text = self.text.trim().to_string();
        self.thinking = self.thinking.trim().to_string();
        self
    }
}

/// Parses complete outputs (seed 001 part g's `FunctionCallParser`).
#[derive(Debug, Clone, Default)]
pub struct FunctionCallParser {
    catalog: ToolCatalog,
    options: ParserOptions,
}

impl FunctionCallParser {
    /// A parser looking tools up in `catalog`, recognizing every format.
    pub fn new(catalog: ToolCatalog) -> Self {
        FunctionCallParser {
            catalog,
            options: ParserOptions::default(),
        }
    }

    /// Recognize only what `options` says.
    pub fn with_options(mut self, options: ParserOptions) -> Self {
        self.options = options;
        self
    }

    /// Where the parser looks tools up.
    pub fn catalog(&self) -> &ToolCatalog {
        &self.catalog
    }

    /// A streaming parser with the same catalog and options.
    pub fn streaming(&self) -> StreamingFunctionCallParser {
        StreamingFunctionCallParser::new(self.catalog.clone(), self.options.clone())
    }

    /// Everything in `content`: visible text, thinking, calls and diagnostics (untrimmed).
    pub fn parse_all(&self, content: &str) -> ParsedOutput {
        let mut parser = self.streaming();
        let mut out = ParsedOutput::default();
        out.extend(parser.process_token(content));
        out.extend(parser.flush());
        out
    }

    /// The tool calls in `content`.
    pub fn parse(&self, content: &str) -> Vec<ToolCallRequest> {
        self.parse_all(content).tool_calls
    }

    /// The visible text of `content`, calls and thinking removed, trimmed.
    pub fn extract_text(&self, content: &str) -> String {
        self.parse_all(content).text.trim().to_string()
    }
}
