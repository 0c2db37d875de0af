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
    let mut signed: Vec<_> = ToolCallFormat::ALL
        .into_iter()
        .filter_map(|f| f.spec().template.as_ref().map(|sig| (sig, f)))
        .collect();
    signed.sort_by_key(|(sig, _)| sig.rank);
    let format = signed
        .into_iter()
        .find(|(sig, _)| sig.matches(t))
        .map_or(F::FencedJson, |(_, f)| f);
    let reasoning = if format == F::Harmony {
        Some(("<|channel|>analysis<|message|>", "<|end|>"))
    } else if has(t, "<seed:think>") {
        Some(("<seed:think>", "</seed:think>"))
    } else if has(t, "[THINK]") {
        Some(("[THINK]", "[/THINK]"))
    } else if has(t, "<|START_THINKING|>") {
        Some(("<|START_THINKING|>", "<|END_THINKING|>"))
    } else if has(t, "<|inner_prefix|>") {
        Some(("<|inner_prefix|>", "<|inner_suffix|>"))
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
        // What the format's models also write (Hermes models put calls in ```json
        // fences; pythonic models also write Llama's JSON).
        formats.extend(self.format.spec().also);
        // `<think>` is unambiguous, and many models of every format write it.
        formats.push(ToolCallFormat::Reasoning);
        let options = ParserOptions::only(formats).with_native(self.format);
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
        check(
            "{{ '<｜DSML｜function_calls>' }}<｜tool▁calls▁begin｜>",
            ToolCallFormat::DeepSeekV32,
        );
        check(
            "<|inner_prefix|>{{ r }}<|inner_suffix|><|tools_prefix|>{{ calls }}<|tools_suffix|>",
            ToolCallFormat::Apertus,
        );
        let apertus = detect_template("<|assistant_start|><|inner_prefix|>");
        assert_eq!(
            apertus.reasoning,
            Some(("<|inner_prefix|>", "<|inner_suffix|>"))
        );
        let p = detect_template("<|im_start|>assistant\n<think>\n");
        assert!(prompt_opens_reasoning(
            "x<|im_start|>assistant\n<think>\n",
            &p
        ));
        assert!(!prompt_opens_reasoning("<think>\n\n</think>\n\n", &p));
    }
}
