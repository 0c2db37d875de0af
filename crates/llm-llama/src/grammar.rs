//! Tool-call grammars: GBNF text that constrains a reply to a call in a given format.
//!
//! `required` or a named tool makes the whole reply one call whose parameters follow the
//! tool's JSON schema; `auto` constrains only what follows the call's opening marker (a
//! lazy grammar), so free text stays free; `none` adds nothing.
//!
//! Each format has its own wrapping and key names (see [`Shape`]); a format without a
//! grammar of its own falls back to AIntern's fence.

use crate::Error;
use core_models::{LlmRequest, ToolChoice};
use services_ai::ToolCallFormat;

/// The opening of a tool call in the format AIntern asks models for.
pub(crate) const CALL_FENCE: &str = "```tool_call";

/// A grammar for a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolGrammar {
    /// The GBNF text; its start rule is `root`.
    pub(crate) text: String,
    /// For a lazy grammar, the words that start it (the grammar then constrains the text
    /// from the trigger on); empty for a grammar that constrains the whole reply.
    pub(crate) triggers: Vec<&'static str>,
}

impl ToolGrammar {
    /// Whether the grammar waits for a trigger.
    pub(crate) fn is_lazy(&self) -> bool {
        !self.triggers.is_empty()
    }
}

/// How a call is written in one format.
struct Shape {
    /// The key naming the tool.
    name_key: &'static str,
    /// The key holding the arguments.
    args_key: &'static str,
    /// GBNF literal text before the call object (already escaped).
    open: &'static str,
    /// GBNF literal text after it (already escaped).
    close: &'static str,
    /// What starts a lazy grammar for `auto`.
    trigger: &'static str,
}

/// The call shape of `format`; formats without their own fall back to the fence.
fn shape(format: ToolCallFormat) -> Shape {
    match format {
        ToolCallFormat::Hermes => Shape {
            name_key: "name",
            args_key: "arguments",
            open: "<tool_call>\\n",
            close: "\\n</tool_call>",
            trigger: "<tool_call>",
        },
        ToolCallFormat::Mistral => Shape {
            name_key: "name",
            args_key: "arguments",
            open: "[TOOL_CALLS][",
            close: "]",
            trigger: "[TOOL_CALLS]",
        },
        // A bare JSON object: for `auto` it starts at its name key.
        ToolCallFormat::Llama => Shape {
            name_key: "name",
            args_key: "parameters",
            open: "",
            close: "",
            trigger: "{\"name\"",
        },
        _ => Shape {
            name_key: "tool",
            args_key: "parameters",
            open: "```tool_call\\n",
            close: "\\n```",
            trigger: CALL_FENCE,
        },
    }
}

/// A grammar for the reply to `request` in `format` (the model's native call format;
/// AIntern's own is [`ToolCallFormat::FencedJson`]), from the offered tools and the tool
/// choice. `None` when nothing constrains the reply.
pub(crate) fn tool_grammar(
    request: &LlmRequest,
    format: ToolCallFormat,
) -> Result<Option<ToolGrammar>, Error> {
    // With `none` nothing constrains the text: the agent runs nothing the model writes
    // then (a grammar forbidding the call's opening would have to check every token).
    if request.tools.is_empty() || request.tool_choice == ToolChoice::None {
        return Ok(None);
    }
    let tools: Vec<_> = match &request.tool_choice {
        ToolChoice::Tool(name) => {
            let chosen: Vec<_> = request.tools.iter().filter(|t| &t.id == name).collect();
            if chosen.is_empty() {
                return Err(Error::Template(format!(
                    "the tool choice names {name}, which is not offered"
                )));
            }
            chosen
        }
        _ => request.tools.iter().collect(),
    };
    let shape = shape(format);
    // Written out by hand so that the name comes before the arguments: the model names
    // the tool first, as the prompt shows it (serde_json would sort the keys).
    let alternatives: Vec<String> = tools
        .iter()
        .map(|t| {
            format!(
                r#"{{"type":"object","properties":{{"{name}":{{"const":{id}}},"{args}":{schema}}},"required":["{name}","{args}"],"additionalProperties":false}}"#,
                name = shape.name_key,
                args = shape.args_key,
                id = serde_json::Value::String(t.id.clone()),
                schema = t.input_schema
            )
        })
        .collect();
    let schema = if alternatives.len() == 1 {
        alternatives.concat()
    } else {
        format!(r#"{{"anyOf":[{}]}}"#, alternatives.join(","))
    };
    let json = llama_cpp_2::json_schema_to_grammar(&schema).map_err(|e| {
        Error::Template(format!(
            "cannot build a grammar from the tools' schemas: {e}"
        ))
    })?;
    // Rename the converter's root rule and wrap it in the format's markers.
    let renamed: String = json
        .lines()
        .map(|line| match line.strip_prefix("root ::=") {
            Some(rest) => format!("tool-call-json ::={rest}"),
            None => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut root = String::from("root ::= ");
    if !shape.open.is_empty() {
        root.push_str(&format!("\"{}\" ", shape.open));
    }
    root.push_str("tool-call-json");
    if !shape.close.is_empty() {
        root.push_str(&format!(" \"{}\"", shape.close));
    }
    let triggers = match request.tool_choice {
        ToolChoice::Auto => vec![shape.trigger],
        _ => Vec::new(),
    };
    Ok(Some(ToolGrammar {
        text: format!("{root}\n{renamed}\n"),
        triggers,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use core_models::{ChatMessage, ToolDefinition};

    fn tool(id: &str) -> ToolDefinition {
        ToolDefinition::new(id, id, format!("The {id} tool.")).with_schema(serde_json::json!({
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"]
        }))
    }

    fn request(choice: ToolChoice) -> LlmRequest {
        LlmRequest {
            tools: vec![tool("read_file"), tool("list_dir")],
            tool_choice: choice,
            ..LlmRequest::new(vec![ChatMessage::user("hello")])
        }
    }

    fn root(grammar: &ToolGrammar) -> &str {
        grammar.text.lines().next().unwrap()
    }

    #[test]
    fn no_tools_or_none_means_no_grammar() {
        let mut req = request(ToolChoice::None);
        assert_eq!(tool_grammar(&req, ToolCallFormat::Hermes).unwrap(), None);
        req.tool_choice = ToolChoice::Required;
        req.tools.clear();
        assert_eq!(
            tool_grammar(&req, ToolCallFormat::FencedJson).unwrap(),
            None
        );
    }

    #[test]
    fn required_in_the_fence_by_default() {
        let g = tool_grammar(&request(ToolChoice::Required), ToolCallFormat::FencedJson)
            .unwrap()
            .unwrap();
        assert!(!g.is_lazy());
        assert_eq!(
            root(&g),
            r#"root ::= "```tool_call\n" tool-call-json "\n```""#
        );
        assert!(g.text.contains("tool-call-json ::="));
        assert!(g.text.contains(r#""\"tool\"""#), "{}", g.text);
        assert!(g.text.contains(r#""\"parameters\"""#), "{}", g.text);
        assert!(g.text.contains("read_file") && g.text.contains("list_dir"));
        assert!(!g.text.lines().skip(1).any(|l| l.starts_with("root ::=")));
    }

    #[test]
    fn hermes_mistral_and_llama_in_their_own_syntax() {
        let req = request(ToolChoice::Required);
        let hermes = tool_grammar(&req, ToolCallFormat::Hermes).unwrap().unwrap();
        assert_eq!(
            root(&hermes),
            r#"root ::= "<tool_call>\n" tool-call-json "\n</tool_call>""#
        );
        assert!(hermes.text.contains(r#""\"name\"""#));
        assert!(hermes.text.contains(r#""\"arguments\"""#));
        assert!(!hermes.text.contains(r#""\"tool\"""#));

        let mistral = tool_grammar(&req, ToolCallFormat::Mistral)
            .unwrap()
            .unwrap();
        assert_eq!(
            root(&mistral),
            r#"root ::= "[TOOL_CALLS][" tool-call-json "]""#
        );
        assert!(mistral.text.contains(r#""\"arguments\"""#));

        let llama = tool_grammar(&req, ToolCallFormat::Llama).unwrap().unwrap();
        assert_eq!(root(&llama), "root ::= tool-call-json");
        assert!(llama.text.contains(r#""\"name\"""#));
        assert!(llama.text.contains(r#""\"parameters\"""#));
    }

    #[test]
    fn formats_without_a_grammar_fall_back_to_the_fence() {
        let req = request(ToolChoice::Required);
        let fence = tool_grammar(&req, ToolCallFormat::FencedJson).unwrap();
        for format in [
            ToolCallFormat::InlineJson,
            ToolCallFormat::QwenXml,
            ToolCallFormat::Reasoning,
        ] {
            assert_eq!(tool_grammar(&req, format).unwrap(), fence, "{format:?}");
        }
    }

    #[test]
    fn auto_is_lazy_and_triggered_by_the_native_opening() {
        let req = request(ToolChoice::Auto);
        for (format, trigger) in [
            (ToolCallFormat::FencedJson, "```tool_call"),
            (ToolCallFormat::Hermes, "<tool_call>"),
            (ToolCallFormat::Mistral, "[TOOL_CALLS]"),
            (ToolCallFormat::Llama, "{\"name\""),
            (ToolCallFormat::QwenXml, "```tool_call"),
        ] {
            let g = tool_grammar(&req, format).unwrap().unwrap();
            assert_eq!(g.triggers, [trigger], "{format:?}");
            // The grammar starts with the trigger, which the lazy grammar is fed.
            let opening = root(&g)
                .trim_start_matches("root ::= ")
                .trim_start_matches('"')
                .replace("\\n", "\n");
            if format != ToolCallFormat::Llama {
                assert!(opening.starts_with(trigger), "{format:?}: {opening}");
            }
        }
    }

    #[test]
    fn a_named_tool_allows_only_that_tool() {
        let g = tool_grammar(
            &request(ToolChoice::Tool("list_dir".into())),
            ToolCallFormat::Hermes,
        )
        .unwrap()
        .unwrap();
        assert!(g.text.contains("list_dir") && !g.text.contains("read_file"));
        assert!(!g.is_lazy());
        let missing = tool_grammar(
            &request(ToolChoice::Tool("nope".into())),
            ToolCallFormat::Hermes,
        );
        assert!(matches!(missing, Err(Error::Template(_))));
    }
}
