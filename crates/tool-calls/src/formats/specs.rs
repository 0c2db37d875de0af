//! The registrations of the formats whose calls sit between special tokens of their own:
//! the DeepSeek family (R1/V3, V3.1, V3.2 DSML), Kimi-K2, MiniMax-M2 and Apertus. Split
//! from `registry.rs` (which lists every format in its `formats!` list); nothing here
//! differs from a registration there.

use super::registry::ToolCallFormat as F;
use super::{apertus, calls, marker, special, xml, FormatInfo, FormatSpec, SectionKind, Signature};

/// Closing markers of a DeepSeek tool-call section.
const DS_ENDS: &[&str] = &[
    "<｜tool▁calls▁end｜>",
    "<｜tool_calls_end｜>",
    "<｜tool calls end｜>",
];
/// Closing markers of one DeepSeek call.
const DS_CALL_ENDS: &[&str] = &["<｜tool▁call▁end｜>"];

pub(super) const DEEP_SEEK_R1: FormatSpec = FormatSpec {
    info: FormatInfo::new(F::DeepSeekR1, "deepseek-r1", &["deepseek", "deepseekv3", "deepseek_v3", "deepseek-v3", "deepseek r1"], "DeepSeek R1, V3 (and R1 distills)", "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME ```json {…} ```<｜tool▁call▁end｜>…"),
    sections: &[
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
            F::DeepSeekR1,
            "<｜tool\\_calls\\_begin｜>",
            DS_ENDS,
            special::deepseek,
            true,
        ),
        calls(
            F::DeepSeekR1,
            "<｜tool▁call▁begin｜>",
            DS_CALL_ENDS,
            special::deepseek_call,
            true,
        ),
        marker(F::DeepSeekR1, "<｜tool▁calls▁end｜>", &[], SectionKind::Drop, true),
    ],
    template: Some(Signature { rank: 6, any_of: &[&["tool▁calls▁begin", "```json"], &["tool_calls_begin", "```json"]] }),
    also: &[],
    recovers: false,
    wrappers: &[],
};

pub(super) const DEEP_SEEK_V31: FormatSpec = FormatSpec {
    info: FormatInfo::new(
        F::DeepSeekV31,
        "deepseek-v3.1",
        &["deepseekv31", "deepseek_v31", "deepseek v3.1"],
        "DeepSeek V3.1",
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{…}<｜tool▁call▁end｜>…",
    ),
    sections: &[
        calls(
            F::DeepSeekV31,
            "<｜tool▁calls▁begin｜>",
            DS_ENDS,
            special::deepseek,
            true,
        ),
        // V3.1 often leaves the outer begin token out: each call stands alone.
        calls(
            F::DeepSeekV31,
            "<｜tool▁call▁begin｜>",
            DS_CALL_ENDS,
            special::deepseek_call,
            true,
        ),
        marker(
            F::DeepSeekV31,
            "<｜tool▁calls▁end｜>",
            &[],
            SectionKind::Drop,
            true,
        ),
    ],
    template: Some(Signature {
        rank: 7,
        any_of: &[&["tool▁calls▁begin"], &["tool_calls_begin"]],
    }),
    also: &[],
    recovers: false,
    wrappers: &[],
};

pub(super) const DEEP_SEEK_V32: FormatSpec = FormatSpec {
    info: FormatInfo::new(
        F::DeepSeekV32,
        "deepseek-v3.2",
        &["deepseekv32", "deepseek_v32", "deepseek v3.2", "dsml", "deepseek-v4"],
        "DeepSeek V3.2, V4 (DSML)",
        "<｜DSML｜function_calls><｜DSML｜invoke name=\"NAME\"><｜DSML｜parameter name=\"K\" string=\"true\">V</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜function_calls>",
    ),
    sections: &[
        calls(
            F::DeepSeekV32,
            "<｜DSML｜function_calls>",
            &["</｜DSML｜function_calls>"],
            xml::dsml,
            false,
        ),
        // DeepSeek V4 names the block `tool_calls`; the invokes inside are the same.
        calls(
            F::DeepSeekV32,
            "<｜DSML｜tool_calls>",
            &["</｜DSML｜tool_calls>"],
            xml::dsml,
            false,
        ),
    ],
    template: Some(Signature {
        rank: 0,
        any_of: &[&["｜DSML｜"]],
    }),
    also: &[],
    recovers: false,
    wrappers: &[],
};

pub(super) const KIMI_K2: FormatSpec = FormatSpec {
    info: FormatInfo::new(F::KimiK2, "kimi-k2", &["kimi", "kimik2", "kimi_k2"], "Kimi-K2", "<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>{…}<|tool_call_end|>…"),
    sections: &[
        calls(
            F::KimiK2,
            "<|tool_calls_section_begin|>",
            &["<|tool_calls_section_end|>"],
            special::kimi,
            true,
        ),
    ],
    template: Some(Signature { rank: 4, any_of: &[&["<|tool_calls_section_begin|>"]] }),
    also: &[],
    recovers: false,
    wrappers: &[],
};

pub(super) const MINI_MAX_M2: FormatSpec = FormatSpec {
    info: FormatInfo::new(F::MiniMaxM2, "minimax-m2", &["minimax", "minimaxm2", "minimax_m2"], "MiniMax-M2", "<minimax:tool_call><invoke name=\"NAME\"><parameter name=\"K\">V</parameter></invoke></minimax:tool_call>"),
    sections: &[
        calls(
            F::MiniMaxM2,
            "<minimax:tool_call>",
            &["</minimax:tool_call>"],
            xml::minimax,
            false,
        ),
    ],
    template: Some(Signature { rank: 3, any_of: &[&["<minimax:tool_call>"]] }),
    also: &[],
    recovers: false,
    wrappers: &[],
};

pub(super) const APERTUS: FormatSpec = FormatSpec {
    info: FormatInfo::new(
        F::Apertus,
        "apertus",
        &["apertus-8b", "apertus2509", "swiss-ai apertus"],
        "Apertus",
        "<|tools_prefix|>[{\"NAME\": {…}}]<|tools_suffix|>, reasoning in <|inner_prefix|>…<|inner_suffix|>",
    ),
    sections: &[
        calls(
            F::Apertus,
            "<|tools_prefix|>",
            &["<|tools_suffix|>"],
            apertus::calls,
            true,
        ),
        // A call may end the reasoning without its closing marker.
        marker(
            F::Apertus,
            "<|inner_prefix|>",
            &["<|inner_suffix|>", "<|tools_prefix|>"],
            SectionKind::Thinking,
            true,
        ),
        marker(F::Apertus, "<|assistant_start|>", &[], SectionKind::Drop, true),
        marker(F::Apertus, "<|assistant_end|>", &[], SectionKind::Drop, true),
    ],
    template: Some(Signature {
        rank: 21,
        any_of: &[&["<|tools_prefix|>"]],
    }),
    also: &[],
    recovers: false,
    wrappers: &[],
};
