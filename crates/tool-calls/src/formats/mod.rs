//! The registry of call formats: each format's name, aliases and models, and the
//! special-token sections it adds to the streaming parser.
//!
//! Adding a format: write its body parser (a module here, `fn(&str, &ToolCatalog) ->
//! Result<Found, String>`) and register it once in `registry.rs` (its [`FormatSpec`] and
//! one line of the `formats!` list). The streaming machinery (holding back marker
//! prefixes, collecting a section, streaming equal to batch) is shared.

pub(crate) mod apertus;
pub(crate) mod detect;
pub(crate) mod gemma;
pub(crate) mod pythonic;
mod registry;
pub(crate) mod special;
mod specs;
pub(crate) mod xml;

pub use registry::{ToolCallFormat, FORMATS};

use super::calls::ToolCatalog;
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
    "<|inner_suffix|>",
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

impl FormatInfo {
    const fn new(
        format: ToolCallFormat,
        name: &'static str,
        aliases: &'static [&'static str],
        models: &'static str,
        looks_like: &'static str,
    ) -> Self {
        FormatInfo {
            format,
            name,
            aliases,
            models,
            looks_like,
        }
    }
}

/// Everything the parser and template detection know of one format (see `registry`).
#[derive(Debug)]
pub(crate) struct FormatSpec {
    /// Its names and models.
    pub info: FormatInfo,
    /// The markers it adds to the visible-text state. Markers are unique across formats
    /// unless the formats share the body parser, and none is a prefix of another.
    pub sections: &'static [Section],
    /// How a chat template shows that its model writes this format.
    pub template: Option<Signature>,
    /// Formats its models also write, recognized beside it when it is the model's own.
    pub also: &'static [ToolCallFormat],
    /// Its calls are JSON objects naming the tool, and its models also write them in other
    /// spellings, which are read as calls when it is the model's own format (*recovered*):
    /// bare (a reply that is, or ends with, call objects), in a ```` ``` ````,
    /// ```` ```json ```` or ```` ```xml ```` fence, with doubled braces.
    pub recovers: bool,
    /// Tags its models put around a JSON call instead of the format's own (open, close),
    /// read when it is the model's own format; text that is not a call stays text.
    pub wrappers: &'static [(&'static str, &'static str)],
}

/// How a chat template shows a format: any one group whose needles all appear. Templates
/// are checked against signatures by `rank`, lowest first, so that a more specific
/// signature (Qwen3-Coder's `<function=` with `<parameter=`) wins over a looser one
/// (Functionary's `<function=`).
#[derive(Debug)]
pub(crate) struct Signature {
    /// Order of checking; unique.
    pub rank: u8,
    /// Groups of needles.
    pub any_of: &'static [&'static [&'static str]],
}

impl Signature {
    /// Whether `template` shows the format.
    pub(crate) fn matches(&self, template: &str) -> bool {
        self.any_of
            .iter()
            .any(|group| group.iter().all(|needle| template.contains(needle)))
    }
}

/// Every section marker of every format, in registration order.
pub(crate) fn sections() -> impl Iterator<Item = &'static Section> {
    ToolCallFormat::ALL
        .into_iter()
        .flat_map(|format| format.spec().sections.iter())
}

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
    Some(&format.spec().info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_unique_and_none_is_a_prefix_of_another() {
        let mut opens: Vec<&str> = sections().map(|s| s.open).collect();
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

    #[test]
    fn each_registration_describes_its_own_format() {
        let mut ranks = Vec::new();
        for f in ToolCallFormat::ALL {
            let spec = f.spec();
            assert_eq!(spec.info.format, f);
            assert!(spec.sections.iter().all(|s| s.format == f), "{f:?}");
            assert!(!spec.also.contains(&f), "{f:?}");
            ranks.extend(spec.template.as_ref().map(|t| t.rank));
        }
        let count = ranks.len();
        ranks.sort_unstable();
        ranks.dedup();
        assert_eq!(ranks.len(), count, "template ranks are unique");
    }

    #[test]
    fn formats_sharing_a_marker_read_it_alike() {
        let all: Vec<&Section> = sections().collect();
        for a in &all {
            for b in all.iter().filter(|b| b.open == a.open) {
                assert_eq!(a.close, b.close, "{}", a.open);
                let parser = |s: &Section| match s.kind {
                    SectionKind::Calls { parse, json_aware } => Some((parse as usize, json_aware)),
                    _ => None,
                };
                assert_eq!(parser(a), parser(b), "{}", a.open);
            }
        }
    }
}
