//! The grammar of a reply whose answer is held to a JSON Schema
//! ([`ReplyConstraint::JsonSchema`](core_models::ReplyConstraint::JsonSchema)): reasoning
//! first where the model reasons, then either the answer — one JSON value the schema
//! accepts, after the opening the model's chat format gives a final answer — or, when
//! tools are offered under `auto`, calls in the model's own call language. The whole
//! reply is constrained (not lazily): an answer that does not match cannot be generated.

use super::gbnf::{literal, Gbnf, SPACE};
use super::{syntax, Error, GrammarTarget, SchemaConverter, ToolGrammar, MAX_CALLS};
use core_models::{LlmRequest, ToolChoice};
use serde_json::Value;
use tool_calls::ToolCallFormat;

/// The grammar of a reply to `request` whose answer matches `schema`.
///
/// # Errors
/// [`Error::Schema`] when `schema` (or an offered tool's) cannot be converted.
pub(super) fn answer_grammar(
    request: &LlmRequest,
    target: &GrammarTarget,
    schemas: &dyn SchemaConverter,
    schema: &Value,
) -> Result<ToolGrammar, Error> {
    let mut g = Gbnf::new(schemas);
    let json = g.import_schema(schema).map_err(|e| match e {
        Error::Schema(message) => {
            Error::Schema(message.replace("a tool's schema", "the output schema"))
        }
        other => other,
    })?;
    let answer = format!("{}{SPACE} {json} {SPACE}", answer_opening(target.format));
    let calls_allowed = request.tool_choice == ToolChoice::Auto && !request.tools.is_empty();
    let body = if calls_allowed {
        let tools: Vec<_> = request.tools.iter().collect();
        let calls = syntax::calls(&mut g, target, &tools, MAX_CALLS)?;
        format!("( {} | {answer} )", calls.expr)
    } else {
        answer
    };
    let prefix = target.reasoning_prefix(&mut g);
    Ok(ToolGrammar {
        text: g.finish(&format!("{prefix}{body}")),
        triggers: Vec::new(),
    })
}

/// What a model writes before a final answer in its chat format: a harmony reply's final
/// channel, Command-R's response section; nothing for the others.
fn answer_opening(format: ToolCallFormat) -> String {
    match format {
        ToolCallFormat::Harmony => format!("{} ", literal("<|channel|>final<|message|>")),
        ToolCallFormat::CommandR7b => format!("{} ", literal("<|START_RESPONSE|>")),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::matcher::Grammar;
    use super::super::{tool_grammar, ReasoningBudget, SubsetConverter};
    use super::*;
    use core_models::{ChatMessage, ReplyConstraint, ToolDefinition};
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "maxLength": 8},
                "count": {"type": "integer"},
                "kind": {"enum": ["file", "folder"]}
            },
            "required": ["name", "count", "kind"],
            "additionalProperties": false
        })
    }

    fn request(choice: ToolChoice, tools: bool) -> LlmRequest {
        let offered = if tools {
            vec![
                ToolDefinition::new("read_file", "read_file", "Read.").with_schema(json!({
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"]
                })),
            ]
        } else {
            Vec::new()
        };
        LlmRequest::new(vec![ChatMessage::user("hello")])
            .with_tools(offered)
            .with_tool_choice(choice)
            .with_constraint(Some(ReplyConstraint::JsonSchema(schema())))
    }

    fn target(format: ToolCallFormat) -> GrammarTarget {
        GrammarTarget {
            format,
            ..GrammarTarget::fence()
        }
    }

    fn grammar(request: &LlmRequest, target: &GrammarTarget) -> Grammar {
        let g = tool_grammar(request, target, &SubsetConverter)
            .unwrap()
            .unwrap();
        assert!(!g.is_lazy(), "the whole reply is held");
        Grammar::parse(&g.text)
    }

    const GOOD: &str = r#"{"name": "notes", "count": 3, "kind": "file"}"#;

    #[test]
    fn only_a_valid_answer_when_no_call_may_be_made() {
        let g = grammar(&request(ToolChoice::None, true), &target(F::Hermes));
        assert!(g.accepts(GOOD));
        assert!(g.accepts(&format!("\n{GOOD}\n")));
        for bad in [
            r#"{"name": "notes", "count": 3}"#,
            r#"{"name": "notes", "count": 3, "kind": "link"}"#,
            r#"{"name": "far too long", "count": 3, "kind": "file"}"#,
            r#"{"name": "notes", "count": 3.5, "kind": "file"}"#,
            r#"{"name": "notes", "count": 3, "kind": "file", "extra": 1}"#,
            "The answer is 3.",
            "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}</tool_call>",
        ] {
            assert!(!g.accepts(bad), "accepted {bad}");
        }
    }

    #[test]
    fn calls_or_the_answer_under_auto() {
        let g = grammar(&request(ToolChoice::Auto, true), &target(F::Hermes));
        assert!(g.accepts(GOOD));
        assert!(g.accepts(
            "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n</tool_call>"
        ));
        assert!(!g.accepts("Let me look. <tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}</tool_call>"));
        assert!(!g.accepts(r#"{"name": 3}"#));
        // Without tools, only the answer.
        let g = grammar(&request(ToolChoice::Auto, false), &target(F::Hermes));
        assert!(g.accepts(GOOD));
        assert!(!g.accepts(
            "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n</tool_call>"
        ));
    }

    #[test]
    fn a_forced_call_is_a_call() {
        let g = grammar(&request(ToolChoice::Required, true), &target(F::Hermes));
        assert!(!g.accepts(GOOD));
        assert!(g.accepts(
            "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n</tool_call>"
        ));
    }

    #[test]
    fn reasoning_first_and_the_formats_answer_opening() {
        let thinking = GrammarTarget {
            reasoning: Some(("<think>", "</think>")),
            ..target(F::Hermes)
        };
        let g = grammar(&request(ToolChoice::None, false), &thinking);
        assert!(g.accepts(&format!("<think>a file</think>\n{GOOD}")));
        assert!(g.accepts(GOOD));
        let request = request(ToolChoice::None, false);
        assert!(
            ReasoningBudget::new(&request, &thinking).is_some(),
            "reasoning before a held answer is bounded"
        );
        let g = grammar(&request, &target(F::CommandR7b));
        assert!(g.accepts(&format!("<|START_RESPONSE|>{GOOD}")));
        assert!(!g.accepts(GOOD));
    }

    #[test]
    fn an_unusable_schema_is_an_error_naming_it() {
        let mut request = request(ToolChoice::None, false);
        request.constraint = Some(ReplyConstraint::JsonSchema(json!({"type": "no such type"})));
        match tool_grammar(&request, &target(F::Hermes), &SubsetConverter) {
            Err(Error::Schema(message)) => assert!(message.contains("output schema"), "{message}"),
            other => panic!("{other:?}"),
        }
    }

    use ToolCallFormat as F;
}
