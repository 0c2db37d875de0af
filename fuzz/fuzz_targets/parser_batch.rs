//! The batch parser on arbitrary bytes: never panics, and what it returns is consistent.
#![no_main]

use libfuzzer_sys::fuzz_target;
use services_ai::{FunctionCallParser, ToolCatalog};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let parser = FunctionCallParser::new(ToolCatalog::Empty);
    let out = parser.parse_all(&text);
    // Nothing is invented: visible text and thinking come from the input.
    assert!(out.text.len() + out.thinking.len() <= text.len());
    for call in &out.tool_calls {
        assert!(!call.tool_id.is_empty());
        assert!(call.parameters.is_object());
    }
});
