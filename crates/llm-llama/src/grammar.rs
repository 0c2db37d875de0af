//! Tool-call grammars (crate `tool-grammar`) with llama.cpp's own JSON-schema converter,
//! which this crate links.

pub(crate) use tool_grammar::{GrammarTarget, ReasoningBudget, ToolGrammar};

use crate::Error;
use core_models::LlmRequest;

/// llama.cpp's converter (`json_schema_to_grammar`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LlamaConverter;

impl tool_grammar::SchemaConverter for LlamaConverter {
    fn convert(&self, schema: &serde_json::Value) -> Result<String, String> {
        llama_cpp_2::json_schema_to_grammar(&schema.to_string()).map_err(|e| e.to_string())
    }
}

/// The grammar for a reply to `request` in `target`'s call language, argument JSON as
/// llama.cpp's converter writes it.
pub(crate) fn tool_grammar(
    request: &LlmRequest,
    target: &GrammarTarget,
) -> Result<Option<ToolGrammar>, Error> {
    tool_grammar::tool_grammar(request, target, &LlamaConverter)
        .map_err(|e| Error::Grammar(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use core_models::{ChatMessage, ToolChoice, ToolDefinition};
    use llama_cpp_2::model::params::LlamaModelParams;
    use llama_cpp_2::model::LlamaModel;
    use llama_cpp_2::sampling::LlamaSampler;
    use serde_json::json;
    use tool_calls::ToolCallFormat;
    use tool_grammar::SchemaConverter as _;

    fn tools() -> Vec<Vec<ToolDefinition>> {
        let plain = json!({
            "type": "object",
            "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["path"]
        });
        let typed = json!({
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "mode": {"enum": ["fast", "exact"]},
                "case": {"type": "boolean"},
                "globs": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["query", "case"]
        });
        vec![
            vec![
                ToolDefinition::new("read_file", "read_file", "Read.").with_schema(plain.clone()),
                ToolDefinition::new("list_dir", "list_dir", "List.").with_schema(plain),
            ],
            vec![ToolDefinition::new("list_dir", "search", "Search.").with_schema(typed)],
        ]
    }

    /// llama.cpp's own grammar parser takes every grammar (each format, each choice, with
    /// and without reasoning), with either converter's JSON. Needs the test model's
    /// vocabulary: skipped, with a notice, when the model is absent (`scripts/test`
    /// fetches it).
    #[test]
    fn llama_cpp_takes_every_grammar() {
        let path = std::env::var_os("AINTERN_TEST_MODEL")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(crate::default_model_path);
        if !path.is_file() {
            eprintln!(
                "NOTICE: skipped: {} is absent (run scripts/fetch-model)",
                path.display()
            );
            return;
        }
        let backend = crate::worker::backend().unwrap();
        let model =
            LlamaModel::load_from_file(backend, &path, &LlamaModelParams::default()).unwrap();
        let converters: [&dyn tool_grammar::SchemaConverter; 2] =
            [&LlamaConverter, &tool_grammar::SubsetConverter];
        let mut checked = 0;
        for format in ToolCallFormat::ALL {
            for name_then_args in [false, true] {
                for reasoning in [None, Some(("<think>", "</think>"))] {
                    for starts_in_thinking in [false, true] {
                        let target = GrammarTarget {
                            format,
                            reasoning,
                            starts_in_thinking,
                            name_then_args,
                        };
                        for choice in [
                            ToolChoice::Required,
                            ToolChoice::Auto,
                            ToolChoice::Tool("list_dir".into()),
                        ] {
                            for tools in tools() {
                                let request = (LlmRequest::new(vec![ChatMessage::user("hello")]))
                                    .with_tools(tools)
                                    .with_tool_choice(choice.clone());
                                for converter in converters {
                                    let Ok(Some(g)) =
                                        tool_grammar::tool_grammar(&request, &target, converter)
                                    else {
                                        continue;
                                    };
                                    let sampler = if g.is_lazy() {
                                        LlamaSampler::grammar_lazy_patterns(
                                            &model,
                                            &g.text,
                                            "root",
                                            &g.triggers,
                                            &[],
                                        )
                                    } else {
                                        LlamaSampler::grammar(&model, &g.text, "root")
                                    };
                                    assert!(sampler.is_ok(), "{format:?} {choice:?}:\n{}", g.text);
                                    checked += 1;
                                }
                            }
                        }
                    }
                }
            }
        }
        assert!(checked > 800, "{checked}");
        // The converters agree on the rules of plain tool schemas.
        let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]});
        let ours = tool_grammar::SubsetConverter.convert(&schema).unwrap();
        assert!(
            LlamaSampler::grammar(&model, &ours, "root").is_ok(),
            "{ours}"
        );
    }
}
