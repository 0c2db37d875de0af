//! Every call format, registered once: its names, the section markers it adds to the
//! streaming parser, how its chat template shows it, and what else its models write.
//!
//! To add a format: write its body parser (a module beside this one), give it a
//! [`FormatSpec`] here, and add one line to the `formats!` list at the end. The enum
//! variant, [`ToolCallFormat::ALL`], [`FORMATS`](crate::FORMATS) and the parser's
//! markers follow from that line; the compiler then points at the one other place that
//! must know the format: the grammar's exhaustive match in `tool-grammar`.

use super::specs::{APERTUS, DEEP_SEEK_R1, DEEP_SEEK_V31, DEEP_SEEK_V32, KIMI_K2, MINI_MAX_M2};
use super::{
    calls, gemma, marker, special, xml, FormatInfo, FormatSpec, Section, SectionKind, Signature,
};

/// Where a `<|python_tag|>` body ends: the end of the message, or the next tag (one call
/// each).
const PYTHON_TAG_ENDS: &[&str] = &["<|eom_id|>", "<|eot_id|>", "<|python_tag|>"];

/// Writes [`ToolCallFormat`] and its registry from one list of `Variant => SPEC`.
macro_rules! formats {
    ($($(#[$doc:meta])* $variant:ident => $spec:ident,)*) => {
        /// A tool-call format the parser can recognize. [`FORMATS`](crate::FORMATS) names
        /// each one and the models that write it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ToolCallFormat {
            $($(#[$doc])* $variant,)*
        }

        impl ToolCallFormat {
            /// Every format, in registration order.
            pub const ALL: [ToolCallFormat; [$(stringify!($variant)),*].len()] =
                [$(ToolCallFormat::$variant),*];

            /// Its registry entry.
            pub(crate) fn spec(self) -> &'static FormatSpec {
                match self {
                    $(ToolCallFormat::$variant => &$spec,)*
                }
            }
        }

        /// Every format's names, in the order `aintern parse --list-formats` prints them.
        pub const FORMATS: &[FormatInfo] = &[$($spec.info),*];
    };
}

const FENCED_JSON: FormatSpec = FormatSpec {
    info: FormatInfo::new(
        F::FencedJson,
        "fenced",
        &["tool_call", "aintern", "fence"],
        "any model, with AIntern's own prompt",
        "```tool_call {\"tool\": ID, \"parameters\": {…}} ```",
    ),
    sections: &[],
    template: None,
    also: &[F::InlineJson],
    recovers: true,
    wrappers: &[],
};

const INLINE_JSON: FormatSpec = FormatSpec {
    info: FormatInfo::new(
        F::InlineJson,
        "inline-json",
        &["json"],
        "any model (seed 001's alternative)",
        "{\"tool\": ID, \"parameters\": {…}} in prose",
    ),
    sections: &[],
    template: None,
    also: &[],
    recovers: true,
    wrappers: &[],
};

const HERMES: FormatSpec = FormatSpec {
    info: FormatInfo::new(
        F::Hermes,
        "hermes",
        &[
            "hermes2pro",
            "hermes 2 pro",
            "qwen",
            "qwen25",
            "qwen2.5",
            "qwen3",
            "granite4",
            "granite-4.0",
        ],
        "Hermes 2 Pro/3, Qwen 2.5, Qwen 3, QwQ, Granite 4",
        "<tool_call>{\"name\": …, \"arguments\": {…}}</tool_call> (or <tools>…</tools>)",
    ),
    sections: &[
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
        // Some Hermes-style models wrap the JSON call in `<tools>` instead.
        Section {
            in_auto: false,
            ..calls(
                F::Hermes,
                "<tools>",
                &["</tools>"],
                special::json_list,
                true,
            )
        },
        marker(F::Hermes, "</tool_call>", &[], SectionKind::Drop, true),
    ],
    template: Some(Signature {
        rank: 15,
        any_of: &[&["<tool_call>"]],
    }),
    also: &[F::InlineJson],
    recovers: true,
    // Tags llama.cpp's Hermes parser reads around a JSON call (its test suite's cases).
    wrappers: &[
        ("<tool>", "</tool>"),
        ("<function_call>", "</function_call>"),
        ("<response>", "</response>"),
        ("<json>", "</json>"),
        ("<JSON>", "</JSON>"),
        ("<xml>", "</xml>"),
    ],
};

const QWEN_XML: FormatSpec = FormatSpec {
    info: FormatInfo::new(
        F::QwenXml,
        "qwen3-coder",
        &["qwen-xml", "qwen3coder", "qwen3 coder xml", "qwen3_xml"],
        "Qwen3-Coder",
        "<tool_call><function=NAME><parameter=K>V</parameter></function></tool_call>",
    ),
    sections: &[
        calls(
            F::QwenXml,
            "<function=",
            &["</function>"],
            special::function_tag,
            true,
        ),
        // Without its opening `<tool_call>`, the call's closing one is left over.
        marker(F::QwenXml, "</tool_call>", &[], SectionKind::Drop, true),
    ],
    template: Some(Signature {
        rank: 12,
        any_of: &[&["<function=", "<parameter="]],
    }),
    also: &[],
    recovers: false,
    wrappers: &[],
};

const GLM: FormatSpec = FormatSpec {
    info: FormatInfo::new(
        F::Glm,
        "glm",
        &["glm45", "glm-4.5", "glm-4.6", "glm-4.7", "glm 4.5", "glm47"],
        "GLM-4.5, GLM-4.6, GLM-4.7",
        "<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value></tool_call>",
    ),
    sections: &[],
    template: Some(Signature {
        rank: 5,
        any_of: &[&["<arg_key>"]],
    }),
    also: &[],
    recovers: false,
    wrappers: &[],
};

const LLAMA: FormatSpec = FormatSpec {
    info: FormatInfo::new(
        F::Llama,
        "llama3",
        &[
            "llama",
            "llama3json",
            "llama-3.x",
            "llama 3.x",
            "llama3.1",
            "llama 3.x with builtin tools",
        ],
        "Llama 3.1, 3.2, 3.3",
        "{\"name\": …, \"parameters\": {…}}, <|python_tag|>…, NAME.call(…)",
    ),
    sections: &[calls(
        F::Llama,
        "<|python_tag|>",
        PYTHON_TAG_ENDS,
        special::python_tag,
        false,
    )],
    template: Some(Signature {
        rank: 20,
        any_of: &[
            &["<|start_header_id|>", "ipython"],
            &["<|start_header_id|>", "tools"],
        ],
    }),
    also: &[],
    recovers: true,
    wrappers: &[],
};

const PYTHONIC: FormatSpec = FormatSpec {
    info: FormatInfo::new(
        F::Pythonic,
        "pythonic",
        &["llama4", "llama4pythonic", "llama-4", "llama3.2 pythonic"],
        "Llama 3.2 / Llama 4 (pythonic)",
        "[get_weather(city=\"Paris\")]",
    ),
    sections: &[calls(
        F::Pythonic,
        "<|python_start|>",
        &["<|python_end|>"],
        special::json_or_pythonic,
        true,
    )],
    template: Some(Signature {
        rank: 19,
        any_of: &[&["<|python_start|>"], &["[func_name1("]],
    }),
    also: &[F::Llama],
    recovers: false,
    wrappers: &[],
};

const LFM2: FormatSpec = FormatSpec {
    info: FormatInfo::new(
        F::Lfm2,
        "lfm2",
        &["lfm2 with json tools", "liquid"],
        "LFM2",
        "<|tool_call_start|>[f(a=1)]<|tool_call_end|>",
    ),
    sections: &[calls(
        F::Lfm2,
        "<|tool_call_start|>",
        &["<|tool_call_end|>"],
        special::json_or_pythonic,
        true,
    )],
    template: Some(Signature {
        rank: 11,
        any_of: &[&["<|tool_call_start|>"], &["<|tool_list_start|>"]],
    }),
    also: &[],
    recovers: false,
    wrappers: &[],
};

const MISTRAL: FormatSpec = FormatSpec {
    info: FormatInfo::new(
        F::Mistral,
        "mistral",
        &["mistral nemo", "mistralnemo", "magistral", "mistral small"],
        "Mistral Nemo/Small, Magistral ([THINK])",
        "[TOOL_CALLS][{\"name\": …, \"arguments\": …}] or [TOOL_CALLS]NAME[ARGS]{…}",
    ),
    sections: &[
        marker(
            F::Mistral,
            "[THINK]",
            &["[/THINK]"],
            SectionKind::Thinking,
            true,
        ),
        marker(F::Mistral, "[/TOOL_CALLS]", &[], SectionKind::Drop, true),
    ],
    template: Some(Signature {
        rank: 16,
        any_of: &[&["[TOOL_CALLS]"]],
    }),
    also: &[],
    recovers: true,
    wrappers: &[],
};

const HARMONY: FormatSpec = FormatSpec {
    info: FormatInfo::new(
        F::Harmony,
        "harmony",
        &["gpt-oss", "gptoss", "openai"],
        "gpt-oss-20b, gpt-oss-120b",
        "<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{…}<|call|>",
    ),
    sections: &[
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
    ],
    template: Some(Signature {
        rank: 1,
        any_of: &[&["<|channel|>"]],
    }),
    also: &[],
    recovers: false,
    wrappers: &[],
};

const COMMAND_R7B: FormatSpec = FormatSpec {
    info: FormatInfo::new(
        F::CommandR7b,
        "command-r7b",
        &[
            "command-r",
            "commandr7b",
            "command r7b",
            "command-a",
            "cohere",
        ],
        "Command-R7B, Command-A",
        "<|START_ACTION|>[{\"tool_name\": …, \"parameters\": {…}}]<|END_ACTION|>, text in <|START_TEXT|>…<|END_TEXT|>",
    ),
    sections: &[
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
        // Command-A wraps its visible text in `<|START_TEXT|>…<|END_TEXT|>`.
        marker(
            F::CommandR7b,
            "<|START_TEXT|>",
            &[],
            SectionKind::Drop,
            true,
        ),
        marker(F::CommandR7b, "<|END_TEXT|>", &[], SectionKind::Drop, true),
    ],
    template: Some(Signature {
        rank: 8,
        any_of: &[&["<|START_ACTION|>"]],
    }),
    also: &[],
    recovers: false,
    wrappers: &[],
};

const GRANITE: FormatSpec = FormatSpec {
    info: FormatInfo::new(
        F::Granite,
        "granite",
        &["granite3", "granite-3.3"],
        "Granite 3.x",
        "<|tool_call|>[{\"name\": …, \"arguments\": {…}}], text in <response>…</response>",
    ),
    sections: &[
        calls(F::Granite, "<|tool_call|>", &[], special::json_list, true),
        marker(F::Granite, "<response>", &[], SectionKind::Drop, false),
        marker(F::Granite, "</response>", &[], SectionKind::Drop, false),
    ],
    template: Some(Signature {
        rank: 10,
        any_of: &[&["<|tool_call|>"]],
    }),
    also: &[],
    recovers: true,
    wrappers: &[],
};

const NEMOTRON: FormatSpec = FormatSpec {
    info: FormatInfo::new(
        F::Nemotron,
        "nemotron",
        &["nemotron v2", "nemotronv2", "nemotron-nano"],
        "Nemotron Nano v2",
        "<TOOLCALL>[{\"name\": …, \"arguments\": {…}}]</TOOLCALL>",
    ),
    sections: &[calls(
        F::Nemotron,
        "<TOOLCALL>",
        &["</TOOLCALL>"],
        special::json_list,
        true,
    )],
    template: Some(Signature {
        rank: 9,
        any_of: &[&["<TOOLCALL>"]],
    }),
    also: &[],
    recovers: true,
    wrappers: &[],
};

const SEED_OSS: FormatSpec = FormatSpec {
    info: FormatInfo::new(
        F::SeedOss,
        "seed-oss",
        &["seed", "seedoss", "seed_oss"],
        "Seed-OSS",
        "<seed:tool_call><function=NAME><parameter=K>V</parameter></function></seed:tool_call>",
    ),
    sections: &[
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
    ],
    template: Some(Signature {
        rank: 2,
        any_of: &[&["<seed:tool_call>"], &["<seed:think>"]],
    }),
    also: &[],
    recovers: false,
    wrappers: &[],
};

const FUNCTIONARY_V31: FormatSpec = FormatSpec {
    info: FormatInfo::new(
        F::FunctionaryV31,
        "functionary-v3.1",
        &["functionary v3.1 llama 3.1", "functionaryv31"],
        "Functionary v3.1 (Llama 3.1)",
        "<function=NAME>{…}</function>",
    ),
    sections: &[
        calls(
            F::FunctionaryV31,
            "<|python_tag|>",
            PYTHON_TAG_ENDS,
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
    ],
    template: Some(Signature {
        rank: 14,
        any_of: &[&["<function="]],
    }),
    also: &[],
    recovers: false,
    wrappers: &[],
};

const FUNCTIONARY_V32: FormatSpec = FormatSpec {
    info: FormatInfo::new(
        F::FunctionaryV32,
        "functionary-v3.2",
        &["functionary", "functionaryv32", "functionary v3.2"],
        "Functionary v3.2",
        ">>>NAME\\n{…} sections (all: text)",
    ),
    sections: &[Section {
        in_auto: false,
        ..calls(
            F::FunctionaryV32,
            ">>>",
            &[">>>"],
            special::functionary_section,
            false,
        )
    }],
    template: Some(Signature {
        rank: 13,
        any_of: &[&[">>>", "all", "functions"]],
    }),
    also: &[],
    recovers: false,
    wrappers: &[],
};

const PHI4: FormatSpec = FormatSpec {
    info: FormatInfo::new(
        F::Phi4,
        "phi4",
        &[
            "phi-4",
            "phi4mini",
            "phi-4-mini",
            "phi4_mini_json",
            "firefunction",
            "firefunction-v2",
        ],
        "Phi-4-mini, FireFunction v2",
        "functools[{\"name\": …, \"arguments\": {…}}]",
    ),
    sections: &[calls(F::Phi4, "functools[", &[], special::functools, true)],
    template: Some(Signature {
        rank: 18,
        any_of: &[&["functools["]],
    }),
    also: &[],
    recovers: true,
    wrappers: &[],
};

const GEMMA4: FormatSpec = FormatSpec {
    info: FormatInfo::new(
        F::Gemma4,
        "gemma4",
        &["gemma", "gemma-4", "gemma 4"],
        "Gemma 4",
        "<|tool_call>call:NAME{key:<|\"|>text<|\"|>,n:5}<tool_call|>",
    ),
    sections: &[
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
    ],
    template: Some(Signature {
        rank: 17,
        any_of: &[&["<|tool_call>"]],
    }),
    also: &[],
    recovers: false,
    wrappers: &[],
};

const GENERIC: FormatSpec = FormatSpec {
    info: FormatInfo::new(
        F::Generic,
        "generic",
        &["llama.cpp generic", "content-only"],
        "any model under llama.cpp's generic JSON grammar",
        "{\"tool_calls\": [{\"name\": …, \"arguments\": {…}}]} or {\"response\": …}",
    ),
    sections: &[],
    template: None,
    also: &[],
    recovers: true,
    wrappers: &[],
};

const REASONING: FormatSpec = FormatSpec {
    info: FormatInfo::new(
        F::Reasoning,
        "think",
        &["reasoning", "deepseek-r1-distill", "qwq"],
        "reasoning models (<think>)",
        "<think>…</think>",
    ),
    sections: &[marker(
        F::Reasoning,
        "<think>",
        &["</think>"],
        SectionKind::Thinking,
        true,
    )],
    template: None,
    also: &[],
    recovers: false,
    wrappers: &[],
};

use ToolCallFormat as F;

formats! {
    /// The seed's primary format: a ```` ```tool_call ```` fenced JSON block.
    FencedJson => FENCED_JSON,
    /// The seed's alternative: a JSON call object inside prose (or a ```` ```json ```` fence).
    InlineJson => INLINE_JSON,
    /// Hermes / Qwen 2.5 / Qwen 3 / Granite 4: JSON inside `<tool_call>…</tool_call>`.
    Hermes => HERMES,
    /// Qwen3-Coder: XML inside `<tool_call>…</tool_call>`.
    QwenXml => QWEN_XML,
    /// GLM-4.5/4.6/4.7: `<tool_call>NAME<arg_key>…</arg_key><arg_value>…</arg_value></tool_call>`.
    Glm => GLM,
    /// Llama 3.x: a reply that is a JSON call, optionally after `<|python_tag|>`.
    Llama => LLAMA,
    /// Llama 3.2 / 4 pythonic calls: `[f(a=1)]`.
    Pythonic => PYTHONIC,
    /// LFM2: `<|tool_call_start|>[f(a=1)]<|tool_call_end|>`.
    Lfm2 => LFM2,
    /// Mistral / Magistral: `[TOOL_CALLS]…`, reasoning in `[THINK]…[/THINK]`.
    Mistral => MISTRAL,
    /// gpt-oss harmony channels.
    Harmony => HARMONY,
    /// DeepSeek R1 / V3.
    DeepSeekR1 => DEEP_SEEK_R1,
    /// DeepSeek V3.1.
    DeepSeekV31 => DEEP_SEEK_V31,
    /// DeepSeek V3.2 / V4: DSML `<｜DSML｜invoke name="…">` inside `<｜DSML｜function_calls>`.
    DeepSeekV32 => DEEP_SEEK_V32,
    /// Kimi-K2.
    KimiK2 => KIMI_K2,
    /// MiniMax-M2.
    MiniMaxM2 => MINI_MAX_M2,
    /// Command-R7B / Command-A.
    CommandR7b => COMMAND_R7B,
    /// Granite 3.x: `<|tool_call|>[…]`.
    Granite => GRANITE,
    /// Nemotron Nano v2: `<TOOLCALL>[…]</TOOLCALL>`.
    Nemotron => NEMOTRON,
    /// Seed-OSS: `<seed:tool_call>` XML, `<seed:think>` reasoning.
    SeedOss => SEED_OSS,
    /// Functionary v3.1 (Llama 3.1): `<function=NAME>{…}</function>`.
    FunctionaryV31 => FUNCTIONARY_V31,
    /// Functionary v3.2: `>>>NAME\n{…}` sections.
    FunctionaryV32 => FUNCTIONARY_V32,
    /// Phi-4-mini / FireFunction v2: `functools[{"name": …, "arguments": …}]`.
    Phi4 => PHI4,
    /// Gemma 4: `<|tool_call>call:NAME{…}<tool_call|>`, reasoning in `<|channel>thought`.
    Gemma4 => GEMMA4,
    /// llama.cpp's generic JSON: `{"tool_calls": […]}` or `{"response": …}`.
    Generic => GENERIC,
    /// Apertus: `<|tools_prefix|>[{"NAME": {…}}]<|tools_suffix|>`.
    Apertus => APERTUS,
    /// `<think>…</think>` reasoning.
    Reasoning => REASONING,
}
