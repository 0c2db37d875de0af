//! The streaming parser, fed arbitrary text cut at arbitrary places, must produce exactly
//! what the batch parser produces (a differential fuzz target).
#![no_main]

use libfuzzer_sys::fuzz_target;
use services_ai::{FunctionCallParser, ParsedOutput, ToolCatalog};

fuzz_target!(|data: &[u8]| {
    // The first bytes choose the token sizes; the rest is the model output.
    if data.len() < 4 {
        return;
    }
    let (sizes, body) = data.split_at(4);
    let text = String::from_utf8_lossy(body);
    let parser = FunctionCallParser::new(ToolCatalog::Empty);
    let batch = parser.parse_all(&text);

    let mut streaming = parser.streaming();
    let mut out = ParsedOutput::default();
    let mut start = 0;
    let mut i = 0;
    while start < text.len() {
        let size = usize::from(sizes[i % sizes.len()] % 16) + 1;
        i += 1;
        let mut end = (start + size).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        out.extend(streaming.process_token(&text[start..end]));
        start = end;
    }
    out.extend(streaming.flush());

    assert_eq!(out.text, batch.text);
    assert_eq!(out.thinking, batch.thinking);
    assert_eq!(out.diagnostics, batch.diagnostics);
    let calls = |o: &ParsedOutput| {
        o.tool_calls
            .iter()
            .map(|c| (c.tool_id.clone(), c.parameters.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(calls(&out), calls(&batch));
});
