//! `aintern parse`: run the tool-call parser over one model output read from stdin.

use core_models::ToolDefinition;
use serde_json::{json, Value};
use services_ai::{FunctionCallParser, ParsedOutput, ToolCatalog};
use std::io::Read;
use std::path::Path;

/// Load a `--tools` file: a JSON array of tool definitions.
pub(crate) fn load_tools(path: &Path) -> Result<ToolCatalog, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the tools file {}: {e}", path.display()))?;
    let definitions: Vec<ToolDefinition> = serde_json::from_str(&text).map_err(|e| {
        format!(
            "the tools file {} is not a JSON array of tool definitions (id, name, description, risk_level, schema): {e}",
            path.display()
        )
    })?;
    Ok(ToolCatalog::from_definitions(definitions))
}

/// Cut `input` into pieces of `size` bytes, each extended to the next character boundary.
pub(crate) fn chunks(input: &str, size: usize) -> Vec<&str> {
    let size = size.max(1);
    let mut pieces = Vec::with_capacity(input.len() / size + 1);
    let mut start = 0;
    while start < input.len() {
        let mut end = (start + size).min(input.len());
        while !input.is_char_boundary(end) {
            end += 1;
        }
        pieces.push(&input[start..end]);
        start = end;
    }
    pieces
}

/// Parse `input` (batch, or streamed in `chunk`-byte pieces) into the command's JSON.
pub(crate) fn run(parser: &FunctionCallParser, input: &str, stream: Option<usize>) -> ParsedOutput {
    match stream {
        None => parser.parse_all(input),
        Some(size) => {
            let mut streaming = parser.streaming();
            let mut out = ParsedOutput::default();
            for piece in chunks(input, size) {
                out.extend(streaming.process_token(piece));
            }
            out.extend(streaming.flush());
            out
        }
    }
}

/// The command's JSON object.
pub(crate) fn to_json(out: ParsedOutput, mut extra_diagnostics: Vec<String>) -> Value {
    let out = out.trimmed();
    extra_diagnostics.extend(out.diagnostics);
    json!({
        "text": out.text,
        "thinking": out.thinking,
        "tool_calls": out
            .tool_calls
            .iter()
            .map(|c| json!({"tool": c.tool_id, "parameters": c.parameters}))
            .collect::<Vec<_>>(),
        "diagnostics": extra_diagnostics,
    })
}

/// Read stdin; invalid UTF-8 is replaced and reported, never fatal.
pub(crate) fn read_stdin() -> Result<(String, Vec<String>), String> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read standard input: {e}"))?;
    match String::from_utf8(bytes) {
        Ok(text) => Ok((text, Vec::new())),
        Err(e) => Ok((
            String::from_utf8_lossy(e.as_bytes()).into_owned(),
            vec![format!(
                "the input is not valid UTF-8 (first bad byte at offset {}); invalid bytes were replaced with U+FFFD",
                e.utf8_error().valid_up_to()
            )],
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::chunks;

    #[test]
    fn chunks_never_split_a_character() {
        let text = "aé🎉b";
        for size in 1..8 {
            let pieces = chunks(text, size);
            assert_eq!(pieces.concat(), text);
            assert!(pieces.iter().all(|p| !p.is_empty()));
        }
        assert_eq!(chunks(text, 2), ["aé", "🎉", "b"]);
        assert!(chunks("", 3).is_empty());
    }
}
