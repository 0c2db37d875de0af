//! Prompt building (seed 001 part i): the system prompt, the tool descriptions and
//! instructions, tool results as history messages, and the seed's plain-text rendering
//! for backends without a chat template.

use crate::config::{AgentConfig, ToolPromptStyle};
use core_models::{ChatMessage, FileContext, ToolCallRequest, ToolDefinition, ToolResult};

/// Bytes per token assumed when a token budget is turned into a byte budget.
pub const BYTES_PER_TOKEN: usize = 4;

/// One tool described with `config.tool_definition_format`: `{name}` is the id the model
/// must write, `{title}` the human-readable name, `{description}` and `{parameters}` (the
/// JSON schema, pretty-printed).
pub fn format_tool_definition(config: &AgentConfig, tool: &ToolDefinition) -> String {
    let schema = serde_json::to_string_pretty(&tool.input_schema).unwrap_or_else(|_| "{}".into());
    config
        .tool_definition_format
        .replace("{name}", &tool.id)
        .replace("{title}", &tool.name)
        .replace("{description}", &tool.description)
        .replace("{parameters}", &schema)
}

/// The system message. When tools are offered: the tool-use prompt (what the agent is
/// and how it works), then, unless the model's chat template shows the tools itself
/// (`template_lists_tools`), every tool's description and the call format; after them the
/// request's own prompt (an application's, the project's instructions). The compact style
/// (small models) puts the request's prompt first, then its own one-line-per-tool prompt,
/// or the tool-use prompt when the template lists the tools.
pub fn system_prompt(
    config: &AgentConfig,
    custom: Option<&str>,
    tools: &[ToolDefinition],
    template_lists_tools: bool,
) -> Option<String> {
    let custom = custom.filter(|c| !c.trim().is_empty()).map(str::trim_end);
    let mut parts: Vec<String> = Vec::new();
    let compact = config.tool_prompt_style == ToolPromptStyle::Compact;
    if compact {
        parts.extend(custom.map(String::from));
    }
    match config.tool_prompt_style {
        _ if tools.is_empty() => {}
        // The template lists the tools (their required parameters): what the agent is.
        ToolPromptStyle::Compact if template_lists_tools => {
            parts.push(config.tool_use_system_prompt.trim_end().to_string());
        }
        ToolPromptStyle::Compact => parts.push(compact_tool_prompt(tools)),
        ToolPromptStyle::Full | ToolPromptStyle::Lean => {
            parts.push(config.tool_use_system_prompt.trim_end().to_string());
            if !template_lists_tools {
                let mut listing = String::from("Available tools:");
                for tool in tools {
                    listing.push_str("\n\n");
                    listing.push_str(format_tool_definition(config, tool).trim_end());
                }
                parts.push(listing);
                parts.push(config.tool_call_format.trim_end().to_string());
            }
        }
    }
    if !compact {
        parts.extend(custom.map(String::from));
    }
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// The compact presentation of the tools ([`ToolPromptStyle::Compact`]).
fn compact_tool_prompt(tools: &[ToolDefinition]) -> String {
    let mut out = String::from("You are a helpful assistant with tools.\n\nTools:");
    for tool in tools {
        out.push_str(&format!(
            "\n- {}: {}. Parameters: {}",
            tool.id,
            first_sentence(&tool.description),
            compact_signature(&tool.input_schema)
        ));
    }
    out.push_str(
        "\n\nTo call a tool, reply with:\n```tool_call\n\
         {\"tool\": \"<tool>\", \"parameters\": {<arguments>}}\n```\n\
         Use the exact names the user gives.",
    );
    out
}

/// The tool definitions sent to the model with each request: as they are with the full
/// prompt; with the compact one, their schemas keep only the required properties; with
/// the lean one, all but the detail parameters.
pub(crate) fn offered_definitions(
    config: &AgentConfig,
    definitions: Vec<ToolDefinition>,
) -> Vec<ToolDefinition> {
    match config.tool_prompt_style {
        ToolPromptStyle::Full => definitions,
        ToolPromptStyle::Compact => definitions
            .into_iter()
            .map(|mut d| {
                d.input_schema = required_only(&d.input_schema);
                d
            })
            .collect(),
        ToolPromptStyle::Lean => definitions
            .into_iter()
            .map(|mut d| {
                d.input_schema = without(&d.input_schema, &d.detail_parameters);
                d
            })
            .collect(),
    }
}

/// `schema` without the optional properties named in `details`.
fn without(schema: &serde_json::Value, details: &[String]) -> serde_json::Value {
    let mut schema = schema.clone();
    let required = required_names(&schema);
    if let Some(properties) = schema.get_mut("properties").and_then(|p| p.as_object_mut()) {
        properties.retain(|name, _| required.contains(name) || !details.contains(name));
    }
    schema
}

/// The names a JSON schema lists as `required`.
pub(crate) fn required_names(schema: &serde_json::Value) -> Vec<String> {
    schema
        .get("required")
        .and_then(|r| r.as_array())
        .map(|r| {
            r.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// `schema` with only its required properties.
fn required_only(schema: &serde_json::Value) -> serde_json::Value {
    let mut schema = schema.clone();
    let required = required_names(&schema);
    if let Some(properties) = schema.get_mut("properties").and_then(|p| p.as_object_mut()) {
        properties.retain(|name, _| required.contains(name));
    }
    schema
}

/// The first sentence of a description, without its full stop.
fn first_sentence(text: &str) -> &str {
    let text = text.trim();
    let end = text.find(". ").unwrap_or(text.len());
    text[..end].trim_end_matches('.')
}

/// A JSON schema's required properties as a short JSON-like signature:
/// `{"path": string, "content": string}`. Optional properties are left out: small models
/// fill in every parameter they are shown, and invent values for the optional ones.
pub fn compact_signature(schema: &serde_json::Value) -> String {
    let Some(properties) = schema.get("properties").and_then(|p| p.as_object()) else {
        return "{}".into();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(|r| r.as_array())
        .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    let field = |name: &str, property: &serde_json::Value| {
        let kind = match property.get("type") {
            Some(serde_json::Value::String(t)) => t.clone(),
            Some(serde_json::Value::Array(ts)) => ts
                .iter()
                .filter_map(|t| t.as_str())
                .collect::<Vec<_>>()
                .join(" | "),
            _ if property.get("enum").is_some() => "enum".into(),
            _ => "any".into(),
        };
        format!("{}: {kind}", serde_json::Value::String(name.to_string()))
    };
    let mandatory: Vec<String> = required
        .iter()
        .filter_map(|name| properties.get(*name).map(|p| field(name, p)))
        .collect();
    format!("{{{}}}", mandatory.join(", "))
}

/// The user's message with the attached files appended.
pub fn user_message(message: &str, files: &[FileContext]) -> ChatMessage {
    let mut content = message.to_string();
    for file in files {
        let range = match (file.start_line, file.end_line) {
            (Some(a), Some(b)) => format!(" (lines {a}-{b})"),
            _ => String::new(),
        };
        let cut = if file.is_truncated {
            " (truncated)"
        } else {
            ""
        };
        content.push_str(&format!(
            "\n\nAttached file `{}`{range}{cut}:\n```{}\n{}\n```",
            file.path,
            file.language.as_deref().unwrap_or(""),
            file.content.trim_end()
        ));
    }
    ChatMessage::user(content)
}

/// Cut `content` to at most about `max_bytes`, keeping its head and its tail and saying
/// how much was cut; never inside a UTF-8 character.
pub fn truncate_middle(content: &str, max_bytes: usize) -> String {
    if content.len() <= max_bytes {
        return content.to_string();
    }
    let keep = max_bytes.saturating_sub(80);
    let mut head = keep * 2 / 3;
    while !content.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = content.len() - (keep - head).min(content.len() - head);
    while !content.is_char_boundary(tail) {
        tail += 1;
    }
    let cut = &content[head..tail];
    format!(
        "{}\n[... {} bytes ({} lines) cut ...]\n{}",
        &content[..head],
        cut.len(),
        cut.lines().count(),
        &content[tail..]
    )
}

/// A result's text for the model: its content (or data, or "(no output)"), or
/// "Error: …" for a failure, cut to `max_tokens`.
pub(crate) fn result_text(result: &ToolResult, max_tokens: u32) -> String {
    let body = if result.success {
        if result.content.is_empty() {
            match &result.data {
                Some(data) => data.to_string(),
                None => "(no output)".to_string(),
            }
        } else {
            result.content.clone()
        }
    } else {
        format!(
            "Error: {}",
            result.error_message.as_deref().unwrap_or("unknown error")
        )
    };
    let max_bytes = usize::try_from(max_tokens)
        .unwrap_or(usize::MAX)
        .saturating_mul(BYTES_PER_TOKEN);
    truncate_middle(&body, max_bytes)
}

/// The history message for a tool's result (seed's `FormatToolResultForHistory`), cut
/// to `max_tokens`, with `instruction` (when not empty) as its last paragraph.
pub fn tool_result_message(
    call: &ToolCallRequest,
    result: &ToolResult,
    max_tokens: u32,
    instruction: &str,
) -> ChatMessage {
    let mut body = result_text(result, max_tokens);
    let instruction = instruction.trim();
    if !instruction.is_empty() {
        body.push_str("\n\n");
        body.push_str(instruction);
    }
    ChatMessage::tool(
        &call.tool_id,
        call.history_id(),
        format!("[{}]\n{body}", call.tool_name),
    )
}

pub use tool_calls::prompt::{render_plain, tool_result_as_user_text};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_keeps_head_and_tail_on_char_boundaries() {
        let text = "é".repeat(1000); // 2000 bytes
        let cut = truncate_middle(&text, 500);
        assert!(cut.len() < 600, "{}", cut.len());
        assert!(cut.starts_with('é') && cut.ends_with('é'));
        assert!(cut.contains("bytes (1 lines) cut"));
        assert_eq!(truncate_middle("short", 500), "short");
        let emoji = "🎉".repeat(300);
        for max in [100, 101, 102, 103, 250, 1199] {
            let cut = truncate_middle(&emoji, max);
            assert!(cut.starts_with('🎉') && cut.ends_with('🎉'), "{max}");
        }
    }
}
