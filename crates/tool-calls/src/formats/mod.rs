//! The registry of call formats: each format's name, aliases and models, and the
//! special-token sections it adds to the streaming parser.
//!
//! Adding a format: write its body parser (a module here, `fn(&str, &ToolCatalog) ->
//! Result<Found, String>`), add a [`ToolCallFormat`] variant with its [`FormatInfo`], and
//! register its markers in [`SECTIONS`]. The streaming machinery (holding back marker
//! prefixes, collecting a section, streaming equal to batch) is shared.

pub(crate) mod detect;
pub(crate) mod gemma;
pub(crate) mod pythonic;
pub(crate) mod special;
pub(crate) mod xml;

use super::calls::ToolCatalog;
use super::ToolCallFormat;
use core_models::ToolCallRequest;

/// What a section's body held.
#[derive(Debug, Default)]
pub(crate) struct Found {
    /// The calls, in order.
    pub calls: Vec<ToolCallRequest>,
    /// Visible text the body holds (Functionary's `all` section).
    pub text: String,
    /// Problems that did not stop the calls (a missing closing tag).
    pub warnings: Vec<String>,
}

/// The first place in `s` where one of `markers` starts, and which one. Scans only up to
/// that place (a `find` per marker would rescan the rest for every marker that is absent,
/// quadratic over a body's many parts). Every marker starts with an ASCII byte.
pub(crate) fn first_of<'m>(s: &str, markers: &[&'m str]) -> Option<(usize, &'m str)> {
    let bytes = s.as_bytes();
    let mut from = 0;
    while let Some(offset) = bytes[from..]
        .iter()
        .position(|b| markers.iter().any(|m| m.as_bytes().first() == Some(b)))
    {
        let at = from + offset;
        if let Some(m) = markers
            .iter()
            .find(|m| bytes[at..].starts_with(m.as_bytes()))
        {
            return Some((at, m));
        }
        from = at + 1;
    }
    None
}

/// Reads a section's body.
pub(crate) type BodyParser = fn(&str, &ToolCatalog) -> Result<Found, String>;

/// What a marker in visible text opens.
#[derive(Debug, Clone, Copy)]
pub(crate) enum SectionKind {
    /// Calls, read from the body when a closing marker (or the end of the output) comes.
    /// `json_aware`: closing markers inside JSON strings do not count.
    Calls { parse: BodyParser, json_aware: bool },
    /// Reasoning, streamed until a closing marker.
    Thinking,
    /// A marker without content of its own: removed from the text.
    Drop,
    /// A gpt-oss harmony message header, up to `<|message|>`.
    HarmonyHeader,
}

/// One marker a format adds to the visible-text state.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Section {
    pub format: ToolCallFormat,
    pub open: &'static str,
    /// Closing markers; none: the section lasts to the end of the output.
    pub close: &'static [&'static str],
    pub kind: SectionKind,
    /// Also recognized when the format is not known (`auto`): false for markers that
    /// ordinary prose could contain.
    pub in_auto: bool,
}

const fn calls(
    format: ToolCallFormat,
    open: &'static str,
    close: &'static [&'static str],
    parse: BodyParser,
    json_aware: bool,
) -> Section {
    Section {
        format,
        open,
        close,
        kind: SectionKind::Calls { parse, json_aware },
        in_auto: true,
    }
}

const fn marker(
    format: ToolCallFormat,
    open: &'static str,
    close: &'static [&'static str],
    kind: SectionKind,
    in_auto: bool,
) -> Section {
    Section {
        format,
        open,
        close,
        kind,
        in_auto,
    }
}

/// Closing markers of harmony message bodies.
pub(crate) const HARMONY_ENDS: &[&str] = &["<|end|>", "<|call|>", "<|return|>", "<|start|>"];
/// Every reasoning closer: used when the prompt opened reasoning.
pub(crate) const THINKING_ENDS: &[&str] = &[
    "</think>",
    "[/THINK]",
    "<|END_THINKING|>",
    "</seed:think>",
    "<channel|>",
];
const DS_ENDS: &[&str] = &[
    "<｜tool▁calls▁end｜>",
    "<｜tool_calls_end｜>",
    "<｜tool calls end｜>",
];

use ToolCallFormat as F;

/// Every section marker, by format. Markers are unique, and none is a prefix of another.
pub(crate) const SECTIONS: &[Section] = &[
    marker(
        F::Reasoning,
        "<think>",
        &["</think>"],
        SectionKind::Thinking,
        true,
    ),
    marker(
        F::Mistral,
        "[THINK]",
        &["[/THINK]"],
        SectionKind::Thinking,
        true,
    ),
    marker(F::Mistral, "[/TOOL_CALLS]", &[], SectionKind::Drop, true),
    marker(
        F::CommandR7b,
        "<|START_THINKING|>",
        &["<|END_THINKING|>"],
        SectionKind::Thinking,
        true,
    ),
    calls(
        F::CommandR7b,
        "<|START_ACTION|>",
        &["<|END_ACTION|>"],
        special::json_list,
        true,
    ),
    marker(
        F::CommandR7b,
        "<|START_RESPONSE|>",
        &[],
        SectionKind::Drop,
        true,
    ),
    marker(
        F::CommandR7b,
        "<|END_RESPONSE|>",
        &[],
        SectionKind::Drop,
        true,
    ),
    marker(
        F::SeedOss,
        "<seed:think>",
        &["</seed:think>"],
        SectionKind::Thinking,
        true,
    ),
    calls(
        F::SeedOss,
        "<seed:tool_call>",
        &["</seed:tool_call>"],
        xml::qwen,
        false,
    ),
    marker(
        F::Harmony,
        "<|channel|>",
        &["<|message|>"],
        SectionKind::HarmonyHeader,
        true,
    ),
    marker(
        F::Harmony,
        "<|start|>",
        &["<|message|>"],
        SectionKind::HarmonyHeader,
        true,
    ),
    marker(F::Harmony, "<|end|>", &[], SectionKind::Drop, true),
    marker(F::Harmony, "<|return|>", &[], SectionKind::Drop, true),
    marker(F::Harmony, "<|call|>", &[], SectionKind::Drop, true),
    calls(
        F::DeepSeekR1,
        "<｜tool▁calls▁begin｜>",
        DS_ENDS,
        special::deepseek,
        true,
    ),
    calls(
        F::DeepSeekR1,
        "<｜tool_calls_begin｜>",
        DS_ENDS,
        special::deepseek,
        true,
    ),
    calls(
        F::DeepSeekR1,
        "<｜tool calls begin｜>",
        DS_ENDS,
        special::deepseek,
        true,
    ),
    calls(
        F::DeepSeekR1,
        "<｜tool▁calls｜>",
        DS_ENDS,
        special::deepseek,
        true,
    ),
    calls(
        F::DeepSeekV31,
        "<｜tool▁calls▁begin｜>",
        DS_ENDS,
        special::deepseek,
        true,
    ),
    calls(
        F::KimiK2,
        "<|tool_calls_section_begin|>",
        &["<|tool_calls_section_end|>"],
        special::kimi,
        true,
    ),
    calls(
        F::MiniMaxM2,
        "<minimax:tool_call>",
        &["</minimax:tool_call>"],
        xml::minimax,
        false,
    ),
    calls(
        F::Nemotron,
        "<TOOLCALL>",
        &["</TOOLCALL>"],
        special::json_list,
        true,
    ),
    calls(F::Granite, "<|tool_call|>", &[], special::json_list, true),
    marker(F::Granite, "<response>", &[], SectionKind::Drop, false),
    marker(F::Granite, "</response>", &[], SectionKind::Drop, false),
    calls(
        F::Lfm2,
        "<|tool_call_start|>",
        &["<|tool_call_end|>"],
        special::json_or_pythonic,
        true,
    ),
    calls(
        F::Pythonic,
        "<|python_start|>",
        &["<|python_end|>"],
        special::json_or_pythonic,
        true,
    ),
    calls(
        F::Llama,
        "<|python_tag|>",
        &["<|eom_id|>", "<|eot_id|>"],
        special::python_tag,
        false,
    ),
    calls(
        F::FunctionaryV31,
        "<|python_tag|>",
        &["<|eom_id|>", "<|eot_id|>"],
        special::python_tag,
        false,
    ),
    calls(
        F::FunctionaryV31,
        "<function=",
        &["</function>"],
        special::function_tag,
        true,
    ),
    calls(
        F::QwenXml,
        "<function=",
        &["</function>"],
        special::function_tag,
        true,
    ),
    calls(
        F::Hermes,
        "<function=",
        &["</function>"],
        special::function_tag,
        true,
    ),
    calls(
        F::Hermes,
        "<function name=",
        &["</function>"],
        special::function_named,
        true,
    ),
    calls(F::Phi4, "functools[", &[], special::functools, true),
    calls(
        F::Gemma4,
        "<|tool_call>",
        &["<tool_call|>"],
        gemma::calls,
        false,
    ),
    marker(
        F::Gemma4,
        "<|channel>thought",
        &["<channel|>"],
        SectionKind::Thinking,
        true,
    ),
    Section {
        in_auto: false,
        ..calls(
            F::FunctionaryV32,
            ">>>",
            &[">>>"],
            special::functionary_section,
            false,
        )
    },
];

/// A format's names and the models that write it.
#[derive(Debug, Clone, Copy)]
pub struct FormatInfo {
    /// The format.
    pub format: ToolCallFormat,
    /// Its name for `--format`.
    pub name: &'static str,
    /// Other accepted names (peers' names for it); matched ignoring case and punctuation.
    pub aliases: &'static [&'static str],
    /// The models that write it.
    pub models: &'static str,
    /// What it looks like.
    pub looks_like: &'static str,
}

const fn info(
    format: ToolCallFormat,
    name: &'static str,
    aliases: &'static [&'static str],
    models: &'static str,
    looks_like: &'static str,
) -> FormatInfo {
    FormatInfo {
        format,
        name,
        aliases,
        models,
        looks_like,
    }
}

/// Every format, in the order `aintern parse --list-formats` prints them.
pub const FORMATS: &[FormatInfo] = &[
    info(F::FencedJson, "fenced", &["tool_call", "aintern", "fence"], "any model, with AIntern's own prompt", "```tool_call {\"tool\": ID, \"parameters\": {…}} ```"),
    info(F::InlineJson, "inline-json", &["json"], "any model (seed 001's alternative)", "{\"tool\": ID, \"parameters\": {…}} in prose"),
    info(F::Hermes, "hermes", &["hermes2pro", "hermes 2 pro", "qwen", "qwen25", "qwen2.5", "qwen3", "granite4", "granite-4.0"], "Hermes 2 Pro/3, Qwen 2.5, Qwen 3, QwQ, Granite 4", "<tool_call>{\"name\": …, \"arguments\": {…}}</tool_call>"),
    info(F::QwenXml, "qwen3-coder", &["qwen-xml", "qwen3coder", "qwen3 coder xml", "qwen3_xml"], "Qwen3-Coder", "<tool_call><function=NAME><parameter=K>V</parameter></function></tool_call>"),
    info(F::Glm, "glm", &["glm45", "glm-4.5", "glm-4.6", "glm-4.7", "glm 4.5", "glm47"], "GLM-4.5, GLM-4.6, GLM-4.7", "<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value></tool_call>"),
    info(F::Llama, "llama3", &["llama", "llama3json", "llama-3.x", "llama 3.x", "llama3.1", "llama 3.x with builtin tools"], "Llama 3.1, 3.2, 3.3", "{\"name\": …, \"parameters\": {…}}, <|python_tag|>…, NAME.call(…)"),
    info(F::Pythonic, "pythonic", &["llama4", "llama4pythonic", "llama-4", "llama3.2 pythonic"], "Llama 3.2 / Llama 4 (pythonic)", "[get_weather(city=\"Paris\")]"),
    info(F::Lfm2, "lfm2", &["lfm2 with json tools", "liquid"], "LFM2", "<|tool_call_start|>[f(a=1)]<|tool_call_end|>"),
    info(F::Mistral, "mistral", &["mistral nemo", "mistralnemo", "magistral", "mistral small"], "Mistral Nemo/Small, Magistral ([THINK])", "[TOOL_CALLS][{\"name\": …, \"arguments\": …}] or [TOOL_CALLS]NAME[ARGS]{…}"),
    info(F::Harmony, "harmony", &["gpt-oss", "gptoss", "openai"], "gpt-oss-20b, gpt-oss-120b", "<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{…}<|call|>"),
    info(F::DeepSeekR1, "deepseek-r1", &["deepseek", "deepseekv3", "deepseek_v3", "deepseek-v3", "deepseek r1"], "DeepSeek R1, V3 (and R1 distills)", "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME ```json {…} ```<｜tool▁call▁end｜>…"),
    info(F::DeepSeekV31, "deepseek-v3.1", &["deepseekv31", "deepseek_v31", "deepseek v3.1", "deepseek-v3.2"], "DeepSeek V3.1", "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{…}<｜tool▁call▁end｜>…"),
    info(F::KimiK2, "kimi-k2", &["kimi", "kimik2", "kimi_k2"], "Kimi-K2", "<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>{…}<|tool_call_end|>…"),
    info(F::MiniMaxM2, "minimax-m2", &["minimax", "minimaxm2", "minimax_m2"], "MiniMax-M2", "<minimax:tool_call><invoke name=\"NAME\"><parameter name=\"K\">V</parameter></invoke></minimax:tool_call>"),
    info(F::CommandR7b, "command-r7b", &["command-r", "commandr7b", "command r7b", "command-a", "cohere"], "Command-R7B, Command-A", "<|START_ACTION|>[{\"tool_name\": …, \"parameters\": {…}}]<|END_ACTION|>"),
    info(F::Granite, "granite", &["granite3", "granite-3.3"], "Granite 3.x", "<|tool_call|>[{\"name\": …, \"arguments\": {…}}]"),
    info(F::Nemotron, "nemotron", &["nemotron v2", "nemotronv2", "nemotron-nano"], "Nemotron Nano v2", "<TOOLCALL>[{\"name\": …, \"arguments\": {…}}]</TOOLCALL>"),
    info(F::SeedOss, "seed-oss", &["seed", "seedoss", "seed_oss"], "Seed-OSS", "<seed:tool_call><function=NAME><parameter=K>V</parameter></function></seed:tool_call>"),
    info(F::FunctionaryV31, "functionary-v3.1", &["functionary v3.1 llama 3.1", "functionaryv31"], "Functionary v3.1 (Llama 3.1)", "<function=NAME>{…}</function>"),
    info(F::FunctionaryV32, "functionary-v3.2", &["functionary", "functionaryv32", "functionary v3.2"], "Functionary v3.2", ">>>NAME\n{…}"),
    info(F::Phi4, "phi4", &["phi-4", "phi4mini", "phi-4-mini", "phi4_mini_json", "firefunction", "firefunction-v2"], "Phi-4-mini, FireFunction v2", "functools[{\"name\": …, \"arguments\": {…}}]"),
    info(F::Gemma4, "gemma4", &["gemma", "gemma-4", "gemma 4"], "Gemma 4", "<|tool_call>call:NAME{key:<|\"|>text<|\"|>,n:5}<tool_call|>"),
    info(F::Generic, "generic", &["llama.cpp generic", "content-only"], "any model under llama.cpp's generic JSON grammar", "{\"tool_calls\": [{\"name\": …, \"arguments\": {…}}]} or {\"response\": …}"),
    info(F::Reasoning, "think", &["reasoning", "deepseek-r1-distill", "qwq"], "reasoning models (<think>)", "<think>…</think>"),
];

fn squash(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// The format called `name` (its name or an alias, ignoring case and punctuation).
pub fn format_by_name(name: &str) -> Option<ToolCallFormat> {
    let wanted = squash(name);
    FORMATS
        .iter()
        .find(|f| squash(f.name) == wanted)
        .or_else(|| {
            FORMATS
                .iter()
                .find(|f| f.aliases.iter().any(|a| squash(a) == wanted))
        })
        .map(|f| f.format)
}

/// The registry entry of `format`.
pub fn format_info(format: ToolCallFormat) -> Option<&'static FormatInfo> {
    FORMATS.iter().find(|f| f.format == format)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_unique_and_none_is_a_prefix_of_another() {
        let mut opens: Vec<&str> = SECTIONS.iter().map(|s| s.open).collect();
        opens.extend(["```", "<tool_call>", "[TOOL_CALLS]", "{"]);
        opens.sort();
        opens.dedup();
        for a in &opens {
            assert!(a.is_ascii() || a.chars().next().is_some_and(|c| c.is_ascii()));
            for b in &opens {
                assert!(a == b || !b.starts_with(a), "{a} is a prefix of {b}");
            }
        }
    }

    #[test]
    fn every_format_has_one_entry_and_names_resolve() {
        for f in ToolCallFormat::ALL {
            assert_eq!(FORMATS.iter().filter(|i| i.format == f).count(), 1, "{f:?}");
        }
        for i in FORMATS {
            assert_eq!(format_by_name(i.name), Some(i.format));
            for a in i.aliases {
                assert_eq!(format_by_name(a), Some(i.format), "{a}");
            }
        }
        assert_eq!(format_by_name("GPT_OSS"), Some(ToolCallFormat::Harmony));
        assert_eq!(format_by_name("Hermes 2 Pro"), Some(ToolCallFormat::Hermes));
        assert_eq!(format_by_name("nonsense"), None);
    }
}
