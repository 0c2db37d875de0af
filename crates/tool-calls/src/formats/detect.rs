//! Knowing a model's call format from its chat template, as llama.cpp's chat-handler
//! selection does: the template's own markers and structure decide.

use crate::{ParserOptions, ToolCallFormat};

/// What a chat template says about the model's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateProfile {
    /// The model's own call format; [`ToolCallFormat::FencedJson`] when the template
    /// shows no call syntax (AIntern's own prompt teaches one).
    pub format: ToolCallFormat,
    /// The reasoning markers the model writes, when it reasons: (open, close).
    pub reasoning: Option<(&'static str, &'static str)>,
}

fn has(template: &str, needle: &str) -> bool {
    template.contains(needle)
}

/// The format and reasoning markers a chat template shows.
pub fn detect_template(template: &str) -> TemplateProfile {
    use ToolCallFormat as F;
    let t = template;
    let format = if has(t, "<|channel|>") {
        F::Harmony
    } else if has(t, "<seed:tool_call>") || has(t, "<seed:think>") {
        F::SeedOss
    } else if has(t, "<minimax:tool_call>") {
        F::MiniMaxM2
    } else if has(t, "<|tool_calls_section_begin|>") {
        F::KimiK2
    } else if has(t, "<arg_key>") {
        F::Glm
    } else if has(t, "tool▁calls▁begin") || has(t, "tool_calls_begin") {
        if has(t, "```json") {
            F::DeepSeekR1
        } else {
            F::DeepSeekV31
        }
    } else if has(t, "<|START_ACTION|>") {
        F::CommandR7b
    } else if has(t, "<TOOLCALL>") {
        F::Nemotron
    } else if has(t, "<|tool_call|>") {
        F::Granite
    } else if has(t, "<|tool_call_start|>") || has(t, "<|tool_list_start|>") {
        F::Lfm2
    } else if has(t, "<function=") && has(t, "<parameter=") {
        F::QwenXml
    } else if has(t, ">>>") && has(t, "all") && has(t, "functions") {
        F::FunctionaryV32
    } else if has(t, "<function=") {
        F::FunctionaryV31
    } else if has(t, "<tool_call>") {
        F::Hermes
    } else if has(t, "[TOOL_CALLS]") {
        F::Mistral
    } else if has(t, "<|tool_call>call:") || has(t, "<|tool_call>") {
        F::Gemma4
    } else if has(t, "functools[") {
        F::Phi4
    } else if has(t, "<|python_start|>") || has(t, "[func_name1(") {
        F::Pythonic
    } else if has(t, "<|start_header_id|>") && (has(t, "ipython") || has(t, "tools")) {
        F::Llama
    } else {
        F::FencedJson
    };
    let reasoning = if format == F::Harmony {
        Some(("<|channel|>analysis<|message|>", "<|end|>"))
    } else if has(t, "<seed:think>") {
        Some(("<seed:think>", "</seed:think>"))
    } else if has(t, "[THINK]") {
        Some(("[THINK]", "[/THINK]"))
    } else if has(t, "<|START_THINKING|>") {
        Some(("<|START_THINKING|>", "<|END_THINKING|>"))
    } else if has(t, "<|channel>thought") {
        Some(("<|channel>thought", "<channel|>"))
    } else if has(t, "<think>") || has(t, "</think>") {
        Some(("<think>", "</think>"))
    } else {
        None
    };
    TemplateProfile { format, reasoning }
}

/// Whether a rendered generation prompt leaves the reply inside a reasoning block (the
/// template opened `<think>` and did not close it).
pub fn prompt_opens_reasoning(prompt: &str, profile: &TemplateProfile) -> bool {
    let Some((open, close)) = profile.reasoning else {
        return false;
    };
    if profile.format == ToolCallFormat::Harmony {
        return prompt
            .trim_end()
            .ends_with("<|channel|>analysis<|message|>");
    }
    match (prompt.rfind(open), prompt.rfind(close)) {
        (Some(o), Some(c)) => o > c,
        (Some(_), None) => true,
        _ => false,
    }
}

impl TemplateProfile {
    /// What the parser should recognize for this model.
    pub fn parser_options(&self, starts_in_thinking: bool) -> ParserOptions {
        let mut formats = vec![self.format, ToolCallFormat::FencedJson];
        if self.format == ToolCallFormat::FencedJson {
            formats.push(ToolCallFormat::InlineJson);
        }
        if self.format == ToolCallFormat::Hermes {
            // Hermes models also put calls in ```json fences.
            formats.push(ToolCallFormat::InlineJson);
        }
        if self.format == ToolCallFormat::Pythonic {
            formats.push(ToolCallFormat::Llama);
        }
        // `<think>` is unambiguous, and many models of every format write it.
        formats.push(ToolCallFormat::Reasoning);
        let options = ParserOptions::only(formats);
        if starts_in_thinking {
            options.starting_in_thinking()
        } else {
            options
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_decide_the_format() {
        let check = |t: &str, f: ToolCallFormat| assert_eq!(detect_template(t).format, f, "{t}");
        check(
            "{{ '<tool_call>' }}{{ tool_call | tojson }}",
            ToolCallFormat::Hermes,
        );
        check(
            "<tool_call>\n<function={{ name }}>\n<parameter=",
            ToolCallFormat::QwenXml,
        );
        check("<tool_call>{{ name }}<arg_key>", ToolCallFormat::Glm);
        check(
            "<|start|>assistant<|channel|>final",
            ToolCallFormat::Harmony,
        );
        check("plain {{ messages }}", ToolCallFormat::FencedJson);
        let p = detect_template("<|im_start|>assistant\n<think>\n");
        assert!(prompt_opens_reasoning(
            "x<|im_start|>assistant\n<think>\n",
            &p
        ));
        assert!(!prompt_opens_reasoning("<think>\n\n</think>\n\n", &p));
    }
}
