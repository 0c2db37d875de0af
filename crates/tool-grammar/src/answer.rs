//! The grammar of a reply whose answer is held to a JSON Schema
//! ([`ReplyConstraint::JsonSchema`](core_models::ReplyConstraint::JsonSchema)): reasoning
//! first where the model reasons, then either the answer — one JSON value the schema
//! accepts, after the opening the model's chat format gives a final answer — or, when
//! tools are offered under `auto`, calls in the model's own call language. The whole
//! reply is constrained (not lazily): an answer that does not match cannot be generated.
//!
//! The grammar narrows one thing the schema leaves open: an array without `maxItems`
//! holds at most [`MAX_ITEMS`] items (more when `minItems` asks for more). A small model
//! repeats an item until its reply is cut, and a cut answer is no JSON at all; closing
//! the array is an answer the schema accepts.

use super::gbnf::{literal, Gbnf, SPACE};
use super::{syntax, Error, GrammarTarget, SchemaConverter, ToolGrammar, MAX_CALLS};
use core_models::LlmRequest;
use serde_json::Value;
use tool_calls::ToolCallFormat;

/// The most items the grammar lets an array without `maxItems` hold.
pub(crate) const MAX_ITEMS: u64 = 16;

/// The grammar of a reply to `request` whose answer matches `schema`.
///
/// # Errors
/// [`Error::Schema`] when `schema` sets a count above [`super::MAX_COUNT`], or when it
/// (or an offered tool's) cannot be converted.
pub(super) fn answer_grammar(
    request: &LlmRequest,
    target: &GrammarTarget,
    schemas: &dyn SchemaConverter,
    schema: &Value,
) -> Result<ToolGrammar, Error> {
    super::check_counts(schema)
        .map_err(|e| Error::Schema(format!("the output schema cannot be held: {e}")))?;
    let mut g = Gbnf::new(schemas);
    let json = g.import_schema_of(&bounded(schema), "the output schema")?;
    let answer = format!("{}{SPACE} {json} {SPACE}", answer_opening(target.format));
    // Calls stay possible unless none may be made (a forced call never comes here).
    let body = if request.may_call() {
        let held = request.held_tools();
        let tools: Vec<_> = held.iter().collect();
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

/// `schema` with every array it describes bounded to [`MAX_ITEMS`] items where it sets no
/// bound: in `items`, `properties` and every other place a schema holds subschemas.
fn bounded(schema: &Value) -> Value {
    let mut schema = schema.clone();
    bound(&mut schema, 0);
    schema
}

fn bound(schema: &mut Value, depth: usize) {
    // Deeper than any schema written by hand: left as it is (the validator still checks).
    if depth > 64 {
        return;
    }
    let Value::Object(object) = schema else {
        return;
    };
    let is_array = object.get("type").is_some_and(|t| {
        t == "array"
            || t.as_array()
                .is_some_and(|ts| ts.iter().any(|t| t == "array"))
    }) || object.contains_key("items")
        || object.contains_key("prefixItems");
    super::counts::lower_maximums(object);
    if is_array && !object.contains_key("maxItems") {
        let min = object.get("minItems").and_then(Value::as_u64).unwrap_or(0);
        object.insert("maxItems".into(), MAX_ITEMS.max(min).into());
    }
    for (key, value) in object.iter_mut() {
        match key.as_str() {
            // One subschema.
            "items"
            | "additionalProperties"
            | "not"
            | "contains"
            | "if"
            | "then"
            | "else"
            | "propertyNames"
            | "unevaluatedItems"
            | "unevaluatedProperties" => bound(value, depth + 1),
            // Lists of subschemas.
            "prefixItems" | "anyOf" | "oneOf" | "allOf" => {
                if let Value::Array(list) = value {
                    list.iter_mut().for_each(|s| bound(s, depth + 1));
                }
            }
            // Maps of subschemas.
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => {
                if let Value::Object(map) = value {
                    map.values_mut().for_each(|s| bound(s, depth + 1));
                }
            }
            _ => {}
        }
    }
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
    use core_models::{ChatMessage, ReplyConstraint, ToolChoice, ToolDefinition};
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
    fn arrays_without_a_bound_hold_at_most_max_items() {
        let schema = json!({
            "type": "object",
            "properties": {
                "names": {"type": "array", "items": {"type": "integer"}},
                "many": {"type": "array", "items": {"type": "integer"}, "minItems": 20},
                "few": {"type": "array", "items": {"type": "integer"}, "maxItems": 2},
                "nested": {"$ref": "#/$defs/list"}
            },
            "$defs": {"list": {"items": {"type": "integer"}}}
        });
        let b = bounded(&schema);
        assert_eq!(b["properties"]["names"]["maxItems"], MAX_ITEMS);
        assert_eq!(b["properties"]["many"]["maxItems"], 20);
        assert_eq!(b["properties"]["few"]["maxItems"], 2);
        assert_eq!(b["$defs"]["list"]["maxItems"], MAX_ITEMS);
        let mut request = request(ToolChoice::None, false);
        request.constraint = Some(ReplyConstraint::JsonSchema(
            json!({"type": "array", "items": {"type": "integer"}}),
        ));
        let g = grammar(&request, &target(F::Hermes));
        let list = |n: usize| format!("[{}]", vec!["1"; n].join(", "));
        assert!(g.accepts(&list(16)));
        assert!(!g.accepts(&list(17)));
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

    #[test]
    fn an_absurd_count_is_refused_before_any_grammar_is_written() {
        let mut request = request(ToolChoice::None, false);
        request.constraint = Some(ReplyConstraint::JsonSchema(
            json!({"type": "array", "items": {"type": "integer"}, "minItems": 1_000_000_000_u64}),
        ));
        match tool_grammar(&request, &target(F::Hermes), &SubsetConverter) {
            Err(Error::Schema(message)) => assert!(
                message.contains("output schema") && message.contains("minItems is 1000000000"),
                "{message}"
            ),
            other => panic!("{other:?}"),
        }
    }

    use ToolCallFormat as F;
}
