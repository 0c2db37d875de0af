//! `aintern parse`: run the tool-call parser over one model output read from stdin.

use core_models::ToolDefinition;
use serde_json::{json, Value};
use services_ai::{FunctionCallParser, ParsedOutput, ParserOptions, ToolCatalog};
use std::io::Read;
use std::path::Path;

/// Load a `--tools` file: a JSON array of AIntern tool definitions or of OpenAI
/// function tools (`{"type": "function", "function": {name, description, parameters}}`).
pub(crate) fn load_tools(path: &Path) -> Result<ToolCatalog, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the tools file {}: {e}", path.display()))?;
    let items: Vec<Value> = serde_json::from_str(&text)
        .map_err(|e| format!("the tools file {} is not a JSON array: {e}", path.display()))?;
    let mut definitions = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        definitions.push(tool_definition(item).map_err(|e| {
            format!(
                "tool {} in {} is neither an AIntern tool definition (id, name, description, risk_level, schema) nor an OpenAI function tool: {e}",
                i + 1,
                path.display()
            )
        })?);
    }
    Ok(ToolCatalog::from_definitions(definitions))
}

/// One tool of a `--tools` file.
pub(crate) fn tool_definition(item: Value) -> Result<ToolDefinition, String> {
    let function = item.get("function").filter(|f| f.is_object()).or_else(|| {
        item.get("name")
            .filter(|_| item.get("id").is_none())
            .map(|_| &item)
    });
    if let Some(function) = function {
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .ok_or("the function has no name")?;
        let description = function
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut definition = ToolDefinition::new(name, name, description);
        if let Some(parameters) = function.get("parameters").filter(|p| p.is_object()) {
            definition.input_schema = parameters.clone();
        }
        return Ok(definition);
    }
    serde_json::from_value(item).map_err(|e| e.to_string())
}

/// The parser options from `--format`, `--template` and `--starts-in-thinking`.
pub(crate) fn options(
    format: &str,
    template: Option<&Path>,
    starts_in_thinking: bool,
) -> Result<ParserOptions, String> {
    let options = if let Some(path) = template {
        let source = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the chat template {}: {e}", path.display()))?;
        let profile = services_ai::detect_template(&source);
        let opened = generation_prompt(&source)
            .map(|prompt| services_ai::prompt_opens_reasoning(&prompt, &profile))
            .unwrap_or(false);
        profile.parser_options(opened || starts_in_thinking)
    } else if format.eq_ignore_ascii_case("auto") {
        ParserOptions::auto()
    } else {
        let Some(format) = services_ai::format_by_name(format) else {
            return Err(format!(
                "unknown format {format:?}; `aintern parse --list-formats` names them"
            ));
        };
        services_ai::TemplateProfile {
            format,
            reasoning: None,
        }
        .parser_options(false)
    };
    Ok(if starts_in_thinking {
        options.starting_in_thinking()
    } else {
        options
    })
}

/// The prompt `source` renders for one user message, ready for the reply.
fn generation_prompt(source: &str) -> Option<String> {
    let template = chat_template::Template::new(source).ok()?;
    template
        .render(&json!({
            "messages": [{"role": "user", "content": "Hello"}],
            "add_generation_prompt": true,
            // As llama.cpp renders by default: reasoning on where a template can turn it off.
            "enable_thinking": true,
            "bos_token": "",
            "eos_token": "",
        }))
        .ok()
}

/// The formats, one per line: name, models, what it looks like.
pub(crate) fn list_formats() -> String {
    services_ai::FORMATS
        .iter()
        .map(|f| format!("{}\t{}\t{}", f.name, f.models, f.looks_like))
        .collect::<Vec<_>>()
        .join("\n")
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
            .map(|c| match &c.recovered {
                // How it was written, when not in the format's own syntax.
                Some(spelling) => {
                    json!({"tool": c.tool_id, "parameters": c.parameters, "recovered": spelling})
                }
                None => json!({"tool": c.tool_id, "parameters": c.parameters}),
            })
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
